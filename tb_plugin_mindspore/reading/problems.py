"""The ``status`` route's ``warnings``: everything the readers left out, and why, in one list.

Each warning is ``{"run", "file", "offset", "reason"}`` (``file`` relative to the logdir, ``offset`` a byte offset;
both ``None`` where the data came through TensorBoard's loader, which does not say), plus ``"tag"`` and ``"step"``
for a left-out record of one series. Sources, each isolated (one that fails is logged and the others still count):

* damaged records and unreadable files among MindSpore's ``*_MS`` files (``MsLogdir.warnings``);
* files no reader may open (FIFOs, sockets, symbolic link loops) and event files whose record framing breaks
  TensorBoard's loaders (``LogdirStatus.file_warnings``);
* our plugin's series whose content is unreadable (bad JSON, hostile nesting, a newer format);
* malformed landscape records and run information records (``LandscapeReader.problems``,
  ``RunInfoReader.problems``).
"""

import logging

from .. import metadata

logger = logging.getLogger(__name__)

MAX_WARNINGS = 200
_FIELDS = ("run", "file", "offset", "reason")


def _normalized(w):
    out = {k: w.get(k) for k in _FIELDS}
    for extra in ("tag", "step"):
        if w.get(extra) is not None:
            out[extra] = w[extra]
    return out


def content_problems(data_provider, ctx, eid):
    """Our plugin's series whose plugin content cannot be read (they are left out of every listing)."""
    from .series_cache import listings_for

    listing = listings_for(data_provider).tensors(ctx, eid, metadata.PLUGIN_NAME)
    out = []
    for run, tags in sorted(listing.items()):
        for tag, series in sorted(tags.items()):
            try:
                metadata.parse_content(series.plugin_content)
            except metadata.ContentError as e:
                out.append({"run": run, "file": None, "offset": None, "tag": tag,
                            "reason": "series %s left out: %s" % (tag, e)})
    return out


def _mindformers_problems(plugin, ctx, eid):
    """mindformers' JSON files beside the runs left out (too large, malformed): ``reading/mindformers_files.py``."""
    from . import mindformers_files

    folders = {run: plugin._folders.folder(run) for run in plugin._view.runs(ctx, eid)}
    by_file = {}
    for run, folder in folders.items():
        for p in mindformers_files.problems_under([folder]):
            by_file.setdefault(p["file"], dict(p, run=run))
    return list(by_file.values())


def collect(plugin, ctx, eid, provider_ok=True):
    """Every warning for the ``status`` route of ``plugin`` (a ``MindSporePlugin``), at most ``MAX_WARNINGS``."""
    sources = []
    if getattr(plugin, "_ms", None) is not None:
        sources.append(("MindSpore summary files", lambda: plugin._ms.warnings()))
    sources.append(("files under the logdir", plugin._status.file_warnings))
    if getattr(plugin, "_folders", None) is not None and getattr(plugin, "_roots", None):
        sources.append(("mindformers files", lambda: _mindformers_problems(plugin, ctx, eid)))
    if provider_ok:
        sources.append(("plugin content", lambda: content_problems(plugin._data_provider, ctx, eid)))
        sources.append(("landscapes", lambda: plugin._landscape_reader().problems(ctx, eid)))
        sources.append(("run information", lambda: plugin._run_info_reader().problems(ctx, eid)))
    out, seen = [], set()
    for name, source in sources:
        try:
            found = source()
        except Exception:  # one source failing must not hide the others
            logger.exception("mindspore plugin: collecting warnings about %s failed", name)
            continue
        for w in found:
            w = _normalized(w)
            key = tuple(str(w.get(k)) for k in _FIELDS + ("tag", "step"))
            if key in seen:
                continue
            seen.add(key)
            if len(out) >= MAX_WARNINGS:
                out.append({"run": None, "file": None, "offset": None,
                            "reason": "more warnings not listed (first %d shown)" % MAX_WARNINGS})
                return out
            out.append(w)
    return out


def data_server_message(file_warnings):
    """What to tell the user when TensorBoard's fast-loader data server is gone, naming the file that broke it when
    the record headers show one."""
    culprits = [w for w in file_warnings if w.get("offset") is not None and "loaders" in w.get("reason", "")]
    text = ("TensorBoard's data server (its fast loader, --load_fast) stopped answering, so no run can be read "
            "until TensorBoard is restarted.")
    if culprits:
        w = culprits[0]
        more = " (and %d more files)" % (len(culprits) - 1) if len(culprits) > 1 else ""
        text += " Cause: %s at byte %d: %s%s. Move that file out of the logdir and restart TensorBoard, or start " \
                "it with --load_fast=false." % (w["file"], w["offset"], w["reason"], more)
    else:
        text += " No event file with a broken record header was found; see TensorBoard's log, and try " \
                "--load_fast=false."
    return text
