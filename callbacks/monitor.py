"""``TrainMonitor``: all three tiers (core, diagnostic, debug) of a ``Model.train`` run as TensorBoard events,
plus live health. A thin adapter: ``Model.train``'s callbacks drive a :class:`~.recorders.Pipeline` of recorders."""

from mindspore.train import Callback

from .common.util import cb_get, find_cell, find_optimizer
from .recorders import CellSource, HostSource, MonitorSettings, Pipeline, Recorder, default_recorders
from .recorders.graph import GraphRecorder
from .recorders.mindformers_source import MindFormersSource, find_mindformers_cell
from .recorders.options import from_keywords
from .recorders.settings import DEBUG_ITEMS
from .cells.train_cell import MonitoredTrainCell

__all__ = ["TrainMonitor", "DEBUG_ITEMS"]

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

    **Diagnostic** (at each epoch end, or every ``Diagnostic(every=)`` steps; and at the end): per-layer weight norms
    (``diagnostic/layer_weight_norm``, one fused computation on the device) and the global weight norm; with an
    ``eval=Eval(dataset, ...)``, ``diagnostic/eval_loss`` and ``diagnostic/eval/<metric>`` (at each epoch end, or
    every ``Eval(every=)`` steps).

    **Debug** (off by default; opt in per item with ``debug=Debug(items=[...])`` or ``debug="all"``; every
    ``Debug(every=)`` steps):
    ``update_ratio`` (||w_after - w_before|| / ||w_before|| per layer over the real optimizer step; only at the
    multiples of ``Debug.every``, where the weights were kept before the step),
    ``layer_grad_norm`` (needs a MonitoredTrainCell), ``activations`` (histograms of the outputs of the top-level
    blocks on ``Debug(activation_samples=)`` samples of the step's batch) and ``data_wait`` (milliseconds the step
    waited for its batch: time from the previous step's end, or the epoch's start for its first step, to this
    step's start; monitoring and epoch-end work are left out).

    Loss, gradient norm and their interval statistics come from a :class:`MonitoredTrainCell` in the training
    network (computed inside the compiled step; nothing is copied to the host between two points). With mindformers'
    own training cell (``MFTrainOneStepCell``, ``MFPipelineWithLossScaleCell``: a mindformers ``Trainer``, or a
    YAML ``callbacks:`` entry ``type: TrainMonitor``) they are read from that cell's outputs (loss, overflow, loss
    scale, learning rate, global norm, local norms), never computed again. Without either, loss and learning rate
    are still recorded (the loss read from the step outputs, the learning rate recomputed on the host from the
    optimizer), the gradient norm is not. What a run cannot record is said once in the log and in the run info
    (``recorded`` / ``not_recorded``, with the reason and how to get it).

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
    callback at or after each multiple of ``collect_freq`` (or ``Debug.every``, ``Diagnostic.every``), with the true
    step number of that callback (a multiple of the sink size). The interval statistics of ``MonitoredTrainCell``
    still cover every step, because every step writes a row of its ring on the device (sized for a whole sink
    before the first step, up to 65,536 steps); step time is the sink's wall time divided
    by its steps; the update ratio spans the whole sink (snapshot before it, ratio after it); ``data_wait`` is the
    host-side gap between two sinks (the device reads its data queue unseen). Without the cell the loss interval
    only sees the last step of each sink. MindSpore on CPU runs sink mode as non-sink (a callback every step).

    **Distributed**: only rank 0 writes unless ``ranks=Ranks(all=True)`` (then rank ``k > 0`` writes to
    ``<logdir>/rank<k>``, its own run, so ranks can be compared and no two processes share a file). The rank comes
    from ``mindspore.communication`` when initialised, else from ``RANK_ID``.

    **Live health** (on by default, see ``health=LiveHealth(...)``): at the core point that follows a problem
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

    Args (all but ``logdir`` keyword-only; the options are grouped by what they switch on, each group a small
    validated object from ``tb_mindspore_callbacks``):
      logdir: the run folder (e.g. from :func:`make_run_dir`); created if missing.
      collect_freq: core points every this many steps (int >= 1).
      batch_size: samples per step for throughput; by default the training dataset's batch size.
      hparams: a dict of hyperparameters (HParams tab and the registry line).
      recorders: extra :class:`~tb_mindspore_callbacks.recorders.Recorder` objects to run with the built-in ones.
      flight_recorder: steps of per-layer gradient norms kept on the device (default 100; 0 or None: off) and
        written out (``debug/flight/*``) when live health finds an anomaly, which then names the layer and step
        where it started; the debug tier is on for the 50 steps after (needs a MonitoredTrainCell).
      diagnostic: :class:`Diagnostic` ``(every=None, weight_norms=True)``: weight norms every this many steps, or
        at each epoch end.
      debug: :class:`Debug` ``(items=(), every=100, activation_samples=4, activations_include=None)``, or its items
        alone (a list from :data:`DEBUG_ITEMS`, or ``"all"``).
      eval: :class:`Eval` ``(dataset, metrics=None, every=None, model=None)``: evaluation while training; by
        default the model is built from the training network's backbone and loss function (a ``WithLossCell``
        inside the training cell, or ``Model(net, loss_fn, opt)``).
      layers: :class:`Layers` ``(include=None, exclude=None, max=64)``: which parameters are the per-layer series'
        layers (default: every parameter with >= 2 dims).
      health: :class:`LiveHealth` ``(thresholds=None, on_anomaly=("log",), checkpoint_dir=None)`` (on by default;
        ``False`` turns it off). ``on_anomaly``: ``"stop"`` (end training after that step), ``"skip"`` (a
        MonitoredTrainCell does not apply the update of a step whose gradient norm is non-finite or 10x the largest
        applied before), ``"checkpoint"`` (save the weights of the last point without a problem, into
        ``checkpoint_dir``, default ``<logdir>/checkpoints``), or a tuple of them; ``thresholds`` override
        :data:`~tb_mindspore_callbacks.recorders.LIVE_HEALTH_DEFAULTS`.
      storage: :class:`Storage` ``(flush_secs=2.0, max_queue=10000, max_file_bytes=None, max_run_bytes=None,
        registry="auto")``: how long a value may wait before reaching the file, how many may wait for the writer
        thread, event-file rotation size and run budget (see SummaryWriter), the ``experiments.md`` registry.
      ranks: :class:`Ranks` ``(rank=None, all=False)``: this process's rank (detected at train begin by default);
        ``all=True`` also writes from ranks other than 0 (each into ``<logdir>/rank<k>``).
      graph: record the model graph once, after the first step (GRAPH_MODE; what ``SummaryCollector(collect_graph=
        True)`` records), as TensorBoard's GraphDef: TensorBoard's Graphs tab and the tab's Model graph section.

    The flat keywords of earlier releases (``debug_freq=``, ``eval_dataset=``, ``layers_include=``,
    ``live_health=``, ``on_anomaly=``, ``max_run_bytes=``, ``all_ranks=``, ...) still work for this release, with a
    ``FutureWarning`` that names the new form.

    Misuse (a bad regex, ``collect_freq <= 0``, an unknown debug item or metric) raises ValueError here, not
    during training.
    """

    def __init__(self, logdir, *, collect_freq=10, batch_size=None, hparams=None, recorders=(), flight_recorder=100,
                 diagnostic=None, debug=None, eval=None, layers=None, health=None, storage=None, ranks=None,
                 graph=False, **old_keywords):
        super().__init__()
        if not isinstance(graph, bool):
            raise ValueError("graph must be True or False, got %r" % (graph,))
        groups = from_keywords("TrainMonitor", old_keywords, {
            "diagnostic": diagnostic, "debug": debug, "eval": eval, "layers": layers, "health": health,
            "storage": storage, "ranks": ranks})
        self.settings = MonitorSettings(logdir, collect_freq=collect_freq, batch_size=batch_size, hparams=hparams,
                                        flight_recorder=flight_recorder, **groups)
        self.extra_recorders = _check_recorders(recorders)
        if graph:   # the model graph after the first step (GRAPH_MODE), for the Graphs tab and the graph view
            self.extra_recorders.append(GraphRecorder())
        self.pipeline = Pipeline(self.settings, lambda s: default_recorders(s, self.extra_recorders))
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
            reserve = getattr(source, "reserve", None)
            if reserve is not None:
                # The steps between two reads of the cell's ring: a collect interval, or a whole sink.
                sink = int(cb_get(cb, "batch_num", 0) or 0) if self._sink else 0
                reserve(max(self.settings.collect_freq, sink))
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
        elif cell is None and self._cell is None:
            mf_cell = find_mindformers_cell(network)
            if mf_cell is not None and getattr(source, "cell", None) is not mf_cell:
                # mindformers' own training cell: its outputs carry loss, overflow, loss scale, learning rate and
                # the gradient norms; read them instead of computing them again.
                source = MindFormersSource(mf_cell)
            elif source is None:
                # No cell we can read: the loss from the outputs on the host (what is not recorded, and how to
                # add it, is said once at start).
                source = HostSource(find_optimizer(cb))
        if self.pipeline.active and source is not self.pipeline.source:
            self.pipeline.source = source
            if self.pipeline.ctx is not None:
                self.pipeline.ctx.source = source
        return source


def _check_recorders(recorders):
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
