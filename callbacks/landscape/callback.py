"""Loss landscapes of a MindSpore network, recorded as summaries the MindSpore tab draws.

This module is the ``Model.train`` callback, :class:`LandscapeCallback`; the rest is split by job:

* ``landscape_settings``: :class:`LandscapeSettings`, every option validated when it is built;
* ``landscape_eval``: the fixed evaluation subset and the compiled eval-mode loss (:class:`EvalData`,
  :class:`LossEvaluator`);
* ``landscape_compute``: directions, grid and evaluation (:func:`compute_landscape`, :func:`interpolate`,
  :func:`landscape_from_checkpoint`);
* ``landscape_run``: Ctrl-C handling, progress, the result and writing it.

The names below stay importable from here as before.
"""

import os

from mindspore import nn
from mindspore.train import Callback

from tb_plugin_mindspore.landscape import directions as dirs
from tb_plugin_mindspore.landscape.trajectory import Trajectory
from tb_plugin_mindspore.writing.writer import SummaryWriter

from .compute import LandscapeJob, compute_landscape, interpolate, landscape_from_checkpoint
from .evaluation import EvalData, LossEvaluator, check_eval_data, resolve_loss_network
from .run import LandscapeInterrupted, LandscapeResult
from .settings import METHODS, TAG_PREFIX, LandscapeSettings

__all__ = [
    "LandscapeCallback", "LandscapeInterrupted", "LandscapeResult", "LandscapeSettings", "LandscapeJob", "EvalData",
    "LossEvaluator", "compute_landscape", "interpolate", "landscape_from_checkpoint", "METHODS", "TAG_PREFIX",
]


def _cb_get(cb_params, key, default=None):
    try:
        return getattr(cb_params, key)
    except (AttributeError, KeyError):
        return default


def _check_methods(methods):
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods or len(set(methods)) != len(methods):
        raise ValueError("methods must be a non-empty subset of %s, got %r" % (", ".join(METHODS), methods))
    return methods


def _check_callback_args(logdir, every_epochs, at_end, tag_prefix, cells, writer):
    if writer is None and not isinstance(logdir, (str, os.PathLike)):
        raise TypeError("logdir must be a folder path, got %s" % type(logdir).__name__)
    if every_epochs is not None and (isinstance(every_epochs, bool) or not isinstance(every_epochs, int)
                                     or every_epochs < 1):
        raise ValueError("every_epochs must be None or an int >= 1, got %r" % (every_epochs,))
    if not isinstance(at_end, bool):
        raise ValueError("at_end must be True or False, got %r" % (at_end,))
    if every_epochs is None and not at_end:
        raise ValueError("every_epochs=None with at_end=False would never compute a landscape")
    if not isinstance(tag_prefix, str) or not tag_prefix:
        raise ValueError("tag_prefix must be a non-empty string, got %r" % (tag_prefix,))
    for name, cell in cells.items():
        if cell is not None and not isinstance(cell, nn.Cell):
            raise TypeError("%s must be a mindspore.nn.Cell, got %s" % (name, type(cell).__name__))


