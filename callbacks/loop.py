"""``LoopMonitor``: the same three tiers and live health for a hand-written loop built on ``mindspore.value_and_grad``.

::

    grad_fn = mindspore.value_and_grad(forward, None, optimizer.parameters)
    with LoopMonitor(make_run_dir(experiment="loop"), optimizer, network=net) as mon:
        for x, y in dataset.create_tuple_iterator():
            mon.begin_step()                      # optional: data-wait time and exact update-ratio snapshot
            loss, grads = grad_fn(x, y)
            mon.update(grads)                     # optimizer(grads), skipped when on_anomaly="skip" says so
            if not mon.step(loss, grads, inputs=(x, y)):   # after the optimizer step; False: live health said stop
                break

The gradient statistics (interval of the global norm, tracked layers' norms, the flight ring) are kept on the
device, as :class:`MonitoredTrainCell` keeps them inside the training step: in GRAPH_MODE ``update`` runs the
optimizer and them as one compiled call; otherwise (``optimizer(grads)`` called by the loop, or PYNATIVE_MODE)
``step`` runs them as one small compiled call of their own. The loss tensor is only kept, and read with the others
every ``collect_freq`` steps, when a point is written. A thin adapter over the recorders'
:class:`~.recorders.Pipeline`.

Torch-style models (MindNLP's ``mindtorch`` modules, their ``param_groups`` optimizers) are recorded the same way,
under their ``named_parameters()`` names (``loop_params.py`` over the torch-style module adapter
``torch_style.params.ModuleParams``: which parameters, their names, the learning rates)::

    with LoopMonitor(run_dir, optimizer, network=model) as mon:
        for batch in loader:
            mon.begin_step()
            loss = grad_fn(batch["input_ids"], batch["labels"])   # mindtorch.autograd.value_and_grad: on p.grad
            mon.update()                          # optimizer.step()
            mon.step(loss, inputs=batch)          # before zero_grad: the gradients are read from p.grad
            model.zero_grad()
"""

import contextlib
import time

import numpy as np

import mindspore as ms
from mindspore import nn, ops

from .cells.train_cell import global_norm, norm_plan
from .common.model_kinds import describe, is_pytorch, is_torch_style_module, is_torch_style_optimizer, not_a_cell
from .recorders.live_health import UpdateGuard, guard_settings
from .recorders import Diagnostic, LoopSource, MonitorSettings, Pipeline, default_recorders
from .recorders.options import from_keywords
from .monitor import _check_recorders
from .loop_params import loop_params

__all__ = ["LoopMonitor"]


def _check_model(optimizer, network):
    """One-line errors at construction for an optimizer / network the loop cannot record."""
    if optimizer is not None and not isinstance(optimizer, nn.Optimizer) and not is_torch_style_optimizer(optimizer) \
            or is_pytorch(optimizer):
        raise ValueError(not_a_cell("LoopMonitor's optimizer", optimizer,
                                    "a mindspore.nn.Optimizer, a torch-style optimizer (param_groups) or None"))
    if network is not None and not isinstance(network, nn.Cell) and not is_torch_style_module(network) \
            or is_pytorch(network):
        raise ValueError(not_a_cell("LoopMonitor's network", network,
                                    "a mindspore.nn.Cell, a torch-style module (named_parameters()) or None"))
    if isinstance(optimizer, nn.Optimizer) and network is not None and not isinstance(network, nn.Cell):
        raise ValueError("LoopMonitor got a mindspore.nn.Optimizer with %s: give the torch-style module's own "
                         "optimizer (param_groups)" % describe(network))


def _zeros_like(p):
    return ops.zeros(tuple(p.shape), ms.float32)


class _Params:
    """The few ``cb_params`` fields the recorders read (run info), for a loop."""

    def __init__(self):
        self.cur_step_num = 0
        self.net_outputs = None
        self.train_dataset_element = None
        self.dataset_sink_mode = False
        self.batch_num = None
        self.epoch_num = None
        self.train_network = None
        self.train_dataset = None


class _GradNorm(nn.Cell):
    """``construct(grads) -> float32``: the global L2 norm of the gradients, one compiled call (``update``'s guard)."""

    def __init__(self, shapes):
        super().__init__(auto_prefix=False)
        self._norm_plan = norm_plan(shapes)

    @ms.jit
    def construct(self, grads):
        return global_norm(grads, self._norm_plan)


