"""``TrainMonitor``: all three tiers (core, diagnostic, debug) of a ``Model.train`` run as TensorBoard events."""

import json
import math
import os
import re
import time

import numpy as np
from mindspore.train import Callback

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore import __version__ as plugin_version
from tb_plugin_mindspore.writer import SummaryWriter, check_sizes, install_signal_handlers

from .activations import ActivationProbe
from ._util import cb_get, detect_rank, find_cell, find_optimizer, host_learning_rates, logger, loss_value
from .run_dir import RUN_HPARAMS_FILE, read_run_hparams
from .layers import DEFAULT_MAX_LAYERS, LayerSelection, Snapshot, UpdateRatio, WeightNorms, cached
from .train_cell import MonitoredTrainCell

__all__ = ["TrainMonitor", "DEBUG_ITEMS"]

# Opt-in debug items (``debug=`` accepts a subset, or "all").
DEBUG_ITEMS = ("update_ratio", "layer_grad_norm", "activations", "data_wait")

_NO_CELL_WARNING = (
    "tb-mindspore: the training network has no MonitoredTrainCell, so %s (the gradient norm, its spike-preserving "
    "statistics of every step%s) is not recorded; loss and learning rate still are. Wrap your network in one line: "
    "`train_net = MonitoredTrainCell.wrap(net, loss_fn, optimizer)` and train `Model(train_net)` "
    "(from tb_mindspore_callbacks import MonitoredTrainCell)."
)


class _Interval:
    """Host-side min / mean / max / count / non-finite of values seen since the last reset."""

    __slots__ = ("min", "max", "sum", "finite", "nonfinite")

    def __init__(self):
        self.reset()

    def reset(self):
        self.min = math.inf
        self.max = -math.inf
        self.sum = 0.0
        self.finite = 0
        self.nonfinite = 0

    def add(self, value, weight=1):
        if math.isfinite(value):
            self.min = min(self.min, value)
            self.max = max(self.max, value)
            self.sum += value * weight
            self.finite += weight
        else:
            self.nonfinite += weight

    @property
    def count(self):
        return self.finite + self.nonfinite

    def fields(self):
        """``(min, mean, max, count, nonfinite)`` as in ``metadata.INTERVAL_FIELDS``."""
        if self.finite:
            return self.min, self.sum / self.finite, self.max, self.count, self.nonfinite
        return math.nan, math.nan, math.nan, self.count, self.nonfinite


def _interval_from_cell_row(row):
    """``(min, mean, max, count, nonfinite)`` from one row of ``MonitoredTrainCell`` statistics."""
    minimum, maximum, total, finite, nonfinite = (float(v) for v in row)
    if finite > 0:
        return minimum, total / finite, maximum, int(finite + nonfinite), int(nonfinite)
    return math.nan, math.nan, math.nan, int(finite + nonfinite), int(nonfinite)


def _due(last, step, freq):
    """True when a multiple of ``freq`` lies in ``(last, step]``."""
    return step // freq > last // freq