class LandscapeCallback(Callback):
    """Records loss landscapes during ``Model.train``: at the end of training and / or every ``every_epochs``.

    Args:
      logdir: the run folder (the same as ``TrainMonitor``'s, so the landscapes belong to that run).
      eval_data: the fixed evaluation subset (MindSpore dataset, numpy columns, ...; see :class:`EvalData`),
        taken once when training starts. Use a dataset other than the training one.
      loss_network / network + loss_fn: what to evaluate; by default the network inside the training cell
        (``train_network.network``, e.g. the ``WithLossCell`` that ``Model(net, loss_fn, opt)`` or
        ``MonitoredTrainCell.wrap`` builds).
      methods: any of ``"random"``, ``"pca"``, ``"interpolation"`` (start of training -> now).
      every_epochs: also every N epochs (None: only at the end); at_end: at the end of training.
      max_snapshots, snapshot_every, snapshot_dir: the trajectory kept for PCA: a snapshot every ``snapshot_every``
        steps, at most ``max_snapshots`` (then every second one is dropped and the interval doubles), in memory
        or as files in ``snapshot_dir``. Memory: max_snapshots x parameters x 4 bytes.
      settings: a :class:`LandscapeSettings`; the keywords grid, extent, pca_extent, seed, norm, bias_bn,
        num_samples, num_batches, eval_batch_size, alphas, log, progress, estimate, on_point replace its fields.

    Every argument is checked here (``ValueError`` / ``TypeError``), before training starts.
    Ctrl-C during a landscape writes the finished points and stops training (``LandscapeInterrupted``).
    """

    def __init__(self, logdir, eval_data, loss_network=None, network=None, loss_fn=None, methods=("random",),
                 every_epochs=None, at_end=True, max_snapshots=32, snapshot_every=1, snapshot_dir=None,
                 tag_prefix=TAG_PREFIX, writer=None, settings=None, **options):
        super().__init__()
        self.methods = _check_methods(methods)
        _check_callback_args(logdir, every_epochs, at_end, tag_prefix,
                             {"loss_network": loss_network, "network": network}, writer)
        check_eval_data(eval_data)
        self.settings = LandscapeSettings.from_kwargs(settings, **options)
        self.logdir = logdir
        self.eval_data = eval_data
        self._loss_network = loss_network
        self._network, self._loss_fn = network, loss_fn
        self.every_epochs = every_epochs
        self.at_end = at_end
        self.tag_prefix = tag_prefix
        pca = "pca" in self.methods   # the snapshot options are checked either way
        trajectory = Trajectory(max_snapshots=max_snapshots, stride=snapshot_every,
                                directory=snapshot_dir if pca else None)
        self.trajectory = trajectory if pca else None
        self._start = None          # (step, arrays) at the start of training, for interpolation
        self._evaluator = None
        self._writer = writer
        self._own_writer = writer is None
        self._layout = None
        self._last_step = None
        self.results = []

    # -- set-up ----------------------------------------------------------------------------------------------------
    def _loss_net(self, cb):
        if self._loss_network is not None or self._network is not None:
            return resolve_loss_network(self._loss_network, self._network, self._loss_fn)
        train = _cb_get(cb, "train_network")
        inner = getattr(train, "network", None)
        if isinstance(inner, nn.Cell):
            return inner
        raise ValueError("LandscapeCallback could not find the loss network inside the training cell; pass "
                         "loss_network= (a cell returning the loss) or network= and loss_fn=")

    def _ev(self, cb):
        if self._evaluator is None:
            data = EvalData.take(self.eval_data, **self.settings.data_options())
            self._evaluator = LossEvaluator(self._loss_net(cb), data)
            self._layout = dirs.Layout([p.shape for p in self._evaluator.params])
        return self._evaluator

    def _writer_(self):
        if self._writer is None:
            self._writer = SummaryWriter(self.logdir)
        return self._writer

    def _flat(self):
        ev = self._evaluator
        return self._layout.flatten([p.asnumpy() for p in ev.params])

    # -- hooks -----------------------------------------------------------------------------------------------------
    def on_train_begin(self, run_context):
        cb = run_context.original_args()
        ev = self._ev(cb)
        step = int(_cb_get(cb, "cur_step_num", 0) or 0)
        if "interpolation" in self.methods:
            self._start = (step, ev.read())
        if self.trajectory is not None:
            self.trajectory.add(step, self._flat())

    def on_train_step_end(self, run_context):
        if self.trajectory is None:
            return
        cb = run_context.original_args()
        step = int(_cb_get(cb, "cur_step_num", 0) or 0)
        if self.trajectory.wants(step):
            self.trajectory.add(step, self._flat())

    def on_train_epoch_end(self, run_context):
        cb = run_context.original_args()
        epoch = int(_cb_get(cb, "cur_epoch_num", 0) or 0)
        last = int(_cb_get(cb, "epoch_num", 0) or 0)
        due = self.every_epochs is not None and epoch % self.every_epochs == 0
        if due or (self.at_end and epoch == last):
            self._run(cb, epoch)

    def on_train_end(self, run_context):
        cb = run_context.original_args()
        step = int(_cb_get(cb, "cur_step_num", 0) or 0)
        if self.at_end and self._last_step != step:   # e.g. training stopped before its last epoch
            self._run(cb, int(_cb_get(cb, "cur_epoch_num", 0) or 0))
        self.close()

    def close(self):
        if self._writer is not None and self._own_writer:
            self._writer.close()
            self._writer = None

    def _job(self, method, step, spe):
        """The job of ``method`` at ``step``, or None with a logged reason when it cannot run yet."""
        job = LandscapeJob(method, step, "step", spe)
        if method == "pca":
            before = sum(1 for s in self.trajectory.steps if s < step)
            if before < 3:
                self.settings.say("tb-mindspore: PCA landscape skipped at step %d: %d trajectory snapshots before "
                                  "it (needs 3)" % (step, before))
                return None
            job.trajectory = self.trajectory.matrix()
        elif method == "interpolation":
            if self._start is None:
                return None
            job.params_a = self._start[1]
            job.labels = {"a": "start of training (step %d)" % self._start[0], "b": "step %d" % step,
                          "step_a": self._start[0], "step_b": step}
        return job

    def _run(self, cb, epoch):
        ev = self._ev(cb)
        step = int(_cb_get(cb, "cur_step_num", 0) or 0)
        self._last_step = step
        spe = int(_cb_get(cb, "batch_num", 1) or 1)
        self.settings.say("tb-mindspore: loss landscapes at epoch %d (step %d): %s"
                          % (epoch, step, ", ".join(self.methods)))
        try:
            for method in self.methods:
                job = self._job(method, step, spe)
                if job is None:
                    continue
                try:
                    self.results.append(compute_landscape(
                        method=method, evaluator=ev, settings=self.settings, writer=self._writer_(),
                        tag=self.tag_prefix + method, step=job.step, unit=job.unit,
                        step_per_epoch=job.step_per_epoch, trajectory=job.trajectory, params_a=job.params_a,
                        labels=job.labels))
                except ValueError as e:   # e.g. a trajectory that spans fewer than two dimensions
                    self.settings.say("tb-mindspore: %s landscape skipped at step %d: %s" % (method, step, e))
        except KeyboardInterrupt:
            self.close()
            raise
