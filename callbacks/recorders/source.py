"""Step sources: where the per-step quantities come from, read by name into a :class:`~.base.StepRecord`.

* :class:`CellSource`: a :class:`~tb_mindspore_callbacks.MonitoredTrainCell` (or ``MonitoredLossScaleCell``) in a
  ``Model.train`` network: every step's values are a row of the cell's ring on the device, read every core point
  and folded into the interval on the host.
* :class:`LoopSource`: a hand-written loop; :class:`LoopStats` runs the same gradient statistics as one compiled
  call per step (:class:`LoopUpdate`: with the optimizer, in GRAPH_MODE ``LoopMonitor.update``); the loss is kept
  on the host.
* :class:`HostSource`: no monitored cell: the loss read from the step outputs on the host, the learning rate
  recomputed from the optimizer; no gradient norm.

Each source has ``cell`` (what holds the device statistics, or None), ``optimizer``, ``num_lr_groups``,
``has_grads``, ``observe(step, outputs)`` (per-step host work), ``read(record)`` (fills the core fields and starts a new
interval), ``reset()``, ``layer_grad_norms()``, ``track_layer_grad_norms(indices)``, ``guard_updates(factor,
warmup_steps)``, and for the flight recorder ``track_flight(indices, capacity)`` / ``flight_ring()``.
"""

import math

import numpy as np

import mindspore as ms
from mindspore import nn, ops

from ..common.util import host_learning_rates, loss_value, loss_values
from ..cells.flight_ring import newest_rows, read_ring, ring_parameters, ring_write
from ..cells.train_cell import MonitoredLossScaleCell, grad_norms, norm_plan
from .base import HostInterval, Interval

__all__ = ["CellSource", "LoopSource", "HostSource", "LoopStats", "LoopUpdate", "parameter_table"]


def parameter_table(source):
    """``(params, names)``: every trained parameter of the step source in the order of its gradients, and its name.
    A source with its own table (a torch-style loop: ``named_parameters()`` names) gives it; otherwise the
    optimizer's parameters by ``p.name`` (none without an optimizer)."""
    table = getattr(source, "table", None)
    if table is not None:
        return list(table.params), list(table.names)
    opt = getattr(source, "optimizer", None)
    if opt is None:
        return [], []
    params = list(opt.parameters)
    return params, [p.name for p in params]


