"""Live health: judges every core point while training runs (NaN / Inf in loss, gradients or weights, gradient
explosion, loss spikes) and watches for stalls from a background thread; at detection one line in the training
log, a ``_meta/health_event`` in the run, and the actions asked for (``on_anomaly``): stop training, skip the bad
update, save a checkpoint of the last good state. The maths is in ``tb_mindspore_callbacks.recorders.live_health``."""

import math
import os
import statistics
import threading
import time

import numpy as np

import mindspore as ms
from mindspore import nn, ops, Parameter, ParameterTuple, Tensor
from mindspore.ops import composite as C

from tb_plugin_mindspore import metadata

from . import live_health as lh
from ..common.util import logger
from .base import Recorder
from .events import json_value
from .weight_norms import all_weight_norms

__all__ = ["LiveHealthRecorder"]

_ADVICE = {
    "nonfinite": "Lower the learning rate, add gradient clipping (MonitoredTrainCell(clip_grad_norm=1.0)) or a "
                 "loss scale, and check the inputs and the loss (log of 0, division by 0) at the first bad step; "
                 "on_anomaly='skip' leaves such updates out, 'checkpoint' keeps the last good weights.",
    "grad_explosion": "Add gradient clipping (MonitoredTrainCell(clip_grad_norm=1.0)) or lower the learning rate; "
                      "check the batch of that step.",
    "loss_spike": "Check the batches of those steps (bad samples, labels); gradient clipping or a lower learning "
                  "rate makes training robust to them.",
    "run_stalled": "Check the data pipeline (a stuck reader or worker), other ranks (a hung collective) and the "
                   "device; `py-spy dump --pid %d` shows where the process waits." % os.getpid(),
}
_PRIORITY = ("nonfinite", "grad_explosion", "loss_spike", "run_stalled")
_ACTION_WORDS = {"stopped": "training stops after this step", "skipped_update": "the bad update(s) were not applied",
                 "checkpoint": "the last good weights were saved"}


class _Finding:
    __slots__ = ("rule", "severity", "first_step", "message")

    def __init__(self, rule, severity, first_step, message):
        self.rule, self.severity, self.first_step, self.message = rule, severity, first_step, message


def _names(names, limit=3):
    shown = ", ".join(names[:limit])
    return shown + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


