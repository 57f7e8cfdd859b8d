"""What the rules share: a series' points as a rule judges them, interval envelopes, and message formatting."""

import math
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .. import detectors
from ... import metadata


# -- the points a rule judges ------------------------------------------------------------------------------------
@dataclass
class Points:
    """Values of one series a rule judges: ``x[i]`` is the value at step ``series.steps[idx[i]]``."""

    series: object
    idx: np.ndarray
    x: np.ndarray
    from_interval: Optional[np.ndarray] = None    # per point: the value is the interval max, above the recorded one

    @property
    def size(self):
        return int(self.x.size)

    @property
    def tag(self):
        return self.series.tag

    def step(self, i):
        return int(self.series.steps[self.idx[i]])

    def span(self, i, j):
        return self.step(i), self.step(j)

    def interval_span(self, i):
        """``(first, last)`` steps the value of point ``i`` covers: the point's own step, or, when it is an interval
        max, every step since the previous recorded point of the series."""
        step = self.step(i)
        if self.from_interval is None or not self.from_interval[i]:
            return step, step
        k = int(self.idx[i])
        prev = int(self.series.steps[k - 1]) if k > 0 else step
        return min(prev + 1, step), step

    def warmup(self, wanted):
        return detectors.warmup_points(self.size, wanted)


def finite(series, min_points=0):
    """The finite points of ``series``; ``None`` when there is no series or fewer than ``min_points``."""
    if series is None:
        return None
    idx, x = detectors.finite_points(series.values)
    return Points(series, idx, x) if x.size >= min_points else None


def envelope(run, series, min_points=0):
    """Per point the largest value seen since the previous one (the recorded value or the interval max), finite
    points only; ``None`` when there is no series or fewer than ``min_points``."""
    if series is None:
        return None
    iv = aligned_interval(run, series)
    upper, from_interval = detectors.upper_envelope(series.values, None if iv is None else iv["max"])
    idx = np.nonzero(np.isfinite(upper))[0]
    return Points(series, idx, upper[idx], from_interval[idx]) if idx.size >= min_points else None


def aligned_interval(run, series):
    """Interval rows aligned to ``series`` points: dict of arrays (NaN / 0 where a point has no interval), or
    ``None`` when the series has no interval statistics."""
    iv = run.interval_of(series)
    if iv is None or not len(iv):
        return None
    n = len(series)
    out = {"min": np.full(n, np.nan), "mean": np.full(n, np.nan), "max": np.full(n, np.nan), "count": np.zeros(n),
           "nonfinite": np.zeros(n)}
    k, hit = detectors.match_steps(iv.steps, series.steps)
    for name in out:
        out[name][hit] = getattr(iv, name)[k[hit]]
    return out


def clean_loss(run):
    """The loss series if it is entirely finite, else ``None`` (once NaN/Inf appear, ``nonfinite`` speaks and
    trend statistics over exploding values mean nothing)."""
    series = run.get("loss")
    if series is None or not np.all(np.isfinite(series.values)):
        return None
    iv = aligned_interval(run, series)
    if iv is not None and np.any(iv["nonfinite"] > 0):
        return None
    return series


def loss_points(run, min_points):
    """The finite points of a clean loss (see :func:`clean_loss`), at least ``min_points`` of them, or ``None``."""
    return finite(clean_loss(run), min_points)


def diverged_at(run):
    """The step from which the run stayed non-finite to its end (loss, gradient norm or weight norm; the first bad
    step of that last stretch, interval statistics included), or ``None`` when it never did: after it trends and
    ratios mean nothing. A NaN the run recovered from (an update skipped by live health, a loss-scale overflow)
    does not count."""
    first = None
    for quantity in ("loss", "grad_norm", "weight_norm"):
        series = run.get(quantity)
        if series is None or (quantity == "grad_norm" and run.get("loss_scale") is not None):
            continue     # with a loss scale, a non-finite gradient norm is an overflow step that was skipped
        bad = ~np.isfinite(series.values)
        if not bad.size or not bad[-1]:
            continue
        tail = int(np.nonzero(~bad)[0][-1]) + 1 if (~bad).any() else 0     # first point of the non-finite tail
        tail_step = int(series.steps[tail])
        iv = aligned_interval(run, series)
        if iv is None:
            ranges, _ = detectors.nonfinite_ranges(series.steps, series.values)
        else:
            ranges, _ = detectors.nonfinite_ranges(series.steps, series.values, iv["nonfinite"], iv["count"])
        start = min([lo for lo, hi in ranges if hi >= tail_step] or [tail_step])
        if first is None or start < first:
            first = start
    return first


