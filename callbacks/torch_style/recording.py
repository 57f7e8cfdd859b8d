"""``Recording``: the data contract of the MindSpore callbacks (core, diagnostic and debug tiers) written for a
torch-style training, from four events an entry point reports: :meth:`Recording.start`, :meth:`before_update`
(the gradients are final, the optimizer has not stepped), :meth:`after_update` (it has) and :meth:`end_step`.

What is written, at the same steps and under the same tags as ``TrainMonitor`` / ``LoopMonitor`` write:

* core, every ``collect_freq`` steps: ``core/loss``, ``core/grad_norm`` (global L2 norm of the gradients as the
  backward pass left them, before any clipping when the entry point can see them then), ``core/learning_rate`` (the
  LR each group applied in the last step; ``core/learning_rate/group<i>`` when there are several groups),
  ``core/step_time_ms`` and ``core/throughput``, each with its interval statistics over every step since the
  previous point (``interval/core/*``);
* diagnostic, every ``diagnostic_freq`` steps and at the end: ``diagnostic/weight_norm`` (all trainable
  parameters) and ``diagnostic/layer_weight_norm``;
* debug, every ``debug_freq`` steps: ``debug/layer_grad_norm`` and ``debug/update_ratio`` (||w_after - w_before||
  / ||w_before|| over the optimizer's real step);
* ``_meta/run_info`` (framework, versions, optimizer hyperparameters per group, ``lr_config``, which tiers are
  recorded) and ``_meta/run_end``.

Per step only a few fused operations run on the device (per-parameter gradient norms, their global norm; the loss
is kept, not read); values are read every ``collect_freq`` steps (or every 256 steps, whichever is first). Nothing
raises into training: a failure is logged once and recording of that part stops.
"""

import logging
import math
import os
import sys
import time

import numpy as np

from tb_plugin_mindspore import __version__ as plugin_version
from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import run_end
from tb_plugin_mindspore.writing.writer import SummaryWriter, install_signal_handlers

from .params import DEFAULT_MAX_LAYERS, LayerPick
from .tensor_ops import ops_for

__all__ = ["Recording", "RecordSettings", "DEBUG_ITEMS"]

logger = logging.getLogger("tb_mindspore_callbacks")

DEBUG_ITEMS = ("update_ratio", "layer_grad_norm")
FOLD_EVERY = 256          # kept per-step values are read at least this often (bounded memory)


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
    items = [debug] if isinstance(debug, str) else list(debug)
    unknown = [i for i in items if i not in DEBUG_ITEMS]
    if unknown:
        raise ValueError("unknown debug item(s) %s for a torch-style model; choose from %s (or 'all')"
                         % (", ".join(repr(u) for u in unknown), ", ".join(DEBUG_ITEMS)))
    return tuple(i for i in DEBUG_ITEMS if i in items)


class RecordSettings:
    """The validated options of a torch-style recording (see :class:`~.monitor.TorchMonitor`); raises ValueError
    with a one-line message on misuse."""

    def __init__(self, logdir, collect_freq=10, diagnostic_freq=100, weight_norms=True, debug=(), debug_freq=100,
                 layers_include=None, layers_exclude=None, max_layers=DEFAULT_MAX_LAYERS, hparams=None,
                 batch_size=None, rank=None, flush_secs=2.0, max_queue=10000):
        if not isinstance(logdir, (str, os.PathLike)) or not str(logdir):
            raise ValueError("logdir must be a non-empty path, got %r" % (logdir,))
        self.logdir = str(logdir)
        self.collect_freq = _check_int("collect_freq", collect_freq)
        self.diagnostic_freq = _check_int("diagnostic_freq", diagnostic_freq)
        self.debug_freq = _check_int("debug_freq", debug_freq)
        self.debug = _parse_debug(debug)
        self.weight_norms = bool(weight_norms)
        self.layers = LayerPick(layers_include, layers_exclude, max_layers)
        if hparams is not None and not isinstance(hparams, dict):
            raise ValueError("hparams must be a dict or None, got %r" % (hparams,))
        self.hparams = dict(hparams) if hparams else None
        self.batch_size = _check_int("batch_size", batch_size, allow_none=True)
        self.rank = _check_int("rank", rank, minimum=0, allow_none=True)
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or not flush_secs > 0:
            raise ValueError("flush_secs must be a number > 0, got %r" % (flush_secs,))
        self.flush_secs = float(flush_secs)
        self.max_queue = _check_int("max_queue", max_queue)