class CellSource:
    """Reads a MonitoredTrainCell (``cell``) at core points: the rows its step ring holds since the last read, each
    at its step (the last row is the current step), folded into the loss and gradient-norm intervals on the host.
    Should more steps than the ring holds run between two core points, it is read before it would wrap (at a step
    end; in a sink longer than the ring, the sink's earliest rows are gone: ``reserve`` sizes the ring first)."""

    kind = "monitored_cell"
    has_grads = True
    has_lr = True

    def __init__(self, cell):
        self.cell = cell
        self.optimizer = cell.optimizer
        self.num_lr_groups = getattr(cell, "num_lr_groups", None)
        self._read = 0                   # the cell's rows folded so far (its count then)
        self._pending = 0                # steps since then, as the step ends said
        self._last_step = None
        self._last = None                # {column: value} of the newest row read
        self._clear()

    def _clear(self):
        self._loss, self._grad = HostInterval(), HostInterval()
        self._skipped, self._first_skipped, self._overflow = 0, None, 0

    def limits(self):
        if not isinstance(self.cell, MonitoredLossScaleCell):
            return {}
        return {"skip": "a loss-scale cell already leaves out the update of a step with non-finite gradients (an "
                        "overflow); other spikes are not skipped there"}

    def reserve(self, steps):
        """Room in the cell's ring for ``steps`` steps between two reads (before its first step only)."""
        return self.cell.reserve_steps(steps)

    def observe(self, step, outputs):
        step = int(step)
        ran = 1 if self._last_step is None else max(1, step - self._last_step)   # a sink runs many steps
        self._pending += ran
        self._last_step = step
        if self._pending + ran > self.cell.tbms_steps.shape[0]:
            self._fold(step)        # as many steps again would overwrite rows not read yet

    def _fold(self, step):
        """Folds the rows written since the last read into the intervals; ``step`` is the newest row's step."""
        rows, count = self.cell.step_rows()
        self._pending = 0
        new, self._read = count - self._read, count
        kept = newest_rows(rows, count, new).astype(np.float64)
        if not len(kept):
            return
        columns = self.cell.step_columns
        col = {name: i for i, name in enumerate(columns)}
        first = int(step) - len(kept) + 1
        for k, row in enumerate(kept):
            at = first + k
            self._loss.add(float(row[col["loss"]]), step=at)
            self._grad.add(float(row[col["grad_norm"]]), step=at)
        if "skipped" in col:
            skipped = np.flatnonzero(kept[:, col["skipped"]] > 0.5)
            if skipped.size:
                self._skipped += int(skipped.size)
                if self._first_skipped is None:
                    self._first_skipped = first + int(skipped[0])
        if "overflow" in col:
            self._overflow += int(np.count_nonzero(kept[:, col["overflow"]] > 0.5))
        self._last = dict(zip(columns, kept[-1].tolist()))

    def reset(self):
        self._read = self.cell.steps_written()
        self._pending, self._last_step = 0, None
        self._clear()

    def read(self, record):
        self._fold(record.step)
        last = self._last or {}
        record.loss = float(last.get("loss", math.nan))
        record.grad_norm = float(last.get("grad_norm", math.nan))
        record.lrs = tuple(float(last.get("lr%d" % i, math.nan)) for i in range(self.cell.num_lr_groups))
        record.loss_interval = self._loss.interval()
        record.grad_interval = self._grad.interval()
        local = getattr(self.cell, "local_grad_norm", None)
        record.local_grad_norm = local() if local is not None else None
        if "loss_scale" in last:
            record.loss_scale, record.overflow_steps = float(last["loss_scale"]), self._overflow
        if "skipped" in self.cell.step_columns:
            record.skipped_updates = self._skipped
            record.first_skipped_step = self._first_skipped
        self._clear()

    def layer_grad_norms(self):
        return self.cell.layer_grad_norms()

    def track_layer_grad_norms(self, indices):
        return self.cell.track_layer_grad_norms(indices)

    def guard_updates(self, factor, warmup_steps):
        return self.cell.guard_updates(factor, warmup_steps)

    def track_flight(self, indices, capacity):
        fn = getattr(self.cell, "track_flight", None)
        return fn(indices, capacity) if fn is not None else False

    def flight_ring(self):
        fn = getattr(self.cell, "flight_ring", None)
        return fn() if fn is not None else None


_NO_CELL = ("the training network has no MonitoredTrainCell, so the gradient norm (its spike-preserving statistics "
            "of every step, per-layer norms and the flight recorder's ring) is not computed; wrap your network in one "
            "line: `train_net = MonitoredTrainCell.wrap(net, loss_fn, optimizer)` and train `Model(train_net)` "
            "(from tb_mindspore_callbacks import MonitoredTrainCell)")


class HostSource:
    """No monitored cell: the loss from the step outputs (one host read per step), the LR from the optimizer."""

    kind = "host"
    cell = None
    num_lr_groups = None
    has_grads = False

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.has_lr = optimizer is not None
        self._loss = HostInterval()
        self._last = math.nan

    def limits(self):
        return {item: _NO_CELL for item in ("grad_norm", "layer_grad_norm", "flight_recorder", "skip")}

    def observe(self, step, outputs):
        self._last = loss_value(outputs)
        self._loss.add(self._last, step=step)

    def reset(self):
        self._loss.reset()

    def read(self, record):
        if self._loss.count == 0:
            self.observe(record.step, record.outputs)
        record.loss = self._last
        record.loss_interval = self._loss.interval()
        self._loss.reset()
        record.lrs = tuple(host_learning_rates(self.optimizer)) if self.optimizer is not None else ()

    def layer_grad_norms(self):
        return None

    def track_layer_grad_norms(self, indices):
        return False

    def guard_updates(self, factor, warmup_steps):
        return False

    def track_flight(self, indices, capacity):
        return False

    def flight_ring(self):
        return None


