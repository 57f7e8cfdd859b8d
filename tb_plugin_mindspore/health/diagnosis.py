"""The likely cause of a finding that several causes can produce, weighed on the run's own evidence.

A gradient that vanishes, layers that do not learn, a loss that oscillates or turns NaN: each has several usual
causes, and generic advice ("add normalisation layers and residual connections") sends the user to change the wrong
thing when the run shows another one (the demo's run with its learning rate 1000x too high has normalisation and
residuals). :func:`explain` weighs what the run recorded:

* the update ratio ||dw||/||w|| of the layers against CS231n's ~1e-3 (10x above: the steps are too large for the
  weights; 10x below: too small), before any divergence;
* the learning rate applied (its peak, whether it changed, against the optimizer's usual values: Adam 1e-3 after
  Kingma and Ba 2015);
* what went wrong first: the loss or the gradient norm (a loss that turns Inf while the gradient norm stays finite
  is the cross-entropy of logits blown up by too-large steps);
* whether the network has normalisation layers (run information's ``normalisation``, recorded by the callbacks);
* the per-layer gradient norms over depth (a decay towards the input from the first step is the architecture's);
* the batch size, loss-scale, frozen layers and parameter groups with learning rate 0.

Each cause gets a score from the evidence for and against it; the finding's advice becomes "Most likely: <cause>
(<evidence>). <what to do>. Other possible causes: ...", and ``causes`` (JSON: ``[{"cause", "likely",
"evidence"}]``) lists them in that order. Pure functions over a :class:`~.series.RunSeries`.
"""

import re
from dataclasses import dataclass, field
from typing import List

import numpy as np

from . import detectors
from .rules.common import diverged_at, fmt
from .rules.presence import nonfinite_ranges
from .series import ALIASES

_EVAL_TAGS = frozenset(ALIASES["eval_loss"])
HEALTHY_RATIO = 1e-3          # CS231n, "Neural Networks Part 3": update / weight magnitude about 1e-3
_NORM_NAME = re.compile(r"(^|[._/])(bn|ln|norm|layernorm|layer_norm|batchnorm|batch_norm|groupnorm|rmsnorm)"
                        r"([._/\d]|$)", re.I)
_BIAS = re.compile(r"(^|[./_])(bias|beta|gamma)$")
# Usual peak learning rates per optimizer family (an order of magnitude is what matters): Adam's default 1e-3
# (Kingma and Ba 2015); SGD with momentum 0.1 (He et al. 2016, ResNet on ImageNet).
_USUAL_LR = {"adam": 1e-3, "adamw": 1e-3, "adamweightdecay": 1e-3, "lamb": 1e-3, "momentum": 0.1, "sgd": 0.1}


@dataclass
class Cause:
    """One possible cause: its id, how it is said, what to do, its score and the evidence for it."""

    id: str
    title: str
    advice: str
    score: float = 0.0
    evidence: List[str] = field(default_factory=list)

    def support(self, weight, sentence):
        self.score += weight
        if sentence:
            self.evidence.append(sentence)

    def to_json(self, likely):
        return {"cause": self.id, "likely": bool(likely), "evidence": list(self.evidence)}


# -- evidence ---------------------------------------------------------------------------------------------------------
def update_ratio_level(run):
    """``(median update ratio over the layers and points before the run diverged, per-layer medians)`` or
    ``(None, {})``; frozen layers, biases and norm scales left out."""
    ratio = run.layer_series("update_ratio")
    if ratio is None or not ratio.steps.size or not ratio.layers:
        return None, {}
    horizon = diverged_at(run)
    rows = ratio.values if horizon is None else ratio.values[ratio.steps < horizon]
    if rows.shape[0] > 1:
        rows = rows[1:]            # the first point may hold the first step's compilation-era update
    frozen = set(ratio.frozen)
    cols = [j for j, n in enumerate(ratio.layers) if n not in frozen and not _BIAS.search(n)]
    if not cols or not rows.size:
        return None, {}
    vals = np.where(np.isfinite(rows[:, cols]), rows[:, cols], np.nan)
    per_layer = detectors.quiet_nanmedian(vals, axis=0)
    level = detectors.quiet_nanmedian(per_layer)
    if not np.isfinite(level):
        return None, {}
    return float(level), {ratio.layers[j]: float(m) for j, m in zip(cols, per_layer) if np.isfinite(m)}


def peak_lr(run):
    """The largest finite applied learning rate, or None."""
    series = run.get("learning_rate")
    if series is None:
        return None
    v = series.values[np.isfinite(series.values)]
    return float(np.max(v)) if v.size else None


