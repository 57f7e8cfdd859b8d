"""A training cell that makes the gradient norm, the applied learning rate and every step's values visible.

MindSpore callbacks never see gradients (``Parameter`` has no ``.grad``) and cannot read the learning rate the
optimizer applied without recomputing it. :class:`MonitoredTrainCell` is a drop-in for ``nn.TrainOneStepCell``
that computes, inside the compiled step:

* the global L2 norm of all gradients before clipping, in one fused reduction over every gradient;
* the learning rate the optimizer applies at this step (one value per parameter group with its own LR);

and writes them with the loss as one row of a ring on the device (``tbms_steps``, columns :attr:`step_columns`;
``flight_ring``), with the tracked layers' gradient norms as a row of a second ring (``tbms_layers``) when asked
for. Nothing is copied to the host in between: ``TrainMonitor`` reads the ring at its core points and folds the
rows since the last one into the interval statistics (finite min, max, mean, counts, the steps of the first
non-finite value and of the maximum) on the host, so a spike or a NaN between two recorded points is kept.

A ring write is a few kernels where running statistics in the graph were about fifty: on a CPU, MindSpore runs a
graph of at most 100 kernels without control flow on the calling thread once it measured that faster
(``kSingleThreadExecutionActorMaxNum`` in its graph scheduler), and any larger graph on its actor threads, which
on a small model costs more than the model's own step. The monitored step of a small model stays under that line.

The Parameters' names start with ``tbms_`` and none is trainable; the step still returns only the loss, so every
other callback (``LossMonitor``, checkpoints, ...) keeps working.
"""

import math

import numpy as np

import mindspore as ms
from mindspore import nn, ops, Parameter, Tensor
from mindspore.ops import composite as C

from ..common.util import lr_groups
from .flight_ring import read_count, read_ring, ring_parameters, rings_write
from ..common.model_kinds import not_a_cell

__all__ = ["MonitoredTrainCell", "MonitoredLossScaleCell", "lr_groups", "STEP_RING_ROWS", "MAX_STEP_RING_ROWS"]

# Rows of the step ring a cell starts with: the steps between two core points with collect_freq up to 64 (TrainMonitor
# asks for more before the first step when its collect interval or a sink is longer; later the monitor reads the ring
# before it would wrap).
STEP_RING_ROWS = 64
# The most rows a monitor may ask for (a sink of that many steps; 5 columns: 1.3 MB).
MAX_STEP_RING_ROWS = 1 << 16

_square_sum = C.MultitypeFuncGraph("tbms_square_sum")


@_square_sum.register("Tensor")
def _square_sum_tensor(grad):
    if grad.dtype != ms.float32:
        grad = ops.cast(grad, ms.float32)
    return ops.reduce_sum(grad * grad)


_unscale_grad = C.MultitypeFuncGraph("tbms_unscale_grad")


@_unscale_grad.register("Tensor", "Tensor")
def _unscale_grad_tensor(scale, grad):
    return grad * ops.cast(ops.reciprocal(scale), grad.dtype)


_scale_grad = C.MultitypeFuncGraph("tbms_scale_grad")


@_scale_grad.register("Tensor", "Tensor")
def _scale_grad_tensor(scale, grad):
    return grad * ops.cast(scale, grad.dtype)


# Large gradients that no row width divides are packed into groups of at most this many elements (a few large
# reductions instead of one slow whole-tensor reduction each), so that the extra memory of a group's concatenation
# stays bounded (16 MiB of float32).
NORM_GROUP_ELEMENTS = 1 << 22
# Widest row of the reductions (see norm_plan), and the share of zero padding allowed in a packed group.
NORM_ROW_WIDTH = 4096
_MAX_PADDING = 0.25
# A parameter of at least this many elements is squared and summed by rows where it lies (no copy into a group),
# when a row width of at least NORM_MIN_ALONE_WIDTH divides its size: copying it would cost more than the two
# kernels of its own (on a CPU, the concatenation of a 10M-parameter model's gradients cost about as much as their
# squares and sums together).
NORM_ALONE_ELEMENTS = 1 << 16
NORM_MIN_ALONE_WIDTH = 256
# A matrix whose rows are 256 to this many elements wide is summed along its own rows (a reshape is a kernel of its
# own on a CPU, and every kernel counts towards MindSpore's single-thread limit: see the module doc).
NORM_OWN_ROW_WIDTH = 16384

