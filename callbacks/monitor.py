"""``TrainMonitor``: all three tiers (core, diagnostic, debug) of a ``Model.train`` run as TensorBoard events,
plus live health. A thin adapter: ``Model.train``'s callbacks drive a :class:`~.recorders.Pipeline` of recorders."""

from mindspore.train import Callback

from tb_plugin_mindspore import metadata

from ._util import cb_get, find_cell, find_optimizer, logger
from .layers import DEFAULT_MAX_LAYERS
from .recorders import CellSource, HostSource, MonitorSettings, Pipeline, default_recorders
from .recorders.settings import DEBUG_ITEMS
from .train_cell import MonitoredTrainCell

__all__ = ["TrainMonitor", "DEBUG_ITEMS"]

_NO_CELL_WARNING = (
    "tb-mindspore: the training network has no MonitoredTrainCell, so %s (the gradient norm, its spike-preserving "
    "statistics of every step%s) is not recorded; loss and learning rate still are. Wrap your network in one line: "
    "`train_net = MonitoredTrainCell.wrap(net, loss_fn, optimizer)` and train `Model(train_net)` "
    "(from tb_mindspore_callbacks import MonitoredTrainCell)."
)


def lend_optimizer(cb):
    """Sets ``cb_params.optimizer`` from the training cell when ``Model`` was built from a training cell only.

    ``Model(train_cell)`` leaves ``cb_params.optimizer`` None, and MindSpore's ``ReduceLROnPlateau`` and
    ``LearningRateScheduler`` read it at step / epoch ends: they then work whatever their place in the list.
    """
    if cb_get(cb, "optimizer") is None:
        opt = find_optimizer(cb)
        if opt is not None:
            cb.optimizer = opt
    return cb_get(cb, "optimizer")


def resumed_step_offset(cb):
    """Steps trained before this ``Model.train`` call: ``Model.train(..., initial_epoch=k)`` (a resume) counts
    ``cur_step_num`` from 0 again while ``cur_epoch_num`` starts at k + 1, so the steps of a resumed run would start at 1
    and hide the run they continue. Read at the first epoch's begin; 0 for a fresh run."""
    epoch = int(cb_get(cb, "cur_epoch_num", 1) or 1)
    per_epoch = int(cb_get(cb, "batch_num", 0) or 0)
    if int(cb_get(cb, "cur_step_num", 0) or 0) == 0 and epoch > 1 and per_epoch > 0:
        return (epoch - 1) * per_epoch
    return 0


