"""Mixed precision with dynamic loss scaling: ``overflow_storm`` (updates skipped step after step) and
``loss_scale_collapse`` (the scale stuck at its floor).

Dynamic loss scaling (Micikevicius et al. 2018, "Mixed Precision Training") skips the update of a step whose
gradients overflowed and halves the scale; a few skipped steps at the start (the scale searching down from its
initial value) and now and then (after it grew) are its normal work. From any initial scale up to 2^32 the search
takes at most 32 halvings, so a longer stretch of skipped steps is not the search: training has stopped learning.
A scale that sits at its floor (1 for MindSpore's ``DynamicLossScaleUpdateCell``) cannot fall further: DeepSpeed's
loss scaler stops the run there ("Current loss scale already at minimum - cannot decrease scale anymore").

Read from ``core/loss_scale`` (the scale at each point) and ``core/overflow_steps`` (steps skipped in the interval
up to each point), which ``MonitoredLossScaleCell`` records; mindformers' ``loss-scale`` is read too.
"""

import numpy as np

from .. import detectors
from .base import ERROR, WARN, Finding, rule
from .common import aligned_interval, finite, fmt


def steps_per_point(run, series):
    """Per point of ``series``: how many training steps its interval covers (the loss interval's count where
    recorded, else the step difference to the previous point; the first point covers its own step number)."""
    steps = series.steps.astype(np.float64)
    covered = np.diff(np.concatenate([[0.0], steps]))
    loss = run.get("loss")
    iv = aligned_interval(run, loss) if loss is not None else None
    if iv is not None:
        k, hit = detectors.match_steps(loss.steps, series.steps)
        count = iv["count"][k] + iv["nonfinite"][k]
        covered = np.where(hit & (count >= 1), count, covered)
    return np.maximum(covered, 1.0)


def skipped_stretches(skipped, covered, share):
    """``[(lo, hi, steps, skipped)]``: stretches of consecutive points whose share of skipped steps is at least
    ``share`` (``hi`` exclusive), with the steps they cover and how many of them were skipped."""
    ratio = np.where(covered > 0, skipped / covered, 0.0)
    out = []
    for lo, hi in detectors.mask_ranges(ratio >= share):
        out.append((lo, hi, float(np.sum(covered[lo:hi])), float(np.sum(skipped[lo:hi]))))
    return out


@rule("overflow_storm", ERROR,
      "Micikevicius et al. 2018, 'Mixed Precision Training' (dynamic loss scaling skips a step that overflowed and "
      "halves the scale: occasional skips are its normal work); the scale's search from any initial value up to "
      "2^32 takes at most 32 halvings, so more than 32 consecutive skipped steps (half or more of the steps of each "
      "interval) is not the search: no update is applied (our bound)",
      "Float16 overflow storm: for more than 32 steps in a row, half or more of the steps overflowed and their "
      "updates were skipped by dynamic loss scaling (training learns nothing meanwhile).",
      share=0.5, min_steps=32)
def overflow_storm(run, cfg):
    over = finite(run.get("overflow_steps"), 1)
    if over is None:
        return []
    covered = steps_per_point(run, over.series)[over.idx]
    stretches = [s for s in skipped_stretches(over.x, covered, cfg["share"]) if s[2] > cfg["min_steps"]]
    if not stretches:
        return []
    lo, hi, steps_in, skipped = max(stretches, key=lambda s: s[2])
    first = max(1, over.step(lo) - int(covered[lo]) + 1)
    last = over.step(hi - 1)
    ongoing = hi == over.size
    scale = finite(run.get("loss_scale"), 1)
    scale_note = ""
    if scale is not None:
        at = scale.x[scale.series.steps[scale.idx] <= last]
        if at.size:
            scale_note = " The loss scale is %s there%s." % (
                fmt(float(at[-1])), " (its floor: it cannot fall further)" if float(at[-1]) <= 1.0 else "")
    return [Finding(
        "overflow_storm", ERROR if ongoing else WARN,
        "Float16 overflow storm: %d of the %d steps from step %d to %d overflowed and their updates were skipped%s."
        "%s Dynamic loss scaling skips a step now and then; this many in a row means the gradients (or the "
        "activations) overflow float16 whatever the scale: look for the layer whose values grow (activations, "
        "logits, a division or exp), keep it or the loss in float32, lower the learning rate, or use bfloat16." % (
            int(skipped), int(steps_in), first, last, " and it goes on to the last recorded step" if ongoing else "",
            scale_note), over.tag, (first, last))]


@rule("loss_scale_collapse", WARN,
      "DeepSpeed's dynamic loss scaler stops a run whose scale is at its minimum and still overflows ('Current loss "
      "scale already at minimum - cannot decrease scale anymore'); MindSpore's DynamicLossScaleUpdateCell never goes "
      "below 1. A scale at its floor for 3 recorded points or more: overflows it can no longer absorb, or float16 "
      "gradients so small (scale 1: no headroom) that they underflow to zero",
      "The loss scale fell to its floor (1) and stayed there: float16 overflows it can no longer absorb, or small "
      "gradients underflowing.",
      floor=1.0, min_points=3)
def loss_scale_collapse(run, cfg):
    scale = finite(run.get("loss_scale"), cfg["min_points"])
    if scale is None:
        return []
    at_floor = scale.x <= cfg["floor"]
    lo, hi = detectors.longest_range(at_floor)
    if hi - lo < cfg["min_points"]:
        return []
    first, last = scale.step(lo), scale.step(hi - 1)
    peak = float(np.max(scale.x[:lo + 1]))
    over = finite(run.get("overflow_steps"), 1)
    still = None
    if over is not None:
        in_range = (over.series.steps[over.idx] >= first) & (over.series.steps[over.idx] <= last)
        still = int(np.sum(over.x[in_range]))
    ongoing = hi == scale.size
    why = ("with %d overflow step(s) still skipped meanwhile: it can no longer absorb them" % still
           if still else "with no overflow meanwhile: float16 gradients get no headroom and small ones underflow "
           "to zero" if still == 0 else "")
    return [Finding(
        "loss_scale_collapse", ERROR if ongoing and still else WARN,
        "The loss scale fell from %s to its floor %s and stayed there from step %d to %d (%d recorded points%s)%s. "
        "Keep the loss and the layers whose values grow in float32, lower the learning rate, or use bfloat16." % (
            fmt(peak), fmt(float(cfg["floor"])), first, last, hi - lo, ", to the last one" if ongoing else "",
            (", " + why) if why else ""), scale.tag, (first, last))]
