"""Curvature against the step size: ``sharpness_above_stability``."""

import numpy as np

from .base import INFO, Finding, rule
from .common import finite, fmt


def _value_at(series, step):
    if series is None:
        return None
    hit = np.nonzero(series.steps == step)[0]
    return float(series.values[hit[0]]) if hit.size else None


@rule("sharpness_above_stability", INFO,
      "Cohen et al. 2021, 'Gradient Descent on Neural Networks Typically Occurs at the Edge of Stability': gradient "
      "descent is stable on a quadratic only while the Hessian's top eigenvalue is below 2/lr; Cohen et al. 2022, "
      "'Adaptive Gradient Methods at the Edge of Stability': Adam's preconditioned sharpness against "
      "(2 + 2 beta1) / ((1 - beta1) lr), 38/lr at beta1 = 0.9",
      "Watch: sharpness (the Hessian's top eigenvalue on the probe batch, preconditioned for Adam) reached the "
      "optimizer's stability line: the usual precursor of loss spikes and oscillation (a precursor: info, with its "
      "lead time measured in RULES.md).",
      ratio=1.0, min_points=1)
def sharpness_above_stability(run, cfg):
    pts = finite(run.get("sharpness_ratio"), 1)
    if pts is None:
        return []
    above = [i for i in range(pts.size) if float(pts.x[i]) >= cfg["ratio"]]
    if len(above) < cfg["min_points"]:
        return []
    first, worst = above[0], max(above, key=lambda i: float(pts.x[i]))
    sharp = run.get("sharpness_adam") or run.get("sharpness")
    line = run.get("sharpness_threshold")
    at = int(pts.step(worst))
    s_at, l_at = _value_at(sharp, at), _value_at(line, at)
    detail = "" if s_at is None or l_at is None else " (sharpness %s against the line %s)" % (fmt(s_at), fmt(l_at))
    return [Finding("sharpness_above_stability", INFO,
                    "Watch: sharpness reached %.2fx the optimizer's stability line at step %d%s, first above it at "
                    "step %d (%d of %d measurements): at this learning rate the step overshoots along the sharpest "
                    "direction; loss spikes or oscillation usually follow." % (
                        float(pts.x[worst]), at, detail, int(pts.step(first)), len(above), pts.size),
                    pts.tag, (int(pts.step(first)), at), watch=True,
                    advice="Lower the learning rate or lengthen warm-up if they do.")]