class LiveHealthRecorder(Recorder):
    name = "live_health"

    def on_start(self, ctx):
        s = ctx.settings
        self.ctx = ctx
        self.t = lh.thresholds(s.live_health)
        self.actions = s.on_anomaly
        self.grad = lh.RunningMaxSpike(self.t.grad_factor, self.t.warmup_points)
        self.loss = lh.RunningMaxSpike(self.t.loss_factor, self.t.warmup_points)
        self.open = set()               # rules whose problem is still going on (reported once per episode)
        self.last_event_step = None
        self.events = []                # every event written (for tests and the entry points)
        self.saved = None
        self.good = None
        self.good_step = None
        if "skip" in self.actions:
            if not ctx.source.guard_updates(*lh.guard_settings(s)):
                ctx.not_recorded("skip", "needs a MonitoredTrainCell set up before its first step (or "
                                         "LoopMonitor.update); bad updates will not be skipped")
        if "checkpoint" in self.actions and ctx.params:
            self.good = _GoodState.create(list(ctx.params))
            self.good.keep()
            self.good_step = ctx.step
        ctx.info["live_health"] = {"actions": list(self.actions), "grad_factor": self.t.grad_factor,
                                   "loss_factor": self.t.loss_factor, "warmup_points": self.t.warmup_points,
                                   "stall_s": self.t.stall_s}
        self.beat = None                # set at the first step: the clock is the pipeline's end of the last step
        self.point_times = []
        self.stalled_at = None
        self.lock = threading.Lock()
        self.watchdog = _Watchdog(self)
        self.watchdog.start()

    # -- per step / per point ----------------------------------------------------------------------------------------
    def on_step(self, r):
        self.beat = True
        if self.stalled_at is not None and r.step > self.stalled_at:
            self.stalled_at = None
            self.open.discard("run_stalled")

    def on_interval(self, r):
        self.point_times = (self.point_times + [time.perf_counter()])[-6:]
        findings = self._judge(r)
        if findings:
            self._fire(findings, r.step, r.skipped_updates)
        elif "checkpoint" in self.actions and self._clean(r) and self.good is not None:
            self.good.keep()
            self.good_step = r.step

    @staticmethod
    def _clean(r):
        return not ((r.loss_interval and r.loss_interval.nonfinite) or (r.grad_interval and r.grad_interval.nonfinite)
                    or r.skipped_updates)

    def _judge(self, r):
        found = []
        li, gi = r.loss_interval, r.grad_interval
        if not getattr(self.ctx.source, "has_grads", True):
            gi = None
        overflow_cell = r.loss_scale is not None       # non-finite gradients are its overflow steps: expected
        bad = []
        if li is not None and (li.nonfinite or not math.isfinite(r.loss)):
            bad.append(("loss", li.nonfinite, li.first_nonfinite_step))
        if gi is not None and not overflow_cell and (gi.nonfinite or not math.isfinite(r.grad_norm)):
            bad.append(("gradient norm", gi.nonfinite, gi.first_nonfinite_step))
        if bad:
            if "nonfinite" not in self.open:
                self.open.add("nonfinite")
                found.append(self._nonfinite(r, bad))
        else:
            self.open.discard("nonfinite")
        if gi is not None and not overflow_cell:
            found.extend(self._jump(self.grad, r.grad_norm, gi, r.step, "grad_explosion", "error",
                                    "gradient explosion: the gradient norm reached %s at step %d, %s times the "
                                    "largest before it (%s)"))
        if li is not None:
            found.extend(self._jump(self.loss, r.loss, li, r.step, "loss_spike", "warning",
                                    "loss spike: the loss reached %s at step %d, %s times the largest loss before it "
                                    "(%s)"))
        if r.skipped_updates and not found:
            first = r.first_skipped_step if r.first_skipped_step is not None else r.step
            found.append(_Finding("grad_explosion", "warning", first, (
                "%d update(s) skipped since step %d: gradient norm non-finite or %s times the largest applied one"
                % (r.skipped_updates, first, lh.fmt(self.t.grad_factor)))))
        return found

    @staticmethod
    def _jump(watch, point, interval, step, rule, severity, template):
        """A finding when the interval's largest value jumped past ``watch``'s running max (empty list if not)."""
        value = lh.envelope(point, interval.max)
        before = watch.running_max
        ratio = watch.update(value)
        if ratio is None:
            return []
        at = interval.max_step if interval.max_step is not None and value == interval.max else step
        return [_Finding(rule, severity, at, template % (lh.fmt(value), at, lh.fmt(ratio), lh.fmt(before)))]

    def _nonfinite(self, r, bad):
        first = min((s for _, _, s in bad if s is not None), default=r.first_step or r.step)
        where = " and ".join("%s (%d step(s)%s)" % (what, n, ", first at step %d" % s if s is not None else "")
                             for what, n, s in bad)
        message = "NaN/Inf since step %d in the %s" % (first, where)
        weights = self._nonfinite_weights()
        if weights:
            message += "; the weights are now NaN/Inf in %d parameter(s) (%s): the bad update was applied" % (
                len(weights), _names(weights))
        return _Finding("nonfinite", "error", first, message)

    def _nonfinite_weights(self):
        try:
            norms = all_weight_norms(self.ctx)
        except Exception:
            return []
        if norms is None:
            return []
        names = list(self.ctx.param_names)
        return [n for n, v in zip(names, norms) if not np.isfinite(v)]

    def on_point(self, r):
        """At diagnostic points: non-finite weights (from the weight norms just computed)."""
        if "diagnostic" not in r.due or "nonfinite" in self.open:
            return
        shared = self.ctx.shared.get("weight_norms")
        if not shared or shared["step"] != r.step:
            return
        bad = [n for n, v in zip(shared["names"], shared["norms"]) if not np.isfinite(v)]
        if bad:
            self.open.add("nonfinite")
            self._fire([_Finding("nonfinite", "error", r.step, "NaN/Inf weights at step %d in %d parameter(s) (%s)"
                                 % (r.step, len(bad), _names(bad)))], r.step, 0)

    # -- events and actions --------------------------------------------------------------------------------------------
    def _fire(self, findings, step, skipped, from_watchdog=False):
        with self.lock:
            if step == self.last_event_step:
                return          # one event per step (a second one at the same step would replace the first)
            self.last_event_step = step
            findings = sorted(findings, key=lambda f: _PRIORITY.index(f.rule))
            main = findings[0]
            message = main.message + "".join("; also %s" % f.message for f in findings[1:])
            severity = "error" if any(f.severity == "error" for f in findings) else "warning"
            checkpoint = None
            action = "none"
            if not from_watchdog:
                if "checkpoint" in self.actions and self.good is not None and self.saved is None:
                    checkpoint = self._save_checkpoint()
                    if checkpoint:
                        action = "checkpoint"
                if skipped:
                    action = "skipped_update"
                if "stop" in self.actions:
                    action = "stopped"
                    self.ctx.request_stop("live health: %s at step %d" % (main.rule, step))
            event = metadata.health_event(main.rule, severity, step, first_step=min(main.first_step, step),
                                          message=message, advice=_ADVICE[main.rule], layers=(), action=action,
                                          checkpoint=checkpoint, source="live")
            if not from_watchdog:
                self.ctx.pipeline._call("on_anomaly", event)
            w = self.ctx.writer
            if w is not None:
                w.value(json_value(metadata.HEALTH_EVENT, metadata.KIND_HEALTH_EVENT, event), step)
            self.ctx.pipeline.notify(event)
            self.events.append(event)
            did = _ACTION_WORDS.get(action, "")
            if checkpoint and action != "checkpoint":
                did = (did + "; " if did else "") + _ACTION_WORDS["checkpoint"]
            logger.warning("tb-mindspore live health [%s] %s at step %d: %s.%s%s What to do: %s",
                           severity, main.rule, step, event["message"],
                           (" Started in: %s." % _names(event["layers"])) if event["layers"] else "",
                           (" Action: %s%s." % (did, " (%s)" % checkpoint if checkpoint else "")) if did else "",
                           event["advice"])

    def _save_checkpoint(self):
        folder = self.ctx.settings.checkpoint_dir or os.path.join(self.ctx.logdir, "checkpoints")
        path = os.path.join(folder, "last_good_step%d.ckpt" % int(self.good_step or 0))
        try:
            os.makedirs(folder, exist_ok=True)
            ms.save_checkpoint(self.good.as_list(self.ctx.param_names), path)
        except Exception as e:
            logger.warning("tb-mindspore: live health could not save the last good state to %s: %s", path, e)
            return None
        self.saved = path
        return path

    # -- stalls ------------------------------------------------------------------------------------------------------
    def check_stall(self):
        """From the watchdog thread: a finding when no step ended (monitoring work included) for too long."""
        p = self.ctx.pipeline
        if self.beat is None or self.stalled_at is not None or p.prev_time is None or not p.active:
            return None
        beat = (p.prev_time, p.last_step)
        usual = None
        if len(self.point_times) >= 2:
            usual = statistics.median(b - a for a, b in zip(self.point_times, self.point_times[1:]))
        threshold = lh.stall_threshold(self.t, usual)
        idle = time.perf_counter() - beat[0]
        if idle <= threshold:
            return threshold - idle
        self.stalled_at = beat[1]
        self.open.add("run_stalled")
        self._fire([_Finding("run_stalled", "warning", beat[1], (
            "stalled: no training step for %.0f s since step %d (threshold %.0f s%s)"
            % (idle, beat[1], threshold, ", usual time between points %.1f s" % usual if usual else "")))],
            beat[1], 0, from_watchdog=True)
        return None

    def on_end(self, status):
        self.close()

    def close(self):
        wd = getattr(self, "watchdog", None)
        if wd is not None:
            wd.stop()


