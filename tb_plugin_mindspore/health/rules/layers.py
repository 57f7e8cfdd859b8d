"""Per-layer learning: ``layer_not_learning`` and ``layer_too_fast`` (update ratio ||dw||/||w||, weight norms)."""

import dataclasses
import re

import numpy as np

from .. import detectors
from .base import INFO, WARN, Finding, rule
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
      "means the learning rate is too low): below 1e-4 and, while others learn, below a tenth of their median "
      "(our bound: embedding tables updated a few rows per step sit a few times below dense layers); layers the "
      "callbacks found untrained by the optimizer (requires_grad=False, left out of it) and layers whose gradient "
      "is exactly 0 at every step (ops.stop_gradient) named with that cause; weights that do not change: a weight "
      "norm within 1e-6 of its first value at every recorded point (our bound, from the health corpus: frozen and "
      "dead layers 0 in 19 of 20 trials, every learning layer of 124 healthy runs at least 1.3e-4 away at some "
      "point, though one ended 5.9e-7 from where it began)",
      "A layer that does not learn while others do: frozen (requires_grad=False or not given to the optimizer; a "
      "note when the hyperparameters say so), cut off from the loss (gradient exactly 0), an update ratio "
      "||dw||/||w|| below 1e-4, or weights that do not change.",
      low=1e-4, rel_low=0.1, weight_rtol=1e-6, others_min_change=1e-3, ignore="")
def layer_not_learning(run, cfg):
    pattern = ignore_pattern(cfg)
    findings = []
    frozen = {n: w for n, w in run.frozen_layers().items() if not is_ignored(pattern, n)}
    found = _declared_frozen(run, frozen)
    if found is not None:
        findings.append(found)
    covered = set(frozen)
    found = _no_gradient(run, pattern, covered)
    if found is not None:
        findings.append(found)
        covered |= set(found.layers)
    ratio = _update_ratios(run)
    if ratio is not None:
        names = [(n, m) for n, m in _median_ratios(ratio, pattern) if n not in covered]
        found = _slow_layers(names, cfg["low"], cfg["rel_low"], ratio)
        if found is not None:
            findings.append(found)
        covered |= {n for n, _ in names}
    found = _frozen_layers(run.layer_series("layer_weight_norm"), cfg, pattern, covered)
    if found is not None:
        findings.append(found)
    return findings


_FREEZE_KEY = re.compile(r"(freez|frozen)", re.I)


def _freezing_declared(run):
    """Whether the hyperparameters say layers are frozen on purpose (a key such as ``freeze`` / ``frozen_layers``
    with a value that is not false / empty)."""
    hparams = (run.info or {}).get("hparams") if isinstance(run.info, dict) else None
    if not isinstance(hparams, dict):
        return False
    return any(_FREEZE_KEY.search(str(k)) and v not in (False, None, "", 0, "false", "none", "no", [])
               for k, v in hparams.items())


def _declared_frozen(run, frozen):
    """The layers the callbacks found untrained by the optimizer (``requires_grad=False`` or left out of it)."""
    if not frozen:
        return None
    steps = (run.first_step() or 0, run.last_step() or 0)
    names = sorted(frozen)
    why = sorted({w for w in frozen.values() if w})
    said = " (%s)" % " / ".join(why) if why else ""
    if _freezing_declared(run):
        return Finding("layer_not_learning", INFO,
                       "%d layer(s) are frozen%s as the hyperparameters say: %s." % (len(names), said,
                                                                                    layer_list(names)),
                       "", steps, layers=tuple(names))
    return Finding("layer_not_learning", WARN,
                   "%d layer(s) are frozen%s: %s never change while the optimizer trains the others (they are "
                   "listed in the layer heatmaps, marked frozen). If that is not intended, set requires_grad=True "
                   "and give them to the optimizer; if it is, say so with hparams={\"frozen\": \"...\"} and this "
                   "becomes a note." % (len(names), said, layer_list(names)), _frozen_tag(run), steps,
                   layers=tuple(names))


def _frozen_tag(run):
    for quantity in ("update_ratio", "layer_weight_norm"):
        series = run.layer_series(quantity)
        if series is not None and series.frozen:
            return series.tag
    return ""


def _no_gradient(run, pattern, covered):
    """Layers whose gradient norm is exactly 0 at every recorded step while other layers' are not: no gradient
    reaches them (``ops.stop_gradient`` before them, or unused in the forward pass)."""
    grads = run.layer_series("layer_grad_norm")
    if grads is None or grads.steps.size < 2 or len(grads.layers) < 2:
        return None
    horizon = diverged_at(run)
    vals = grads.values if horizon is None else grads.values[grads.steps < horizon]
    if vals.shape[0] < 2:
        return None
    with np.errstate(invalid="ignore"):
        zero = np.all(vals == 0.0, axis=0)
        alive = np.any(vals > 0.0, axis=0)
    names = [n for n, z in zip(grads.layers, zero) if z and n not in covered and not is_ignored(pattern, n)]
    if not names or not alive.any():
        return None
    steps = (int(grads.steps[0]), int(grads.steps[vals.shape[0] - 1]))
    return Finding("layer_not_learning", WARN,
                   "%d layer(s) get no gradient at all: %s have a gradient norm of exactly 0 at every recorded step "
                   "(%d-%d) while the other layers' are not 0. Something cuts them off from the loss: "
                   "ops.stop_gradient (or a detached tensor) after them, an output that the loss never uses, or an "
                   "integer cast on their path." % (len(names), layer_list(names), steps[0], steps[1]),
                   grads.tag, steps, layers=tuple(names))


def _slow_layers(names, low, rel_low, ratio):
    learning = [(n, m) for n, m in names if m >= low]
    typical = float(np.median([m for _, m in learning])) if learning else None
    # Slow: below CS231n's floor and, when others learn, far below them too (an embedding table updated a few
    # rows per step sits a few times below the dense layers: not a layer that does not learn).
    slow = [(n, m) for n, m in names if m < low and (typical is None or m < rel_low * typical)]
    steps = (int(ratio.steps[0]), int(ratio.steps[-1]))
    if slow and learning:
        slow.sort(key=lambda t: t[1])
        return Finding(
            "layer_not_learning", WARN,
            "%d layer(s) barely learn: median update ratio ||dw||/||w|| %s, below %s, while the other layers "
            "update at about %s per step (CS231n: about 1e-3 is healthy)."
            % (len(slow), layer_values(slow), fmt(float(low)), fmt(typical)), ratio.tag, steps,
            layers=tuple(n for n, _ in slow), advice="Check their learning rate (parameter groups), whether they "
            "are frozen (requires_grad) and whether gradients reach them.")
    if slow:
        return Finding(
            "layer_not_learning", WARN,
            "Every layer updates slowly: median update ratio %s, below %s (CS231n: about 1e-3 is healthy)." % (
                fmt(float(np.median([m for _, m in slow]))), fmt(float(low))), ratio.tag, steps,
            advice="The learning rate is probably too low.")
    return None


def _frozen_layers(weights, cfg, pattern, covered):
    """Layers (not judged by their update ratio) whose weight norm stayed at its first value at every recorded step
    while others' moved. The change is the largest ``|w_t - w_0| / |w_0|`` over the recorded steps, not the last
    point's alone: a layer that learns can end where its norm began (Adam moves it away and back), a frozen one
    never leaves it."""
    if weights is None or weights.steps.size < 2:
        return None
    with np.errstate(all="ignore"):
        first = weights.values[0]
        change = np.fmax.reduce(np.abs(weights.values - first), axis=0) / np.maximum(np.abs(first), 1e-30)
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