class LoopStats(nn.Cell):
    """The gradient statistics of a hand-written loop on the device: each step's global gradient norm and the
    tracked layers' norms written as one row of a ring (``tbms_loop_flight``: column 0 the global norm, then the
    layers; ``tbms_loop_flight_count`` the rows written so far). One small write a step; the interval (min, max,
    mean, counts, the steps of the first non-finite value and of the maximum) is folded from the ring's rows on the
    host at the next core point (:class:`LoopSource`), and the flight recorder reads the layers' columns. The loss is
    kept on the host.

    ``capacity``: the ring's rows (at least the steps of one collect interval; the flight recorder asks for more).
    """

    def __init__(self, grad_shapes, capacity=1):
        super().__init__(auto_prefix=False)
        self._has_grads = grad_shapes is not None
        self._shapes = list(grad_shapes) if self._has_grads else []
        self._norm_plan = norm_plan(self._shapes) if self._has_grads else ((), None)
        self._layer_idx = ()
        self.flight_capacity = 0
        self.capacity = 0
        self.make_ring(max(1, int(capacity)))

    def make_ring(self, capacity):
        """A new ring of ``capacity`` rows, one column for the global norm and one per tracked layer (before the
        first step only: it is compiled then)."""
        self.capacity = int(capacity)
        self.tbms_flight, self.tbms_flight_count = ring_parameters(self.capacity, 1 + len(self._layer_idx),
                                                                   "tbms_loop_flight")

    @ms.jit
    def construct(self, grads):
        return self.record(grads)

    def record(self, grads):
        """Writes one step's row into the ring; returns a token. In the graph."""
        grad_norm, layer = grad_norms(grads, self._norm_plan)
        row = grad_norm.reshape((1,))
        if self._layer_idx:
            row = ops.concat((row, layer))
        return ring_write(self.tbms_flight, self.tbms_flight_count, row)


class LoopUpdate(nn.Cell):
    """``optimizer(grads)`` and the gradient statistics of :class:`LoopStats` as one compiled call (GRAPH_MODE):
    what ``LoopMonitor.update`` runs, so that a monitored loop launches no graph of its own per step."""

    def __init__(self, optimizer, stats):
        super().__init__(auto_prefix=False)
        self.optimizer = optimizer
        self.stats = stats

    @ms.jit
    def construct(self, grads):
        out = self.optimizer(grads)           # first in program order: the update never waits for the statistics
        # Only the ring's token comes back: the optimizer's success flag per parameter would be as many outputs made
        # into Python objects on every call, which nobody reads (0.05-0.4 ms a call on the demo transformer).
        return ops.depend(self.stats.record(grads), out)


def _first(loss):
    """The loss itself out of ``value_and_grad(..., has_aux=True)``'s ``(loss, aux...)``."""
    while isinstance(loss, (tuple, list)) and loss:
        loss = loss[0]
    return loss


# Losses kept as they came (device tensors are read together at the next core point) before they are folded into
# the interval on the host anyway, so that a very long collect interval keeps a bounded list.
_MAX_KEPT_LOSSES = 256


_NO_GRADS = "the loop gives no gradients: call mon.step(loss, grads)"
_CLEARED = ("the parameters' gradients were empty when mon.step(loss) read them: call it before "
            "optimizer.zero_grad(), or pass the gradients (mon.step(loss, grads))")