class TrainMonitor(Callback):
    """Records a ``Model.train`` run in three tiers, cheaply, as TensorBoard event files.

    **Core** (every ``collect_freq`` steps and at the end of training):

    * ``core/loss``: the loss of the last step;
    * ``core/learning_rate``: the learning rate the optimizer applied at that step (and
      ``core/learning_rate/group<i>`` for every parameter group when the optimizer has per-group learning rates;
      ``core/learning_rate`` is then group 0);
    * ``core/grad_norm``: the global L2 norm of all gradients of the last step, before clipping;
    * ``core/loss_scale`` and ``core/overflow_steps`` with a :class:`MonitoredLossScaleCell`;
    * ``core/step_time_ms`` and ``core/throughput`` (samples/s): averages over the steps since the previous point;
    * ``interval/<tag>`` for loss, gradient norm and step time: min / mean / max / count / non-finite count of the
      steps since the previous point, so a single-step spike or NaN between two points is still visible;
    * ``core/compile_ms``: one-off time kept out of the step time: the first step (graph compilation), at step 1,
      and the first debug point (the monitoring graphs compiled once), at that step.

    **Diagnostic** (at each epoch end, or every ``diagnostic_freq`` steps; and at the end): per-layer weight norms
    (``diagnostic/layer_weight_norm``, one fused computation on the device) and the global weight norm; with an
    ``eval_dataset``, ``diagnostic/eval_loss`` and ``diagnostic/eval/<metric>`` (at each epoch end, or every
    ``eval_freq`` steps).

    **Debug** (off by default; opt in per item with ``debug=[...]`` or ``debug="all"``; every ``debug_freq`` steps):
    ``update_ratio`` (||w_after - w_before|| / ||w_before|| per layer over the real optimizer step; only at the
    multiples of ``debug_freq``, where the weights were kept before the step),
    ``layer_grad_norm`` (needs a MonitoredTrainCell), ``activations`` (histograms of the outputs of the top-level
    blocks on ``activation_samples`` samples of the step's batch) and ``data_wait`` (milliseconds the step waited
    for its batch: time from the previous step's end, or the epoch's start for its first step, to this step's
    start; monitoring and epoch-end work are left out).

    Loss, gradient norm and their interval statistics come from a :class:`MonitoredTrainCell` in the training
    network (computed inside the compiled step; nothing is copied to the host between two points). Without one,
    loss and learning rate are still recorded (the loss read from the step outputs, the learning rate recomputed on
    the host from the optimizer), the gradient norm is not, and one warning says how to add the cell.

    At train begin ``_meta/run_info`` holds the format version, MindSpore version, ``collect_freq``, rank and the
    setup; ``hparams`` (those :func:`make_run_dir` recorded in the folder, updated by ``hparams=``) go to
    TensorBoard's HParams tab, and a line per run is appended to ``experiments.md`` next to the run folder.

    **MindSpore's own callbacks**: ``Model(train_cell)`` leaves ``cb_params.optimizer`` None, which
    ``ReduceLROnPlateau`` and ``LearningRateScheduler`` need; TrainMonitor sets it to the training cell's optimizer
    at train begin (they only read it at step and epoch ends, so the order of the callback list does not matter).

    NaN and Inf are written as they are; a failure inside the monitor is logged, never raised into training. Step
    numbers are ``cb_params.cur_step_num`` (1-based, counted over all epochs).

    **Sink mode** (``dataset_sink_mode=True``, on Ascend / GPU): MindSpore runs ``sink_size`` steps (default: one
    epoch) per call on the device and calls back only after each sink. A point is then written at the first
    callback at or after each multiple of ``collect_freq`` (or ``debug_freq``, ``diagnostic_freq``), with the true
    step number of that callback (a multiple of the sink size). The interval statistics of ``MonitoredTrainCell``
    still cover every step, because they are updated inside the graph; step time is the sink's wall time divided
    by its steps; the update ratio spans the whole sink (snapshot before it, ratio after it); ``data_wait`` is the
    host-side gap between two sinks (the device reads its data queue unseen). Without the cell the loss interval
    only sees the last step of each sink. MindSpore on CPU runs sink mode as non-sink (a callback every step).

    **Distributed**: only rank 0 writes unless ``all_ranks=True`` (then rank ``k > 0`` writes to
    ``<logdir>/rank<k>``, its own run, so ranks can be compared and no two processes share a file). The rank comes
    from ``mindspore.communication`` when initialised, else from ``RANK_ID``.

    **Live health** (on by default, see ``live_health`` / ``on_anomaly``): at the core point that follows a problem
    (within one ``collect_freq`` interval), one line in the training log (what, where, since which step, what to
    do), a ``_meta/health_event`` in the run (the Health panel and ``tb-mindspore check`` read it) and the actions
    asked for. A stall (no step for 10x the usual time between points, at least 2 minutes) is found by a watchdog
    thread. At the end ``_meta/run_end`` says whether the run finished, was stopped, interrupted (Ctrl-C, SIGTERM)
    or failed; ``_meta/run_info`` holds ``lr_config``, the learning rate the optimizer was given per group.

    The work is done by small recorders (``tb_mindspore_callbacks.recorders``) driven by a ``Pipeline``; this
    class only adapts ``Model.train``'s callbacks to it.

    Hooks: ``on_train_begin`` opens the writer and writes run info; ``on_train_step_begin`` (debug only) times the
    data wait and takes the update-ratio snapshot; ``on_train_step_end`` times the step and writes what is due;
    ``on_train_epoch_end`` runs the per-epoch diagnostics; ``on_train_end`` writes the final points and closes the
    writer. SIGINT (Ctrl-C) and SIGTERM write out everything queued before the previous handlers run; the file
    stays open unless the signal ends the process, so a program that catches the signal goes on recording. Faults
    of the monitoring (disk full, read-only or removed run folder, failed rotation) are logged once and never
    raised into training.

    Args:
      logdir: the run folder (e.g. from :func:`make_run_dir`); created if missing.
      collect_freq: core points every this many steps (int >= 1).
      flush_secs: the longest a written value waits in memory before reaching the file (> 0).
      batch_size: samples per step for throughput; by default the training dataset's batch size.
      rank: the rank of this process; by default detected at train begin.
      all_ranks: also write from ranks other than 0 (each into ``<logdir>/rank<k>``).
      max_queue: values that may wait for the writer thread before new ones are dropped (and counted).
      diagnostic_freq: weight norms every this many steps; None: at each epoch end.
      weight_norms: record per-layer weight norms (diagnostic tier).
      eval_dataset: a dataset to evaluate on (diagnostic tier); None: no evaluation.
      eval_metrics: metrics for the evaluation: names (``"accuracy"``) or ``{name: Metric}``; the loss is always
        recorded.
      eval_freq: evaluate every this many steps; None: at each epoch end.
      eval_model: a ``Model`` to evaluate with; by default one is built from the training network's backbone and
        loss function (a ``WithLossCell`` inside the training cell, or ``Model(net, loss_fn, opt)``).
      debug: debug items to record: a list from :data:`DEBUG_ITEMS`, or ``"all"``; default none.
      debug_freq: debug points every this many steps.
      activation_samples: samples of the batch used for activation histograms.
      activations_include: regex on cell names selecting the cells whose outputs are histogrammed; default: the
        top-level blocks (children of the network, and of its CellList / SequentialCell containers).
      layers_include: regex on parameter names selecting the layers; default: every parameter with >= 2 dims.
      layers_exclude: regex of parameter names to leave out.
      max_layers: at most this many layers (an evenly spaced subset when more match).
      hparams: a dict of hyperparameters (HParams tab and the registry line).
      registry: ``"auto"`` (``experiments.md`` in the folder that holds ``logdir``), a file path, or None.
      max_file_bytes / max_run_bytes: event-file rotation size and budget for the run folder (see SummaryWriter).
      live_health: judge every core point while training (NaN / Inf loss, gradients or weights, gradient explosion,
        loss spikes) and watch for stalls (default True); a dict overrides thresholds
        (:data:`~tb_mindspore_callbacks.recorders.LIVE_HEALTH_DEFAULTS`); False turns it off.
      on_anomaly: what live health does at a finding besides the log line and the ``_meta/health_event``:
        ``"stop"`` (end training after that step), ``"skip"`` (a MonitoredTrainCell does not apply the update of a
        step whose gradient norm is non-finite or 10x the largest applied before), ``"checkpoint"`` (save the
        weights of the last point without a problem), or a tuple of them; default ``("log",)``.
      checkpoint_dir: where ``"checkpoint"`` saves (default ``<logdir>/checkpoints``).
      flight_recorder: steps of per-layer gradient norms kept on the device (default 100; 0 or None: off) and
        written out (``debug/flight/*``) when live health finds an anomaly, which then names the layer and step
        where it started; the debug tier is on for the 50 steps after (needs a MonitoredTrainCell).
      recorders: extra :class:`~tb_mindspore_callbacks.recorders.Recorder` objects to run with the built-in ones.
      graph: record the model graph once, after the first step (GRAPH_MODE; what ``SummaryCollector(collect_graph=
        True)`` records), as TensorBoard's GraphDef: TensorBoard's Graphs tab and the tab's Model graph section.

    Misuse (a bad regex, ``collect_freq <= 0``, an unknown debug item or metric) raises ValueError here, not
    during training.
    """

    def __init__(self, logdir, collect_freq=10, flush_secs=2.0, batch_size=None, rank=None, all_ranks=False,
                 max_queue=10000, diagnostic_freq=None, weight_norms=True, eval_dataset=None, eval_metrics=None,
                 eval_freq=None, eval_model=None, debug=(), debug_freq=100, activation_samples=4,
                 activations_include=None, layers_include=None, layers_exclude=None,
                 max_layers=DEFAULT_MAX_LAYERS, hparams=None, registry="auto", max_file_bytes=None,
                 max_run_bytes=None, live_health=True, on_anomaly=("log",), checkpoint_dir=None, recorders=(),
                 flight_recorder=100, graph=False):
        super().__init__()
        if not isinstance(graph, bool):
            raise ValueError("graph must be True or False, got %r" % (graph,))
        self.settings = MonitorSettings(
            logdir, collect_freq=collect_freq, flush_secs=flush_secs, batch_size=batch_size, rank=rank,
            all_ranks=all_ranks, max_queue=max_queue, diagnostic_freq=diagnostic_freq, weight_norms=weight_norms,
            eval_dataset=eval_dataset, eval_metrics=eval_metrics, eval_freq=eval_freq, eval_model=eval_model,
            debug=debug, debug_freq=debug_freq, activation_samples=activation_samples,
            activations_include=activations_include, layers_include=layers_include, layers_exclude=layers_exclude,
            max_layers=max_layers, hparams=hparams, registry=registry, max_file_bytes=max_file_bytes,
            max_run_bytes=max_run_bytes, live_health=live_health, on_anomaly=on_anomaly,
            checkpoint_dir=checkpoint_dir, flight_recorder=flight_recorder)
        self.extra_recorders = _check_recorders(recorders)
        if graph:   # the model graph after the first step (GRAPH_MODE), for the Graphs tab and the graph view
            from .recorders.graph import GraphRecorder

            self.extra_recorders.append(GraphRecorder())
        self.pipeline = Pipeline(self.settings, lambda s: default_recorders(s, self.extra_recorders))
        self._warned_no_cell = False
        self._network_id = None
        self._cell = None
        self._sink = False
        self._offset = None     # steps trained before this Model.train call (a resume with initial_epoch)

    # The settings, readable as before (``monitor.collect_freq``, ``monitor.debug``, ...).
    def __getattr__(self, name):
        settings = self.__dict__.get("settings")
        if settings is not None and not name.startswith("_") and hasattr(settings, name):
            return getattr(settings, name)
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    @property
    def writer(self):
        return self.pipeline.writer

    @property
    def errors(self):
        return self.pipeline.errors

    @property
    def monitored_cell(self):
        """The :class:`MonitoredTrainCell` found in the training network (``None`` without one)."""
        return self._cell

    @property
    def layer_names(self):
        """Names of the layers (parameters) that get per-layer statistics in this run."""
        ctx = self.pipeline.ctx
        return list(ctx.layer_names) if ctx is not None else []

    @property
    def health_events(self):
        """The live health events of the current / last run (dicts as written to ``_meta/health_event``)."""
        for r in self.pipeline.recorders:
            if hasattr(r, "events"):
                return list(r.events)
        return []

    # -- hooks -----------------------------------------------------------------------------------------------------
    def on_train_begin(self, run_context):
        try:
            cb = run_context.original_args()
            lend_optimizer(cb)
            self._cell = None
            self._network_id = None
            self._sink = bool(cb_get(cb, "dataset_sink_mode", False))
            self._offset = None
            source = self._find_source(cb)
            self.pipeline.start(source, step=int(cb_get(cb, "cur_step_num", 0) or 0), cb_params=cb,
                                batch=self.settings.batch_size or _dataset_batch_size(cb))
        except Exception:
            self.pipeline.error("train begin")

    def on_train_epoch_begin(self, run_context):
        if self._offset is None and self.pipeline.active:
            try:
                self._offset = resumed_step_offset(run_context.original_args())
                if self._offset:
                    self.pipeline.shift_steps(self._offset)
            except Exception:
                self._offset = 0
                self.pipeline.error("epoch begin")
        self.pipeline.epoch_begin()

    def _step(self, cb):
        return int(cb.cur_step_num) + (self._offset or 0)

    def on_train_step_begin(self, run_context):
        p = self.pipeline
        if not p.active or not p.wants_step_begin:
            return
        try:
            p.step_begin(self._step(run_context.original_args()))
        except Exception:
            p.error("step begin")

    def on_train_step_end(self, run_context):
        p = self.pipeline
        if not p.active:
            return
        try:
            cb = run_context.original_args()
            if self._cell is None or self._sink:
                # Sink mode swaps in a wrapper network per epoch; find the cell inside it again (cached by id).
                self._find_source(cb)
            p.step_end(self._step(cb), outputs=cb_get(cb, "net_outputs"))
            if p.stop_requested:
                run_context.request_stop()
        except Exception:
            p.error("step end")

    def on_train_epoch_end(self, run_context):
        p = self.pipeline
        if not p.active:
            return
        try:
            p.epoch_end(self._step(run_context.original_args()))
        except Exception:
            p.error("epoch end")

    def on_train_end(self, run_context):
        p = self.pipeline
        if not p.active:
            return
        try:
            cb = run_context.original_args()
            p.end(self._step(cb), outputs=cb_get(cb, "net_outputs"))
        except Exception:
            p.error("train end")
        finally:
            self.close()

    def __exit__(self, exc_type, exc, tb):
        """``Model.train`` leaves the callbacks' ``with`` block: after an exception or Ctrl-C, the final points and
        the run end marker ("interrupted" / "failed") are written before the file is closed."""
        p = self.pipeline
        if exc_type is not None and p.active:
            status = "interrupted" if issubclass(exc_type, KeyboardInterrupt) else "failed"
            try:
                p.end(status=status, reason="%s: %s" % (exc_type.__name__, str(exc)[:200]))
            except Exception:
                p.error("train end")
            finally:
                self.close()
        return False

    def close(self):
        """Writes everything still queued and closes the event file (also done at train end). Never raises."""
        self.pipeline.close()

    # -- finding the step source -----------------------------------------------------------------------------------
    def _find_source(self, cb):
        network = cb_get(cb, "train_network")
        if network is not None and id(network) == self._network_id and self.pipeline.source is not None:
            return self.pipeline.source
        self._network_id = id(network) if network is not None else None
        cell = find_cell(network, MonitoredTrainCell)
        source = self.pipeline.source
        if cell is not None and cell is not self._cell:
            self._cell = cell
            source = CellSource(cell)
        elif source is None:
            source = HostSource(find_optimizer(cb))
            if not self._warned_no_cell:
                self._warned_no_cell = True
                extra = ", and the per-layer gradient norms you asked for" if "layer_grad_norm" in \
                    self.settings.debug else ""
                logger.warning(_NO_CELL_WARNING, metadata.GRAD_NORM, extra)
        if self.pipeline.active and source is not self.pipeline.source:
            self.pipeline.source = source
            if self.pipeline.ctx is not None:
                self.pipeline.ctx.source = source
        return source


def _check_recorders(recorders):
    from .recorders import Recorder

    items = list(recorders or ())
    for r in items:
        if not isinstance(r, Recorder):
            raise ValueError("recorders must be tb_mindspore_callbacks.recorders.Recorder objects, got %r" % (r,))
    return items


def _dataset_batch_size(cb):
    dataset = cb_get(cb, "train_dataset")
    try:
        size = int(dataset.get_batch_size())
        return size if size > 0 else None
    except Exception:
        return None
