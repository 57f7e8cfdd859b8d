"""Step source for mindformers' own training cells (``MFTrainOneStepCell``, ``MFPipelineWithLossScaleCell``).

mindformers' cell already returns, every step, ``(loss, overflow, loss_scale, learning_rate, global_norm)`` and with
its ``local_norm`` option also ``(local_norm, size)``: the sum of squares of every parameter's gradient on this
device (before the all-reduce). :class:`MindFormersSource` reads these outputs instead of computing anything again:

* the step's output tensors are only kept (references) and read together at the next core point, so a step costs
  no host synchronisation of ours;
* the global gradient norm is mindformers' (computed with ``use_clip_grad: True``, before clipping); without it, on
  one device, it is the square root of the sum of the local norms (the same number); otherwise it is not recorded,
  and :meth:`limits` says why;
* per-layer gradient norms (debug tier) and the flight recorder's ring are the square roots of the local norms of
  the tracked layers: the ring keeps references to the last steps' ``local_norm`` outputs, read only when an
  anomaly fires.
"""

import math

import numpy as np

from ..common.util import host_learning_rates, loss_value
from .base import HostInterval

__all__ = ["MindFormersSource", "find_mindformers_cell", "MINDFORMERS_CELLS", "OUTPUT_FIELDS"]

# mindformers' training cells whose outputs this source reads.
MINDFORMERS_CELLS = ("MFTrainOneStepCell", "MFPipelineWithLossScaleCell")
# The outputs of those cells, by position (the last two only with local_norm=True).
OUTPUT_FIELDS = ("loss", "overflow", "loss_scale", "learning_rate", "global_norm", "local_norm", "local_norm_size")
_LOSS, _OVERFLOW, _SCALE, _LR, _NORM, _LOCAL = 0, 1, 2, 3, 4, 5

# Steps whose outputs are kept as they came before they are folded into the interval on the host anyway.
_MAX_KEPT = 256

_NO_GLOBAL = ("mindformers' cell returns no gradient norm as configured: set use_clip_grad: True (with "
              "max_grad_norm) or local_norm: True in its runner_wrapper")
_NO_GLOBAL_DP = ("mindformers' local norms are this device's, taken before the all-reduce, and use_clip_grad is off: "
                 "set use_clip_grad: True (with max_grad_norm) in its runner_wrapper")
_HOW_LOCAL = "set local_norm: True in mindformers' runner_wrapper (its cell then returns every parameter's norm)"


def is_mindformers_cell(cell):
    """One of mindformers' training cells (recognised by class, without importing mindformers)."""
    return any(c.__name__ in MINDFORMERS_CELLS and (c.__module__ or "").startswith("mindformers")
               for c in type(cell).__mro__)


def find_mindformers_cell(network):
    """The first mindformers training cell in ``network`` (itself included), or None."""
    if network is None:
        return None
    if is_mindformers_cell(network):
        return network
    try:
        for _, cell in network.cells_and_names():
            if is_mindformers_cell(cell):
                return cell
    except Exception:
        return None
    return None


def _host(value):
    """A kept output as a float64 numpy array (None stays None)."""
    if value is None:
        return None
    if hasattr(value, "asnumpy"):
        value = value.asnumpy()
    return np.asarray(value, dtype=np.float64).reshape(-1)


def _scalar(value):
    array = _host(value)
    if array is None or array.size == 0:
        return math.nan
    return float(array[0])


