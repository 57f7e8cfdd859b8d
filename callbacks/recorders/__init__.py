"""Recorders: one small object per job, driven by a :class:`Pipeline` that ``TrainMonitor`` and ``LoopMonitor``
adapt to (the protocol is in :mod:`.base`; how to write and plug in a recorder: ``Recorder``'s docstring and the
README's callbacks section).

Built in, in the order they run: core (always), rank statistics (always, on every rank: ``rank_stats.py``),
weight norms (``Diagnostic(weight_norms=True)``, default), the debug items' recorders (:data:`DEBUG_RECORDERS`:
update ratio, per-layer gradient norms, activations, data wait, attention logits; ``Debug(items=[...])``), evaluation (``eval=Eval(...)``),
live health (``health=LiveHealth()``, default), the flight recorder (``flight_recorder=100``), the user's own
(``recorders=[...]``), run info (always, last: it writes what the others added to the run info at start, and the run
end marker). The options are grouped in ``options.py``.

May import: ``..common``, ``..cells``; ``tb_plugin_mindspore``'s ``io``, ``contract``, ``writing``, ``sources`` and
``health`` layers (the live rules are the offline ones).
"""

from .base import POINTS, Interval, Recorder, RunContext, StepRecord, due
from .core import CoreRecorder
from .data_wait import DataWaitRecorder
from .eval import EvalRecorder
from .health import LiveHealthRecorder
from .layer_grads import LayerGradRecorder
from .pipeline import Pipeline
from .run_info import RunInfoRecorder, lr_config
from .options import Debug, Diagnostic, Eval, Layers, LiveHealth, Ranks, Storage
from .settings import ANOMALY_ACTIONS, DEBUG_ITEMS, LIVE_HEALTH_DEFAULTS, MonitorSettings
from .source import CellSource, HostSource, LoopSource
from .update_ratio import UpdateRatioRecorder
from .weight_norms import WeightNormRecorder

__all__ = ["Recorder", "StepRecord", "Interval", "RunContext", "Pipeline", "MonitorSettings", "POINTS", "due",
           "CellSource", "HostSource", "LoopSource", "CoreRecorder", "WeightNormRecorder", "EvalRecorder",
           "UpdateRatioRecorder", "LayerGradRecorder", "ActivationRecorder", "DataWaitRecorder",
           "LiveHealthRecorder", "RunInfoRecorder", "default_recorders", "lr_config", "DEBUG_ITEMS",
           "ANOMALY_ACTIONS", "LIVE_HEALTH_DEFAULTS", "DEBUG_RECORDERS", "Debug", "Diagnostic", "Eval", "Layers",
           "LiveHealth", "Ranks", "Storage"]

from .activations import ActivationRecorder  # noqa: E402
from .attention import AttentionLogitRecorder  # noqa: E402
from .flight_recorder import FlightRecorder  # noqa: E402
from .rank_stats import RankStatsRecorder  # noqa: E402

# The recorders of the debug items (each names its row of ``contract.debug_items``), in the order they run.
DEBUG_RECORDERS = (UpdateRatioRecorder, LayerGradRecorder, ActivationRecorder, DataWaitRecorder,
                   AttentionLogitRecorder)


def default_recorders(settings, extra=()):
    """The recorders of a run with these settings, in order (a new list of new recorders each call)."""
    out = [CoreRecorder(), RankStatsRecorder()]
    if settings.weight_norms:
        out.append(WeightNormRecorder())
    out.extend(cls() for cls in DEBUG_RECORDERS if cls.item.name in settings.debug)
    if settings.eval_dataset is not None:
        out.append(EvalRecorder())
    if settings.live_health is not None:
        out.append(LiveHealthRecorder())
    if settings.flight_recorder:
        out.append(FlightRecorder(settings.flight_recorder))
    out.extend(extra)
    out.append(RunInfoRecorder())
    return out