class LoopMonitor:
    """Records a hand-written training loop (``mindspore.value_and_grad`` + ``optimizer(grads)``).

    Args:
      logdir: the run folder.
      optimizer: the ``nn.Optimizer`` you call each step (for the applied learning rate, weight norms, update
        ratios), or a torch-style optimizer (``param_groups`` with ``lr``: MindNLP's ``mindtorch`` models); None
        records loss and gradient norm only.
      network: the forward network, for activation histograms (``debug=["activations"]``); it is called with the
        ``inputs`` given to :meth:`step` (a dict of keyword arguments for a torch-style module). A torch-style
        module (``named_parameters()``) also names the parameters: ``bert.encoder.layer.0...``.
      param_names: torch-style models only: the parameters' names, a list in the order of the gradients or a
        callable ``param -> name`` (default: ``network.named_parameters()``).
      lr: torch-style models only: a callable returning the learning rate (one number, or one per group) or a
        number (default: ``param_groups[i]["lr"]``, read before the optimizer step).
      collect_freq, batch_size and every other keyword (keyword-only): as for :class:`TrainMonitor` (``hparams``,
        ``recorders``, ``flight_recorder``, and the option groups ``debug=Debug(...)``, ``diagnostic=Diagnostic(...)``
        (weight norms every 100 steps by default here: a loop has no epochs), ``layers=Layers(...)``,
        ``health=LiveHealth(...)``, ``storage=Storage(...)``, ``ranks=Ranks(...)``; the flat keywords of earlier
        releases with a ``FutureWarning``). ``eval=`` is not supported here: evaluate in your loop and call
        :meth:`scalar`.

    Call :meth:`step` once per training step, after the optimizer update, with the loss and the gradients (in the
    order of ``optimizer.parameters``, or of the ``param_groups``; a torch-style model's are read from ``.grad``
    when not given); it returns False once live health asked to stop (``on_anomaly="stop"``, also
    :attr:`stop_requested`). Construction fails in one line for a model or optimizer it cannot record (real PyTorch,
    a ``mindspore.nn.Optimizer`` with a torch-style module, ...). :meth:`update` applies ``optimizer(grads)`` unless ``on_anomaly="skip"`` says
    the gradients are non-finite or spiking. :meth:`begin_step` (optional, right after the batch is fetched) adds
    the data-wait time. :meth:`close` (or the ``with`` block) writes the final points and the run end marker.
    """

    def __init__(self, logdir, optimizer=None, *, network=None, collect_freq=10, batch_size=None, recorders=(),
                 hparams=None, flight_recorder=100, diagnostic=None, debug=None, eval=None, layers=None, health=None,
                 storage=None, ranks=None, param_names=None, lr=None, **old_keywords):
        _check_model(optimizer, network)
        torch_style = is_torch_style_optimizer(optimizer) or (network is not None and not isinstance(network, nn.Cell))
        if not torch_style and (param_names is not None or lr is not None):
            raise ValueError("param_names= and lr= are for torch-style models (a mindspore.nn.Optimizer names its "
                             "parameters and knows its learning rate), got %s"
                             % ", ".join(n for n, v in (("param_names=", param_names), ("lr=", lr)) if v is not None))
        if param_names is not None and not callable(param_names) and isinstance(param_names, (str, bytes)):
            raise ValueError("param_names must be a list of names (in the order of the gradients) or a callable "
                             "param -> name, got %r" % (param_names,))
        if lr is not None and not callable(lr) and (isinstance(lr, bool) or not isinstance(lr, (int, float))):
            raise ValueError("lr must be a callable returning the learning rate (one number or one per group) or a "
                             "number, got %r" % (lr,))
        groups = from_keywords("LoopMonitor", old_keywords, {
            "diagnostic": diagnostic, "debug": debug, "eval": eval, "layers": layers, "health": health,
            "storage": storage, "ranks": ranks})
        if groups["eval"] is not None:
            raise ValueError("LoopMonitor does not run evaluations; evaluate in your loop and call scalar()")
        if groups["diagnostic"] is None:
            groups["diagnostic"] = Diagnostic(every=100)
        self.settings = MonitorSettings(logdir, collect_freq=collect_freq, batch_size=batch_size, hparams=hparams,
                                        flight_recorder=flight_recorder, **groups)
        if "activations" in self.settings.debug and network is None:
            raise ValueError("debug item 'activations' needs network= (the forward network to probe)")
        if "skip" in self.settings.on_anomaly and optimizer is None:
            raise ValueError("on_anomaly='skip' needs optimizer= (LoopMonitor.update applies it)")
        # A torch-style model: its parameters from the optimizer's param_groups (or the module), named by
        # named_parameters(); checked now (a bad param_names list fails here, not in training).
        self.table = loop_params(optimizer if is_torch_style_optimizer(optimizer) else None,
                                 network if network is not None and not isinstance(network, nn.Cell) else None,
                                 param_names, lr) if torch_style else None
        extra = _check_recorders(recorders)
        self.monitor = Pipeline(self.settings, lambda s: default_recorders(s, extra), owner="LoopMonitor")
        self.optimizer = optimizer
        self.network = network
        self._params = _Params()
        self._source = None
        self._norm = None
        self._guard = None
        self._began = False
        self._closed = False
        self._fused = False
        self._given = None

    @property
    def writer(self):
        return self.monitor.writer

    @property
    def step_num(self):
        """Steps recorded so far."""
        return self._params.cur_step_num

    @property
    def stop_requested(self):
        """True once live health asked to stop (``on_anomaly="stop"``): end the loop."""
        return self.monitor.stop_requested

    @property
    def health_events(self):
        """The live health events so far (dicts as written to ``_meta/health_event``)."""
        health = self._health()
        return list(health.events) if health is not None else []

    def _health(self):
        for r in self.monitor.recorders:
            if r.name == "live_health":
                return r
        return None

    def begin_step(self):
        """Optional: call when the batch is ready, before the forward pass (data-wait time, exact snapshot)."""
        if self._closed or not self._began:
            return
        try:
            self._source.note_lrs()
            self.monitor.step_begin(self._params.cur_step_num + 1)
        except Exception:
            self.monitor.error("step begin")

    def update(self, grads=None):
        """``optimizer(grads)`` (a torch-style optimizer: ``optimizer.step()``, the gradients being on the
        parameters' ``.grad``), unless ``on_anomaly`` includes ``"skip"`` and the gradient norm is non-finite or 10x
        the largest applied before (then the update is left out and counted). Returns True when applied."""
        if self.optimizer is None:
            raise RuntimeError("LoopMonitor.update needs optimizer=")
        if self.table is not None:
            return self._torch_update(grads)
        if grads is None:
            raise ValueError("LoopMonitor.update(grads) needs the gradients (in the order of optimizer.parameters)")
        if not self._began:
            self._start(grads)
        if "skip" in self.settings.on_anomaly:
            try:
                if self._norm is None:
                    self._norm = _GradNorm([tuple(g.shape) for g in grads])
                    self._guard = UpdateGuard(*guard_settings(self.settings))
                norm = float(np.asarray(self._norm(ms.mutable(tuple(grads))).asnumpy()).reshape(-1)[0])
                # Decided on every rank alike (all-reduced gradients), recording or not.
                if self._guard.skip(norm):
                    self._source.note_skipped(self._params.cur_step_num + 1)
                    return False
            except Exception:
                self.monitor.error("update guard")
        if self._fused and self.monitor.active:
            # GRAPH_MODE: the optimizer and this step's gradient statistics in one compiled call (step() then
            # records only the loss).
            self._source.apply(grads, lambda: self.monitor.error("optimizer and statistics in one call"),
                               step=self._params.cur_step_num + 1)
        else:
            self.optimizer(grads)
            self._given = grads         # step(loss) without grads records these
        return True

    def _torch_update(self, grads):
        if not self._began:
            self._start(self._torch_grads(grads))
        self._source.note_lrs()
        if "skip" in self.settings.on_anomaly:
            try:
                given = self._torch_grads(grads)
                if given is not None:
                    if self._norm is None:
                        self._norm = _GradNorm([tuple(g.shape) for g in given])
                        self._guard = UpdateGuard(*guard_settings(self.settings))
                    norm = float(np.asarray(self._norm(ms.mutable(tuple(given))).asnumpy()).reshape(-1)[0])
                    if self._guard.skip(norm):
                        self._source.note_skipped(self._params.cur_step_num + 1)
                        return False
            except Exception:
                self.monitor.error("update guard")
        self.optimizer.step()
        return True

    def _torch_grads(self, grads):
        """The step's gradients: those given, else (torch style) the parameters' ``.grad``; None when neither."""
        if grads is not None:
            return tuple(grads)
        if self.table is None:
            return None
        found = self.table.grads()
        if found is None:
            return None
        return tuple(g if g is not None else _zeros_like(p) for g, p in zip(found, self.table.params))

    def step(self, loss, grads=None, inputs=None, batch_size=None):
        """Records one training step (call it after the optimizer update). Returns False once live health asked
        to stop training. A torch-style model's gradients are read from the parameters' ``.grad`` when ``grads`` is
        not given (call it before ``optimizer.zero_grad()``)."""
        if self._closed:
            raise RuntimeError("LoopMonitor is closed")
        if self.table is not None and grads is None:
            grads = self._torch_grads(None)
            if grads is None and self._source is not None:
                self._source.cleared = True
        if grads is None:
            grads = self._given
        self._given = None
        p = self._params
        if not self._began:
            self._start(grads)
        if batch_size is not None:
            self.monitor.batch = int(batch_size)
        if not self.monitor.active:
            p.cur_step_num += 1
            return True
        grads = tuple(grads) if grads is not None else ()
        try:
            self._source.update(p.cur_step_num + 1, loss, grads)
        except Exception:
            self.monitor.error("loop statistics")
        p.cur_step_num += 1
        if inputs is not None and not isinstance(inputs, dict):
            inputs = tuple(inputs)
        try:
            self.monitor.step_end(p.cur_step_num, outputs=loss, inputs=inputs)
            # Without begin_step, the weights are kept now for the next step's update ratio (nothing changes
            # them before the next optimizer call).
            self.monitor.step_begin(p.cur_step_num + 1, data_wait=False)
        except Exception:
            self.monitor.error("step")
        return not self.monitor.stop_requested

    @contextlib.contextmanager
    def paused(self):
        """``with mon.paused():`` around your own work between two steps (an evaluation, a checkpoint): its time
        counts neither as waiting for data nor as step time, as ``Model.train`` leaves out the work between epochs
        (an evaluation every few steps would otherwise read as an input-bound loop)."""
        start = time.perf_counter()
        try:
            yield self
        finally:
            self.monitor.leave_out(time.perf_counter() - start)

    def scalar(self, tag, value, step=None):
        """Writes any other scalar (your own evaluation, e.g. ``diagnostic/eval/accuracy``) at ``step``."""
        w = self.monitor.writer
        if w is not None:
            w.scalar(tag, float(value), self._params.cur_step_num if step is None else int(step))

    def _start(self, grads):
        self._began = True
        # The optimizer and the statistics in one call only in GRAPH_MODE, where the optimizer is compiled anyway
        # (in PYNATIVE_MODE it keeps running as the user wrote it).
        self._fused = ms.get_context("mode") == ms.GRAPH_MODE
        self._fused = self._fused and self.table is None
        self._source = LoopSource(self.optimizer if self.table is None else None,
                                  None if grads is None else [tuple(g.shape) for g in grads], self.table,
                                  capacity=self.settings.collect_freq)
        if self.table is not None and grads is None:
            self._source.cleared = True
        try:
            self.monitor.start(self._source, step=0, cb_params=self._params,
                               probe_net=self.network,
                               batch=self.settings.batch_size)
        except Exception:
            self.monitor.error("start")

    def close(self, status="finished", reason=""):
        """Writes the final points and the run end marker, and closes the event file. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._began and self.monitor.active and self._params.cur_step_num > 0:
            try:
                self.monitor.end(self._params.cur_step_num, status=status, reason=reason)
            except Exception:
                self.monitor.error("close")
        self.monitor.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.close("interrupted" if issubclass(exc_type, KeyboardInterrupt) else "failed",
                       "%s: %s" % (exc_type.__name__, str(exc)[:200]))
