"""The recorder protocol: what a recorder receives (:class:`StepRecord`, :class:`Interval`, :class:`RunContext`)
and the hooks it may implement (:class:`Recorder`).

A *recorder* does one job (core scalars, weight norms, evaluation, update ratio, per-layer gradient norms,
activations, data wait, run info, live health, flight recorder, ...). ``TrainMonitor`` and ``LoopMonitor`` are thin
adapters: they turn ``Model.train`` callbacks or a loop's calls into the same calls on a
:class:`~tb_mindspore_callbacks.recorders.pipeline.Pipeline`, which reads the step source and calls every recorder's
hooks in order, each one isolated (an exception in a recorder is logged once and never reaches training).

Hooks, all optional (the base class does nothing):

* ``on_start(ctx)``: once, before the first step; ``ctx`` is the :class:`RunContext` (writer, optimizer, layers,
  source, settings, run info). Recorders set up their compiled cells here.
* ``on_step_begin(step)``: before the step(s) ending at ``step`` run (``Model.train``: ``on_train_step_begin``, only
  when a recorder asks for it with ``wants_step_begin = True``; a loop: ``begin_step()``).
* ``on_step(record)``: after every step, with the host-side fields of the :class:`StepRecord` (step, wall time,
  step time); cheap work only, nothing read from the device.
* ``on_interval(record)``: at core points (every ``collect_freq`` steps and at the end), ``record`` filled with
  what the step source read from the device: loss, gradient norm, learning rates, interval statistics.
* ``on_point(record)``: once per due point other than core, ``record.due`` holding just that one (``"debug"``,
  ``"diagnostic"`` or ``"eval"``), at step ends, epoch ends and the end of training.
* ``on_anomaly(event)``: a live-health event (``metadata.health_event`` dict) before it is written; a recorder
  may fill in ``event["layers"]`` (where it started) or amend ``message``; it is written once every recorder has
  seen it.
* ``on_end(status)``: once, at the end (``status``: ``metadata.run_end`` dict: finished / stopped / interrupted /
  failed), before the writer is closed; ``close()`` when the monitor closes (stop threads there).
"""

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from tb_plugin_mindspore.contract import interval as interval_contract

__all__ = ["Interval", "StepRecord", "RunContext", "Recorder", "due", "POINTS"]

# Kinds of points a record can be due for (``StepRecord.due``).
POINTS = ("core", "debug", "diagnostic", "eval")


def due(last, step, freq):
    """True when a multiple of ``freq`` lies in ``(last, step]``."""
    return step // freq > last // freq


# The one interval type, end to end (``tb_plugin_mindspore.contract.interval.IntervalStats``): ``min`` / ``mean`` /
# ``max`` over finite values only (NaN when none), ``count`` every step, ``nonfinite`` the NaN / Inf ones, and what
# training also knows: ``first_nonfinite_step`` / ``max_step`` (the steps of the first non-finite value and of the
# maximum, None when unknown); ``fields()`` is what the writer takes, ``upper`` the envelope health rules read.
Interval = interval_contract.IntervalStats


class HostInterval:
    """Host-side accumulator of an :class:`Interval` (values added one step at a time)."""

    __slots__ = ("_min", "_max", "_sum", "_finite", "_nonfinite", "_first_bad", "_max_step")

    def __init__(self):
        self.reset()

    def reset(self):
        self._min, self._max, self._sum = math.inf, -math.inf, 0.0
        self._finite = self._nonfinite = 0
        self._first_bad = self._max_step = None

    def add(self, value, weight=1, step=None):
        if math.isfinite(value):
            if value > self._max:
                self._max_step = step
            self._min = min(self._min, value)
            self._max = max(self._max, value)
            self._sum += value * weight
            self._finite += weight
        else:
            if self._first_bad is None:
                self._first_bad = step
            self._nonfinite += weight

    @property
    def count(self):
        return self._finite + self._nonfinite

    def interval(self):
        if self._finite:
            return Interval(self._min, self._sum / self._finite, self._max, self.count, self._nonfinite,
                            first_nonfinite_step=self._first_bad, max_step=self._max_step)
        return Interval(count=self.count, nonfinite=self._nonfinite, first_nonfinite_step=self._first_bad)

    def fields(self):
        return self.interval().fields()


