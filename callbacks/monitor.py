"""``TrainMonitor``: the core tier (loss, learning rate, gradient norm, step time, throughput) for ``Model.train``."""

import math
import os
import time

from mindspore.train import Callback

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore import __version__ as plugin_version
from tb_plugin_mindspore.writer import SummaryWriter, install_signal_handlers

from ._util import cb_get, detect_rank, find_cell, find_optimizer, host_learning_rates, logger, loss_value
from .train_cell import MonitoredTrainCell

__all__ = ["TrainMonitor"]

_NO_CELL_WARNING = (
    "tb-mindspore: the training network has no MonitoredTrainCell, so %s and %s (and the spike-preserving "
    "statistics of every step) are not recorded; loss and learning rate still are. Wrap your network in one line: "
    "`train_net = MonitoredTrainCell.wrap(net, loss_fn, optimizer)` and train `Model(train_net)` "
    "(from tb_mindspore_callbacks import MonitoredTrainCell)."
)


class _Interval:
    """Host-side min / mean / max / count / non-finite of values seen since the last reset."""

    __slots__ = ("min", "max", "sum", "finite", "nonfinite", "weight")

    def __init__(self):
        self.reset()

    def reset(self):
        self.min = math.inf
        self.max = -math.inf
        self.sum = 0.0
        self.finite = 0
        self.nonfinite = 0
        self.weight = 0

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