# A parameter smaller than this is summed alone by MindSpore's L2Loss kernel (one kernel, single pass, no copy):
# on a CPU the cheapest reduction there is for a small tensor, and its float32 running sum stays within a few 1e-6
# of the exact norm below this size (it drifts to 4e-5 at 256K elements and 3e-4 at 1M, where the row sums stay
# exact to 1e-7).
NORM_EACH_ELEMENTS = NORM_ALONE_ELEMENTS

# Kinds of the pieces of a plan (see norm_plan).
PIECE_PACKED, PIECE_ROWS, PIECE_WHOLE, PIECE_EACH = 0, 1, 2, 3

_l2_loss = ops.L2Loss()


def _row_width(sizes):
    """The widest power of two (at most NORM_ROW_WIDTH) for which starting every parameter on a row adds at most
    a quarter of zero padding."""
    total = max(sum(sizes), 1)
    width = NORM_ROW_WIDTH
    while width > 1:
        if sum(-n % width for n in sizes) <= _MAX_PADDING * total:
            break
        width //= 2
    return width


def _divisor_width(n):
    """The largest row width (at most NORM_ROW_WIDTH) that divides ``n``."""
    for width in range(min(n, NORM_ROW_WIDTH), 0, -1):
        if n % width == 0:
            return width
    return 1