@dataclass
class StepRecord:
    """What the step source yields, by name. Host-side fields are set at every step; the others at core points.

    Every step: ``step`` (1-based global step), ``wall_time``, ``step_time_ms`` (this step's time; a sink's time
    divided by its steps; None for the first step, which includes compilation), ``data_wait_ms`` (time from the
    previous step's end to this step's begin, when the entry point saw the begin), ``due`` (the points due now, from
    :data:`POINTS`), ``inputs`` (the step's batch when known), ``outputs`` (what the training network returned).

    At core points (``"core" in due``): ``first_step`` (first step of the interval), ``loss`` and ``grad_norm`` (last
    step; ``grad_norm`` NaN without a monitored cell), ``lrs`` (applied learning rate per group), ``loss_interval``
    / ``grad_interval`` / ``step_time_interval`` (:class:`Interval`), ``step_time_ms_mean`` and ``throughput`` over
    the interval, ``loss_scale`` / ``overflow_steps`` (loss-scale cells), ``skipped_updates`` /
    ``first_skipped_step`` (updates not applied by the live-health guard).

    At debug points: ``layer_grad_norm`` (per-layer gradient norms of the last step, in ``ctx.layer_names`` order)
    when a cell tracks them.
    """

    step: int
    wall_time: float = 0.0
    step_time_ms: Optional[float] = None
    data_wait_ms: Optional[float] = None
    due: frozenset = frozenset()
    inputs: Any = None
    outputs: Any = None
    first_step: Optional[int] = None
    loss: float = math.nan
    grad_norm: float = math.nan
    local_grad_norm: Optional[float] = None     # data parallel: this rank's norm before the gradient reducer
    lrs: Tuple[float, ...] = ()
    loss_interval: Optional[Interval] = None
    grad_interval: Optional[Interval] = None
    step_time_interval: Optional[Interval] = None
    step_time_ms_mean: Optional[float] = None
    throughput: Optional[float] = None
    loss_scale: Optional[float] = None
    overflow_steps: Optional[int] = None
    skipped_updates: int = 0
    first_skipped_step: Optional[int] = None
    layer_grad_norm: Optional[Any] = None


@dataclass
class RunContext:
    """What recorders share for one run, given to ``on_start``.

    ``writer`` is a property of the pipeline (it may be replaced by a new file mid-run: always read it from here).
    ``source`` is the step source (:mod:`.source`): ``cell`` (a MonitoredTrainCell or the loop's statistics) and
    ``optimizer`` (a ``mindspore.nn.Optimizer``) may be None. ``params`` / ``param_names``: every trained parameter
    in the order of the gradients, and its name (``p.name``, or ``named_parameters()``'s name for a torch-style
    module); ``layer_params`` / ``layer_names`` / ``layer_index`` (index into ``params``) are the run's layer
    registry; ``settings`` the validated monitor settings;
    ``info`` the run info dict (recorders may add fields in ``on_start``; it is written after every ``on_start``).
    ``request_stop()`` asks the entry point to end training after this step. ``shared`` is a scratch dict for
    recorders that feed each other (e.g. ``"weight_norms"``: the last per-parameter norms and their step).
    """

    pipeline: Any
    settings: Any
    source: Any
    optimizer: Any
    rank: int
    logdir: str
    params: List[Any] = field(default_factory=list)
    param_names: List[str] = field(default_factory=list)
    layer_params: List[Any] = field(default_factory=list)
    layer_names: List[str] = field(default_factory=list)
    layer_index: List[int] = field(default_factory=list)
    # Parameters of the network the optimizer does not train (requires_grad=False, or not given to it) that the
    # layer selection picks: listed in the weight-norm and update-ratio vectors after the trained layers, marked
    # frozen (``frozen_why``: "requires_grad=False" or "not in the optimizer"); they have no gradient.
    frozen_params: List[Any] = field(default_factory=list)
    frozen_names: List[str] = field(default_factory=list)
    frozen_why: List[str] = field(default_factory=list)
    probe_net: Any = None
    cb_params: Any = None
    info: Dict[str, Any] = field(default_factory=dict)
    shared: Dict[str, Any] = field(default_factory=dict)

    @property
    def writer(self):
        return self.pipeline.writer

    @property
    def cell(self):
        return getattr(self.source, "cell", None)

    @property
    def step(self):
        """The last step seen."""
        return self.pipeline.last_step

    def request_stop(self, reason=""):
        self.pipeline.request_stop(reason)

    def not_recorded(self, item, reason):
        """A recorder found at start that ``item`` (see ``coverage.ITEMS``) cannot be recorded: said once in the
        log and in the run info (``not_recorded``) by the run info recorder."""
        self.shared.setdefault("not_recorded", {}).setdefault(item, reason)

    def add_compile_ms(self, ms):
        """One-off time (compiling a monitoring graph) to keep out of the step time: written as core/compile_ms."""
        self.pipeline.compile_ms += float(ms)


class Recorder:
    """Base class of a recorder: every hook does nothing. ``name`` shows in error messages.

    ``item``: the debug item this recorder records (a row of ``tb_plugin_mindspore.contract.debug_items``: its
    name in ``Debug(items=[...])``, its tags, label and axis), or None for a recorder that is not a debug item.

    ``wants_step_begin``: set True to receive ``on_step_begin`` under ``Model.train`` (it costs a Python call per
    step there).
    """

    name = "recorder"
    item = None
    wants_step_begin = False

    def on_start(self, ctx):
        pass

    def on_step_begin(self, step):
        pass

    def on_step(self, record):
        pass

    def on_interval(self, record):
        pass

    def on_point(self, record):
        pass

    def on_anomaly(self, event):
        pass

    def on_end(self, status):
        pass

    def close(self):
        """Releases what the recorder holds (threads); called when the monitor closes, after ``on_end`` or
        without it."""
