"""Run information: one JSON object per run under ``_meta/run_info`` (format version, MindSpore version, mode,
``collect_freq``, rank, hyperparameters, ...), written at step 0 and again when it changes (a later record adds to
and overrides an earlier one).

``lr_config`` is the declared learning-rate intent: ``{"kind": "constant" | "list" | "schedule" | "dynamic" |
"unknown", "class": the optimizer's learning-rate class name or null, "groups": [{"kind", "class", "value"}]}``
(``value`` for a constant only); :func:`lr_config` reads it back with every field present.
"""

from .. import metadata
from . import _tensors

LR_KINDS = ("constant", "list", "schedule", "dynamic", "unknown")


def value(info):
    """``Summary.Value`` of the run information (a dict); ``content_version`` is added when missing."""
    body = dict(info)
    body.setdefault("content_version", metadata.CONTENT_VERSION)
    return _tensors.json_string_value(metadata.RUN_INFO, metadata.KIND_RUN_INFO, body)


def decode(array):
    """The run information dict of one stored value; raises ``metadata.ContentError`` when unreadable."""
    body = _tensors.json_of(array, "the run information")
    if not isinstance(body, dict):
        raise metadata.ContentError("the run information is not a JSON object")
    return body


def merge(records):
    """One dict from the decoded records of a run in step order (later ones add to and override earlier ones)."""
    out = {}
    for body in records:
        out.update(body)
    return out


def _lr_group(obj):
    obj = obj if isinstance(obj, dict) else {}
    kind = obj.get("kind") if obj.get("kind") in LR_KINDS else "unknown"
    group = {"kind": kind, "class": obj.get("class") if isinstance(obj.get("class"), str) else None}
    if kind == "constant" and isinstance(obj.get("value"), (int, float)) and not isinstance(obj.get("value"), bool):
        group["value"] = float(obj["value"])
    return group


def lr_config(info):
    """The run's declared learning-rate intent with every field present, or ``None`` when it declares none."""
    raw = (info or {}).get("lr_config")
    if not isinstance(raw, dict):
        return None
    out = _lr_group(raw)
    out.pop("value", None)
    groups = raw.get("groups")
    out["groups"] = [_lr_group(g) for g in groups] if isinstance(groups, list) else []
    if out["kind"] == "constant" and isinstance(raw.get("value"), (int, float)):
        out["value"] = float(raw["value"])
    return out