def norm_plan(shapes, indices=(), limit=NORM_GROUP_ELEMENTS):
    """``(groups, order)``: how :func:`square_sums` takes the sum of squares of every gradient in a few kernels.

    A parameter of fewer than ``NORM_EACH_ELEMENTS`` elements is summed alone by one ``L2Loss`` kernel (a
    ``PIECE_EACH`` piece holds them all: one row each). A larger one's squares are summed by rows, and one segment
    sum over all the rows (a few thousand values) gives each parameter's sum. A parameter of at least
    ``NORM_ALONE_ELEMENTS`` whose size a row width of at least ``NORM_MIN_ALONE_WIDTH`` divides is viewed as rows
    where it lies (a ``PIECE_ROWS`` piece: two kernels, no copy; a matrix with rows of ``NORM_MIN_ALONE_WIDTH`` to
    ``NORM_OWN_ROW_WIDTH`` elements by its own rows, no reshape).
    The other large ones are packed, in order, into groups of at most ``limit`` elements (``PIECE_PACKED``): the
    members of a group are concatenated into one vector in which each starts a row of ``width`` elements (zero
    padding after it), squared and summed along the rows (three kernels per group whatever the number of
    parameters). One that fits neither (larger than ``limit``, no row width divides it) is reduced whole
    (``PIECE_WHOLE``).

    ``groups`` is ``(pieces, ids, count)``: ``pieces`` a tuple of ``(kind, members, sizes, pads, width)``, ``ids``
    (int32 Tensor; an empty tuple when those rows are the parameters themselves, in order; None when no parameter
    has an element) the parameter of each row of the pieces' rows concatenated in order, ``count`` the number of
    parameters. ``order`` (int32 Tensor, or None when ``indices`` is empty) picks ``indices`` out of the
    per-parameter sums.
    """
    sizes = [int(np.prod(shape)) if len(shape) else 1 for shape in shapes]
    alone = {}
    for i, n in enumerate(sizes):
        if n >= NORM_ALONE_ELEMENTS:
            shape = tuple(shapes[i])
            if len(shape) == 2 and NORM_MIN_ALONE_WIDTH <= shape[1] <= NORM_OWN_ROW_WIDTH:
                alone[i] = int(shape[1])       # a matrix summed along its own rows: not even a reshape
                continue
            width = _divisor_width(n)
            if width >= NORM_MIN_ALONE_WIDTH:
                alone[i] = width
    each = [i for i, n in enumerate(sizes) if i not in alone and 0 < n < NORM_EACH_ELEMENTS]
    packs, current, size = [], [], 0
    for i, n in enumerate(sizes):
        if i in alone or not n or n < NORM_EACH_ELEMENTS:
            continue
        if current and size + n > limit:
            packs.append(current)
            current, size = [], 0
        current.append(i)
        size += n
    if current:
        packs.append(current)
    pieces, ids = [], []
    for i, width in sorted(alone.items()):
        pieces.append((PIECE_ROWS, (i,), (sizes[i],), (0,), width))
        ids.append(np.full((sizes[i] // width,), i, np.int32))
    if each:
        pieces.append((PIECE_EACH, tuple(each), tuple(sizes[i] for i in each), (0,) * len(each), 0))
        ids.append(np.array(each, np.int32))
    for members in packs:
        member_sizes = [sizes[i] for i in members]
        if len(members) == 1 and member_sizes[0] > limit:
            pieces.append((PIECE_WHOLE, tuple(members), tuple(member_sizes), (0,), 0))
            ids.append(np.full((1,), members[0], np.int32))
            continue
        width = _row_width(member_sizes)
        pads = tuple(-n % width for n in member_sizes)
        pieces.append((PIECE_PACKED, tuple(members), tuple(member_sizes), pads, width))
        ids.extend(np.full(((n + pad) // width,), i, np.int32) for i, n, pad in zip(members, member_sizes, pads))
    ids = np.concatenate(ids) if ids else None
    if ids is not None and np.array_equal(ids, np.arange(len(sizes))):
        ids = ()                # the pieces' rows are the parameters' sums already, in order: no segment sum
    elif ids is not None:
        ids = Tensor(ids)
    order = Tensor(np.array(indices, np.int32).reshape(-1)) if len(indices) else None
    return (tuple(pieces), ids, len(sizes)), order


def _float32(grad):
    return grad if grad.dtype == ms.float32 else ops.cast(grad, ms.float32)


def square_sums(grads, groups):
    """float32[parameters]: the sum of squares of each of ``grads``, in order (``groups`` from :func:`norm_plan`).
    In the graph."""
    pieces, ids, count = groups
    if ids is None:
        return ops.zeros((count,), ms.float32)
    rows = []
    for kind, members, sizes, pads, width in pieces:
        if kind == PIECE_ROWS:
            view = _float32(grads[members[0]])
            if len(view.shape) != 2 or view.shape[1] != width:
                view = view.reshape((-1, width))
            rows.append(ops.reduce_sum(view * view, 1))
        elif kind == PIECE_WHOLE:
            rows.append(_square_sum(grads[members[0]]).reshape((1,)))
        elif kind == PIECE_EACH:
            # L2Loss is half the sum of squares; doubled once for the whole piece. A loop, not a list
            # comprehension: MindSpore compiles a comprehension about 0.17 s slower (a 4-tensor network's norms,
            # 2-core CPU), in every graph that takes these sums.
            halves = []
            for i in members:
                halves.append(_l2_loss(_float32(grads[i])))
            rows.append(ops.stack(halves) * 2.0)
        else:
            parts = []
            for k in range(len(members)):
                if sizes[k]:
                    parts.append(_float32(grads[members[k]]).reshape(-1))
                if pads[k]:
                    parts.append(ops.zeros((pads[k],), ms.float32))
            flat = parts[0] if len(parts) == 1 else ops.concat(parts)
            rows.append(ops.reduce_sum((flat * flat).reshape((-1, width)), 1))
    rows = rows[0] if len(rows) == 1 else ops.concat(rows)
    if isinstance(ids, tuple):
        return rows
    return ops.unsorted_segment_sum(rows, ids, count)


def global_norm(grads, plan):
    """The global L2 norm of ``grads`` (``plan`` from :func:`norm_plan`). In the graph."""
    return ops.sqrt(ops.reduce_sum(square_sums(grads, plan[0])))


def grad_norms(grads, plan):
    """``(global_norm, layer_norms)`` of ``grads`` in one pass over them (``plan`` from :func:`norm_plan`; the
    layer norms are those of its ``indices``, None without them). In the graph."""
    groups, order = plan
    sums = square_sums(grads, groups)
    total = ops.sqrt(ops.reduce_sum(sums))
    if order is None:
        return total, None
    return total, ops.sqrt(ops.gather(sums, order, 0))


def _scalar(value):
    """``value`` as a 0-d float32 tensor, with no kernel for what already is one (a cast to the same type and a
    reshape to the same shape are left out of the graph). In the graph."""
    if value.dtype != ms.float32:
        value = ops.cast(value, ms.float32)
    if value.shape != ():
        value = value.reshape(())
    return value


def guard_update(guard, grad_norm, factor, warmup):
    """``(ok, new guard)``: whether to apply this step's update, and the guard state after it.

    ``guard`` = [running max of applied gradient norms, applied steps]. A step is skipped when its gradient norm is
    non-finite, or, after ``warmup`` applied steps, ``factor`` times the running max (Megatron-LM's and our
    ``grad_explosion`` rule's 10x); the step ring's ``skipped`` column says which. In the graph.
    """
    finite = ops.isfinite(grad_norm)
    spike = ops.logical_and(guard[1] >= warmup, grad_norm > factor * guard[0])
    ok = ops.logical_and(finite, ops.logical_not(spike))
    state = ops.stack((
        ops.select(ok, ops.maximum(guard[0], grad_norm), guard[0]),
        guard[1] + ops.select(ok, ops.ones_like(grad_norm), ops.zeros_like(grad_norm)),
    ))
    return ok, state


def _check_network(what, network, needed="a mindspore.nn.Cell"):
    """A one-line TypeError naming what was given and what to use instead, unless ``network`` is a Cell."""
    if not isinstance(network, nn.Cell):
        raise TypeError(not_a_cell(what, network, needed))


def _check_args(name, optimizer, clip_grad_norm, network=None):
    if network is not None:
        _check_network("%s's network_with_loss" % name, network, "a mindspore.nn.Cell that returns the loss")
    if not isinstance(optimizer, nn.Optimizer):
        raise TypeError(not_a_cell(name, optimizer, "a mindspore.nn.Optimizer"))
    if clip_grad_norm is not None:
        if (isinstance(clip_grad_norm, bool) or not isinstance(clip_grad_norm, (int, float))
                or not clip_grad_norm > 0 or not math.isfinite(clip_grad_norm)):
            raise ValueError("clip_grad_norm must be a positive number or None, got %r" % (clip_grad_norm,))


def _check_wrap(cls, network, loss_fn, optimizer):
    what = "%s.wrap" % cls.__name__
    _check_network(what, network)
    _check_network("%s's loss_fn" % what, loss_fn, "a mindspore.nn.Cell loss (e.g. nn.CrossEntropyLoss())")
    if not isinstance(optimizer, nn.Optimizer):
        raise TypeError(not_a_cell(what, optimizer, "a mindspore.nn.Optimizer"))


class MonitoredTrainCell(nn.TrainOneStepCell):
    """``nn.TrainOneStepCell`` plus the gradient norm and the applied learning rate, every step's values kept in a ring
    on the device (see the module doc).

    Args:
      network_with_loss: a cell that returns the loss (e.g. ``nn.WithLossCell(net, loss_fn)``).
      optimizer: a ``mindspore.nn.Optimizer``.
      sens: scale of the backpropagated gradient (as in ``TrainOneStepCell``).
      clip_grad_norm: if set (> 0), gradients are scaled so their global norm is at most this value; the recorded
        gradient norm is the one before clipping.

    Outputs: the loss, exactly like ``TrainOneStepCell``.

    Use :meth:`wrap` for the usual one-liner::

        train_net = MonitoredTrainCell.wrap(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True), opt)
        Model(train_net).train(epochs, dataset, callbacks=[TrainMonitor(make_run_dir())])
    """

    def __init__(self, network_with_loss, optimizer, sens=1.0, clip_grad_norm=None):
        if sens is None:
            sens = 1.0
        if isinstance(sens, bool) or not isinstance(sens, (int, float)) or sens == 0 or not math.isfinite(sens):
            raise ValueError("sens must be a finite non-zero number, got %r" % (sens,))
        _check_args(type(self).__name__, optimizer, clip_grad_norm, network_with_loss)
        nn.TrainOneStepCell.__init__(self, network_with_loss, optimizer, sens=float(sens))
        self._setup_monitoring(optimizer, float(sens), clip_grad_norm)

    def _setup_monitoring(self, optimizer, sens, clip_grad_norm):
        self.hyper_map = C.HyperMap()
        self._clip = clip_grad_norm is not None
        self._clip_norm = Tensor(float(clip_grad_norm) if self._clip else 1.0, ms.float32)
        self._dynamic_lr = bool(optimizer.dynamic_lr)
        self._group_lr = bool(getattr(optimizer, "is_group_lr", False))
        self._lr_index = lr_groups(optimizer)
        self.num_lr_groups = len(self._lr_index)
        # Sens is divided out of the gradient norm so it describes the gradient of the loss itself; with sens 1
        # the plain gradient (no sens input) is taken, as TrainOneStepCell does by default.
        self._unit_sens = float(sens) == 1.0
        self._inv_sens = Tensor(1.0 / float(sens), ms.float32)
        self._norm_plan = norm_plan([p.shape for p in self.weights])
        self._guard = False
        self._layer_idx = ()
        self.flight_capacity = 0
        # One count for both rings: the steps this cell ran (never made again, so a reader's place in it holds).
        _, self.tbms_steps_count = ring_parameters(1, 1, "tbms_steps")
        self._make_step_ring(STEP_RING_ROWS)
        # Data parallel: the gradients are all-reduced before the norm above; the rank's own (device-local) norm is
        # taken before the reducer too, for the per-rank statistics.
        self._local_norm = bool(getattr(self, "reducer_flag", False))
        if self._local_norm:
            self.tbms_local_grad = Parameter(Tensor(np.full((1,), np.nan, np.float32)), name="tbms_local_grad",
                                             requires_grad=False)

    def _extra_columns(self):
        """Columns this cell writes after the learning rates (the loss-scale cell: its scale and overflow flag)."""
        return ("skipped",) if self._guard else ()

    @property
    def step_columns(self):
        """The names of the step ring's columns: ``loss``, ``grad_norm``, ``lr0`` ... (one per learning-rate group),
        then ``skipped`` (1 for an update the guard did not apply) or, in :class:`MonitoredLossScaleCell`,
        ``loss_scale`` and ``overflow``."""
        return ("loss", "grad_norm") + tuple("lr%d" % i for i in range(self.num_lr_groups)) + self._extra_columns()

    def _step_compiled(self):
        return ms.get_context("mode") == ms.GRAPH_MODE and bool(self.compile_cache)

    def _rings_fixed(self):
        """Whether a ring can no longer be replaced: the step is compiled (GRAPH_MODE), or it ran (PYNATIVE_MODE's
        compiled calls keep writing the Parameter they were compiled with unless what they read changed)."""
        return self._step_compiled() or self.steps_written() > 0

    def _make_step_ring(self, rows):
        ring, _ = ring_parameters(rows, len(self.step_columns), "tbms_steps")
        self.tbms_steps = ring

    @classmethod
    def wrap(cls, network, loss_fn, optimizer, **kwargs):
        """``MonitoredTrainCell(nn.WithLossCell(network, loss_fn), optimizer, **kwargs)``."""
        _check_wrap(cls, network, loss_fn, optimizer)
        return cls(nn.WithLossCell(network, loss_fn), optimizer, **kwargs)

    # -- graph side -----------------------------------------------------------------------------------------------
    def _applied_lr(self):
        """Learning rate(s) the optimizer is about to apply, a tuple of 0-d float32 tensors (one per group); read
        before the optimizer increments global_step."""
        opt = self.optimizer
        step = opt.global_step
        if self._group_lr:
            values = ()
            for i in self._lr_index:
                lr = opt.learning_rate[i](step) if self._dynamic_lr else opt.learning_rate[i]
                values += (_scalar(lr),)
            return values
        return (_scalar(opt.learning_rate(step) if self._dynamic_lr else opt.learning_rate),)

    @ms.jit
    def _norms_and_lr(self, grads):
        """``(grad_norm, layer_norms, lr)`` before the optimizer step, as one compiled call.

        In PYNATIVE_MODE every operation of the statistics would otherwise be dispatched on its own (hundreds of
        small launches per step, more than the optimizer costs); inside a GRAPH_MODE step this is inlined.
        ``layer_norms`` is a one-element placeholder when no layers are tracked.
        """
        grad_norm, layer = self._grad_norms(grads)
        if layer is None:
            layer = ops.zeros((1,), ms.float32)
        return grad_norm, layer, self._applied_lr()

    def _grad_norms(self, grads):
        """``(global_norm, layer_norms)`` of the gradients of the loss itself (``sens`` divided out); see
        :func:`grad_norms`."""
        grad_norm, layer = grad_norms(grads, self._norm_plan)
        if not self._unit_sens:
            grad_norm = grad_norm * self._inv_sens
            if self._layer_idx:
                layer = layer * self._inv_sens
        return grad_norm, layer

    @ms.jit
    def _keep_local_norm(self, grads):
        """Keeps this rank's gradient norm before the gradient reducer (data parallel) in ``tbms_local_grad``."""
        norm = global_norm(grads, self._norm_plan)
        if not self._unit_sens:
            norm = norm * self._inv_sens
        return ops.assign(self.tbms_local_grad, norm.reshape((1,)))

    @ms.jit
    def _record_step(self, loss, layer, grad_norm, tail):
        """Writes this step's row (``step_columns``; ``tail``: a mutable tuple of 0-d tensors, the columns after the
        gradient norm: the learning rates, then this cell's extra columns) and, with tracked layers, their norms;
        returns a token to depend on. One stack makes the row.

        Called after the optimizer in program order: these writes must not make the optimizer's parameter updates
        wait for them (side effects run in program order).
        """
        row = ops.stack((_scalar(loss), grad_norm) + tail)
        if self._layer_idx:
            return rings_write(self.tbms_steps_count, self.tbms_steps, row, self.tbms_layers, layer)
        return rings_write(self.tbms_steps_count, self.tbms_steps, row)

    def _clip_grads(self, grads, grad_norm):
        if self._clip:
            return self._clipped(ms.mutable(grads), grad_norm)
        return grads

    @ms.jit
    def _clipped(self, grads, grad_norm):
        scale = self._clip_norm / ops.maximum(grad_norm, self._clip_norm)
        return self.hyper_map(ops.partial(_scale_grad, scale), grads)

    def construct(self, *inputs):
        loss = self.network(*inputs)
        if self._unit_sens:
            grads = self.grad_no_sens(self.network, self.weights)(*inputs)
        else:
            sens = ops.fill(loss.dtype, loss.shape, self.sens)
            grads = self.grad(self.network, self.weights)(*inputs, sens)
        if self._local_norm:
            loss = ops.depend(loss, self._keep_local_norm(ms.mutable(grads)))
        grads = self.grad_reducer(grads)
        # The gradients go in as a mutable tuple: a plain tuple of Tensors reaching a compiled function is taken as
        # a constant (compiled again for every new value). The LR is read before the optimizer moves global_step.
        grad_norm, layer, lr = self._norms_and_lr(ms.mutable(grads))
        if self._guard:
            # Live health's skip action: the update of a step with non-finite or spiking gradients is not applied
            # (as TrainOneStepWithLossScaleCell skips an overflow step).
            ok = self._guard_step(grad_norm)
            if ok:
                loss = ops.depend(loss, self.optimizer(self._clip_grads(grads, grad_norm)))
            skipped = ops.cast(ops.logical_not(ok), ms.float32).reshape(())
            return ops.depend(loss, self._record_step(loss, layer, grad_norm, ms.mutable(lr + (skipped,))))
        loss = ops.depend(loss, self.optimizer(self._clip_grads(grads, grad_norm)))
        # A tuple of Tensors reaching a compiled function must be mutable (else a constant: compiled again for each).
        return ops.depend(loss, self._record_step(loss, layer, grad_norm, ms.mutable(lr)))

    @ms.jit
    def _guard_step(self, grad_norm):
        """Whether to apply this step's update (see :func:`guard_update`); updates ``tbms_guard``."""
        ok, state = guard_update(self.tbms_guard, grad_norm, self._guard_factor, self._guard_warmup)
        return ops.depend(ok, ops.assign(self.tbms_guard, state))

    def guard_updates(self, factor=10.0, warmup_steps=50):
        """Skip (do not apply) the update of a step whose gradient norm is non-finite or ``factor`` times the
        largest applied before (after ``warmup_steps`` applied steps). Like :meth:`track_layer_grad_norms`, only
        before the cell's first step: returns False (and does nothing) otherwise. A skipped step has 1 in the step
        ring's ``skipped`` column.
        """
        if self._guard:
            return True
        if self._rings_fixed():
            return False
        self._guard_factor = Tensor(float(factor), ms.float32)
        self._guard_warmup = Tensor(float(warmup_steps), ms.float32)
        self.tbms_guard = Parameter(Tensor(np.array([0.0, 0.0], np.float32)), name="tbms_guard", requires_grad=False)
        self._guard = True
        self._make_step_ring(self.tbms_steps.shape[0])
        return True

    def reserve_steps(self, rows):
        """A step ring of at least ``rows`` rows (at most ``MAX_STEP_RING_ROWS``), so that ``rows`` steps can run
        between two reads of it. Only before the cell's first step: returns False otherwise (the ring there is
        kept; a monitor then reads it before it would wrap)."""
        rows = min(max(int(rows), 1), MAX_STEP_RING_ROWS)
        if rows <= self.tbms_steps.shape[0]:
            return True
        if self._rings_fixed():
            return False
        self._make_step_ring(rows)
        return True

    def track_layer_grad_norms(self, indices):
        """Also keep the gradient norm of ``self.weights[i]`` for each ``i`` (a row of ``tbms_layers`` each step).

        In GRAPH_MODE this must happen before the first step (the step is compiled then): returns False (and does
        nothing) if the cell is already compiled.
        """
        indices = tuple(int(i) for i in indices)
        if indices == self._layer_idx:
            return True
        if self._step_compiled():
            return False
        self._layer_idx = indices
        self._norm_plan = norm_plan([p.shape for p in self.weights], indices)
        self.tbms_layers, _ = ring_parameters(max(self.flight_capacity, 1), len(indices), "tbms_layers")
        return True

    def track_flight(self, indices, capacity):
        """Also keep the last ``capacity`` steps of the gradient norms of ``self.weights[i]`` (``i`` in
        ``indices``) on the device, for the flight recorder (``tbms_layers``, see ``flight_ring``).

        Only before the cell's first step: returns False otherwise. A ring already there for the same layers is
        kept, whatever its size (``flight_capacity``).
        """
        indices = tuple(int(i) for i in indices)
        if self.flight_capacity and indices == self._layer_idx:
            return True
        if not indices or self._rings_fixed():
            return False
        if not self.track_layer_grad_norms(indices):
            return False
        # Both rings of the same size share one slot a step (one kernel fewer): the step ring grows to the flight
        # ring's size (with the defaults it is the smaller one), never the other way.
        capacity = int(capacity)
        if self.tbms_steps.shape[0] < capacity:
            self._make_step_ring(capacity)
        self.tbms_layers, _ = ring_parameters(capacity, len(indices), "tbms_layers")
        self.flight_capacity = capacity
        return True

    # -- host side (used by TrainMonitor) -------------------------------------------------------------------------
    def steps_written(self):
        """The steps this cell ran so far (one host read)."""
        return read_count(self.tbms_steps_count)

    def step_rows(self):
        """``(rows float32[capacity, len(step_columns)], steps written so far)`` copied to the host: the row of the
        step with 0-based index ``i`` (i < count) is ``rows[i % capacity]``; the last ``min(count, capacity)`` are
        kept."""
        return read_ring(self.tbms_steps, self.tbms_steps_count)

    def flight_ring(self):
        """``(rows float32[capacity, layers], steps written so far)`` of the flight ring, or None without one."""
        if not self.flight_capacity:
            return None
        return read_ring(self.tbms_layers, self.tbms_steps_count)

    def layer_grad_norms(self):
        """Gradient norms of the tracked weights at the most recent step (see :meth:`track_layer_grad_norms`)."""
        if not self._layer_idx:
            return None
        rows, count = read_ring(self.tbms_layers, self.tbms_steps_count)
        if count < 1:
            return np.full((len(self._layer_idx),), np.nan, np.float32)
        return rows[(count - 1) % rows.shape[0]].copy()

    def local_grad_norm(self):
        """This rank's gradient norm at the most recent step, before the gradient reducer (data parallel), or None
        when there is no reducer (then it is the gradient norm itself)."""
        if not self._local_norm:
            return None
        return float(self.tbms_local_grad.asnumpy().reshape(-1)[0])


class MonitoredLossScaleCell(MonitoredTrainCell, nn.TrainOneStepWithLossScaleCell):
    """``nn.TrainOneStepWithLossScaleCell`` plus everything :class:`MonitoredTrainCell` records, and the loss scale.

    Outputs ``(loss, overflow, loss_scale)`` like ``TrainOneStepWithLossScaleCell`` (Model's loss-scale logic keeps
    working). The gradient norm is that of the unscaled gradients (Inf / NaN on an overflow step, counted as
    non-finite). An overflow is detected from that norm (any Inf / NaN gradient makes it non-finite), on every
    device including CPU. The monitor writes ``core/loss_scale`` and ``core/overflow_steps`` (steps skipped in the
    interval).

    Args:
      network_with_loss, optimizer, clip_grad_norm: as for :class:`MonitoredTrainCell`.
      scale_sense: a ``Cell`` loss-scale manager (``nn.DynamicLossScaleUpdateCell`` / ``FixedLossScaleUpdateCell``)
        or a Tensor, as for ``TrainOneStepWithLossScaleCell``.
    """

    def __init__(self, network_with_loss, optimizer, scale_sense, clip_grad_norm=None):
        _check_args(type(self).__name__, optimizer, clip_grad_norm, network_with_loss)
        # The loss-scale machinery of TrainOneStepWithLossScaleCell (overflow status, scale update).
        nn.TrainOneStepWithLossScaleCell.__init__(self, network_with_loss, optimizer, scale_sense)
        self._setup_monitoring(optimizer, 1.0, clip_grad_norm)

    def _extra_columns(self):
        return ("loss_scale", "overflow")

    @classmethod
    def wrap(cls, network, loss_fn, optimizer, scale_sense=None, **kwargs):
        _check_wrap(cls, network, loss_fn, optimizer)
        if scale_sense is None:
            scale_sense = nn.DynamicLossScaleUpdateCell(loss_scale_value=2 ** 16, scale_factor=2, scale_window=1000)
        return cls(nn.WithLossCell(network, loss_fn), optimizer, scale_sense, **kwargs)

    def construct(self, *inputs):
        loss = self.network(*inputs)
        scaling_sens = self.scale_sense
        scaling_sens_filled = ops.ones_like(loss) * ops.cast(scaling_sens, ops.dtype(loss))
        grads = self.grad(self.network, self.weights)(*inputs, scaling_sens_filled)
        grads = self.hyper_map(ops.partial(_unscale_grad, scaling_sens), grads)
        if self._local_norm:
            loss = ops.depend(loss, self._keep_local_norm(ms.mutable(grads)))
        grads = self.grad_reducer(grads)
        grad_norm, layer, lr = self._norms_and_lr(ms.mutable(grads))
        # Overflow = a non-finite gradient, read off the global norm already computed (works on every device).
        cond = ops.logical_not(ops.isfinite(grad_norm))
        overflow = self.process_loss_scale(cond)
        if not overflow:
            loss = ops.depend(loss, self.optimizer(self._clip_grads(grads, grad_norm)))
        # The scale this step used, and whether it overflowed (core/loss_scale, core/overflow_steps).
        tail = ms.mutable(lr + (_scalar(scaling_sens), _scalar(cond)))
        return ops.depend(loss, self._record_step(loss, layer, grad_norm, tail)), cond, scaling_sens

    def guard_updates(self, factor=10.0, warmup_steps=50):
        """Not here: this cell already skips the update of a step with non-finite gradients (an overflow)."""
        return False
