"""Our plugin content in a data provider's listing: parse it once, and find "our series of this kind"."""

import logging

from .. import metadata

logger = logging.getLogger(__name__)


def parse(raw):
    """The parsed plugin content, or ``None`` when it is not readable by this version (logged once per call)."""
    try:
        return metadata.parse_content(raw)
    except metadata.ContentError as e:
        logger.debug("mindspore plugin: unreadable plugin content: %s", e)
        return None


def of_kind(listing, kinds, parse_content=parse):
    """``{run: {tag: (content, time series)}}`` of the series in a provider listing (``{run: {tag: series}}`` of
    our plugin) whose content kind is in ``kinds`` (one kind or a tuple); unreadable contents are left out.
    ``parse_content``: how to parse raw content (e.g. a memoizing parser)."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    out = {}
    for run, tags in (listing or {}).items():
        for tag, series in tags.items():
            content = parse_content(series.plugin_content)
            if content is not None and content.get("kind") in kinds:
                out.setdefault(run, {})[tag] = (content, series)
    return out
