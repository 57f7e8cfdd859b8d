"""Per-layer learning: ``layer_not_learning`` and ``layer_too_fast`` (update ratio ||dw||/||w||, weight norms)."""

import dataclasses

import numpy as np

from .. import detectors
from .base import WARN, Finding, rule
from .common import diverged_at, fmt, ignore_pattern, is_ignored, layer_list, layer_values

_DEFAULT_IGNORE = r"(^|[./_])(bias|beta)$"


def _median_ratios(ratio, pattern):
    """``[(layer, median update ratio)]`` of the layers not ignored, leaving out the first step and NaN."""
    vals = ratio.values[1:] if ratio.steps.size > 1 else ratio.values
    med = detectors.quiet_nanmedian(np.where(np.isfinite(vals), vals, np.nan), axis=0)
    return [(n, float(m)) for n, m in zip(ratio.layers, med) if np.isfinite(m) and not is_ignored(pattern, n)]


def _update_ratios(run):
    """The update ratios before the run diverged (the first NaN/Inf: afterwards they measure nothing), or None."""
    ratio = run.layer_series("update_ratio")
    if ratio is None or not ratio.steps.size or not ratio.layers:
        return None
    horizon = diverged_at(run)
    if horizon is not None:
        keep = ratio.steps < horizon
        if not keep.any():
            return None
        ratio = dataclasses.replace(ratio, steps=ratio.steps[keep], wall_times=ratio.wall_times[keep],
                                    values=ratio.values[keep])
    return ratio


@rule("layer_not_learning", WARN,
      "CS231n 'Neural Networks Part 3' (ratio of update to weight magnitude should be about 1e-3; much lower "
      "means the learning rate is too low)",
      "A layer whose update ratio ||dw||/||w|| stays below 1e-4 (or whose weights do not change) while other "
      "layers learn.",
      low=1e-4, weight_rtol=1e-6, others_min_change=1e-3, ignore="")
def layer_not_learning(run, cfg):
    pattern = ignore_pattern(cfg)
    ratio = _update_ratios(run)
    findings, covered = [], set()
    if ratio is not None:
        names = _median_ratios(ratio, pattern)
        covered = {n for n, _ in names}
        found = _slow_layers(names, cfg["low"], ratio)
        if found is not None:
            findings.append(found)
    found = _frozen_layers(run.layer_series("layer_weight_norm"), cfg, pattern, covered)
    if found is not None:
        findings.append(found)
    return findings


def _slow_layers(names, low, ratio):
    slow = [(n, m) for n, m in names if m < low]
    learning = [(n, m) for n, m in names if m >= low]
    steps = (int(ratio.steps[0]), int(ratio.steps[-1]))
    if slow and learning:
        typical = float(np.median([m for _, m in learning]))
        slow.sort(key=lambda t: t[1])
        return Finding(
            "layer_not_learning", WARN,
            "%d layer(s) barely learn: median update ratio ||dw||/||w|| %s, below %s, while the other layers "
            "update at about %s per step (CS231n: about 1e-3 is healthy). Check their learning rate "
            "(parameter groups), whether they are frozen (requires_grad) and whether gradients reach them."
            % (len(slow), layer_values(slow), fmt(float(low)), fmt(typical)), ratio.tag, steps,
            layers=tuple(n for n, _ in slow))
    if slow:
        return Finding(
            "layer_not_learning", WARN,
            "Every layer updates slowly: median update ratio %s, below %s (CS231n: about 1e-3 is healthy). "
            "The learning rate is probably too low." % (
                fmt(float(np.median([m for _, m in slow]))), fmt(float(low))), ratio.tag, steps)
    return None


def _frozen_layers(weights, cfg, pattern, covered):
    """Layers (not judged by their update ratio) whose weight norm did not move while others' did."""
    if weights is None or weights.steps.size < 2:
        return None
    with np.errstate(all="ignore"):
        first, last = weights.values[0], weights.values[-1]
        change = np.abs(last - first) / np.maximum(np.abs(first), 1e-30)
    names = [(n, float(c)) for n, c in zip(weights.layers, change)
             if np.isfinite(c) and n not in covered and not is_ignored(pattern, n)]
    frozen = [n for n, c in names if c <= cfg["weight_rtol"]]
    if not frozen or not any(c >= cfg["others_min_change"] for _, c in names):
        return None
    steps = (int(weights.steps[0]), int(weights.steps[-1]))
    return Finding("layer_not_learning", WARN,
                   "The weights of %d layer(s) did not change over steps %d-%d (%s) while other layers' weight "
                   "norms moved: they are frozen or get a zero learning rate." % (
                       len(frozen), steps[0], steps[1], layer_list(frozen)), weights.tag, steps,
                   layers=tuple(frozen))


@rule("layer_too_fast", WARN,
      "CS231n 'Neural Networks Part 3' (update/weight ratio about 1e-3; much higher means the learning rate is "
      "too high); 1e-1 as the alarm level",
      "A layer whose update ratio ||dw||/||w|| stays above 1e-1.",
      high=1e-1, ignore=_DEFAULT_IGNORE)
def layer_too_fast(run, cfg):
    ratio = _update_ratios(run)
    if ratio is None:
        return []
    fast = [(n, m) for n, m in _median_ratios(ratio, ignore_pattern(cfg)) if m > cfg["high"]]
    if not fast:
        return []
    fast.sort(key=lambda t: -t[1])
    steps = (int(ratio.steps[0]), int(ratio.steps[-1]))
    return [Finding("layer_too_fast", WARN,
                    "%d layer(s) change too fast: median update ratio ||dw||/||w|| %s, above %s per step "
                    "(CS231n: about 1e-3 is healthy). Lower their learning rate or add warm-up." % (
                        len(fast), layer_values(fast), fmt(float(cfg["high"]))), ratio.tag, steps,
                    layers=tuple(n for n, _ in fast))]
