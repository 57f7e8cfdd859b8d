"""Live health maths: pure helpers (no MindSpore) that judge each core point while training runs.

The thresholds are those of the offline health rules (``tb_plugin_mindspore.health.rules``), read from their
registry so that what the training log says and what ``tb-mindspore check`` / the Health panel say agree:

* ``nonfinite``: any NaN / Inf loss or gradient norm in the interval (Megatron-LM's check_for_nan_in_loss_and_grad).
* ``grad_explosion``: the gradient norm's interval max ``max_ratio`` (10) times the running max of the points
  before it, after a warm-up (the rule's "hard" anomaly; Megatron-LM's 10x spike factor).
* ``loss_spike``: the loss's interval max ``factor`` (10) times the largest loss before it (Megatron-LM
  check_for_spiky_loss), after a warm-up.
* ``run_stalled``: no step for ``stall_factor`` (10) times the usual time between points, at least ``min_stall_s``
  (120 s).

The live checks use the interval envelope (the largest value of every step since the previous point), so a spike
between two points is judged at the point that follows it: within one collect interval.
"""

import math
from dataclasses import dataclass
from typing import Optional

__all__ = ["RuleThresholds", "thresholds", "RunningMaxSpike", "skip_update", "UpdateGuard", "guard_settings",
           "stall_threshold", "envelope", "fmt"]

# Used when the rule registry cannot be imported (the same values, with the rules' sources).
_FALLBACK = {"grad_factor": 10.0, "loss_factor": 10.0, "stall_factor": 10.0, "min_stall_s": 120.0}


@dataclass
class RuleThresholds:
    grad_factor: float
    loss_factor: float
    stall_factor: float
    min_stall_s: float
    warmup_points: int
    stall_s: Optional[float]


def thresholds(overrides=None):
    """The live thresholds: the offline rules' defaults, then ``overrides`` (``live_health={...}``) where not None."""
    values = dict(_FALLBACK)
    try:
        # lazy: the offline rules load when live health starts, and a broken viewer side never stops training
        from tb_plugin_mindspore.health.rules import base as rules_base
        import tb_plugin_mindspore.health.rules  # noqa: F401  (registers every rule)

        defaults = {r.id: r.defaults for r in rules_base.RULES}
        values["grad_factor"] = float(defaults["grad_explosion"]["max_ratio"])
        values["loss_factor"] = float(defaults["loss_spike"]["factor"])
        values["stall_factor"] = float(defaults["run_stalled"]["stall_factor"])
        values["min_stall_s"] = float(defaults["run_stalled"]["min_stall_s"])
    except Exception:       # the viewer side is optional here; its defaults are mirrored above
        pass
    overrides = overrides or {}
    for key in ("grad_factor", "loss_factor"):
        if overrides.get(key) is not None:
            values[key] = float(overrides[key])
    return RuleThresholds(values["grad_factor"], values["loss_factor"], values["stall_factor"], values["min_stall_s"],
                          int(overrides.get("warmup_points") or 5), overrides.get("stall_s"))


def envelope(last, interval_max):
    """The largest finite of the last value and the interval max (NaN when neither is finite)."""
    values = [v for v in (last, interval_max) if v is not None and math.isfinite(v)]
    return max(values) if values else math.nan


class RunningMaxSpike:
    """A point ``factor`` times the largest point before it is a spike, once ``warmup`` points were seen.

    Every finite point (spikes included) enters the running max, as in the offline rules' ``max_before``.
    """

    def __init__(self, factor, warmup):
        self.factor = float(factor)
        self.warmup = int(warmup)
        self.seen = 0
        self.running_max = -math.inf

    def update(self, value):
        """Returns the ratio to the running max when ``value`` is a spike, else None."""
        if value is None or not math.isfinite(value):
            return None
        ratio = None
        if self.seen >= self.warmup and self.running_max > 0 and value > self.factor * self.running_max:
            ratio = value / self.running_max
        self.seen += 1
        self.running_max = max(self.running_max, value)
        return ratio


def skip_update(grad_norm, running_max, applied, factor, warmup_steps):
    """Whether to skip an update: a non-finite gradient norm, or, after ``warmup_steps`` applied updates, one
    ``factor`` times the largest applied before. The host twin of ``train_cell.guard_update``."""
    if not math.isfinite(grad_norm):
        return True
    return applied >= warmup_steps and grad_norm > factor * running_max


def guard_settings(settings):
    """``(factor, warmup_steps)`` of the skip guard for monitor settings: the explosion factor, after the live
    warm-up's steps."""
    t = thresholds(settings.live_health)
    return t.grad_factor, t.warmup_points * settings.collect_freq


class UpdateGuard:
    """The loop's skip decision, step by step (the training cell's is in the graph): see :func:`skip_update`."""

    def __init__(self, factor, warmup_steps):
        self.factor, self.warmup_steps = float(factor), int(warmup_steps)
        self.running_max = 0.0
        self.applied = 0

    def skip(self, grad_norm):
        if skip_update(grad_norm, self.running_max, self.applied, self.factor, self.warmup_steps):
            return True
        self.running_max = max(self.running_max, grad_norm)
        self.applied += 1
        return False


def stall_threshold(t, usual_interval_s):
    """Seconds without a step after which the run is stalled."""
    if t.stall_s is not None:
        return float(t.stall_s)
    return max(t.min_stall_s, t.stall_factor * usual_interval_s if usual_interval_s else 0.0)


def fmt(value):
    """A number for a log line: 3 significant digits, NaN / Inf as words."""
    if value is None:
        return "?"
    if not math.isfinite(value):
        return "NaN" if value != value else ("Inf" if value > 0 else "-Inf")
    return "%.3g" % value
