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


def _cpu_overhead(run, cfg):
    """The cost of recording from ``core/monitor_cpu_ms`` (the CPU time per step that recording the points took on
    the training thread) against ``core/step_time_ms`` (the step's wall time, recording left out), interval by
    interval. Other processes on the machine stretch the step's wall time but not the recording's CPU time, so load
    can only lower the ratio: the old measure, an interval's slowest step against its fastest, read 75% at load 13
    on two cores on a healthy run. A cost under ``min_ms`` per step is no finding, whatever the ratio: a toy
    model's 5 ms steps make any recording look large. Runs written before the tag existed are not judged."""
    cpu, step_time = run.get("monitor_cpu_ms"), run.get("step_time_ms")
    if cpu is None or step_time is None:
        return None
    steps, at_cpu, at_time = np.intersect1d(cpu.steps, step_time.steps, return_indices=True)
    cost, train = cpu.values[at_cpu], step_time.values[at_time]
    keep = (steps > cpu.steps[0]) & np.isfinite(cost) & np.isfinite(train) & (train > 0)   # 1st: start-up
    if np.count_nonzero(keep) < cfg["min_points"]:
        return None
    steps, cost, train = steps[keep], cost[keep], train[keep]
    overhead = float(np.median(cost / train))
    if overhead <= cfg["max_overhead"] or float(np.median(cost)) < cfg["min_ms"]:
        return None
    return Finding(
        "monitoring_overhead", WARN,
        "Monitoring costs about %.0f%% of the step time: recording took a median %s ms of CPU time per step "
        "against steps of %s ms, over %d recorded intervals (steps %d-%d). Record less often (a larger "
        "collect_freq or debug frequency) or turn off debug items you do not need." % (
            overhead * 100, fmt(float(np.median(cost))), fmt(float(np.median(train))), steps.size, int(steps[0]),
            int(steps[-1])), cpu.tag, (int(steps[0]), int(steps[-1])))


@rule("monitoring_overhead", WARN,
      "our heuristic: recording that costs over 50%% of the step time and over 10 ms per step is too heavy (in "
      "CPU time, core/monitor_cpu_ms, which a loaded machine does not inflate); for scale, SummaryCollector("
      "collect_freq=10, histogram_regular='.*weight.*') made training %s slower and TrainMonitor (core + "
      "diagnostic) cost %s of the step time in our measurement (bench/overhead.py, median of 8 repetitions)" % (
          SUMMARY_COLLECTOR_SLOWDOWN, TRAIN_MONITOR_COST),
      "Monitoring itself costs too much CPU time.",
      max_overhead=0.5, min_ms=10.0, min_points=3)
def monitoring_overhead(run, cfg):
    found = _cpu_overhead(run, cfg)
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