class MindFormersSource:
    """Reads a mindformers training cell's outputs (``cb_params.net_outputs``) at core points."""

    kind = "mindformers"

    def __init__(self, cell):
        self.cell = cell
        self.optimizer = getattr(cell, "optimizer", None)
        self.num_lr_groups = None
        self.global_norm_on = bool(getattr(cell, "use_clip_grad", False))
        self.local_norm_on = bool(getattr(cell, "local_norm", False))
        # Data parallel: the local norms are this device's, taken before the all-reduce.
        self.reduced = bool(getattr(cell, "reducer_flag", False))
        self.has_grads = self.global_norm_on or (self.local_norm_on and not self.reduced)
        self._layer_idx = ()
        self._ring = []
        self._ring_count = 0
        self.flight_capacity = 0
        self._reset_interval()
        self._last = None
        self._last_local = None

    def _reset_interval(self):
        self._kept = []
        self._loss = HostInterval()
        self._norm = HostInterval()
        self._overflows = 0
        self._last_loss = math.nan
        self._last_norm = math.nan

    # -- what this source cannot give ------------------------------------------------------------------------------
    def limits(self):
        """``{item: reason}`` for what mindformers' cell, as configured, does not compute."""
        out = {}
        if not self.has_grads:
            out["grad_norm"] = (_NO_GLOBAL_DP if self.local_norm_on else _NO_GLOBAL)
        if not self.local_norm_on:
            reason = "mindformers' cell returns per-parameter gradient norms only with local_norm: True: " + _HOW_LOCAL
            out["layer_grad_norm"] = reason
            out["flight_recorder"] = reason
        out["skip"] = ("on_anomaly='skip' cannot reach inside mindformers' cell: use its own "
                       "use_skip_data_by_global_norm (runner_wrapper) instead")
        return out

    # -- per step --------------------------------------------------------------------------------------------------
    def observe(self, step, outputs):
        if not isinstance(outputs, (tuple, list)) or len(outputs) < 5:
            # Not the layout of mindformers' cell (something wraps it): the loss alone, read now.
            self._kept.append((int(step), outputs, None, None, None))
        else:
            local = outputs[_LOCAL] if len(outputs) > _LOCAL else None
            self._kept.append((int(step), outputs[_LOSS], outputs[_OVERFLOW], outputs[_NORM], local))
            self._last = outputs
            if local is not None:
                self._last_local = local
                if self.flight_capacity:
                    slot = self._ring_count % self.flight_capacity
                    self._ring[slot] = local
                    self._ring_count += 1
        if len(self._kept) >= _MAX_KEPT:
            self._fold()

    def _fold(self):
        for step, loss, overflow, norm, local in self._kept:
            self._last_loss = loss_value(loss)
            self._loss.add(self._last_loss, step=step)
            if overflow is not None and _scalar(overflow) > 0:
                self._overflows += 1
            value = self._grad_norm(norm, local)
            if value is not None:
                self._last_norm = value
                self._norm.add(value, step=step)
        self._kept = []

    def _grad_norm(self, norm, local):
        if self.global_norm_on and norm is not None:
            return _scalar(norm)
        if self.local_norm_on and not self.reduced and local is not None:
            return float(math.sqrt(float(np.sum(_host(local)))))
        return None

    # -- core points -----------------------------------------------------------------------------------------------
    def reset(self):
        self._reset_interval()

    def read(self, record):
        if not self._kept and self._loss.count == 0 and record.outputs is not None:
            self.observe(record.step, record.outputs)
        self._fold()
        record.loss = self._last_loss
        record.loss_interval = self._loss.interval()
        if self.has_grads:
            record.grad_norm = self._last_norm
            record.grad_interval = self._norm.interval()
        last = self._last
        if last is not None:
            record.loss_scale = _scalar(last[_SCALE])
            record.overflow_steps = self._overflows
            if getattr(self.optimizer, "is_group_lr", False):
                record.lrs = tuple(float(v) for v in host_learning_rates(self.optimizer))
            else:
                record.lrs = (_scalar(last[_LR]),)
        if self.local_norm_on and self._last_local is not None:
            record.local_grad_norm = float(math.sqrt(float(np.sum(_host(self._last_local)))))
        self._reset_interval()

    # -- debug tier and flight recorder ----------------------------------------------------------------------------
    def layer_grad_norms(self):
        if not self._layer_idx or self._last_local is None:
            return None
        return np.sqrt(_host(self._last_local)[list(self._layer_idx)]).astype(np.float32)

    def track_layer_grad_norms(self, indices):
        if not self.local_norm_on:
            return False
        self._layer_idx = tuple(int(i) for i in indices)
        return True

    def guard_updates(self, factor, warmup_steps):
        return False

    def track_flight(self, indices, capacity):
        if not indices or not self.track_layer_grad_norms(indices):
            return False
        self.flight_capacity = int(capacity)
        self._ring = [None] * self.flight_capacity
        self._ring_count = 0
        return True

    def flight_ring(self):
        """``(rows float32[capacity, layers], count)`` as ``flight_ring.read_ring`` gives it: the kept steps' local
        norms of the tracked layers (NaN where nothing was kept yet)."""
        if not self.flight_capacity:
            return None
        idx = list(self._layer_idx)
        rows = np.full((self.flight_capacity, max(len(idx), 1)), np.nan, np.float32)
        for slot, local in enumerate(self._ring):
            if local is not None:
                rows[slot, :len(idx)] = np.sqrt(_host(local)[idx])
        return rows, self._ring_count