def _check_int(name, value, minimum=1, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError("%s must be %san int >= %d, got %r" % (name, "None or " if allow_none else "", minimum, value))
    return value


def _parse_debug(debug):
    if debug is None or debug is False:
        return ()
    if debug is True or debug == "all":
        return DEBUG_ITEMS
    if isinstance(debug, str):
        debug = [debug]
    try:
        items = tuple(debug)
    except TypeError:
        raise ValueError("debug must be 'all' or a list of %s, got %r" % (", ".join(DEBUG_ITEMS), debug)) from None
    unknown = [i for i in items if i not in DEBUG_ITEMS]
    if unknown:
        raise ValueError("unknown debug item(s) %s; choose from %s (or 'all')"
                         % (", ".join(repr(u) for u in unknown), ", ".join(DEBUG_ITEMS)))
    return tuple(i for i in DEBUG_ITEMS if i in items)


def _parse_metrics(metrics):
    """``{name: Metric}`` from None, a dict, or names known to ``mindspore.train.get_metric_fn``."""
    from mindspore.train import Metric, get_metric_fn

    if metrics is None:
        return {}
    if isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(metrics, dict):
        out = {}
        for name, m in metrics.items():
            if not isinstance(m, Metric):
                raise ValueError("eval_metrics[%r] must be a mindspore.train.Metric, got %r" % (name, m))
            out[str(name)] = m
        return out
    out = {}
    for name in metrics:
        try:
            out[str(name)] = get_metric_fn(name)
        except Exception as e:
            raise ValueError("unknown eval metric %r (%s)" % (name, e)) from None
    return out


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

    Misuse (a bad regex, ``collect_freq <= 0``, an unknown debug item or metric) raises ValueError here, not
    during training.
    """

    def __init__(self, logdir, collect_freq=10, flush_secs=2.0, batch_size=None, rank=None, all_ranks=False,
                 max_queue=10000, diagnostic_freq=None, weight_norms=True, eval_dataset=None, eval_metrics=None,
                 eval_freq=None, eval_model=None, debug=(), debug_freq=100, activation_samples=4,
                 activations_include=None, layers_include=None, layers_exclude=None,
                 max_layers=DEFAULT_MAX_LAYERS, hparams=None, registry="auto", max_file_bytes=None,
                 max_run_bytes=None):
        super().__init__()
        if not isinstance(logdir, (str, os.PathLike)) or not str(logdir):
            raise ValueError("logdir must be a non-empty path, got %r" % (logdir,))
        self.collect_freq = _check_int("collect_freq", collect_freq)
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or not flush_secs > 0:
            raise ValueError("flush_secs must be a number > 0, got %r" % (flush_secs,))
        self.batch_size = _check_int("batch_size", batch_size, allow_none=True)
        self.rank = _check_int("rank", rank, minimum=0, allow_none=True)
        self.max_queue = _check_int("max_queue", max_queue)
        self.diagnostic_freq = _check_int("diagnostic_freq", diagnostic_freq, allow_none=True)
        self.eval_freq = _check_int("eval_freq", eval_freq, allow_none=True)
        self.debug_freq = _check_int("debug_freq", debug_freq)
        self.activation_samples = _check_int("activation_samples", activation_samples)
        self.debug = _parse_debug(debug)
        self.eval_metrics = _parse_metrics(eval_metrics)
        if eval_dataset is not None and not hasattr(eval_dataset, "create_tuple_iterator"):
            raise ValueError("eval_dataset must be a mindspore.dataset Dataset, got %r" % (eval_dataset,))
        if eval_model is not None and not hasattr(eval_model, "eval"):
            raise ValueError("eval_model must be a mindspore.train.Model, got %r" % (eval_model,))
        if eval_model is not None and eval_dataset is None:
            raise ValueError("eval_model was given without an eval_dataset")
        self.layers = LayerSelection(layers_include, layers_exclude, max_layers)
        if activations_include is not None:
            try:
                self.activations_include = re.compile(activations_include)
            except (re.error, TypeError) as e:
                raise ValueError("activations_include is not a valid regular expression (%r): %s"
                                 % (activations_include, e)) from None
        else:
            self.activations_include = None
        if hparams is not None and not isinstance(hparams, dict):
            raise ValueError("hparams must be a dict or None, got %r" % (hparams,))
        if registry is not None and not isinstance(registry, (str, os.PathLike)):
            raise ValueError("registry must be 'auto', a file path or None, got %r" % (registry,))
        self.max_file_bytes, self.max_run_bytes = check_sizes(max_file_bytes, max_run_bytes)
        self.logdir = str(logdir)
        self.flush_secs = float(flush_secs)
        self.all_ranks = bool(all_ranks)
        self.weight_norms = bool(weight_norms)
        self.eval_dataset = eval_dataset
        self.user_eval_model = eval_model
        self.hparams = dict(hparams) if hparams else None
        self.registry = registry
        self.writer = None
        self.errors = 0
        self._warned_no_cell = False
        self._reset_run_state()

    # -- state -----------------------------------------------------------------------------------------------------
    def _reset_run_state(self):
        self._active = False
        self._cell = None
        self._network_id = None
        self._optimizer = None
        self._batch = None
        self._last_recorded = None
        self._last_diag = None
        self._last_debug = None
        self._last_eval = None
        self._prev_step = None
        self._prev_time = None
        self._begin_time = None          # end of on_train_begin: the first step is timed from here
        self._debug_one_off = None       # seconds of monitoring work at the first debug point (compiles once)
        self._debug_timed = False
        self._compile_ms = 0.0           # one-off milliseconds at the current step, written as core/compile_ms
        self._info = None                # (run info, step): written again into a new file if one is needed
        self._hparams = self.hparams
        self._hparams_source = None
        self._time_interval = _Interval()
        self._time_total = 0.0
        self._time_steps = 0
        self._loss_interval = _Interval()
        self._last_loss = math.nan
        self._wait_interval = _Interval()
        self._layer_params = []
        self._layer_names = []
        self._layer_index = []          # index of each layer in the optimizer's parameters
        self._all_norms = None
        self._snapshot = None
        self._ratio = None
        self._snapshot_pending = False
        self._probe = None
        self._eval_model = None
        self._fixed_network = False

    @property
    def monitored_cell(self):
        """The :class:`MonitoredTrainCell` found in the training network (``None`` without one)."""
        return self._cell

    @property
    def layer_names(self):
        """Names of the layers (parameters) that get per-layer statistics in this run."""
        return list(self._layer_names)

    # -- hooks -----------------------------------------------------------------------------------------------------
    def on_train_begin(self, run_context):
        self._reset_run_state()
        try:
            cb = run_context.original_args()
            lend_optimizer(cb)
            self._begin(cb)
        except Exception:
            self._error("train begin")

    def on_train_epoch_begin(self, run_context):
        """Work between two epochs (epoch-end evaluation, checkpoint saving, other callbacks) is neither waiting
        for data nor step time: the epoch's first step is timed from here (its batch is fetched after this hook)."""
        if self._active and self._prev_time is not None:
            self._prev_time = time.perf_counter()
        elif self._active:
            self._begin_time = time.perf_counter()

    def on_train_step_begin(self, run_context):
        if not self._active or not self.debug:
            return
        try:
            self._step_begin(run_context.original_args())
        except Exception:
            self._error("step begin")

    def on_train_step_end(self, run_context):
        if not self._active:
            return
        try:
            self._step_end(run_context.original_args())
        except Exception:
            self._error("step end")

    def on_train_epoch_end(self, run_context):
        if not self._active:
            return
        try:
            self._epoch_end(run_context.original_args())
        except Exception:
            self._error("epoch end")

    def on_train_end(self, run_context):
        if not self._active:
            return
        try:
            self._end(run_context.original_args())
        except Exception:
            self._error("train end")
        finally:
            self.close()

    def close(self):
        """Writes everything still queued and closes the event file (also done at train end). Never raises."""
        self._active = False
        writer, self.writer = self.writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:
                self._error("close")

    # -- implementation: begin -------------------------------------------------------------------------------------
    def _error(self, where):
        self.errors += 1
        if self.errors == 1:
            logger.exception("tb-mindspore: TrainMonitor failed at %s; training continues", where)

    def _begin(self, cb, cell=None, optimizer=None, probe_net=None):
        import mindspore as ms

        rank, rank_size = detect_rank()
        if self.rank is not None:
            rank = self.rank
        if rank != 0 and not self.all_ranks:
            return
        logdir = self.logdir if rank == 0 else os.path.join(self.logdir, "rank%d" % rank)
        # Hyperparameters recorded by make_run_dir in the run folder, overridden by hparams= given here.
        from_folder = read_run_hparams(self.logdir)
        merged = dict(from_folder or {})
        merged.update(self.hparams or {})
        self._hparams = merged or None
        self._hparams_source = [name for name, given in ((RUN_HPARAMS_FILE, from_folder), ("hparams=", self.hparams))
                                if given] or None
        if self.writer is None:
            self.writer = SummaryWriter(logdir, flush_secs=self.flush_secs, max_queue=self.max_queue,
                                        max_file_bytes=self.max_file_bytes, max_run_bytes=self.max_run_bytes)
        install_signal_handlers()
        self._active = True
        self._fixed_network = cell is not None or optimizer is not None
        if self._fixed_network:
            self._cell = cell
            self._optimizer = optimizer if optimizer is not None else cell.optimizer
        else:
            self._find_network(cb)
        self._batch = self.batch_size or self._dataset_batch_size(cb)
        step = int(cb_get(cb, "cur_step_num", 0) or 0)
        self._last_recorded = self._last_diag = self._last_debug = self._last_eval = step
        self._prev_step = step
        if self._cell is not None:
            self._cell.read_and_reset()   # forget anything accumulated before this run (warm-up calls, last run)
        self._setup_layers()
        if "activations" in self.debug:
            self._setup_probe(cb, probe_net)
        sink = bool(cb_get(cb, "dataset_sink_mode", False))
        info = {
            "mindspore_version": ms.__version__,
            "plugin_version": plugin_version,
            "collect_freq": self.collect_freq,
            "rank": rank,
            "rank_size": rank_size,
            "mode": "GRAPH_MODE" if ms.get_context("mode") == ms.GRAPH_MODE else "PYNATIVE_MODE",
            "dataset_sink_mode": sink,
            "sink_size": cb_get(cb, "sink_size") if sink else None,
            "batch_size": self._batch,
            "epochs": cb_get(cb, "epoch_num"),
            "steps_per_epoch": cb_get(cb, "batch_num"),
            "monitored_cell": self._cell is not None,
            "train_cell": type(self._cell).__name__ if self._cell is not None else None,
            "optimizer": type(self._optimizer).__name__ if self._optimizer is not None else None,
            "lr_groups": getattr(self._cell, "num_lr_groups", None),
            "diagnostic": {"freq": self.diagnostic_freq or "epoch", "weight_norms": self.weight_norms,
                           "eval": self.eval_dataset is not None, "eval_freq": self.eval_freq or "epoch",
                           "eval_metrics": sorted(self.eval_metrics)},
            "debug": {"items": list(self.debug), "freq": self.debug_freq,
                      "activation_cells": [name for name, _ in self._probe.cells] if self._probe else []},
            "layers": dict(self.layers.describe(), selected=len(self._layer_names),
                           matched=self.layers.truncated_from or len(self._layer_names)),
            "hparams": self._hparams,
            "hparams_source": self._hparams_source,
            "logdir": os.path.abspath(logdir),
            "start_time": time.time(),
            "compile_ms_tag": metadata.COMPILE_MS,
        }
        self._info = (info, step)
        self._write_run_level()
        if rank == 0:
            self._append_registry(info)
        self._begin_time = time.perf_counter()

    def _write_run_level(self):
        info, step = self._info
        self.writer.run_info(info, step=step)
        if self._hparams:
            self.writer.hparams(self._hparams, step=step, start_time=info["start_time"])

    def _check_writer(self):
        """A writer closed under a run that goes on (a signal caught by the program): open a new file."""
        w = self.writer
        if w is None or not w.closed or self._info is None:
            return
        logger.warning("tb-mindspore: the event file was closed while training went on; recording continues in "
                       "a new file in %s", w.logdir)
        self.writer = SummaryWriter(w.logdir, flush_secs=self.flush_secs, max_queue=self.max_queue,
                                    max_file_bytes=self.max_file_bytes, max_run_bytes=self.max_run_bytes)
        self._write_run_level()

    def _find_network(self, cb):
        network = cb_get(cb, "train_network")
        if network is not None and id(network) == self._network_id:
            return
        self._network_id = id(network) if network is not None else None
        cell = find_cell(network, MonitoredTrainCell)
        if cell is not None or self._cell is None:
            self._cell = cell
        if self._optimizer is None or cell is not None:
            self._optimizer = self._cell.optimizer if self._cell is not None else find_optimizer(cb)
        if self._cell is None and not self._warned_no_cell:
            self._warned_no_cell = True
            extra = ", and the per-layer gradient norms you asked for" if "layer_grad_norm" in self.debug else ""
            logger.warning(_NO_CELL_WARNING, metadata.GRAD_NORM, extra)

    @staticmethod
    def _dataset_batch_size(cb):
        dataset = cb_get(cb, "train_dataset")
        try:
            size = int(dataset.get_batch_size())
            return size if size > 0 else None
        except Exception:
            return None

    def _setup_layers(self):
        opt = self._optimizer
        if opt is None:
            return
        params = list(opt.parameters)
        self._layer_params = self.layers.select(params)
        if self.layers.truncated_from:
            logger.info("tb-mindspore: %d parameters match the layer selection; keeping %d evenly spaced ones "
                        "(raise max_layers or narrow layers_include)", self.layers.truncated_from,
                        len(self._layer_params))
        ids = [id(p) for p in params]
        self._layer_index = [ids.index(id(p)) for p in self._layer_params]
        self._layer_names = [p.name for p in self._layer_params]
        if self.weight_norms and params:
            self._all_norms = cached(WeightNorms, params)
        if not self._layer_params:
            logger.warning("tb-mindspore: no parameter matches the layer selection %s; per-layer series are off",
                           self.layers.describe())
            return
        if "update_ratio" in self.debug:
            self._snapshot = cached(Snapshot, self._layer_params)
            self._ratio = cached(UpdateRatio, self._layer_params)
        if "layer_grad_norm" in self.debug and self._cell is not None:
            if not self._cell.track_layer_grad_norms(self._layer_index):
                logger.warning("tb-mindspore: per-layer gradient norms need the MonitoredTrainCell to be set up "
                               "before its first step; call train_cell.track_layer_grad_norms(...) earlier or "
                               "use a fresh cell")

    def _append_registry(self, info):
        if self.registry is None:
            return
        path = self.registry
        if path == "auto":
            path = os.path.join(os.path.dirname(os.path.abspath(self.logdir)), "experiments.md")
        path = str(path)
        try:
            new = not os.path.exists(path)
            line = "| %s | %s | %s | %s | %s | %s |\n" % (
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["start_time"])),
                os.path.basename(os.path.abspath(self.logdir)),
                json.dumps(self._hparams or {}, sort_keys=True, default=str).replace("|", "\\|"),
                "collect_freq=%d debug=%s" % (self.collect_freq, ",".join(self.debug) or "-"),
                "%s %s" % (info["mode"], "sink" if info["dataset_sink_mode"] else "no-sink"),
                "MindSpore %s, %d rank(s)" % (info["mindspore_version"], info["rank_size"]),
            )
            text = line
            if new:
                text = ("# Experiments\n\nOne line per run, appended by tb_mindspore_callbacks.TrainMonitor.\n\n"
                        "| started | run | hparams | monitoring | mode | setup |\n"
                        "|---|---|---|---|---|---|\n" + line)
            with open(path, "a", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            logger.warning("tb-mindspore: could not append to the registry %s: %s", path, e)

    # -- activations -----------------------------------------------------------------------------------------------
    def _setup_probe(self, cb, probe_net):
        from mindspore import nn

        if probe_net is None:
            train_cell = find_cell(cb_get(cb, "train_network"), nn.TrainOneStepCell)
            probe_net = train_cell.network if train_cell is not None else None
        if probe_net is None:
            logger.warning("tb-mindspore: activations: no training cell found to probe; skipped")
            return
        named = []
        for name, cell in probe_net.cells_and_names():
            if not name:
                continue
            named.append((_clean_cell_name(name), name, cell))
        if self.activations_include is not None:
            chosen = [(clean, cell) for clean, _, cell in named if self.activations_include.search(clean)]
        else:
            chosen = _default_blocks(probe_net)
        if len(chosen) > self.layers.max_layers:
            keep = np.unique(np.round(np.linspace(0, len(chosen) - 1, self.layers.max_layers)).astype(int))
            chosen = [chosen[i] for i in keep]
        self._probe = ActivationProbe(probe_net, chosen, self.activation_samples)

    def _probe_activations(self, inputs):
        """Outputs of the chosen cells on the first samples of ``inputs`` (one extra forward pass, no update)."""
        if self._probe is None:
            return {}
        return self._probe(inputs)

    # -- implementation: steps -------------------------------------------------------------------------------------
    def _step_begin(self, cb):
        now = time.perf_counter()
        if "data_wait" in self.debug and self._prev_time is not None:
            self._wait_interval.add((now - self._prev_time) * 1000.0)
        self._maybe_snapshot(int(cb.cur_step_num))

    def _maybe_snapshot(self, step):
        """Before the step(s) ending at ``step`` run: keep the weights if a debug point falls in them.

        The time this takes (the first time: compiling the copy) is monitoring, not step time."""
        if self._snapshot is not None and not self._snapshot_pending and _due(self._prev_step, step,
                                                                              self.debug_freq):
            start = time.perf_counter()
            self._snapshot()
            self._snapshot_pending = True
            spent = time.perf_counter() - start
            if self._prev_time is not None:
                self._prev_time += spent
            if self._debug_one_off is None:
                self._debug_one_off = spent

    def _step_end(self, cb):
        now = time.perf_counter()
        step = int(cb.cur_step_num)
        self._check_writer()
        if not self._fixed_network and (self._cell is None or cb_get(cb, "dataset_sink_mode", False)):
            # Sink mode swaps in a wrapper network per epoch; find the cell inside it again (cached by id).
            self._find_network(cb)
        steps = step - self._prev_step if self._prev_step is not None else 0
        if self._prev_time is not None and steps > 0:
            elapsed = now - self._prev_time
            self._time_interval.add(elapsed * 1000.0 / steps, steps)
            self._time_total += elapsed
            self._time_steps += steps
        # The first call of a run includes graph compilation: it only starts the clock, and its time is written
        # as core/compile_ms.
        if self._prev_time is None and self._begin_time:
            self._compile_ms += (now - self._begin_time) * 1000.0
        self._prev_time = now
        self._prev_step = step
        if self._cell is None:
            self._last_loss = loss_value(cb_get(cb, "net_outputs"))
            self._loss_interval.add(self._last_loss)
        if _due(self._last_recorded, step, self.collect_freq):
            self._record(cb, step)
        if self.debug and _due(self._last_debug, step, self.debug_freq):
            self._timed_debug(cb, step)
        if self.diagnostic_freq is not None and _due(self._last_diag, step, self.diagnostic_freq):
            self._record_diagnostic(step)
        if self.eval_dataset is not None and self.eval_freq is not None and _due(self._last_eval, step,
                                                                                 self.eval_freq):
            self._record_eval(cb, step)
        self._write_compile_ms(step)
        # Monitoring work (evaluation above all) is not training time: the next step is timed from here.
        self._prev_time = time.perf_counter()

    def _write_compile_ms(self, step):
        """One value per step of the one-off time spent there (first step and first debug point may coincide)."""
        if self._compile_ms and self.writer is not None:
            self.writer.scalar(metadata.COMPILE_MS, self._compile_ms, step)
        self._compile_ms = 0.0

    def _epoch_end(self, cb):
        step = int(cb.cur_step_num)
        if self.diagnostic_freq is None and step > self._last_diag:
            self._record_diagnostic(step)
        if self.eval_dataset is not None and self.eval_freq is None and step > self._last_eval:
            self._record_eval(cb, step)

    def _end(self, cb):
        step = int(cb.cur_step_num)
        if step > self._last_recorded:
            self._record(cb, step)
        if self.debug and step > self._last_debug:
            self._timed_debug(cb, step)
            self._write_compile_ms(step)
        if step > self._last_diag:
            self._record_diagnostic(step)
        if self.eval_dataset is not None and step > self._last_eval:
            self._record_eval(cb, step)

    # -- writing ---------------------------------------------------------------------------------------------------
    def _record(self, cb, step):
        w = self.writer
        if w is None:
            return
        wall = time.time()
        if self._cell is not None:
            stats, last = self._cell.read_and_reset()
            w.scalar(metadata.LOSS, last[0], step, wall)
            w.scalar(metadata.GRAD_NORM, last[1], step, wall)
            w.interval(metadata.LOSS, *_interval_from_cell_row(stats[0]), step=step, wall_time=wall)
            w.interval(metadata.GRAD_NORM, *_interval_from_cell_row(stats[1]), step=step, wall_time=wall)
            lrs = [float(v) for v in last[2:]]
            scale_state = self._cell.loss_scale_state()
            if scale_state is not None:
                w.scalar(metadata.LOSS_SCALE, scale_state[0], step, wall)
                w.scalar(metadata.OVERFLOW_STEPS, scale_state[1], step, wall)
        else:
            if self._loss_interval.count == 0:
                self._last_loss = loss_value(cb_get(cb, "net_outputs"))
                self._loss_interval.add(self._last_loss)
            w.scalar(metadata.LOSS, self._last_loss, step, wall)
            w.interval(metadata.LOSS, *self._loss_interval.fields(), step=step, wall_time=wall)
            self._loss_interval.reset()
            lrs = host_learning_rates(self._optimizer) if self._optimizer is not None else []
        if lrs:
            w.scalar(metadata.LEARNING_RATE, lrs[0], step, wall)
            if len(lrs) > 1:
                for i, value in enumerate(lrs):
                    w.scalar(metadata.learning_rate_group_tag(i), value, step, wall)
        if self._time_steps:
            mean_s = self._time_total / self._time_steps
            w.scalar(metadata.STEP_TIME_MS, mean_s * 1000.0, step, wall)
            w.interval(metadata.STEP_TIME_MS, *self._time_interval.fields(), step=step, wall_time=wall)
            if self._batch:
                w.scalar(metadata.THROUGHPUT, self._batch / mean_s if mean_s > 0 else math.nan, step, wall)
            self._time_interval.reset()
            self._time_total = 0.0
            self._time_steps = 0
        self._last_recorded = step

    def _record_diagnostic(self, step):
        self._last_diag = step
        w = self.writer
        if w is None or self._all_norms is None:
            return
        norms = np.asarray(self._all_norms().asnumpy(), dtype=np.float64)
        w.scalar(metadata.WEIGHT_NORM_GLOBAL, math.sqrt(float(np.sum(norms * norms))), step)
        if self._layer_names:
            w.layers(metadata.WEIGHT_NORM_LAYERS, self._layer_names, norms[self._layer_index], step)

    def _eval_model_for(self, cb):
        if self._eval_model is not None:
            return self._eval_model
        if self.user_eval_model is not None:
            self._eval_model = self.user_eval_model
            return self._eval_model
        from mindspore import nn
        from mindspore.train import Model

        backbone = loss_fn = None
        train_cell = find_cell(cb_get(cb, "train_network"), nn.TrainOneStepCell)
        loss_net = train_cell.network if train_cell is not None else None
        if isinstance(loss_net, nn.WithLossCell):
            backbone, loss_fn = loss_net._backbone, loss_net._loss_fn
        elif cb_get(cb, "loss_fn") is not None and cb_get(cb, "network") is not None:
            backbone, loss_fn = cb_get(cb, "network"), cb_get(cb, "loss_fn")
        if backbone is None:
            raise ValueError("cannot tell the forward network and loss function of this training cell; "
                             "pass eval_model=Model(net, loss_fn, metrics=...) to TrainMonitor")
        metrics = {"loss": nn.Loss()}
        metrics.update(self.eval_metrics)
        self._eval_model = Model(backbone, loss_fn, metrics=metrics)
        return self._eval_model

    def _record_eval(self, cb, step):
        self._last_eval = step
        w = self.writer
        if w is None:
            return
        results = self._eval_model_for(cb).eval(self.eval_dataset, dataset_sink_mode=False)
        for name, value in sorted(results.items()):
            try:
                number = float(np.asarray(value, dtype=np.float64).reshape(-1)[0]) if np.size(value) == 1 else None
            except (TypeError, ValueError):
                number = None
            if number is None:
                continue
            tag = metadata.EVAL_LOSS if name == "loss" else metadata.EVAL_METRIC_PREFIX + str(name)
            w.scalar(tag, number, step)

    def _timed_debug(self, cb, step):
        """The debug point; the first one's time (monitoring graphs compiled once) goes to core/compile_ms."""
        first = not self._debug_timed
        start = time.perf_counter()
        self._record_debug(cb, step)
        if first and self.writer is not None:
            self._debug_timed = True
            self._compile_ms += ((self._debug_one_off or 0.0) + time.perf_counter() - start) * 1000.0

    def _record_debug(self, cb, step, inputs=None):
        self._last_debug = step
        w = self.writer
        if w is None:
            return
        if self._snapshot_pending:
            ratio, _ = self._ratio()
            w.layers(metadata.UPDATE_RATIO_LAYERS, self._layer_names, ratio.asnumpy(), step)
            self._snapshot_pending = False
        if "layer_grad_norm" in self.debug and self._cell is not None:
            values = self._cell.layer_grad_norms()
            if values is not None and len(values) == len(self._layer_names):
                w.layers(metadata.GRAD_NORM_LAYERS, self._layer_names, values, step)
        if "activations" in self.debug:
            if inputs is None:
                inputs = cb_get(cb, "train_dataset_element")
            for name, array in self._probe_activations(inputs).items():
                w.histogram(metadata.ACTIVATION_PREFIX + name, array, step)
        if "data_wait" in self.debug and self._wait_interval.count:
            fields = self._wait_interval.fields()
            w.scalar(metadata.DATA_WAIT_MS, fields[1], step)
            w.interval(metadata.DATA_WAIT_MS, *fields, step=step)
            self._wait_interval.reset()


def _clean_cell_name(name):
    """Cell names as the user wrote them: the wrappers' attribute names (``_backbone.``) removed."""
    parts = [p for p in name.split(".") if p not in ("_backbone", "network")]
    return ".".join(parts) if parts else name


def _default_blocks(probe_net):
    """Top-level blocks: children of the backbone; containers (CellList / SequentialCell) expanded one level."""
    from mindspore import nn

    root = probe_net
    while isinstance(root, nn.WithLossCell) or (hasattr(root, "_backbone") and isinstance(root._backbone, nn.Cell)):
        root = root._backbone
    prefix = {id(c): n for n, c in probe_net.cells_and_names()}
    out = []
    for name, child in root.name_cells().items():
        if isinstance(child, (nn.CellList, nn.SequentialCell)):
            for sub_name, sub in child.name_cells().items():
                out.append((_clean_cell_name(prefix.get(id(sub), name + "." + sub_name)), sub))
        else:
            out.append((_clean_cell_name(prefix.get(id(child), name)), child))
    # Activation-free cells (ReLU, Dropout) would only repeat their neighbour: keep cells with parameters.
    return [(n, c) for n, c in out if list(c.get_parameters())] or out
