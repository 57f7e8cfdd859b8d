"""The flight recorder: per-layer evidence around every anomaly, at near-zero steady cost.

Every step, the training cell (``MonitoredTrainCell``) or ``LoopMonitor``'s compiled statistics put the gradient
norm of every layer into a ring buffer on the device (``flight_ring``: the per-layer norms are the partial sums of
the global norm, so the only extra work is one small scatter). Nothing reaches the host until an anomaly fires
(:meth:`FlightRecorder.on_anomaly`, called by the live health detector, or :meth:`FlightRecorder.check`, the
recorder's own trigger on the kept rows: a non-finite layer gradient or one above 10x its own recent median). Then:

* the kept steps (up to ``steps`` before the anomaly, and those after it up to the detection) are written at
  their real steps as ``debug/flight/layer_grad_norm`` and ``debug/flight/layer_nonfinite`` (1 where that layer's
  gradient held a NaN / Inf at that step, else 0): the layer heatmaps of the debug tier show them;
* the first step and layer where it started (:func:`flight_origin.find_origin`) go into the finding
  (``first_step``, ``layers``) and its message;
* the debug tier is on for the next ``debug_steps`` steps: ``debug/update_ratio`` and ``debug/layer_grad_norm``
  at every step, then back to the user's settings.
"""

import math
import time

import numpy as np

from tb_plugin_mindspore import metadata

from ..common.util import logger
from .flight_origin import MIN_HISTORY, SPIKE_FACTOR, find_origin, ring_rows
from ..cells.layers import Snapshot, UpdateRatio, cached
from .base import Recorder
from ..cells.train_cell import MonitoredLossScaleCell

__all__ = ["FlightRecorder", "DEFAULT_STEPS", "DEFAULT_DEBUG_STEPS", "Window", "parse_flight_steps"]

DEFAULT_STEPS = 100
DEFAULT_DEBUG_STEPS = 50


class Window:
    """Rows of the ring in step order: ``steps`` (int64[n]) and ``norms`` (float32[n, layers])."""

    __slots__ = ("steps", "norms")

    def __init__(self, steps, norms):
        self.steps = steps
        self.norms = norms

    def since(self, step):
        """Index of the first row at ``step`` or later."""
        return int(np.searchsorted(self.steps, step, side="left"))