class _Watchdog(threading.Thread):
    """Wakes up now and then to ask whether training stalled; never touches the training thread."""

    def __init__(self, recorder):
        super().__init__(name="tb-mindspore-watchdog", daemon=True)
        self.recorder = recorder
        self.done = threading.Event()

    def run(self):
        wait = 1.0
        while not self.done.wait(wait):
            try:
                left = self.recorder.check_stall()
            except Exception:
                left = None
            wait = min(5.0, max(0.2, left / 2)) if left is not None else 1.0

    def stop(self):
        self.done.set()


class _Keep(nn.Cell):
    """Copies of ``params`` (``tbms_good.<name>``, same dtype); ``construct()`` refreshes them on the device."""

    def __init__(self, params):
        super().__init__(auto_prefix=False)
        self.params = ParameterTuple(params)
        self.copies = ParameterTuple([Parameter(Tensor(p.asnumpy()), name="tbms_good." + p.name, requires_grad=False)
                                      for p in params])
        self.hyper_map = C.HyperMap()

    @ms.jit
    def construct(self):
        return self.hyper_map(ops.assign, self.copies, self.params)


class _GoodState:
    """A device copy of the parameters at the last point without a problem (``keep()``), saved as a checkpoint
    when an anomaly fires. Memory: one copy of the parameters (only with on_anomaly='checkpoint')."""

    _cells = {}

    def __init__(self, params):
        self.params = params
        self.cell = _Keep(params)

    @classmethod
    def create(cls, params):
        key = tuple(id(p) for p in params)
        if key not in cls._cells:
            cls._cells = {key: cls(params)}      # one kept at a time (it holds a copy of the weights)
        return cls._cells[key]

    def keep(self):
        self.cell()

    def as_list(self, names=None):
        """``[{"name", "data"}]`` for ``mindspore.save_checkpoint``, under ``names`` (default: ``p.name``)."""
        names = [p.name for p in self.params] if names is None else names
        return [{"name": n, "data": Tensor(c.asnumpy())} for n, c in zip(names, self.cell.copies)]
