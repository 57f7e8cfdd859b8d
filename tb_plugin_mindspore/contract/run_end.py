"""The run end marker: one JSON object under ``_meta/run_end`` (``status``: "finished" | "stopped" |
"interrupted" | "failed", ``step``, ``wall_time``, ``reason``), written by both monitors on a normal end, a stop
by a live-health action or Ctrl-C; read by the stall rule."""

from .. import metadata
from . import _tensors

FIELDS = metadata.RUN_END_FIELDS


def value(status, step, wall_time, reason=""):
    """``Summary.Value`` of the marker; raises ValueError on an unknown status."""
    body = metadata.run_end(status, step, wall_time, reason)
    return _tensors.json_string_value(metadata.RUN_END, metadata.KIND_RUN_END, body)


def decode(array):
    """The marker dict (every field of :data:`FIELDS`) of one stored value; raises ``metadata.ContentError``."""
    return metadata.decode_run_end(_tensors.json_of(array, "the run end marker"))
