"""The gradient norm: ``grad_explosion`` (spikes and growth) and ``vanishing_gradients``."""

import numpy as np

from .. import detectors
from .base import ERROR, INFO, WARN, Finding, rule
from .common import diverged_at, envelope, finite, fmt, layer_list, layers_at

EPS = 1e-12


@rule("grad_explosion", ERROR,
      "Megatron-LM's spike factor (check_for_spiky_loss: 10x the reference; the callbacks' live check uses the same "
      "factor on the gradient norm): a point (or an interval max between two points) at least 10x the median of "
      "the points before it; ZClip (Kumar et al. 2025, arXiv:2504.02507) judges at 2.5 standard deviations, but to "
      "clip, where a false positive costs nothing: as an alarm, 2-3x rises of healthy small-batch runs set it off. "
      "A rise that stays (a new level, not a spike) is an explosion only while the loss does not fall: a norm "
      "growing from its initial value while the model learns is not one (issue 32's corpus: 0 alarms on its "
      "healthy runs, RULES.md)",
      "Gradient norm spikes 10x above the median of the points before it (a spike that comes back down, or a new "
      "level while the loss stops falling), or grows 10x over the run while the loss does not fall.",
      spike_factor=10.0, window=20, warmup=5, settle_points=5, growth_ratio=10.0, error_ratio=1000.0,
      loss_fall=0.9, min_points=6)
def grad_explosion(run, cfg):
    pts = envelope(run, run.get("grad_norm"), cfg["min_points"])
    if pts is None:
        return []
    w = detectors.warmup_points(pts.size, cfg["warmup"])
    findings = []
    spikes = _spikes(run, pts, w, cfg)
    if spikes is not None:
        findings.append(spikes)
    growth = _growth(run, pts, cfg)
    if growth is not None and (spikes is None or growth.steps[0] < spikes.steps[0] or
                               growth.steps[0] > spikes.steps[1]):
        findings.append(growth)
    return findings


def _loss_fell(run, first_step, last_step, fall):
    """Whether the loss fell from before ``first_step`` to the end of ``[first_step, last_step]`` by the factor
    ``fall`` (median of the 3 points at or before against the last 3 up to ``last_step``); False without a loss
    (nothing clears the gradient norm then)."""
    loss = run.get("loss")
    if loss is None or not len(loss):
        return False
    values = loss.values
    before = values[loss.steps <= first_step]
    after = values[(loss.steps > first_step) & (loss.steps <= last_step)]
    if not after.size or not np.isfinite(after[-3:]).all():
        return False               # the loss went NaN/Inf
    if not before.size:
        return True
    start = float(np.median(before[-3:][np.isfinite(before[-3:])])) if np.isfinite(before[-3:]).any() else None
    return start is None or float(np.median(after[-3:])) < fall * start


