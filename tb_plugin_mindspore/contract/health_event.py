"""Live health events: one JSON object per event, under ``_meta/health_event`` at the step it was detected.

Fields (``metadata.HEALTH_EVENT_FIELDS``): ``rule``, ``severity`` ("error" | "warning"), ``step`` (detection),
``first_step`` (first bad step), ``message``, ``advice``, ``layers`` (where it started, may be empty), ``action``
("none" | "stopped" | "skipped_update" | "checkpoint"), ``checkpoint`` (path or null), ``source`` ("live").
Written by ``TrainMonitor`` / ``LoopMonitor``; read by ``check`` and the Health panel through the health rules.
"""

from .. import metadata
from . import _tensors

FIELDS = metadata.HEALTH_EVENT_FIELDS


def value(rule, severity, step, **fields):
    """``Summary.Value`` of one event (``fields``: the other :data:`FIELDS`); raises ValueError on a bad severity
    or action."""
    body = metadata.health_event(rule, severity, step, **fields)
    return _tensors.json_string_value(metadata.HEALTH_EVENT, metadata.KIND_HEALTH_EVENT, body)


def decode(array):
    """The event dict (every field of :data:`FIELDS`) of one stored value; raises ``metadata.ContentError``."""
    return metadata.decode_health_event(_tensors.json_of(array, "the health event"))
