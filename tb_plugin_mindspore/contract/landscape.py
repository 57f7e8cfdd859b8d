"""Loss landscapes: one JSON object per landscape (``landscape`` {x, y, z}, ``loss_path``, ``convergence_point``,
``metadata``; the format of ``sources.ms_files.landscape_dict`` and ``landscape/format.py``), non-finite losses as
null."""

import math

from .. import metadata
from . import _tensors


def json_safe(value):
    """NaN / Inf -> None, recursively (JSON has no place for them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return json_safe(value.tolist())
    return value


def value(tag, landscape_dict):
    """``Summary.Value`` of one landscape (kind ``landscape``, ``encoding`` json)."""
    return _tensors.json_string_value(tag, metadata.KIND_LANDSCAPE, json_safe(landscape_dict), encoding="json")


def decode(array):
    """The landscape dict of one stored value; raises ``metadata.ContentError`` when unreadable."""
    body = _tensors.json_of(array, "the loss landscape")
    if not isinstance(body, dict):
        raise metadata.ContentError("the loss landscape is not a JSON object")
    return body