def _growth(run, pts, cfg):
    """Sustained growth: the late level (last fifth) against the first fifth, while the loss did not fall over the
    stretch where it grew (a norm growing from its initial value while the model learns is not an explosion)."""
    x = pts.x
    n = x.size
    q = max(detectors.MIN_WARMUP, n // 5)
    if n < 2 * q:
        return None
    lo = 0
    baseline = float(np.median(x[:q]))
    late = float(np.median(x[-q:]))
    growth = late / max(baseline, EPS)
    if growth < cfg["growth_ratio"]:
        return None
    below = np.nonzero(x[:-1] <= 2.0 * baseline)[0]
    span = pts.span(int(below[-1]) + 1 if below.size else 0, -1)
    if _loss_fell(run, span[0], span[1], cfg["loss_fall"]):
        return None
    return Finding(
        "grad_explosion", ERROR if growth >= cfg["error_ratio"] else WARN,
        "Gradient norm grew %s-fold, from %s in the first %d points to %s at the end (steps %d-%d), while the loss "
        "did not fall: gradients are exploding." % (fmt(growth), fmt(baseline), q, fmt(late), span[0], span[1]),
        pts.tag, span, advice="Lower the learning rate and add gradient clipping "
        "(MonitoredTrainCell(clip_grad_norm=1.0)).")


def _spikes(run, pts, w, cfg):
    """Points at least ``spike_factor`` times the median of the ``window`` points before them (after ``w`` warm-up
    points), grouped into episodes; an episode counts when it comes back down within ``settle_points`` (a spike)
    or when the loss did not fall from before it to the end (a new level while training worsens)."""
    x = pts.x
    ref = detectors.trailing_median(x, int(cfg["window"]))
    factor = float(cfg["spike_factor"])
    idx = np.arange(w, x.size)
    hot = idx[(ref[idx] > 0) & (x[idx] >= factor * ref[idx])]
    if not hot.size:
        return None
    episodes, counted = detectors.episodes(hot.tolist(), 1), []
    for ep in episodes:
        base = float(ref[ep[0]])
        after = x[ep[-1] + 1:ep[-1] + 1 + int(cfg["settle_points"])]
        settled = bool(after.size) and bool(np.any(after < factor * base))
        if settled or not _loss_fell(run, pts.step(ep[0]), pts.step(-1), cfg["loss_fall"]):
            counted.append(ep)
    if not counted:
        return None
    peak = max((i for ep in counted for i in ep), key=lambda i: x[i] / ref[i])
    ratio = float(x[peak] / ref[peak])
    first = pts.interval_span(counted[0][0])[0]
    last = pts.step(counted[-1][-1])
    steps = (first, last)
    layers = layers_at(run, steps[0])
    lo, hi = pts.interval_span(peak)
    where = ("at step %d" % hi) if lo == hi else (
        "between steps %d and %d (the interval max: a step between two recorded points)" % (lo, hi))
    count = "once" if len(counted) == 1 else "%d times" % len(counted)
    span = ("" if len(counted) == 1 else " between steps %d and %d" % steps)
    return Finding(
        "grad_explosion", ERROR if ratio >= cfg["error_ratio"] else WARN,
        "Gradient norm spiked %s%s: the largest, %s %s, is %s times the median of the %d points before it "
        "(Megatron-LM's spike factor is %s)." % (
            count, span, fmt(float(x[peak])), where, fmt(ratio), min(int(cfg["window"]), peak), fmt(factor))
        + (" The first spike is in layer %s." % layer_list(list(layers)) if layers else ""),
        pts.tag, steps, layers=layers, advice="Add gradient clipping (MonitoredTrainCell(clip_grad_norm=...)) or "
        "lower the learning rate; check the batches at those steps.")


def _loss_converged(run, ratio):
    pts = finite(run.get("loss"), 4)
    if pts is None:
        return False
    early, late = detectors.early_late(pts.x, max(2, pts.size // 5))
    return early > 0 and late < ratio * early


@rule("vanishing_gradients", WARN,
      "the vanishing gradient problem (Bengio, Simard and Frasconi 1994, 'Learning long-term dependencies with "
      "gradient descent is difficult'; Glorot and Bengio 2010 for the depth-wise form): a gradient norm tending to "
      "zero over time, or layers whose gradient norm is below 1e-4 of the layers that learn from the start; the "
      "collapse (1e-3 of its early level) and depth (1e-4) thresholds are our heuristics",
      "Global or per-layer gradient norm collapsing towards zero while the loss has not converged, or layers "
      "whose gradients vanish with depth from the first step (named, with the step it starts).",
      collapse_ratio=1e-3, abs_floor=1e-8, layer_rel_floor=1e-4, loss_converged_ratio=1e-2, warmup=25,
      min_points=6)
def vanishing_gradients(run, cfg):
    converged = _loss_converged(run, cfg["loss_converged_ratio"])
    findings = []
    found = _global_vanishing(run, cfg, converged)
    if found is not None:
        findings.append(found)
    if not converged:
        found = _layers_vanishing(run, cfg)
        if found is not None:
            findings.append(found)
    return findings


def _global_vanishing(run, cfg, converged):
    pts = finite(run.get("grad_norm"), cfg["min_points"])
    if pts is None:
        return None
    w = pts.warmup(cfg["warmup"])
    early, late = detectors.early_late(pts.x, w)
    if not (late < cfg["abs_floor"] or (early > 0 and late / early < cfg["collapse_ratio"])):
        return None
    steps = pts.span(-w, -1)
    if converged:
        return Finding("vanishing_gradients", INFO, "Gradient norm fell to %s (from %s) but the loss converged too: "
                       "expected near a minimum." % (fmt(late), fmt(early)), pts.tag, steps)
    return Finding("vanishing_gradients", WARN,
                   "Gradient norm collapsed to %s (from %s early in the run) while the loss has not converged: "
                   "gradients are vanishing." % (fmt(late), fmt(early)), pts.tag, steps,
                   advice="Check activations (saturating sigmoid/tanh), initialisation and normalisation layers; a "
                   "residual path or a higher learning rate may help.")


def reference_norms(values, rel_floor):
    """Per row of ``values`` (steps x layers, NaN for missing), the typical gradient norm of the layers that did
    not vanish: the median of the layers within ``rel_floor`` of the row's largest (so that a vanished layer is
    never the reference, even when most layers vanished)."""
    vals = np.where(np.isfinite(values), values, np.nan)
    top = np.nanmax(np.where(np.isnan(vals), -np.inf, vals), axis=1, keepdims=True) if vals.size else vals
    healthy = np.where(vals >= rel_floor * top, vals, np.nan)
    return detectors.quiet_nanmedian(healthy, axis=1)


def _layers_vanishing(run, cfg):
    layers = run.layer_series("layer_grad_norm")
    if layers is None or layers.steps.size < 1 or len(layers.layers) < 2:
        return None
    horizon = diverged_at(run)
    keep = np.ones(layers.steps.size, dtype=bool) if horizon is None else layers.steps < horizon
    steps, vals = layers.steps[keep], np.where(np.isfinite(layers.values[keep]), layers.values[keep], np.nan)
    n = steps.size
    if n < 1:
        return None
    w = detectors.warmup_points(n, cfg["warmup"]) if n >= cfg["min_points"] else max(1, n // 2)
    early = detectors.quiet_nanmedian(vals[:w], axis=0)
    late = detectors.quiet_nanmedian(vals[-w:], axis=0)
    ref_row = reference_norms(vals, cfg["layer_rel_floor"])
    reference = float(detectors.quiet_nanmedian(ref_row[-w:]))
    bad = []
    for j, name in enumerate(layers.layers):
        column = vals[:, j][np.isfinite(vals[:, j])]
        if not np.isfinite(late[j]) or (column.size and np.all(column == 0.0)):
            continue        # exactly 0 throughout: cut off from the loss, not vanishing (layer_not_learning)
        collapsed = n >= cfg["min_points"] and early[j] > 0 and late[j] / early[j] < cfg["collapse_ratio"]
        tiny = late[j] < cfg["abs_floor"] or (reference > 0 and late[j] < cfg["layer_rel_floor"] * reference)
        if collapsed or tiny:
            bad.append(j)
    if not bad or len(bad) >= len(layers.layers):
        return None
    names = [layers.layers[j] for j in bad]
    # Since when: the first recorded step where a vanished layer was already below the floor.
    below = np.zeros(n, dtype=bool)
    for j in bad:
        with np.errstate(invalid="ignore"):
            below |= (vals[:, j] < cfg["layer_rel_floor"] * ref_row) | (vals[:, j] < cfg["abs_floor"])
    first = int(np.argmax(below)) if below.any() else n - w
    worst = float(np.nanmin(late[bad]))
    if first == 0 and all(not (early[j] > 0 and late[j] / early[j] < cfg["collapse_ratio"]) for j in bad):
        how = ("no gradient at all (exactly 0) while the layers that learn get about %s" % fmt(reference)
               if worst == 0 else "gradient norms down to %s while the layers that learn get about %s (%s times "
               "less)" % (fmt(worst), fmt(reference), fmt(reference / worst)))
        return Finding("vanishing_gradients", WARN,
                       "Gradients vanish with depth from the first recorded step (%d): %d layer(s) (%s) get %s, so "
                       "they barely learn." % (int(steps[0]), len(bad), layer_list(names), how), layers.tag,
                       (int(steps[0]), int(steps[-1])), layers=tuple(names),
                       advice="Typical of deep stacks of saturating activations (sigmoid / tanh) or a poor "
                       "initialisation: use ReLU-family activations, normalisation layers, residual connections or a "
                       "scaled initialisation (Glorot / He).")
    return Finding("vanishing_gradients", WARN,
                   "Gradients of %d layer(s) vanished (%s) since step %d while the layers that learn have gradient "
                   "norms of about %s: those layers stop learning." % (len(bad), layer_list(names),
                                                                       int(steps[first]), fmt(reference)),
                   layers.tag, (int(steps[first]), int(steps[-1])), layers=tuple(names),
                   advice="Look at what sits before them (saturation, dead ReLUs, a detached or frozen path).")