def optimizer_name(run):
    info = run.info if isinstance(run.info, dict) else {}
    name = info.get("optimizer") or ((info.get("hparams") or {}).get("optimizer")
                                     if isinstance(info.get("hparams"), dict) else None)
    return str(name) if name else None


def usual_lr(run):
    """``(usual peak learning rate, optimizer name)`` for the run's optimizer, or ``(None, name)``."""
    name = optimizer_name(run)
    if not name:
        return None, None
    key = name.lower().replace("_", "")
    for family, lr in _USUAL_LR.items():
        if key.startswith(family) or key == family:
            return lr, name
    return None, name


def normalisation(run):
    """``(True | False | None, what)``: whether the network has normalisation layers (the callbacks' run
    information, else the names of the recorded layers), and which."""
    info = run.info if isinstance(run.info, dict) else {}
    recorded = info.get("normalisation")
    if isinstance(recorded, dict):
        if not recorded:
            return False, ""
        return True, ", ".join("%s x%d" % (k, v) if isinstance(v, int) and v > 1 else str(k)
                               for k, v in sorted(recorded.items()))
    names = set()
    for series in run.layers.values():
        names.update(series.layers)
    hits = sorted(n for n in names if _NORM_NAME.search(n))
    if hits:
        return True, ", ".join(hits[:3])
    return None, ""


def first_nonfinite(run, quantity):
    """The step by which ``quantity`` (a scalar) had first been non-finite (the end of the first recorded interval
    that holds a NaN/Inf), or None."""
    series = run.get(quantity)
    if series is None:
        return None
    ranges, _ = nonfinite_ranges(run, series)
    return ranges[0][1] if ranges else None


def depth_profile(run):
    """``(rise, first step)``: how many times larger the gradient norm of the last recorded layers is than that of
    the first ones at the first per-layer record (network order: input first), or ``(None, None)``."""
    grads = run.layer_series("layer_grad_norm")
    if grads is None or not grads.steps.size or len(grads.layers) < 3:
        return None, None
    cols = [j for j, n in enumerate(grads.layers) if not _BIAS.search(n)]
    if len(cols) < 3:
        return None, None
    row = grads.values[0, cols]
    k = max(1, len(cols) // 3)
    first, last = row[:k], row[-k:]
    first, last = first[np.isfinite(first) & (first > 0)], last[np.isfinite(last) & (last > 0)]
    if not first.size or not last.size:
        return None, int(grads.steps[0])
    return float(np.median(last) / np.median(first)), int(grads.steps[0])


def batch_size(run):
    info = run.info if isinstance(run.info, dict) else {}
    for value in (info.get("batch_size"), (info.get("hparams") or {}).get("batch_size")
                  if isinstance(info.get("hparams"), dict) else None):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value)
    return None


def sharpness_above(run):
    """The first step the sharpness reached its stability line, or None."""
    series = run.get("sharpness_ratio")
    if series is None:
        return None
    hit = np.nonzero(np.isfinite(series.values) & (series.values >= 1.0))[0]
    return int(series.steps[hit[0]]) if hit.size else None


# -- causes -----------------------------------------------------------------------------------------------------------
def _lr_causes(run):
    """Evidence on the step size: ``(too_high, too_low)`` causes with their scores."""
    high = Cause("learning_rate_too_high", "the learning rate is too high",
                 "Lower the learning rate, 10x to start, and add a warm-up and gradient clipping with "
                 "MonitoredTrainCell(clip_grad_norm=1.0)")
    low = Cause("learning_rate_too_low", "the learning rate is too low",
                "Raise the learning rate, 3-10x to start, or check that the schedule reaches the optimizer")
    level, _ = update_ratio_level(run)
    if level is not None:
        times = level / HEALTHY_RATIO
        if times >= 10:
            high.support(3.0, "the layers' weights change by a median %s of their norm per step, %s times "
                              "CS231n's ~1e-3" % (fmt(level), fmt(times)))
        elif times >= 3:
            high.support(1.0, "the layers' weights change by a median %s of their norm per step, %s times "
                              "CS231n's ~1e-3" % (fmt(level), fmt(times)))
        elif times <= 0.1:
            low.support(3.0, "the layers' weights change by a median %s of their norm per step, %s times less "
                             "than CS231n's ~1e-3" % (fmt(level), fmt(1 / times)))
        else:
            high.support(-1.0, "")
            low.support(-1.0, "")
    lr = peak_lr(run)
    usual, name = usual_lr(run)
    if lr is not None and usual is not None and lr > 0:
        if lr >= 30 * usual:
            high.support(2.0, "the learning rate peaks at %s, %s times the usual %s for %s" % (
                fmt(lr), fmt(lr / usual), fmt(usual), name))
        elif lr <= usual / 100:
            low.support(1.0, "the learning rate peaks at %s, %s times less than the usual %s for %s" % (
                fmt(lr), fmt(usual / lr), fmt(usual), name))
    loss_bad, grad_bad = first_nonfinite(run, "loss"), first_nonfinite(run, "grad_norm")
    if loss_bad is not None and (grad_bad is None or loss_bad < grad_bad) and run.get("grad_norm") is not None:
        high.support(1.5, "the loss turned non-finite first (by step %d) while the gradient norm stayed finite: "
                          "the logits were blown up by oversized steps" % loss_bad)
    edge = sharpness_above(run)
    if edge is not None:
        high.support(1.5, "the sharpness reached the optimizer's stability line at step %d" % edge)
    return high, low