class LoopSource:
    """A hand-written loop: per step the gradients (:meth:`update`, or :meth:`apply` with the optimizer) and the
    loss (:meth:`update`).

    The gradient norms are computed on the device, one ring row a step (:class:`LoopStats`); the loss is only kept
    (a reference to its tensor). Both are read at the next core point and folded into the interval there, so a step
    costs no host synchronisation and no compiled call for the loss.

    ``optimizer`` is a ``mindspore.nn.Optimizer`` or None; ``table`` (a ``torch_style.ParamTable``) describes a
    torch-style model instead: its parameters, their ``named_parameters()`` names and its learning rates.
    ``capacity``: the ring's rows, at least the steps between two core points (``collect_freq``); should more steps
    than that pass unread (gradients given without a core point), the ring is folded before it would wrap.
    """

    kind = "loop"

    def __init__(self, optimizer, grad_shapes, table=None, capacity=1):
        self.optimizer = optimizer
        self.table = table
        self.cell = LoopStats(grad_shapes, capacity)
        self.num_lr_groups = None
        self.has_lr = optimizer is not None or (table is not None and table.has_lr)
        self.mismatch = None            # why the gradients given cannot be matched to the parameters
        if table is not None and grad_shapes is not None:
            shapes = [tuple(p.shape) for p in table.params]
            if [tuple(s) for s in grad_shapes] != shapes:
                self.mismatch = ("the %d gradients given do not match the %d parameters in order and shape (give "
                                 "them in the order of the optimizer's param_groups, or param_names= in their "
                                 "order)" % (len(grad_shapes), len(shapes)))
        self.cleared = False            # mon.step(loss) found the parameters' gradients cleared
        self._lrs = None                # learning rates noted before the optimizer step (torch style)
        self._started = False
        self._update = None
        self._recorded = False
        self._losses = []
        self._loss = HostInterval()
        self._last_loss = math.nan
        self._grad = HostInterval()      # the gradient norm's interval, folded from the ring
        self._last_grad = math.nan
        self._row_steps = []             # the step of each ring row written since the last fold
        self._written = 0                # ring rows written so far (the device's count, known on the host)
        self._ring = None                # (written, ring, count) of the last read of the ring
        self._steps = 0
        self._skipped = 0
        self._first_skipped = None

    def limits(self):
        if not self.cell._has_grads:
            why = _CLEARED if self.cleared else _NO_GRADS
            return {item: why for item in ("grad_norm", "layer_grad_norm", "flight_recorder")}
        if self.mismatch:
            return {"layer_grad_norm": self.mismatch, "flight_recorder": self.mismatch}
        return {}

    def note_lrs(self):
        """Torch style: the learning rates now, before the optimizer step (a scheduler stepped after it changes
        them for the next step)."""
        if self.table is not None and self.table.has_lr:
            self._lrs = self.table.lrs()

    def _learning_rates(self):
        if self.optimizer is not None:
            return tuple(float(v) for v in host_learning_rates(self.optimizer))
        if self.table is not None and self.table.has_lr:
            lrs, self._lrs = self._lrs, None
            return lrs if lrs is not None else self.table.lrs()
        return ()

    # the statistics cell under its old name (kept for code that reached it as ``source.stats``)
    @property
    def stats(self):
        return self.cell

    @property
    def has_grads(self):
        """False when the loop gives no gradients (``step(loss)`` only): no gradient norm is written then."""
        return self.cell._has_grads

    def observe(self, step, outputs):
        pass

    def apply(self, grads, on_error, step=None):
        """``optimizer(grads)`` with step ``step``'s gradient statistics in the same compiled call (GRAPH_MODE). When
        that call cannot be compiled, ``on_error`` is called (inside the ``except``) and the optimizer runs alone
        from then on (the statistics then in :meth:`update`)."""
        if self._update is None:
            self._update = LoopUpdate(self.optimizer, self.cell) if self.cell._has_grads and grads else False
        if self._update is not False:
            self._started = True
            try:
                self._before_write()
            except Exception:
                on_error()
            try:
                self._update(ms.mutable(tuple(grads)))
                self._wrote(step)
                self._recorded = True
                return
            except Exception:
                self._update = False
                on_error()
        self.optimizer(grads)

    def _before_write(self):
        """Folds the ring's unread rows now if the next write would overwrite one (more steps than its capacity
        since the last core point: never with the defaults, where it holds a whole collect interval)."""
        if len(self._row_steps) >= self.cell.capacity:
            self._fold_grads()

    def _wrote(self, step):
        self._written += 1
        self._row_steps.append(None if step is None else int(step))

    def update(self, step, loss, grads):
        """Step ``step``'s loss and, unless :meth:`apply` recorded them, its gradients."""
        self._steps += 1
        self._losses.append((int(step), _first(loss)))
        if len(self._losses) >= _MAX_KEPT_LOSSES:
            self._fold_losses()
        if self._recorded:
            self._recorded = False
        elif grads and self.cell._has_grads:
            self._started = True
            self._before_write()
            # A tuple of Tensors reaching a compiled function is taken as a constant (and compiled again for every
            # new value); mutable() makes it a variable.
            self.cell(ms.mutable(tuple(grads)))
            self._wrote(step)
        if self._row_steps and self._row_steps[-1] is None:
            # Rows written by apply() before their step was known take this one.
            self._row_steps = [int(step) if s is None else s for s in self._row_steps]

    def _fold_losses(self):
        for (step, _), value in zip(self._losses, loss_values([v for _, v in self._losses])):
            self._last_loss = value
            self._loss.add(value, step=step)
        self._losses = []

    def note_skipped(self, step):
        """An update the loop did not apply (``LoopMonitor.update``), counted into the next core point."""
        self._skipped += 1
        if self._first_skipped is None:
            self._first_skipped = int(step)

    def _read_ring(self):
        """``(ring, count)`` copied to the host: two host reads, once per ring state (a core point and the
        recorders reading the layers at the same step share them)."""
        if self._ring is None or self._ring[0] != self._written:
            ring, count = read_ring(self.cell.tbms_flight, self.cell.tbms_flight_count)
            self._ring = (self._written, ring, count)
        return self._ring[1], self._ring[2]

    def _fold_grads(self):
        """The ring's rows written since the last fold into the gradient norm's interval, at their steps."""
        steps, self._row_steps = self._row_steps, []
        if not steps:
            return
        ring, count = self._read_ring()
        kept = newest_rows(ring, count, len(steps))
        for row, step in zip(kept, steps[len(steps) - len(kept):]):
            self._last_grad = float(row[0])
            self._grad.add(self._last_grad, step=step)

    def reset(self):
        self.read(None)

    def read(self, record):
        self._fold_losses()
        self._fold_grads()
        loss, self._loss = self._loss, HostInterval()
        grad, self._grad = self._grad, HostInterval()
        steps, self._steps = self._steps, 0
        skipped, first_skipped, self._skipped, self._first_skipped = self._skipped, self._first_skipped, 0, None
        if record is None:
            return
        record.loss = self._last_loss
        record.loss_interval = loss.interval()
        if self.cell._has_grads and grad.count > 0:
            record.grad_norm = self._last_grad
            record.grad_interval = grad.interval()
        # else no gradient was given in this interval: no gradient norm is written (the run info says why when the
        # loop never gives any), rather than a NaN that would read as a non-finite gradient.
        record.lrs = self._learning_rates()
        record.skipped_updates, record.first_skipped_step = skipped, first_skipped

    def layer_grad_norms(self):
        if not self.cell._layer_idx:
            return None
        ring, count = self._read_ring()
        if count < 1:
            return np.full((len(self.cell._layer_idx),), np.nan, np.float32)
        return ring[(count - 1) % ring.shape[0], 1:].copy()

    def track_layer_grad_norms(self, indices):
        indices = tuple(int(i) for i in indices)
        stats = self.cell
        if indices == stats._layer_idx:
            return True
        if self._started or not stats._has_grads or self.mismatch:
            return False
        stats._layer_idx = indices
        stats._norm_plan = norm_plan(stats._shapes, indices)
        stats.make_ring(stats.capacity)
        self._ring = None
        return True

    def guard_updates(self, factor, warmup_steps):
        return True       # the loop's guard is LoopMonitor.update (host side)

    def track_flight(self, indices, capacity):
        """The flight recorder's ring of per-layer gradient norms (see ``MonitoredTrainCell.track_flight``)."""
        stats = self.cell
        if stats.flight_capacity >= capacity and tuple(indices) == stats._layer_idx:
            return True
        if not indices or not self.track_layer_grad_norms(indices):
            return False
        if stats.capacity < capacity:
            stats.make_ring(capacity)
            self._ring = None
        stats.flight_capacity = stats.capacity
        return True

    def flight_ring(self):
        """The layers' columns of the ring and the rows written so far."""
        if not self.cell.flight_capacity:
            return None
        ring, count = self._read_ring()
        return ring[:, 1:].copy(), count

    def loss_scale_state(self):
        return None
