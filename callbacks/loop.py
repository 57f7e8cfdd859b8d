"""``LoopMonitor``: the same three tiers for a hand-written training loop built on ``mindspore.value_and_grad``.

::

    grad_fn = mindspore.value_and_grad(forward, None, optimizer.parameters)
    with LoopMonitor(make_run_dir(experiment="loop"), optimizer, network=net) as mon:
        for x, y in dataset.create_tuple_iterator():
            mon.begin_step()                      # optional: data-wait time and exact update-ratio snapshot
            loss, grads = grad_fn(x, y)
            optimizer(grads)
            mon.step(loss, grads, inputs=(x, y))  # after the optimizer step

Per step, ``step`` runs one small compiled computation on the device that updates the interval statistics of loss
and gradient norm (as :class:`MonitoredTrainCell` does inside the training step); nothing reaches the host until a
point is written every ``collect_freq`` steps.
"""

import math
import time

import numpy as np

import mindspore as ms
from mindspore import nn, ops, Parameter, Tensor

from ._util import host_learning_rates
from .monitor import TrainMonitor
from .train_cell import (_N_ROWS, _empty_stats, grad_norms, interval_update, layer_norm_plan, norm_groups,
                         reset_parameter)

__all__ = ["LoopMonitor"]


class _LoopStats(nn.Cell):
    """In-graph accumulators for a hand-written loop: the same statistics as ``MonitoredTrainCell``."""

    def __init__(self, grad_shapes):
        super().__init__(auto_prefix=False)
        self._has_grads = grad_shapes is not None
        self._shapes = list(grad_shapes) if self._has_grads else []
        self._groups = norm_groups(self._shapes) if self._has_grads else ()
        self._layer_classes = ()
        self._layer_order = None
        self._layer_idx = ()
        self.tbms_stats = Parameter(Tensor(_empty_stats()), name="tbms_loop_stats", requires_grad=False)
        self.tbms_last = Parameter(Tensor(np.full((_N_ROWS,), np.nan, np.float32)), name="tbms_loop_last",
                                   requires_grad=False)
        self.tbms_layer_grad = Parameter(Tensor(np.full((1,), np.nan, np.float32)), name="tbms_loop_layer_grad",
                                         requires_grad=False)

    @ms.jit
    def construct(self, loss, grads):
        layer = None
        if self._has_grads:
            grad_norm, layer = grad_norms(grads, self._groups, self._layer_classes, self._layer_order)
        else:
            grad_norm = ops.cast(ops.fill(ms.float32, (), float("nan")), ms.float32)
        values = ops.stack((ops.cast(loss, ms.float32).reshape(-1)[0], grad_norm))
        token = ops.assign(self.tbms_stats, interval_update(self.tbms_stats, values))
        token = ops.depend(token, ops.assign(self.tbms_last, values))
        if self._has_grads and self._layer_idx:
            token = ops.depend(token, ops.assign(self.tbms_layer_grad, layer))
        return token


def _loss_tensor(loss):
    """The loss as a float32 Tensor: from a Tensor, a number, a numpy value, or the first item of a tuple
    (``value_and_grad(..., has_aux=True)`` returns ``(loss, aux...)``)."""
    while isinstance(loss, (tuple, list)) and loss:
        loss = loss[0]
    if isinstance(loss, Tensor):
        return loss
    return Tensor(np.asarray(loss if loss is not None else np.nan, dtype=np.float32))


class _Source:
    """What TrainMonitor reads from a MonitoredTrainCell, provided for a loop."""

    def __init__(self, optimizer, grad_shapes):
        self.optimizer = optimizer
        self.stats = _LoopStats(grad_shapes)
        self.num_lr_groups = None
        self._started = False

    def track_layer_grad_norms(self, indices):
        indices = tuple(int(i) for i in indices)
        if indices == self.stats._layer_idx:
            return True
        if self._started or not self.stats._has_grads:
            return False
        self.stats._layer_idx = indices
        self.stats._layer_classes, self.stats._layer_order = layer_norm_plan(self.stats._shapes, indices)
        self.stats.tbms_layer_grad = Parameter(Tensor(np.full((max(len(indices), 1),), np.nan, np.float32)),
                                               name="tbms_loop_layer_grad", requires_grad=False)
        return True

    def update(self, loss, grads):
        self._started = True
        # A tuple of Tensors reaching a compiled function is taken as a constant (and compiled again for every new
        # value); mutable() makes it a variable. The loss must be a Tensor for the same reason.
        self.stats(_loss_tensor(loss), ms.mutable(grads) if grads else grads)

    def read_and_reset(self):
        stats = self.stats.tbms_stats.asnumpy().copy()
        last = self.stats.tbms_last.asnumpy().copy()
        reset_parameter(self.stats.tbms_stats, _empty_stats())
        lrs = host_learning_rates(self.optimizer) if self.optimizer is not None else []
        return stats, np.concatenate([last, np.asarray(lrs, dtype=np.float32)])

    def layer_grad_norms(self):
        if not self.stats._layer_idx:
            return None
        return self.stats.tbms_layer_grad.asnumpy().copy()

    def loss_scale_state(self):
        return None


