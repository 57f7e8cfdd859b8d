"""The gradient norm: ``grad_explosion`` (spikes and growth) and ``vanishing_gradients``."""

import numpy as np

from .. import detectors
from .base import ERROR, INFO, WARN, Finding, rule
from .common import diverged_at, envelope, finite, fmt, layer_list, layers_at

EPS = 1e-12


@rule("grad_explosion", ERROR,
      "ZClip (Kumar et al. 2025, arXiv:2504.02507): EMA mean/variance of the gradient norm, alpha 0.97, z-score "
      "threshold 2.5, 25 warm-up steps, anomalies enter the EMA clipped; Megatron-LM's 10x spike factor for the "
      "ratio to the running max",
      "Gradient norm spikes against its running baseline (EMA z-score with warm-up and persistence, ratio to the "
      "running max) or grows steadily.",
      alpha=0.97, z_thresh=2.5, warmup=25, min_ratio=2.0, persistence=2, persistence_window=5, max_ratio=10.0,
      growth_ratio=10.0, error_ratio=1000.0, min_points=6)
def grad_explosion(run, cfg):
    pts = envelope(run, run.get("grad_norm"), cfg["min_points"])
    if pts is None:
        return []
    w = pts.warmup(cfg["warmup"])
    findings = []
    growth = _growth(pts, w, cfg)
    if growth is not None:
        findings.append(growth)
    spikes = _spikes(run, pts, w, cfg, before=growth.steps[0] if growth is not None else None)
    if spikes is not None:
        findings.append(spikes)
    return findings


def _growth(pts, w, cfg):
    """Sustained growth: the late level against the warm-up level."""
    x = pts.x
    baseline = float(np.median(x[:w]))
    late = float(np.median(x[-w:]))
    growth = late / max(baseline, EPS)
    if growth < cfg["growth_ratio"]:
        return None
    below = np.nonzero(x[:-1] <= 2.0 * baseline)[0]
    span = pts.span(int(below[-1]) + 1 if below.size else 0, -1)
    return Finding(
        "grad_explosion", ERROR if growth >= cfg["error_ratio"] else WARN,
        "Gradient norm grew %s-fold, from %s in the first %d points to %s at the end (steps %d-%d): gradients "
        "are exploding. Lower the learning rate and add gradient clipping "
        "(MonitoredTrainCell(clip_grad_norm=1.0))." % (fmt(growth), fmt(baseline), w, fmt(late), span[0], span[1]),
        pts.tag, span)


def _spikes(run, pts, w, cfg, before=None):
    """Spikes: EMA z-score (ZClip) with persistence, or a single point far above the running max; only those that
    start before step ``before`` (where sustained growth begins) when given."""
    scan = detectors.ema_zscore_scan(pts.x, w, float(cfg["alpha"]), cfg["z_thresh"], cfg["min_ratio"],
                                     cfg["max_ratio"])
    hard = set(scan.hard)
    alarms = [e for e in detectors.episodes(scan.anomalies, cfg["persistence_window"])
              if len(e) >= cfg["persistence"] or any(i in hard for i in e)]
    if before is not None:
        alarms = [e for e in alarms if pts.step(e[0]) < before]
    if not alarms:
        return None
    steps = pts.span(alarms[0][0], alarms[-1][-1])
    layers = layers_at(run, steps[0])
    peak = scan.peak
    between = " (a step between two recorded points; seen in the interval max)" if pts.from_interval[peak] else ""
    return Finding(
        "grad_explosion", ERROR if scan.peak_ratio >= cfg["error_ratio"] else WARN,
        "Gradient norm spiked %d time(s) between steps %d and %d; the largest, %s at step %d%s, is %s times "
        "its running average. Add gradient clipping (MonitoredTrainCell(clip_grad_norm=...)) or lower the "
        "learning rate; check the batches at those steps." % (
            len(alarms), steps[0], steps[1], fmt(float(pts.x[peak])), pts.step(peak), between,
            fmt(scan.peak_ratio)) + (" The first spike is in layer %s." % layer_list(list(layers)) if layers else ""),
        pts.tag, steps, layers=layers)


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
                   "gradients are vanishing. Check activations (saturating sigmoid/tanh), initialisation and "
                   "normalisation layers; a residual path or a higher learning rate may help."
                   % (fmt(late), fmt(early)), pts.tag, steps)


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
        if not np.isfinite(late[j]):
            continue
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
        return Finding("vanishing_gradients", WARN,
                       "Gradients vanish with depth from the first recorded step (%d): %d layer(s) (%s) get gradient "
                       "norms down to %s while the layers that learn get about %s (%s times less), so they barely "
                       "learn. Typical of deep stacks of saturating activations (sigmoid / tanh) or a poor "
                       "initialisation: use ReLU-family activations, normalisation layers, residual connections or "
                       "a scaled initialisation (Glorot / He)." % (
                           int(steps[0]), len(bad), layer_list(names), fmt(worst), fmt(reference),
                           fmt(reference / max(worst, 1e-300))), layers.tag, (int(steps[0]), int(steps[-1])),
                       layers=tuple(names))
    return Finding("vanishing_gradients", WARN,
                   "Gradients of %d layer(s) vanished (%s) since step %d while the layers that learn have gradient "
                   "norms of about %s: those layers stop learning. Look at what sits before them (saturation, dead "
                   "ReLUs, a detached or frozen path)." % (len(bad), layer_list(names), int(steps[first]),
                                                            fmt(reference)),
                   layers.tag, (int(steps[first]), int(steps[-1])), layers=tuple(names))
