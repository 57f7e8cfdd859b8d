"""What monitoring itself costs: ``log_size`` (disk) and ``monitoring_overhead`` (step time)."""

import numpy as np

from .base import INFO, WARN, Finding, rule
from .common import fmt, layer_list, nbytes
from .run_state import progress

# bench/overhead.py (BENCHMARKS.md): SummaryCollector(collect_freq=10, histogram_regular='.*weight.*') against no
# monitoring on the demo transformer, median of 8 repetitions; TrainMonitor core + diagnostic in the same runs.
SUMMARY_COLLECTOR_SLOWDOWN = "2.2x"
TRAIN_MONITOR_COST = "about 1%"


@rule("log_size", WARN,
      "our heuristic: a budget of 5 GiB of event files per run and 1 GiB of growth per hour",
      "Event files larger than a size budget, or growing fast enough to exceed it.",
      max_bytes=5 * 1024 ** 3, max_bytes_per_hour=1024 ** 3)
def log_size(run, cfg):
    state = run.state
    if state is None or not state.total_bytes:
        return []
    total = int(state.total_bytes)
    first, last = run.first_step(), run.last_step()
    steps = (first or 0, last or 0)
    advice = ("Record less often (collect_freq), drop histograms you do not need, or set a disk budget on the "
              "writer.")
    if total > cfg["max_bytes"]:
        return [Finding("log_size", WARN, "Event files hold %s, above the %s budget. %s" % (
            nbytes(total), nbytes(cfg["max_bytes"]), advice), "", steps)]
    _, expected, finished = progress(run)
    if finished is False and expected and last:
        projected = total * float(expected) / float(last)
        if projected > cfg["max_bytes"]:
            return [Finding("log_size", WARN, "Event files hold %s at step %d and will reach about %s by step %d, "
                            "above the %s budget. %s" % (nbytes(total), last, nbytes(projected), expected,
                                                         nbytes(cfg["max_bytes"]), advice), "", steps)]
    if state.first_event_time is not None and state.last_event_time is not None:
        span = state.last_event_time - state.first_event_time
        if span >= 60:
            rate = total / span * 3600.0
            if rate > cfg["max_bytes_per_hour"]:
                return [Finding("log_size", WARN, "Event files grow by %s per hour (%s so far), above %s per "
                                "hour. %s" % (nbytes(rate), nbytes(total), nbytes(cfg["max_bytes_per_hour"]),
                                              advice), "", steps)]
    return []


def _interval_overhead(run, cfg):
    """Within one interval, the step that follows a recorded point carries the recording cost: its excess over the
    fastest step of the interval bounds what monitoring adds per interval."""
    series = run.get("step_time_ms")
    iv = run.interval_of(series) if series is not None else None
    if iv is None or len(iv) < cfg["min_points"] + 1:
        return None
    rows = slice(1, None)      # the first interval includes compilation
    mn, mean, mx, count = iv.min[rows], iv.mean[rows], iv.max[rows], iv.count[rows]
    ok = np.isfinite(mn) & np.isfinite(mx) & np.isfinite(mean) & (count >= cfg["min_count"]) & (mean > 0)
    if np.count_nonzero(ok) < cfg["min_points"]:
        return None
    excess = (mx - mn)[ok]
    train = (count * mean)[ok] - excess
    overhead = float(np.median(excess / np.maximum(train, 1e-12)))
    if overhead <= cfg["max_overhead"]:
        return None
    steps = (int(iv.steps[1:][ok][0]), int(iv.steps[1:][ok][-1]))
    return Finding(
        "monitoring_overhead", WARN,
        "Monitoring seems to cost about %.0f%% of training time: one step per recorded interval takes "
        "%s ms longer than the others. Record less often (a larger collect_freq or debug frequency) "
        "or turn off debug items you do not need." % (overhead * 100, fmt(float(np.median(excess)))),
        series.tag, steps)


@rule("monitoring_overhead", WARN,
      "our heuristic: monitoring that costs over 50%% of the training time is too heavy; for scale, "
      "SummaryCollector(collect_freq=10, histogram_regular='.*weight.*') made training %s slower and TrainMonitor "
      "(core + diagnostic) cost %s of the step time in our measurement (bench/overhead.py, median of 8 "
      "repetitions)" % (SUMMARY_COLLECTOR_SLOWDOWN, TRAIN_MONITOR_COST),
      "Monitoring itself costs too much step time.",
      max_overhead=0.5, min_count=4, min_points=3)
def monitoring_overhead(run, cfg):
    found = _interval_overhead(run, cfg)
    findings = [found] if found is not None else []
    auto_hist = [t for t in run.histogram_tags if t.endswith("/auto") or "/auto[" in t]
    if auto_hist:
        first, last = run.first_step() or 0, run.last_step() or 0
        findings.append(Finding(
            "monitoring_overhead", INFO,
            "This run records %d parameter histogram(s) with MindSpore's SummaryCollector (%s); in our measurement "
            "that configuration made training %s slower. TrainMonitor records the core and diagnostic tiers for "
            "%s of the step time." % (len(auto_hist), layer_list(auto_hist, 3), SUMMARY_COLLECTOR_SLOWDOWN,
                                      TRAIN_MONITOR_COST), auto_hist[0], (first, last)))
    return findings
