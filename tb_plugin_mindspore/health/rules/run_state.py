"""Is the run alive: ``run_stalled`` (silent while training) and ``run_unfinished`` (stopped before its end).

A run whose callbacks wrote the end marker (``_meta/run_end``: finished, stopped by a live-health action,
interrupted, failed) has ended: it is never stalled, whatever the clock says."""

import numpy as np

from .base import INFO, WARN, Finding, rule
from .common import fmt, run_end_of, secs


def usual_interval(run):
    """Median seconds between two recorded points of the run's densest series (None if unknown)."""
    best = None
    for s in run.scalars.values():
        if len(s) >= 3 and (best is None or len(s) > len(best)):
            best = s
    if best is None:
        return None
    wall = np.unique(best.wall_times[np.isfinite(best.wall_times)])
    if wall.size < 3:
        return None
    d = np.diff(wall)
    d = d[d > 0]
    return float(np.median(d)) if d.size else None


def end_marker(run):
    """The run's end marker when it is the newest thing in the run (a later re-run into the same folder makes an
    older marker stale), else ``None``."""
    end = run_end_of(run)
    last = run.last_step()
    if end is None or (last is not None and end["step"] < last):
        return None
    return end


def progress(run):
    """``(last_step, expected_last_step or None, finished: bool or None)``; a run that ended normally or was
    stopped by a live-health action (end marker) is finished."""
    last = run.last_step()
    expected = run.expected_last_step()
    end = end_marker(run)
    if run.info.get("finished") is True or (end is not None and end["status"] in ("finished", "stopped")):
        return last, expected, True
    if end is None and run.state is not None and run.state.ms_closed and not run.info.get("collect_freq"):
        return last, expected, True      # MindSpore closed its summary files (read-only): SummaryRecord ended
    if expected is None or last is None:
        return last, expected, None
    return last, expected, last >= expected


def _silence(run, cfg):
    """``(idle seconds, usual interval or None, stall threshold)``, or ``None`` when the run's times are unknown."""
    state = run.state
    if state is None or state.last_event_time is None:
        return None
    last_seen = max(t for t in (state.last_event_time, state.last_modified) if t is not None)
    interval = usual_interval(run)
    threshold = max(cfg["min_stall_s"], cfg["stall_factor"] * interval if interval else 0.0)
    return state.now - last_seen, interval, threshold


@rule("run_stalled", WARN,
      "our heuristic: stalled = silent for 10x the run's own recording interval (at least 2 minutes)",
      "No new events for much longer than the run's own interval while the run is not finished.",
      stall_factor=10.0, min_stall_s=120.0, crash_after_s=1800.0, recent_s=6 * 3600.0)
def run_stalled(run, cfg):
    silence = _silence(run, cfg)
    if silence is None:
        return []
    idle, interval, threshold = silence
    last, expected, finished = progress(run)
    if finished or end_marker(run) is not None or idle <= threshold or last is None:
        return []
    steps = (last, last)
    usual = (" (%s times its usual %s between points)" % (fmt(idle / interval), secs(interval))) if interval \
        else ""
    if finished is None:
        if idle > cfg["recent_s"]:
            return []       # an old run of unknown length: most likely finished long ago
        return [Finding("run_stalled", INFO,
                        "No new events for %s%s, last at step %d. If the training is still running, it is stuck "
                        "(input pipeline, a hung rank, a deadlock); if it ended, ignore this." % (
                            secs(idle), usual, last), "", steps)]
    if idle > max(cfg["crash_after_s"], threshold):
        return []           # run_unfinished speaks
    return [Finding("run_stalled", WARN,
                    "No new events for %s%s, at step %d of %d: the training looks stuck (input pipeline, a hung "
                    "rank, a deadlock) or was stopped." % (secs(idle), usual, last, expected), "", steps)]


@rule("run_unfinished", WARN,
      "our heuristic: the run stopped before the last step expected from the run information the callbacks "
      "record (epochs x steps per epoch) and has been silent for 30 minutes",
      "The run stopped before its planned last step and has been silent since: crashed or killed.",
      crash_after_s=1800.0, stall_factor=10.0, min_stall_s=120.0)
def run_unfinished(run, cfg):
    end = end_marker(run)
    if end is not None and end["status"] in ("interrupted", "failed"):
        return [_ended_early(run, end)]
    silence = _silence(run, cfg)
    if silence is None:
        return []
    last, expected, finished = progress(run)
    if finished is not False:
        return []
    idle, _, threshold = silence
    if idle <= max(cfg["crash_after_s"], threshold):
        return []
    return [Finding("run_unfinished", WARN,
                    "The run stopped at step %d of %d (%.0f%%) and nothing was written for %s: it crashed or was "
                    "killed. Look at the end of its log; resume from the last checkpoint." % (
                        last, expected, 100.0 * last / expected, secs(idle)), "", (last, last))]


def _ended_early(run, end):
    """The finding for a run whose end marker says it was interrupted (Ctrl-C, SIGTERM) or failed (an exception)."""
    step = int(end["step"])
    expected = run.expected_last_step()
    of = (" of %d" % expected) if expected and expected > step else ""
    reason = (": %s" % end["reason"]) if end.get("reason") else ""
    if end["status"] == "interrupted":
        return Finding("run_unfinished", INFO, "Training was interrupted at step %d%s%s (the callbacks recorded it "
                       "as it stopped)." % (step, of, reason), "", (step, step))
    return Finding("run_unfinished", WARN, "Training failed at step %d%s%s. Look at the end of its log; resume "
                   "from the last checkpoint." % (step, of, reason), "", (step, step))
