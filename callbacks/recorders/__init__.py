"""Recorders: one small object per job, driven by a :class:`Pipeline` that ``TrainMonitor`` and ``LoopMonitor``
adapt to (the protocol is in :mod:`.base`; how to write and plug in a recorder: ``Recorder``'s docstring and the
README's callbacks section).

Built in, in the order they run: core (always), rank statistics (always, on every rank: ``..rank_stats``),
weight norms (``weight_norms=True``), update ratio, per-layer
gradient norms, activations, data wait (``debug=[...]``), evaluation (``eval_dataset=``), live health
(``live_health=True``, default), the user's own (``recorders=[...]``), run info (always, last: it writes what the
others added to the run info at start, and the run end marker).
"""

from .base import POINTS, Interval, Recorder, RunContext, StepRecord, due
from .core import CoreRecorder
from .data_wait import DataWaitRecorder
from .eval import EvalRecorder
from .health import LiveHealthRecorder
from .layer_grads import LayerGradRecorder
from .pipeline import Pipeline
from .run_info import RunInfoRecorder, lr_config
from .settings import ANOMALY_ACTIONS, DEBUG_ITEMS, LIVE_HEALTH_DEFAULTS, MonitorSettings
from .source import CellSource, HostSource, LoopSource
from .update_ratio import UpdateRatioRecorder
from .weight_norms import WeightNormRecorder

__all__ = ["Recorder", "StepRecord", "Interval", "RunContext", "Pipeline", "MonitorSettings", "POINTS", "due",
           "CellSource", "HostSource", "LoopSource", "CoreRecorder", "WeightNormRecorder", "EvalRecorder",
           "UpdateRatioRecorder", "LayerGradRecorder", "ActivationRecorder", "DataWaitRecorder",
           "LiveHealthRecorder", "RunInfoRecorder", "default_recorders", "lr_config", "DEBUG_ITEMS",
           "ANOMALY_ACTIONS", "LIVE_HEALTH_DEFAULTS"]

from .activations import ActivationRecorder  # noqa: E402


def default_recorders(settings, extra=()):
    """The recorders of a run with these settings, in order (a new list of new recorders each call)."""
    from ..rank_stats import RankStatsRecorder

    out = [CoreRecorder(), RankStatsRecorder()]
    if settings.weight_norms:
        out.append(WeightNormRecorder())
    if "update_ratio" in settings.debug:
        out.append(UpdateRatioRecorder())
    if "layer_grad_norm" in settings.debug:
        out.append(LayerGradRecorder())
    if "activations" in settings.debug:
        out.append(ActivationRecorder())
    if "data_wait" in settings.debug:
        out.append(DataWaitRecorder())
    if "attention_logits" in settings.debug:
        from .attention import AttentionLogitRecorder
        out.append(AttentionLogitRecorder())
    if settings.eval_dataset is not None:
        out.append(EvalRecorder())
    if settings.live_health is not None:
        out.append(LiveHealthRecorder())
    if settings.flight_recorder:
        from ..flight_recorder import FlightRecorder
        out.append(FlightRecorder(settings.flight_recorder))
    out.extend(extra)
    out.append(RunInfoRecorder())
    return out