def _architecture_cause(run):
    arch = Cause("architecture", "depth without normalisation or residual paths, or saturating activations",
                 "Use ReLU-family activations, normalisation layers such as LayerNorm or BatchNorm, and residual "
                 "connections")
    present, what = normalisation(run)
    if present is True:
        arch.support(-1.5, "")
    elif present is False:
        arch.support(1.0, "the network has no normalisation layer")
    rise, step = depth_profile(run)
    if rise is not None and rise >= 100:
        arch.support(2.0, "at the first per-layer record (step %d) the last layers' gradient norm is %s times "
                          "the first layers'" % (step, fmt(rise)))
    return arch, present, what


def _init_cause(run):
    cause = Cause("initialisation", "a poor initialisation",
                  "Use a scaled initialisation, Glorot or He, for the layers concerned")
    rise, step = depth_profile(run)
    if rise is not None and rise >= 100:
        cause.support(0.5, "")
    return cause


def _with_normalisation_note(high, present, what):
    if present is True and high.score > 0:
        high.evidence.append("normalisation layers are present (%s), so depth alone is unlikely" % what
                             if what else "normalisation layers are present, so depth alone is unlikely")


def _vanishing(run, finding):
    high, low = _lr_causes(run)
    arch, present, what = _architecture_cause(run)
    init = _init_cause(run)
    _with_normalisation_note(high, present, what)
    return [arch, high, init]


def _not_learning(run, finding):
    high, low = _lr_causes(run)
    skipped = Cause("skipped_updates", "the updates are skipped: float16 overflow steps",
                    "See overflow_storm: keep the overflowing layer or the loss in float32, or use bfloat16")
    over = run.get("overflow_steps")
    if over is not None and np.nansum(over.values) > 0:
        total = float(np.nansum(over.values))
        span = float(over.steps[-1] - over.steps[0] + 1) if len(over) > 1 else 1.0
        if total >= 0.25 * span:
            skipped.support(3.0, "%d of about %d steps overflowed and were skipped" % (total, span))
    frozen = Cause("frozen", "they are frozen or their parameter group's learning rate is 0",
                   "Check requires_grad and the optimizer's parameter groups")
    reach = Cause("no_gradient", "too little gradient reaches them",
                  "Look at what sits before them: saturation, dead ReLUs, a detached path")
    big = Cause("large_weights", "their weights are large compared with their gradients, as embedding tables or a "
                "large initialisation make them", "Scale their initialisation down or give them their own learning rate")
    layers = set(finding.layers)
    groups = run.learning_rate_groups()
    if any(len(s) and np.all(s.values[np.isfinite(s.values)] == 0) for s in groups):
        frozen.support(3.0, "a parameter group has learning rate 0")
    if layers & set(run.frozen_layers()):
        frozen.support(3.0, "the callbacks found them outside the optimizer's training")
    grads = run.layer_series("layer_grad_norm")
    if grads is not None and layers and grads.steps.size:
        vals = np.where(np.isfinite(grads.values), grads.values, np.nan)
        med = detectors.quiet_nanmedian(vals, axis=0)
        mine = [m for n, m in zip(grads.layers, med) if n in layers and np.isfinite(m)]
        others = [m for n, m in zip(grads.layers, med) if n not in layers and np.isfinite(m) and m > 0]
        if mine and others and np.median(mine) < 1e-2 * np.median(others):
            below = float(np.median(others)) / max(float(np.median(mine)), 1e-300)
            reach.support(2.0, "their gradient norm is %s below the other layers'" % (
                "%s times" % fmt(below) if below < 1e30 else "far"))
        elif mine and others:
            reach.support(-1.0, "")
            big.support(1.0, "their gradients are of the other layers' order")
    if not layers:           # every layer slow: the step size
        return [low, skipped, frozen, reach] if skipped.score > 0 else [low, frozen, reach]
    return [frozen, reach, big, low]


