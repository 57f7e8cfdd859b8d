"""The learning rate: ``lr_constant`` (schedule not applied) and ``lr_update_mismatch`` (recorded LR not applied)."""

import math

import numpy as np

from .. import detectors
from .base import ERROR, WARN, Finding, rule
from .common import finite, fmt


@rule("lr_constant", WARN,
      "our heuristic: a learning rate that never leaves its initial value usually means the schedule is not bound "
      "to the optimizer",
      "Learning rate constant through the whole run (or zero).",
      rel_tol=1e-6, min_points=5, min_steps=20)
def lr_constant(run, cfg):
    series = run.get("learning_rate")
    groups = run.learning_rate_groups()
    pts = finite(series if series is not None or not groups else groups[0], cfg["min_points"])
    if pts is None:
        return []
    steps = pts.span(0, -1)
    if steps[1] - steps[0] < cfg["min_steps"]:
        return []
    x = pts.x
    hi, lo = float(np.max(np.abs(x))), float(np.min(x))
    if hi == 0:
        return [Finding("lr_constant", ERROR, "Learning rate is 0 for the whole run (steps %d-%d): no weight "
                        "changes. Pass a positive learning rate or schedule to the optimizer." % steps,
                        pts.tag, steps)]
    if float(np.max(x)) - lo > cfg["rel_tol"] * hi:
        return []
    return [Finding("lr_constant", WARN,
                    "Learning rate stayed at %s for the whole run (steps %d-%d, %d points). If you configured a "
                    "warm-up or decay, the schedule is not reaching the optimizer: pass the schedule itself as "
                    "learning_rate=... (a LearningRateSchedule or a list of per-step values), not a number "
                    "computed from it. Ignore this if a constant rate is intended." % (
                        fmt(float(x[0])), steps[0], steps[1], x.size), pts.tag, steps)]


def _step_median(layers):
    """Median over layers of a LayerSeries, per step (finite values only)."""
    vals = np.where(np.isfinite(layers.values), layers.values, np.nan)
    return detectors.quiet_nanmedian(vals, axis=1) if vals.size else np.array([])


def _around_change(llr, window, min_change):
    """``(before, after)`` slices around the largest jump of the log learning rate when it is at least
    ``min_change``-fold, else the first and last thirds."""
    diffs = np.abs(np.diff(llr))
    if diffs.size and diffs.max() >= math.log(min_change):
        k = int(np.argmax(diffs)) + 1            # first point after the largest jump
        return slice(max(0, k - window), k), slice(k, min(len(llr), k + window))
    third = max(1, len(llr) // 3)
    return slice(0, third), slice(len(llr) - third, len(llr))


@rule("lr_update_mismatch", WARN,
      "CS231n (Karpathy), 'Neural Networks Part 3': the update/weight ratio tracks the learning rate; an update "
      "size that ignores a large LR change means the recorded LR is not the applied one",
      "Learning rate changes a lot while the per-layer update ratio does not follow.",
      min_lr_change=2.0, follow_frac=0.25, window=5, min_points=4)
def lr_update_mismatch(run, cfg):
    lr = run.get("learning_rate")
    ratio = run.layer_series("update_ratio")
    if lr is None or ratio is None or ratio.steps.size < cfg["min_points"]:
        return []
    upd = _step_median(ratio)
    lr_at = detectors.value_at_or_before(lr.steps, lr.values, ratio.steps)
    ok = np.isfinite(upd) & np.isfinite(lr_at) & (upd > 0) & (lr_at > 0)
    if np.count_nonzero(ok) < cfg["min_points"]:
        return []
    steps = ratio.steps[ok]
    lupd, llr = np.log(upd[ok]), np.log(lr_at[ok])
    before, after = _around_change(llr, int(cfg["window"]), cfg["min_lr_change"])
    lr_change = float(np.median(llr[after]) - np.median(llr[before]))
    if abs(lr_change) < math.log(cfg["min_lr_change"]):
        return []
    upd_change = float(np.median(lupd[after]) - np.median(lupd[before]))
    if abs(upd_change) >= cfg["follow_frac"] * abs(lr_change) and np.sign(upd_change) == np.sign(lr_change):
        return []
    span = (int(steps[before][0]), int(steps[after][-1]))
    return [Finding("lr_update_mismatch", WARN,
                    "Learning rate changed %s-fold over steps %d-%d but the median update ratio changed only "
                    "%s-fold: the recorded learning rate is probably not the one the optimizer applies (a "
                    "schedule computed beside the optimizer, or per-group rates that override it)." % (
                        fmt(math.exp(lr_change)), span[0], span[1], fmt(math.exp(upd_change))),
                    lr.tag, span)]