def _due(last, step, freq):
    return step // freq > last // freq


class _Fold:
    """Interval statistics of a per-step quantity, folded from arrays of values on the host."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.lo, self.hi, self.total, self.finite, self.nonfinite = math.inf, -math.inf, 0.0, 0, 0
        self.last = math.nan

    def add(self, values):
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if not values.size:
            return
        self.last = float(values[-1])
        ok = np.isfinite(values)
        n = int(ok.sum())
        if n:
            good = values[ok]
            self.lo = min(self.lo, float(good.min()))
            self.hi = max(self.hi, float(good.max()))
            self.total += float(good.sum())
        self.finite += n
        self.nonfinite += int(values.size - n)

    @property
    def count(self):
        return self.finite + self.nonfinite

    def fields(self):
        """``(min, mean, max, count, nonfinite)`` (``metadata.INTERVAL_FIELDS``)."""
        if self.finite:
            return self.lo, self.total / self.finite, self.hi, self.count, self.nonfinite
        return math.nan, math.nan, math.nan, self.count, self.nonfinite


class Recording:
    """One run of a torch-style training (see the module doc).

    Args:
      settings: :class:`RecordSettings`.
      params: the :class:`~.params.ModuleParams` of the model (names, tensors, optimizer groups).
      entry_point: what drives it, for the run information (``"loop"``, ``"transformers.Trainer"``).
      info: more run information (what the entry point knows: where the gradient norm is taken, ...).
      writes: False on ranks that do not write (nothing is computed there).
    """

    def __init__(self, settings, params, entry_point="loop", info=None, writes=True):
        self.settings = settings
        self.params = params
        self.entry_point = entry_point
        self.extra_info = dict(info or {})
        self.writes = writes
        self.writer = None
        self.ops = None
        self.errors = 0
        self.failed = set()
        self.started = False
        self.ended = False
        self.step = 0
        self.last = dict.fromkeys(("core", "debug", "diagnostic"), 0)
        self.layer_index = []
        self.layer_names = []
        self._losses, self._grads = [], []
        self._loss_fold, self._grad_fold, self._time_fold = _Fold(), _Fold(), _Fold()
        self._lrs = ()
        self._norms = None          # per-parameter gradient norms of the current step (handle)
        self._norms_step = None
        self._before = None         # selected layers' weights before the update of a debug step
        self._ratio = None          # (step, handle) of the update ratio measured at a debug step
        self._prev_time = None
        self._time_total = 0.0
        self._time_steps = 0

    # -- failures --------------------------------------------------------------------------------------------------
    def error(self, where):
        self.errors += 1
        self.failed.add(where)
        if self.errors == 1:
            logger.exception("tb-mindspore: torch-style recording failed at %s; training continues", where)

    # -- start -----------------------------------------------------------------------------------------------------
    def start(self, step=0):
        """Opens the writer, selects the layers and writes the run information. ``step``: the step training starts
        after (a resumed run)."""
        if self.started:
            return
        self.started = True
        self.step = int(step)
        for kind in self.last:
            self.last[kind] = self.step
        if not self.writes:
            return
        p = self.params
        self.ops = ops_for(p.params)
        self.layer_index = self.settings.layers.indices(p.names, p.shapes)
        self.layer_names = [p.names[i] for i in self.layer_index]
        if not self.layer_index:
            logger.warning("tb-mindspore: no parameter matches the layer selection %s; per-layer series are off",
                           self.settings.layers.describe())
        s = self.settings
        self.writer = SummaryWriter(s.logdir, flush_secs=s.flush_secs, max_queue=s.max_queue)
        install_signal_handlers()
        self.info = self.run_info()
        self.writer.run_info(self.info, step=self.step)
        if s.hparams:
            self.writer.hparams(s.hparams, step=self.step, start_time=self.info["start_time"])
        self._prev_time = None

    def run_info(self):
        s, p = self.settings, self.params
        torch = sys.modules.get("torch")
        info = {
            "framework": "pytorch" if self.ops is not None and self.ops.name == "torch" else "torch-style",
            "torch_version": getattr(torch, "__version__", None) if torch is not None else None,
            "plugin_version": plugin_version,
            "entry_point": self.entry_point,
            "collect_freq": s.collect_freq,
            "rank": s.rank or 0,
            "batch_size": s.batch_size,
            "optimizer": type(p.optimizer).__name__ if p.optimizer is not None else None,
            "optimizer_groups": (p.describe_optimizer() or {}).get("groups"),
            "lr_groups": p.num_groups,
            "lr_config": p.lr_config(),
            "param_names": p.names_from,
            "parameters": len(p.params),
            "diagnostic": {"freq": s.diagnostic_freq, "weight_norms": s.weight_norms, "eval": False},
            "debug": {"items": list(s.debug), "freq": s.debug_freq},
            "layers": dict(s.layers.describe(), selected=len(self.layer_names),
                           matched=s.layers.truncated_from or len(self.layer_names)),
            # Shapes of the layers (what `tb-mindspore compare` checks a layer mapping against).
            "layer_shapes": {p.names[i]: list(p.shapes[i]) for i in self.layer_index},
            "hparams": s.hparams,
            "logdir": s.logdir if "://" in s.logdir else os.path.abspath(s.logdir),
            "start_time": time.time(),
        }
        info.update(self.extra_info)
        return info

    # -- per step --------------------------------------------------------------------------------------------------
    def grads_ready(self, grads, step=None):
        """The gradients of the coming update are final (before any clipping): their per-parameter norms are
        taken now (one fused call), read at the points. ``grads`` in the order of ``params``."""
        if not self.started:
            self.start()
        if not self.writes or "grads" in self.failed:
            return
        try:
            self._norms = self.ops.norms(grads)
            self._norms_step = self.step + 1 if step is None else int(step)
        except Exception:
            self.error("grads")

    def before_update(self, grads=None):
        """Just before the optimizer's step: the applied learning rates; the gradient norms unless
        :meth:`grads_ready` saw them already for this step; the weights of a debug step's layers."""
        if not self.started:
            self.start()
        if not self.writes:
            return
        step = self.step + 1
        try:
            self._lrs = self.params.lrs()
        except Exception:
            self.error("learning rate")
        if self._norms_step != step:
            if grads is None:
                grads = [getattr(t, "grad", None) for t in self.params.params]
            self.grads_ready(grads, step)
        s = self.settings
        if "update_ratio" in s.debug and self.layer_index and _due(self.last["debug"], step, s.debug_freq):
            try:
                self._before = (step, self.ops.copy([self.params.params[i] for i in self.layer_index]))
            except Exception:
                self.error("update ratio")

    def after_update(self):
        """Just after the optimizer's step: the update ratio of a debug step."""
        if self._before is None:
            return
        step, before = self._before
        self._before = None
        try:
            after = [self.params.params[i] for i in self.layer_index]
            change = self.ops.change_norms(after, before)
            self._ratio = (step, (change, self.ops.norms(before)))
        except Exception:
            self.error("update ratio")

    def end_step(self, loss, step=None, grads=None):
        """After the step: keeps the loss, times the step and writes every point due. ``step``: the global step
        just finished (default: one more than the last). ``grads``: the gradients, when no ``before_update`` saw
        them (read now, after the update)."""
        if not self.started:
            self.start()
        step = self.step + 1 if step is None else int(step)
        if not self.writes:
            self.step = step
            return
        now = time.perf_counter()
        if self._prev_time is not None and step > self.step:
            ms = (now - self._prev_time) * 1000.0 / (step - self.step)
            self._time_fold.add([ms])
            self._time_total += ms * (step - self.step)
            self._time_steps += step - self.step
        if self._norms_step != step and grads is not None:
            self.grads_ready(grads, step)
        try:
            if loss is not None:
                self._losses.append(self.ops.keep(loss))
            if self._norms is not None and self._norms_step == step:
                self._grads.append(self.ops.keep(self.ops.total(self._norms)))
        except Exception:
            self.error("loss")
        self.step = step
        if len(self._losses) >= FOLD_EVERY or len(self._grads) >= FOLD_EVERY:
            self._fold()
        try:
            self._points(step)
        except Exception:
            self.error("points")
        self._prev_time = time.perf_counter()

    def _fold(self):
        try:
            if self._losses:
                self._loss_fold.add(self.ops.stack(self._losses))
            if self._grads:
                self._grad_fold.add(self.ops.stack(self._grads))
        except Exception:
            self.error("read")
        self._losses, self._grads = [], []

    # -- points ----------------------------------------------------------------------------------------------------
    def _points(self, step, final=False):
        s = self.settings
        if _due(self.last["core"], step, s.collect_freq) or (final and step > self.last["core"]):
            self._core(step)
        if s.debug and (_due(self.last["debug"], step, s.debug_freq) or (final and step > self.last["debug"])):
            self._debug(step)
        if s.weight_norms and (_due(self.last["diagnostic"], step, s.diagnostic_freq)
                               or (final and step > self.last["diagnostic"])):
            self._diagnostic(step)

    def _core(self, step):
        self.last["core"] = step
        self._fold()
        w, wall = self.writer, time.time()
        if self._loss_fold.count:
            w.scalar(metadata.LOSS, self._loss_fold.last, step, wall)
            w.interval(metadata.LOSS, *self._loss_fold.fields(), step=step, wall_time=wall)
        if self._grad_fold.count:
            w.scalar(metadata.GRAD_NORM, self._grad_fold.last, step, wall)
            w.interval(metadata.GRAD_NORM, *self._grad_fold.fields(), step=step, wall_time=wall)
        if self._lrs:
            w.scalar(metadata.LEARNING_RATE, self._lrs[0], step, wall)
            if len(self._lrs) > 1:
                for i, value in enumerate(self._lrs):
                    w.scalar(metadata.learning_rate_group_tag(i), value, step, wall)
        if self._time_steps:
            mean_ms = self._time_total / self._time_steps
            w.scalar(metadata.STEP_TIME_MS, mean_ms, step, wall)
            w.interval(metadata.STEP_TIME_MS, *self._time_fold.fields(), step=step, wall_time=wall)
            if self.settings.batch_size and mean_ms > 0:
                w.scalar(metadata.THROUGHPUT, self.settings.batch_size * 1000.0 / mean_ms, step, wall)
        self._loss_fold.reset()
        self._grad_fold.reset()
        self._time_fold.reset()
        self._time_total, self._time_steps = 0.0, 0

    def _debug(self, step):
        self.last["debug"] = step
        if not self.layer_index:
            return
        w = self.writer
        if "layer_grad_norm" in self.settings.debug and self._norms is not None and self._norms_step == step:
            norms = self.ops.to_numpy(self._norms)
            w.layers(metadata.GRAD_NORM_LAYERS, self.layer_names, norms[self.layer_index], step)
        if self._ratio is not None and self._ratio[0] == step:
            change, before = (self.ops.to_numpy(h) for h in self._ratio[1])
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = change / before
            w.layers(metadata.UPDATE_RATIO_LAYERS, self.layer_names, ratio, step)
        self._ratio = None

    def _diagnostic(self, step):
        self.last["diagnostic"] = step
        norms = self.ops.to_numpy(self.ops.norms(self.params.params))
        self.writer.scalar(metadata.WEIGHT_NORM_GLOBAL, float(np.sqrt(np.sum(norms * norms))), step)
        if self.layer_index:
            self.writer.layers(metadata.WEIGHT_NORM_LAYERS, self.layer_names, norms[self.layer_index], step)

    # -- end -------------------------------------------------------------------------------------------------------
    def scalar(self, tag, value, step=None):
        """Any other scalar (an evaluation: ``diagnostic/eval_loss``, ``diagnostic/eval/<metric>``), also before the
        first step (an evaluation of the untrained model at step 0)."""
        if not self.started:
            self.start()
        if self.writer is not None:
            self.writer.scalar(tag, float(value), self.step if step is None else int(step))

    def end(self, status="finished", reason=""):
        """The final points (what the last step has not recorded yet) and the run end marker; closes the file.
        Safe to call twice."""
        if self.ended:
            return
        self.ended = True
        if self.writer is None:
            return
        try:
            if self.step > 0:
                self._points(self.step, final=True)
            self.writer.value(run_end.value(status, self.step, time.time(), reason), self.step, sticky=True)
        except Exception:
            self.error("end")
        try:
            self.writer.close()
        except Exception:
            self.error("close")
        self.writer = None