def layers_at(run, step, spike_factor=10.0, min_history=3):
    """Names of the layers whose gradient went bad at the first per-layer record at or after ``step`` (the flight
    recorder's dump first, else the debug tier's per-layer gradient norms): the non-finite ones when some (not
    all) are, else those at least ``spike_factor`` times the median of their own earlier values (a median-relative
    outlier test as in Hampel 1974), largest first; ``()`` when nothing tells."""
    for series in (run.layers.get(metadata.FLIGHT_GRAD_NORM_LAYERS), run.layer_series("layer_grad_norm")):
        if series is None or not series.steps.size or not series.layers:
            continue
        rows = np.nonzero(series.steps >= step)[0]
        if not rows.size:
            continue
        i = int(rows[0])
        row = series.values[i]
        bad = ~np.isfinite(row)
        if bad.any() and not bad.all():
            return tuple(n for n, b in zip(series.layers, bad) if b)
        if bad.any():
            continue
        before = np.where(np.isfinite(series.values[:i]), series.values[:i], np.nan)
        if i < min_history or np.count_nonzero(np.isfinite(before), axis=0).min() < min_history:
            continue
        ratio = row / np.maximum(detectors.quiet_nanmedian(before, axis=0), 1e-30)
        hot = [(float(r), n) for n, r in zip(series.layers, ratio) if r >= spike_factor]
        if hot:
            return tuple(n for _, n in sorted(hot, reverse=True)[:3])
    return ()


# Event rule names of the callbacks -> the offline rule that finds the same problem.
SAME_AS = {"nonfinite": "nonfinite", "nan": "nonfinite", "non_finite": "nonfinite", "nonfinite_loss": "nonfinite",
           "nonfinite_grad": "nonfinite", "nonfinite_weights": "nonfinite",
           "grad_spike": "grad_explosion", "grad_explosion": "grad_explosion", "gradient_spike": "grad_explosion",
           "loss_spike": "loss_spike", "stall": "run_stalled", "stalled": "run_stalled",
           "run_stalled": "run_stalled"}


def rule_of(event_rule):
    """The offline rule id for an event's rule name (the name itself when no offline rule judges it)."""
    return SAME_AS.get(str(event_rule).lower(), str(event_rule))


def events_of(run):
    """The live health events the callbacks recorded in the run (decoded dicts, by detection step)."""
    return list(getattr(run, "health_events", None) or [])


def run_end_of(run):
    """The run's newest end marker (decoded dict: status, step, wall_time, reason) or ``None``."""
    end = getattr(run, "run_end", None)
    return end if isinstance(end, dict) else None


def steps_of(series, i, j=None):
    """``(step at i, step at j)`` of a series (``j`` defaults to ``i``)."""
    j = i if j is None else j
    return int(series.steps[i]), int(series.steps[j])


def ignore_pattern(cfg):
    """The compiled ``ignore`` threshold of a per-layer rule, or ``None`` when it is empty."""
    return re.compile(cfg["ignore"]) if cfg["ignore"] else None


def is_ignored(pattern, name):
    return bool(pattern and pattern.search(name))


# -- message formatting --------------------------------------------------------------------------------------------
def fmt(x):
    """A number for a message: 4 significant digits, scientific when very large or small, NaN / Inf spelled."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "NaN"
    if isinstance(x, float) and math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    ax = abs(x)
    if ax != 0 and (ax >= 1e4 or ax < 1e-3):
        return "%.3g" % x
    return "%.4g" % x


def secs(seconds):
    """A duration for a message: seconds, minutes, hours or days."""
    if seconds < 10:
        return "%.1f s" % seconds
    if seconds < 120:
        return "%d s" % round(seconds)
    if seconds < 7200:
        return "%d min" % round(seconds / 60)
    if seconds < 2 * 86400:
        return "%.1f h" % (seconds / 3600)
    return "%.1f days" % (seconds / 86400)


def nbytes(n):
    """A size for a message, in binary units."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def layer_list(names, limit=4):
    """``"a, b, c, d and 3 more"``."""
    shown = ", ".join(names[:limit])
    return shown + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


def layer_values(pairs, limit=4):
    """``"a (1e-05), b (2e-05) and 3 more"`` from ``[(name, value)]``."""
    shown = ", ".join("%s (%s)" % (n, fmt(m)) for n, m in pairs[:limit])
    return shown + (" and %d more" % (len(pairs) - limit) if len(pairs) > limit else "")