class _Params:
    """The few ``cb_params`` fields TrainMonitor reads, for a loop."""

    def __init__(self):
        self.cur_step_num = 0
        self.net_outputs = None
        self.train_dataset_element = None
        self.dataset_sink_mode = False
        self.batch_num = None
        self.epoch_num = None
        self.train_network = None
        self.train_dataset = None


class LoopMonitor:
    """Records a hand-written training loop (``mindspore.value_and_grad`` + ``optimizer(grads)``).

    Args:
      logdir: the run folder.
      optimizer: the ``nn.Optimizer`` you call each step (for the applied learning rate, weight norms, update
        ratios); None records loss and gradient norm only.
      network: the forward network, for activation histograms (``debug=["activations"]``); it is called with the
        ``inputs`` given to :meth:`step`.
      collect_freq, batch_size and every other keyword: as for :class:`TrainMonitor` (``debug``, ``debug_freq``,
        ``diagnostic_freq`` (default 100 steps here: a loop has no epochs), ``layers_include``, ``hparams``, ...).
        ``eval_dataset`` is not supported here: evaluate in your loop and call :meth:`scalar`.

    Call :meth:`step` once per training step, after the optimizer update, with the loss and the gradients (in the
    order of ``optimizer.parameters``). :meth:`begin_step` (optional, right after the batch is fetched) adds the
    data-wait time. :meth:`close` (or the ``with`` block) writes the final points.
    """

    def __init__(self, logdir, optimizer=None, network=None, collect_freq=10, batch_size=None, **kwargs):
        if optimizer is not None and not isinstance(optimizer, nn.Optimizer):
            raise ValueError("optimizer must be a mindspore.nn.Optimizer or None, got %r" % (optimizer,))
        if network is not None and not isinstance(network, nn.Cell):
            raise ValueError("network must be a mindspore.nn.Cell or None, got %r" % (network,))
        if kwargs.get("eval_dataset") is not None:
            raise ValueError("LoopMonitor does not run evaluations; evaluate in your loop and call scalar()")
        kwargs.setdefault("diagnostic_freq", 100)
        self.monitor = TrainMonitor(logdir, collect_freq=collect_freq, batch_size=batch_size, **kwargs)
        if "activations" in self.monitor.debug and network is None:
            raise ValueError("debug item 'activations' needs network= (the forward network to probe)")
        self.optimizer = optimizer
        self.network = network
        self._params = _Params()
        self._source = None
        self._began = False
        self._closed = False
        self._step_started = None

    @property
    def writer(self):
        return self.monitor.writer

    @property
    def step_num(self):
        """Steps recorded so far."""
        return self._params.cur_step_num

    def begin_step(self):
        """Optional: call when the batch is ready, before the forward pass (data-wait time, exact snapshot)."""
        if self._closed:
            return
        self._step_started = time.perf_counter()
        if self._began and self.monitor._active:
            p = self._params
            p.cur_step_num += 1
            try:
                self.monitor._step_begin(p)
            except Exception:
                self.monitor._error("step begin")
            finally:
                p.cur_step_num -= 1

    def step(self, loss, grads=None, inputs=None, batch_size=None):
        """Records one training step (call it after ``optimizer(grads)``)."""
        if self._closed:
            raise RuntimeError("LoopMonitor is closed")
        p = self._params
        if batch_size is not None:
            self.monitor._batch = int(batch_size)
        if not self._began:
            self._start(grads)
        if not self.monitor._active:
            p.cur_step_num += 1
            return
        grads = tuple(grads) if grads is not None else ()
        try:
            self._source.update(loss, grads)
        except Exception:
            self.monitor._error("loop statistics")
        p.cur_step_num += 1
        p.net_outputs = loss
        p.train_dataset_element = tuple(inputs) if inputs is not None else None
        try:
            self.monitor._step_end(p)
            # Without begin_step, the weights are kept now for the next step's update ratio (nothing changes
            # them before the next optimizer call).
            self.monitor._maybe_snapshot(p.cur_step_num + 1)
        except Exception:
            self.monitor._error("step")

    def scalar(self, tag, value, step=None):
        """Writes any other scalar (your own evaluation, e.g. ``diagnostic/eval/accuracy``) at ``step``."""
        w = self.monitor.writer
        if w is not None:
            w.scalar(tag, float(value), self._params.cur_step_num if step is None else int(step))

    def _start(self, grads):
        self._began = True
        self._source = _Source(self.optimizer, None if grads is None else [tuple(g.shape) for g in grads])
        self.monitor._reset_run_state()
        try:
            self.monitor._begin(self._params, cell=self._source, optimizer=self.optimizer,
                                probe_net=self.network)
            if self.optimizer is None:
                self.monitor._optimizer = None
        except Exception:
            self.monitor._error("start")

    def close(self):
        """Writes the final points and closes the event file. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._began and self.monitor._active and self._params.cur_step_num > 0:
            try:
                self.monitor._end(self._params)
            except Exception:
                self.monitor._error("close")
        self.monitor.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
