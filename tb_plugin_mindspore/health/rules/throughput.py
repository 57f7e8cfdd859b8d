"""Speed: ``input_bound`` (waiting for data) and ``step_time_regression`` (steps getting slower)."""

import numpy as np

from .. import detectors
from .base import INFO, WARN, Finding, rule
from .cluster import cluster_of
from .common import Points, finite, fmt


@rule("input_bound", WARN,
      "TensorFlow profiler input-pipeline analysis: input-bound 'moderately' above 5% and 'highly' above 20% of "
      "step time spent waiting for input; a median wait below min_wait_ms per step is left alone (our heuristic: "
      "handing over one batch from an in-memory NumpySlicesDataset took 0.1-8 ms a step, median 1.2 ms, on a "
      "loaded 2-core machine, and no pipeline setting removes it)",
      "Share of step time spent waiting for data (when the wait is more than a batch hand-over).",
      warn_share=0.20, info_share=0.05, min_wait_ms=5.0, min_points=3)
def input_bound(run, cfg):
    wait = run.get("data_wait_ms")
    step = run.get("step_time_ms")
    if wait is None or step is None:
        found = _rank_waits(run)
        if found is None:
            return []
        tag, steps, w, s = found
    else:
        tag = wait.tag
        steps, w, s = detectors.intersect(wait.steps, wait.values, step.steps, step.values)
    ok = np.isfinite(w) & np.isfinite(s) & (s > 0)
    if np.count_nonzero(ok) < cfg["min_points"]:
        return []
    steps, w, s = steps[ok], w[ok], s[ok]
    share = float(np.median(w / s))
    if share < cfg["info_share"] or float(np.median(w)) < cfg["min_wait_ms"]:
        return []
    level = WARN if share >= cfg["warn_share"] else INFO
    degree = "highly" if level == WARN else "moderately"
    return [Finding("input_bound", level,
                    "Training is %s input-bound: steps wait %s ms for data out of %s ms (%.0f%% of step time). "
                    "Speed up the input pipeline: num_parallel_workers on map/batch, python_multiprocessing, "
                    "prefetching, caching decoded data, or lighter per-sample transforms." % (
                        degree, fmt(float(np.median(w))), fmt(float(np.median(s))), share * 100),
                    tag, (int(steps[0]), int(steps[-1])))]


def _rank_waits(run):
    """``("", steps, data wait ms, step time ms)`` of the run's own rank from its rank statistics file (every rank
    records both at every core point, debug tier or not), or None."""
    data = cluster_of(run)
    if data is None:
        return None
    ranks = data.ranks
    waits = data.rank_columns("data_wait_ms", present=False)
    times = data.rank_columns("step_time_ms", present=False)
    if not ranks or waits is None or times is None:
        return None
    own = (run.info or {}).get("rank") if isinstance(run.info, dict) else None
    i = next((k for k, r in enumerate(ranks) if r.rank == own), 0)
    if waits[i] is None or times[i] is None:
        return "", np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.float32)
    (steps, w, _), (_, s, _) = waits[i], times[i]    # one rank's own rows: the same steps
    keep = data.present("data_wait_ms", w) & data.present("step_time_ms", s)
    return "", steps[keep], w[keep], s[keep]


def _step_times(run, min_points):
    """``(points, inverse)``: step times (or inverse throughput when only that is recorded), positive values,
    without the first point (it may include graph compilation); ``(None, False)`` with fewer than ``min_points``."""
    series, inverse = run.get("step_time_ms"), False
    if series is None:
        series, inverse = run.get("throughput"), True
    pts = finite(series)
    keep = np.nonzero(pts.x > 0)[0] if pts is not None else ()
    if len(keep) < min_points:
        return None, False
    x = 1.0 / pts.x[keep] if inverse else pts.x[keep]
    return Points(pts.series, pts.idx[keep][1:], x[1:]), inverse


@rule("step_time_regression", WARN,
      "our heuristic: a rolling median of the step time above 1.5x the run's own early level, sustained over 20% "
      "of the run and at least a minute of wall time (a burst of load on the machine passes); a note instead when "
      "the process's CPU time per step (core/step_cpu_ms) stayed under 1.5x its early level: other processes took "
      "the time",
      "Step time rising (or throughput falling) well above the run's own early level, and staying there.",
      factor=1.5, min_points=8, min_fraction=0.2, min_duration_s=60.0)
def step_time_regression(run, cfg):
    pts, inverse = _step_times(run, cfg["min_points"])
    if pts is None:
        return []
    x = pts.x
    w = max(detectors.MIN_WARMUP, x.size // 5)
    baseline = float(np.median(x[:w]))
    if baseline <= 0:
        return []
    slow = detectors.rolling_median_above(x, min(max(3, w), 51) | 1, cfg["factor"] * baseline)
    slow[:w] = False
    # The longest stretch of consecutive slow points: a regression persists, a burst of load on the machine does not.
    lo, hi = detectors.longest_range(slow)
    if hi - lo < max(2, cfg["min_fraction"] * x.size):
        return []
    wall = pts.series.wall_times[pts.idx]
    if wall[hi - 1] - wall[lo] < cfg["min_duration_s"]:
        return []
    span = pts.span(lo, hi - 1)
    worst = float(np.median(x[lo:hi]))
    load = _cpu_flat(run, pts, w, (lo, hi), cfg["factor"])
    if inverse:
        msg = ("Throughput fell to %s samples/s from %s early in the run (%s times slower) over steps %d-%d."
               % (fmt(1.0 / worst), fmt(1.0 / baseline), fmt(worst / baseline), span[0], span[1]))
    else:
        msg = ("Step time rose to %s ms from %s ms early in the run (%s times slower) over steps %d-%d."
               % (fmt(worst), fmt(baseline), fmt(worst / baseline), span[0], span[1]))
    if load is not None:
        return [Finding("step_time_regression", INFO, msg + " The process's CPU time per step did not grow (%s ms "
                        "early, %s ms then): other processes on the machine took the time, not this training."
                        % (fmt(load[0]), fmt(load[1])), pts.tag, span)]
    return [Finding("step_time_regression", WARN, msg + " Look for other jobs on the machine, a growing input "
                    "queue, host-side work in callbacks, or memory pressure.", pts.tag, span)]


def _cpu_flat(run, pts, warmup, stretch, factor):
    """``(early, then)`` CPU ms per step (``core/step_cpu_ms``) when the process's CPU time per step over the slow
    stretch stayed under ``factor`` x its early level: the slowdown is the machine's load; None otherwise or
    without the series."""
    cpu = run.get("step_cpu_ms")
    if cpu is None or len(cpu) < 3:
        return None
    steps = pts.series.steps[pts.idx]
    early_end, (lo, hi) = steps[min(warmup, steps.size) - 1], stretch
    c_steps, c = cpu.steps[1:], cpu.values[1:]            # the first interval holds compilation
    early = c[(c_steps <= early_end) & np.isfinite(c)]
    then = c[(c_steps >= steps[lo]) & (c_steps <= steps[hi - 1]) & np.isfinite(c)]
    if not early.size or not then.size:
        return None
    e, t = float(np.median(early)), float(np.median(then))
    return (e, t) if e > 0 and t < factor * e else None