class TrainMonitor(Callback):
    """Records the core tier of a ``Model.train`` run as TensorBoard event files.

    Every ``collect_freq`` steps, and once more at the end of training, it writes:

    * ``core/loss``: the loss of the last step;
    * ``core/learning_rate``: the learning rate the optimizer applied at that step (and
      ``core/learning_rate/group<i>`` for every parameter group when the optimizer has per-group learning rates;
      ``core/learning_rate`` is then group 0);
    * ``core/grad_norm``: the global L2 norm of all gradients of the last step, before clipping;
    * ``core/step_time_ms`` and ``core/throughput`` (samples/s): averages over the steps since the previous point;
    * ``interval/<tag>`` for loss, gradient norm and step time: min / mean / max / count / non-finite count of the
      steps since the previous point, so a single-step spike or NaN between two points is still visible.

    Loss, gradient norm and their interval statistics come from a :class:`MonitoredTrainCell` in the training
    network (computed inside the compiled step; nothing is copied to the host between two points). Without one,
    loss and learning rate are still recorded (the loss read from the step outputs, the learning rate recomputed on
    the host from the optimizer), gradient norm is not, and one warning says how to add the cell.

    At train begin ``_meta/run_info`` holds the format version, MindSpore version, ``collect_freq``, rank and the
    training setup. NaN and Inf are written as they are; a failure inside the monitor is logged, never raised into
    training. Step numbers are ``cb_params.cur_step_num`` (1-based, counted over all epochs).

    Sink mode (``dataset_sink_mode=True``): in GRAPH_MODE MindSpore runs ``sink_size`` steps (default: one
    epoch) per call, and callbacks run only after each sink. Points are then written at the first callback at or
    after each multiple of ``collect_freq``, with the true step number of that callback (a multiple of the sink
    size); the interval statistics from ``MonitoredTrainCell`` still cover every step, because they are updated
    inside the graph. Step time is the sink's wall time divided by its steps. Without the cell, the loss interval
    only sees the loss of the last step of each sink. In PYNATIVE_MODE sink mode calls back every step.

    Distributed: only rank 0 writes unless ``all_ranks=True`` (then rank ``k > 0`` writes to ``<logdir>/rank<k>``,
    its own folder, so no two processes share a file). The rank comes from ``mindspore.communication`` when
    initialised, else from ``RANK_ID``.

    Hooks: ``on_train_begin`` opens the writer and writes run info; ``on_train_step_end`` times the step and writes
    a point when due; ``on_train_end`` writes the final point and closes the writer. SIGINT / SIGTERM close the
    writer before the previous handlers run (``writer.install_signal_handlers``).

    Args:
      logdir: the run folder (e.g. from :func:`make_run_dir`); created if missing.
      collect_freq: write a point every this many steps (int >= 1).
      flush_secs: the longest a written value waits in memory before reaching the file (> 0).
      batch_size: samples per step for throughput; by default the training dataset's batch size.
      rank: the rank of this process; by default detected at train begin.
      all_ranks: also write from ranks other than 0 (each into ``<logdir>/rank<k>``).
      max_queue: values that may wait for the writer thread before new ones are dropped (and counted).
    """

    def __init__(self, logdir, collect_freq=10, flush_secs=2.0, batch_size=None, rank=None, all_ranks=False,
                 max_queue=10000):
        super().__init__()
        if not isinstance(logdir, (str, os.PathLike)) or not str(logdir):
            raise ValueError("logdir must be a non-empty path, got %r" % (logdir,))
        if isinstance(collect_freq, bool) or not isinstance(collect_freq, int) or collect_freq <= 0:
            raise ValueError("collect_freq must be an int >= 1, got %r" % (collect_freq,))
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or not flush_secs > 0:
            raise ValueError("flush_secs must be a number > 0, got %r" % (flush_secs,))
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size <= 0):
            raise ValueError("batch_size must be None or an int >= 1, got %r" % (batch_size,))
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 0):
            raise ValueError("rank must be None or an int >= 0, got %r" % (rank,))
        if isinstance(max_queue, bool) or not isinstance(max_queue, int) or max_queue < 1:
            raise ValueError("max_queue must be an int >= 1, got %r" % (max_queue,))
        self.logdir = str(logdir)
        self.collect_freq = collect_freq
        self.flush_secs = float(flush_secs)
        self.batch_size = batch_size
        self.rank = rank
        self.all_ranks = bool(all_ranks)
        self.max_queue = max_queue
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
        self._prev_step = None
        self._prev_time = None
        self._time_interval = _Interval()
        self._time_total = 0.0
        self._time_steps = 0
        self._loss_interval = _Interval()
        self._last_loss = math.nan

    @property
    def monitored_cell(self):
        """The :class:`MonitoredTrainCell` found in the training network (``None`` without one)."""
        return self._cell

    # -- hooks -----------------------------------------------------------------------------------------------------
    def on_train_begin(self, run_context):
        self._reset_run_state()
        try:
            self._begin(run_context.original_args())
        except Exception:
            self._error("train begin")

    def on_train_step_end(self, run_context):
        if not self._active:
            return
        try:
            self._step_end(run_context.original_args())
        except Exception:
            self._error("step end")

    def on_train_end(self, run_context):
        if not self._active:
            return
        try:
            cb = run_context.original_args()
            step = int(cb.cur_step_num)
            if self._last_recorded is None or step > self._last_recorded:
                self._record(cb, step)
        except Exception:
            self._error("train end")
        finally:
            self.close()

    def close(self):
        """Writes everything still queued and closes the event file (also done at train end)."""
        self._active = False
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    # -- implementation --------------------------------------------------------------------------------------------
    def _error(self, where):
        self.errors += 1
        if self.errors == 1:
            logger.exception("tb-mindspore: TrainMonitor failed at %s; training continues", where)

    def _begin(self, cb):
        import mindspore as ms

        rank, rank_size = detect_rank()
        if self.rank is not None:
            rank = self.rank
        if rank != 0 and not self.all_ranks:
            return
        logdir = self.logdir if rank == 0 else os.path.join(self.logdir, "rank%d" % rank)
        if self.writer is None:
            self.writer = SummaryWriter(logdir, flush_secs=self.flush_secs, max_queue=self.max_queue)
        install_signal_handlers()
        self._active = True
        self._find_network(cb)
        self._batch = self.batch_size or self._dataset_batch_size(cb)
        step = int(cb_get(cb, "cur_step_num", 0) or 0)
        self._last_recorded = step
        self._prev_step = step
        if self._cell is not None:
            self._cell.read_and_reset()   # forget anything accumulated before this run (warm-up calls, last run)
        sink = bool(cb_get(cb, "dataset_sink_mode", False))
        info = {
            "mindspore_version": ms.__version__,
            "plugin_version": plugin_version,
            "collect_freq": self.collect_freq,
            "rank": rank,
            "rank_size": rank_size,
            "mode": "GRAPH_MODE" if ms.get_context("mode") == ms.GRAPH_MODE else "PYNATIVE_MODE",
            "dataset_sink_mode": sink,
            "sink_size": cb_get(cb, "sink_size", None) if sink else None,
            "batch_size": self._batch,
            "epochs": cb_get(cb, "epoch_num", None),
            "steps_per_epoch": cb_get(cb, "batch_num", None),
            "monitored_cell": self._cell is not None,
            "optimizer": type(self._optimizer).__name__ if self._optimizer is not None else None,
            "lr_groups": self._cell.num_lr_groups if self._cell is not None else None,
            "start_time": time.time(),
        }
        self.writer.run_info(info, step=step)

    def _find_network(self, cb):
        network = cb_get(cb, "train_network", None)
        if network is not None and id(network) == self._network_id:
            return
        self._network_id = id(network) if network is not None else None
        self._cell = find_cell(network, MonitoredTrainCell)
        self._optimizer = self._cell.optimizer if self._cell is not None else find_optimizer(cb)
        if self._cell is None and not self._warned_no_cell:
            self._warned_no_cell = True
            logger.warning(_NO_CELL_WARNING, metadata.GRAD_NORM, metadata.interval_tag(metadata.GRAD_NORM))

    @staticmethod
    def _dataset_batch_size(cb):
        dataset = cb_get(cb, "train_dataset", None)
        try:
            size = int(dataset.get_batch_size())
            return size if size > 0 else None
        except Exception:
            return None

    def _step_end(self, cb):
        now = time.perf_counter()
        step = int(cb.cur_step_num)
        if self._cell is None or cb_get(cb, "dataset_sink_mode", False):
            # Sink mode swaps in a wrapper network per epoch; find the cell inside it again (cached by id).
            self._find_network(cb)
        steps = step - self._prev_step if self._prev_step is not None else 0
        if self._prev_time is not None and steps > 0:
            elapsed = now - self._prev_time
            self._time_interval.add(elapsed * 1000.0 / steps, steps)
            self._time_total += elapsed
            self._time_steps += steps
        # The first call of a run includes graph compilation: it only starts the clock.
        self._prev_time = now
        self._prev_step = step
        if self._cell is None:
            self._last_loss = loss_value(cb_get(cb, "net_outputs", None))
            self._loss_interval.add(self._last_loss)
        if step // self.collect_freq > self._last_recorded // self.collect_freq:
            self._record(cb, step)

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
        else:
            if self._loss_interval.count == 0:
                self._last_loss = loss_value(cb_get(cb, "net_outputs", None))
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