def _check_steps(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError("%s must be an int >= %d, got %r" % (name, minimum, value))
    return value


def parse_flight_steps(value):
    """The monitors' ``flight_recorder`` option: steps kept before an anomaly (int >= 1), or 0 / None / False for
    off. Returns an int (0 = off); raises ValueError with a one-line message otherwise."""
    if value is None or value is False or (type(value) is int and value == 0):
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("flight_recorder must be an int >= 1 (steps kept before an anomaly) or 0 / None to turn "
                         "it off, got %r" % (value,))
    return value


class FlightRecorder(Recorder):
    """Keeps the last ``steps`` steps of per-layer gradient norms on the device; dumps them when an anomaly fires.

    Args:
      steps: steps kept before an anomaly (K, int >= 1; 100 by default).
      debug_steps: steps after an anomaly with the debug tier on at every step (N, int >= 0; 50 by default).
      spike_factor: a layer gradient norm above this many times its own median over the kept steps before it is a
        spike (> 1; 10 by default).
    """

    name = "flight recorder"

    def __init__(self, steps=DEFAULT_STEPS, debug_steps=DEFAULT_DEBUG_STEPS, spike_factor=SPIKE_FACTOR):
        self.steps = _check_steps("flight steps", steps, 1)
        self.debug_steps = _check_steps("flight debug_steps", debug_steps, 0)
        if (isinstance(spike_factor, bool) or not isinstance(spike_factor, (int, float))
                or not spike_factor > 1 or not math.isfinite(spike_factor)):
            raise ValueError("flight spike_factor must be a finite number > 1, got %r" % (spike_factor,))
        self.spike_factor = float(spike_factor)
        self.dumps = 0
        self._reset()

    def _reset(self):
        self._why_not = None
        self._ctx = None
        self._source = None
        self._names = []
        self._params = []
        self._capacity = 0
        self._since = 0
        self._dumped_until = None        # last step written to the flight tags
        self._checked_until = None       # last step looked at by check()
        self._cores = (None, None)       # the last two core points seen (on_interval)
        self._collect_freq = 1
        self._overflow_ok = False        # a loss-scale cell: non-finite gradients are its skipped overflow steps
        self._boost_until = None         # last step of the debug tier switched on by an anomaly
        self._snapshot = self._ratio = None
        self._snapshot_step = None

    @property
    def active(self):
        return self._source is not None

    def describe(self):
        """For the run info."""
        return {"steps": self.steps, "debug_steps": self.debug_steps, "spike_factor": self.spike_factor,
                "capacity": self._capacity, "active": self.active}

    # -- recorder hooks --------------------------------------------------------------------------------------------
    def on_start(self, ctx):
        on = self.begin(ctx.source, ctx.layer_index, ctx.layer_names, ctx.layer_params, ctx.settings.collect_freq,
                        ctx.step or 0, warn=False)
        if not on and self._why_not:
            ctx.not_recorded("flight_recorder", self._why_not)
        self._ctx = ctx
        ctx.info["flight_recorder"] = self.describe() if on else None

    def on_step(self, record):
        if self._boost_until is not None:
            self.step_end(record.step, self._ctx.writer)

    def on_interval(self, record):
        self._cores = (self._cores[1], int(record.step))
        if self.active and getattr(self._ctx.settings, "live_health", None) is None:
            # Without live health only a non-finite gradient triggers: a single layer's norm jumping 10x its median
            # happens in healthy runs (early steps, a rare batch), and a warning there would be a false alarm.
            event = self.check(record.step, self._ctx.writer, nonfinite_only=True)
            if event is not None:
                logger.warning("tb-mindspore: %s (flight recorder: per-layer evidence written)", event["message"])

    def on_anomaly(self, event):
        event.update(self.anomaly(event, event.get("step", self._ctx.step if self._ctx else 0),
                                  self._ctx.writer if self._ctx else None))

    # -- set up ----------------------------------------------------------------------------------------------------
    def begin(self, source, layer_index, layer_names, layer_params, collect_freq, step, warn=True):
        """Sets up the ring on ``source`` (a ``MonitoredTrainCell``, ``LoopMonitor``'s statistics or mindformers'
        cell outputs) before its first step; room for ``steps`` + ``collect_freq`` steps (an anomaly is seen within
        one collect interval). Returns False (and records nothing) when the source cannot keep it; ``_why_not`` then
        says why when the source itself does not (``warn``: also in the log)."""
        self._reset()
        if source is None or not layer_names or not hasattr(source, "track_flight"):
            return False
        capacity = self.steps + int(collect_freq)
        if not source.track_flight(layer_index, capacity):
            if not getattr(source, "has_grads", True) or "flight_recorder" in getattr(source, "limits", dict)():
                return False          # no gradients to watch: the source's limits say why
            self._why_not = "it needs the training cell before its first step (it is compiled then)"
            if warn:
                logger.warning("tb-mindspore: the flight recorder is off for this run: %s", self._why_not)
            return False
        self._source = source
        self._names = list(layer_names)
        self._params = list(layer_params)
        self._capacity = source.flight_capacity if hasattr(source, "flight_capacity") else capacity
        ring = source.flight_ring()
        self._since = ring[1] if ring is not None else 0
        self._dumped_until = self._checked_until = int(step)
        self._collect_freq = int(collect_freq)
        cell = getattr(source, "cell", source)
        self._overflow_ok = isinstance(cell, MonitoredLossScaleCell)
        return True

    # -- reading ---------------------------------------------------------------------------------------------------
    def window(self, step):
        """The kept rows of this run, oldest first, for the source's state after ``step`` (the current step)."""
        ring, count = self._source.flight_ring()
        rows, back = ring_rows(count, ring.shape[0], self._since)
        return Window(int(step) - back, ring[rows])

    # -- anomalies -------------------------------------------------------------------------------------------------
    def check(self, step, writer=None, nonfinite_only=False):
        """The recorder's own trigger: a finding dict (see :meth:`anomaly`) when a layer gradient went non-finite or
        spiked in the steps since the last check (a layer already non-finite the step before is no new onset), else
        None. Reads the ring (a few KB) once."""
        if not self.active:
            return None
        checked, self._checked_until = self._checked_until, int(step)
        window = self.window(step)
        origin = find_origin(window.norms, self._names, window.since(checked + 1),
                             math.inf if nonfinite_only else self.spike_factor, MIN_HISTORY, self._overflow_ok)
        if origin is None:
            return None
        if origin.cause == "nonfinite" and origin.first > 0:
            columns = [self._names.index(n) for n in origin.bad]
            if not np.isfinite(window.norms[origin.first - 1, columns]).any():
                return None
        first = int(window.steps[origin.first])
        if origin.cause == "nonfinite":
            rule, message = "nonfinite", "non-finite gradient (NaN / Inf) in layer %s since step %d" % (
                origin.layers[0], first)
            advice = ("look at the layer's inputs and weights at that step; lower the learning rate, clip "
                      "gradients (clip_grad_norm=) or use a loss scale")
        else:
            rule, message = "grad_spike", "gradient norm of layer %s jumped to %.3g x its recent median at step %d" % (
                origin.layers[0], origin.ratio, first)
            advice = "clip gradients (clip_grad_norm=) or lower the learning rate; look at the batch of that step"
        event = metadata.health_event(rule, "error" if origin.cause == "nonfinite" else "warning", step, first,
                                      message, advice, origin.layers)
        return self.anomaly(event, step, writer, window)

    def anomaly(self, event, step, writer=None, window=None):
        """An anomaly was detected at ``step``: dumps the kept window, names where it started and turns the debug
        tier on for the next ``debug_steps`` steps.

        ``event``: the health event (``metadata.health_event``) of the detector; returns it with ``first_step`` and
        ``layers`` filled in from the per-layer evidence and the origin added to its message (unchanged without a
        ring). The search starts at the detector's ``first_step`` or the first step of the core interval that ends at
        ``step``, whichever is earlier (the rows before are history only).
        """
        event = dict(event)
        if not self.active:
            return event
        step = int(step)
        if window is None:
            window = self.window(step)
        if writer is not None:
            self._dump(writer, window)
        self._start_boost(step)
        start = window.since(min(int(event.get("first_step", step)), self._interval_start(step)))
        origin = find_origin(window.norms, self._names, start, self.spike_factor, MIN_HISTORY, self._overflow_ok)
        if origin is not None:
            first = int(window.steps[origin.first])
            event["first_step"] = min(first, int(event.get("step", step)))
            event["layers"] = list(origin.layers)
            where = "started in layer %s at step %d (%s%s)" % (
                origin.layers[0], first, "non-finite gradient" if origin.cause == "nonfinite" else
                "gradient norm %.3g x its recent median" % origin.ratio if origin.ratio else "gradient spike",
                ", then %d more layer(s)" % (len(origin.bad) - 1) if len(origin.bad) > 1 else "")
            message = str(event.get("message") or "")
            if where not in message:
                event["message"] = (message + "; " if message else "") + where
        event["flight"] = {"from_step": int(window.steps[0]) if window.steps.size else step, "to_step": step,
                           "debug_until": self._boost_until}
        return event

    def _interval_start(self, step):
        """First step of the core interval that ends at ``step`` (the detector saw the anomaly there, its onset may
        lie anywhere in it)."""
        previous = self._cores[0] if self._cores[1] == step else self._cores[1]
        if previous is None or previous >= step:
            previous = step - self._collect_freq
        return previous + 1

    def _dump(self, writer, window):
        keep = window.steps > self._dumped_until
        if not keep.any():
            return
        wall = time.time()
        for s, row in zip(window.steps[keep].tolist(), window.norms[keep]):
            writer.layers(metadata.FLIGHT_GRAD_NORM_LAYERS, self._names, row, s, wall)
            writer.layers(metadata.FLIGHT_NONFINITE_LAYERS, self._names,
                          (~np.isfinite(row)).astype(np.float32), s, wall)
        self._dumped_until = int(window.steps[keep][-1])
        self.dumps += 1

    # -- the debug tier after an anomaly ---------------------------------------------------------------------------
    def _start_boost(self, step):
        """Debug tier on for the next ``debug_steps`` steps; the weights after ``step`` kept for the first ratio."""
        self._boost_until = step + self.debug_steps if self.debug_steps else None
        self._snapshot_step = None
        if self._boost_until is None or not self._params:
            return
        if self._ratio is None:
            self._snapshot = cached(Snapshot, self._params)
            self._ratio = cached(UpdateRatio, self._params)
        self._snapshot()
        self._snapshot_step = step

    @property
    def boosting(self):
        return self._boost_until is not None

    def step_end(self, step, writer):
        """After every step: while the debug tier is on, the update ratio and layer gradient norms of this step
        (the weights are kept now for the next one; in sink mode the ratio spans the sink). Free otherwise."""
        if self._boost_until is None:
            return
        step = int(step)
        if writer is not None:
            if self._snapshot_step is not None and self._snapshot_step < step and self._ratio is not None:
                ratio, _ = self._ratio()
                writer.layers(metadata.UPDATE_RATIO_LAYERS, self._names, ratio.asnumpy(), step)
            values = self._source.layer_grad_norms()
            if values is not None and len(values) == len(self._names):
                writer.layers(metadata.GRAD_NORM_LAYERS, self._names, values, step)
        if step >= self._boost_until:
            self._boost_until = self._snapshot_step = None
            return
        if self._snapshot is not None:
            self._snapshot()
            self._snapshot_step = step