def _oscillation(run, finding):
    high, low = _lr_causes(run)
    small = Cause("small_batch", "the batch is small, and single-batch losses are noisy by nature",
                  "Use a larger batch or accumulate gradients; judge the trend of the averaged loss")
    data = Cause("bad_batches", "some batches are bad: outliers, wrong labels, an unshuffled order",
                 "Shuffle the dataset and look at the batches where the loss jumps")
    bs = batch_size(run)
    if bs is not None and bs <= 16:
        small.support(2.0, "the batch size is %d" % bs)
    elif bs is not None and bs >= 128:
        small.support(-1.0, "")
    return [high, small, data]


def _nonfinite(run, finding):
    high, low = _lr_causes(run)
    data = Cause("bad_data", "the inputs or labels of that step hold NaN/Inf or extreme values",
                 "Check the input data at the first bad step, and the loss for a log of 0 or a division by 0")
    fp16 = Cause("float16_range", "float16 overflows", "Use loss scaling with MonitoredLossScaleCell, or bfloat16")
    if run.get("loss_scale") is not None:
        fp16.support(1.0, "a loss scale is in use")
    grad = run.get("grad_norm")
    first = finding.steps[0]
    if grad is not None:
        before = grad.values[(grad.steps < first) & np.isfinite(grad.values)]
        if before.size >= 4:
            early = float(np.median(before[:max(2, before.size // 4)]))
            late = float(np.max(before[-3:]))
            if early > 0 and late >= 10 * early:
                high.support(1.5, "the gradient norm rose %s-fold before it" % fmt(late / early))
            elif early > 0 and late < 3 * early:
                data.support(1.5, "the gradient norm was steady before it (%s, against %s early on)" % (
                    fmt(late), fmt(early)))
    return [high, data, fp16]


def _explosion(run, finding):
    high, low = _lr_causes(run)
    data = Cause("bad_batches", "a few bad batches: outliers, corrupted samples",
                 "Check the batches at those steps; gradient clipping makes training robust to them")
    grad = run.get("grad_norm")
    if grad is not None and finding.message.startswith("Gradient norm spiked"):
        after = grad.values[(grad.steps > finding.steps[1]) & np.isfinite(grad.values)][:5]
        before = grad.values[(grad.steps < finding.steps[0]) & np.isfinite(grad.values)][-5:]
        if after.size and before.size and np.median(after) < 3 * np.median(before):
            data.support(1.5, "the gradient norm came back to its level (%s) within %d points after the spike" % (
                fmt(float(np.median(after))), after.size))
            high.support(-0.5, "")
    if finding.layers:
        data.support(0.5, "the spike started in layer %s" % ", ".join(finding.layers[:3]))
    return [high, data]


CAUSES_FOR = {"vanishing_gradients": _vanishing, "layer_not_learning": _not_learning,
              "loss_oscillation": _oscillation, "nonfinite": _nonfinite, "grad_explosion": _explosion}


def weigh(run, finding):
    """The causes of ``finding``, most likely first (stable for equal scores: the rule's usual order)."""
    make = CAUSES_FOR.get(finding.rule)
    if make is None:
        return []
    causes = make(run, finding)
    return sorted(causes, key=lambda c: -c.score)


def advice_text(causes):
    """"Most likely: ... Other possible causes: ..." from weighed causes ("" when there are none)."""
    if not causes:
        return ""
    top, rest = causes[0], causes[1:]
    if top.score > 0 and top.evidence:
        text = "Most likely %s: %s. %s." % (top.title, "; ".join(top.evidence), top.advice)
    else:
        text = "Possible causes: %s (%s)." % (top.title, top.advice[0].lower() + top.advice[1:])
    if rest:
        text += (" Other possible causes: " if top.score > 0 and top.evidence else " Also: ") + "; ".join(
            "%s (%s)" % (c.title, c.advice[0].lower() + c.advice[1:]) for c in rest) + "."
    return text


def explain(run, findings):
    """Weighs the causes of every finding that has several (nested follow-ons included): sets its ``advice`` to
    the ranked text and ``causes`` to the JSON list. Returns ``findings``."""
    for f in findings:
        for g in [f] + list(f.follow_ons):
            if g.rule not in CAUSES_FOR or not g.advice:
                continue
            if g.rule == "nonfinite" and (g.level != "error" or g.tag in _EVAL_TAGS):
                continue
            try:
                causes = weigh(run, g)
            except Exception:       # a cause we cannot weigh keeps the rule's own advice
                continue
            if causes:
                likely = causes[0].score > 0 and bool(causes[0].evidence)
                g.advice = advice_text(causes)
                g.causes = [c.to_json(likely and i == 0) for i, c in enumerate(causes)]
    return findings

