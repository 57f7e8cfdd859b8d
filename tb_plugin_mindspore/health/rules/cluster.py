"""Many ranks: ``slow_rank``, ``rank_diverging``, ``rank_stopped``; memory: ``memory_growth``, ``device_memory_limit``.

They judge the per-rank statistics of the run's cluster (``sources.clusters``: the run folder's ``cluster/`` rank
files, or sibling ``rank_<k>`` folders, judged once at the lowest rank), found from the run's folder on disk
(``run.state.directory``, else the ``logdir`` of the run information). The maths is in ``..cluster_signals``.
"""

import collections
import copy
import os
import threading

import numpy as np

from ...sources import clusters
from .. import cluster_signals as signals
from ..series import RunSeries, RunState
from .base import ERROR, INFO, WARN, Finding, rule
from .common import fmt

# The rules whose findings depend only on the cluster's state and their thresholds (not on the run's own series):
# judged once per state of a cluster and kept (``judged``), also ahead of any request, in the thread that reads the
# rank files (``judge_ahead``).
CLUSTER_ONLY = ("slow_rank", "rank_diverging", "rank_stopped", "memory_growth", "device_memory_limit")
MAX_JUDGED = 256        # (cluster state, rule, thresholds) kept
WAIT_JUDGED_SECS = 60.0     # how long a check waits for the same judging in another thread before doing it itself


def cluster_of(run):
    """The run's :class:`~tb_plugin_mindspore.sources.cluster_ranks.ClusterData` (reloaded), or None."""
    directory = getattr(run.state, "directory", None) if run.state is not None else None
    if directory is None:
        recorded = (run.info or {}).get("logdir")
        directory = recorded if isinstance(recorded, str) and os.path.isdir(recorded) else None
    if directory is None:
        return None
    try:
        return clusters.cluster_for_health(directory)
    except (OSError, ValueError):
        return None


def _view(run, max_points):
    """``(ranks, steps, field)`` limited to the newest ``max_points`` recorded steps (``field(name)``: its
    ``(matrix, present)`` there, or None), or None without a cluster. Only those steps are aligned
    (``ClusterData.tail``): the cost does not grow with the rows a rank keeps."""
    data = cluster_of(run)
    if data is None:
        return None
    ranks, steps, _, mats, _ = data.tail(int(max_points))
    if not ranks or not steps.size:
        return None

    def field(name):
        return mats[name] if name in mats else None

    return ranks, steps, field


def _who(r):
    return "rank %d%s" % (r.rank, " (node %s)" % r.host if r.host else "")


@rule("slow_rank", WARN,
      "Ascend's slow-rank analysis (MindStudio Insight / msprof-analyze cluster advice): (max - min) / mean of the "
      "ranks' step time above 5% means a slow rank; here a rank >= 5% above the median rank in 80% of a window of "
      "recorded points",
      "A rank consistently slower than the others, and whether its time goes to waiting for data or to compute "
      "(a note only, when compute on a node with more runnable threads than CPUs: the load, not the device).",
      threshold=0.05, window=5, enough=0.8, min_ranks=3, max_points=1000, max_host_load=1.0)
def slow_rank(run, cfg):
    view = _view(run, cfg["max_points"])
    if view is None or view[2]("step_time_ms") is None:
        return []
    ranks, steps, field = view
    t, tp = field("step_time_ms")
    w, wp = field("data_wait_ms") or (None, None)
    found = signals.stragglers(t, tp, w, wp, window=int(cfg["window"]), threshold=float(cfg["threshold"]),
                               enough=float(cfg["enough"]), min_ranks=int(cfg["min_ranks"]))
    load = field("host_load")
    out = []
    for s in found:
        r = ranks[s["row"]]
        first, last = int(steps[s["first_col"]]), int(steps[s["last_col"]])
        level, busy = WARN, _median_in(load, s["row"], s["first_col"], s["last_col"])
        if s["cause"] == "data wait":
            why = ("its time goes to waiting for data (+%s ms a step of data wait): look at that rank's input "
                   "pipeline, storage and host CPU load" % fmt(s["wait_excess_ms"]))
        elif busy is not None and busy > float(cfg["max_host_load"]):
            # More runnable threads than CPUs on that node: the ranks sharing it get uneven shares of them (a
            # rank that also writes the run's event files, or runs a few more threads, falls behind), which says
            # more about the machine than about the device.
            level = INFO
            why = ("its time goes to compute while its node was oversubscribed (load average %s per CPU): ranks "
                   "sharing too few CPUs run unevenly; judge the devices again on a node with CPUs to spare" % (
                       fmt(busy)))
        else:
            why = ("its time goes to compute, not to waiting for data%s: look at that device's health, clocks and "
                   "thermal throttling, or host work on that rank" % (
                       " (data wait +%s ms)" % fmt(s["wait_excess_ms"]) if s["wait_excess_ms"] is not None else ""))
        out.append(Finding("slow_rank", level,
                           "%s is %.0f%% slower than the median rank (+%s ms a step) over steps %d-%d; across ranks "
                           "(max - min) / mean step time is %.0f%% (Ascend's slow-rank threshold: 5%%); %s." % (
                               _who(r)[0].upper() + _who(r)[1:], (s["ratio"] - 1) * 100, fmt(s["excess_ms"]),
                               first, last, s["spread"] * 100, why), "", (first, last)))
    return out


def _median_in(field, row, first_col, last_col):
    """The median of one rank's recorded values of ``field`` (a view's ``(matrix, present)`` or None) between two
    columns, or None."""
    if field is None:
        return None
    m, p = field
    values = m[row, first_col:last_col + 1][p[row, first_col:last_col + 1]]
    return float(np.median(values)) if values.size else None


_DIVERGE = (("loss", "local loss", False), ("grad_norm", "local gradient norm", True))


@rule("rank_diverging", WARN,
      "robust z-score across ranks (median and MAD x 1.4826; Iglewicz & Hoaglin's modified z-score), our thresholds: "
      "|z| > 6 and more than 20% from the median, in 60% of a window of recorded points",
      "A rank whose local loss or gradient norm departs from the other ranks' (bad data shard, faulty device, "
      "unsynchronised weights).",
      z=6.0, min_rel=0.2, window=5, enough=0.6, min_ranks=3, max_points=1000)
def rank_diverging(run, cfg):
    view = _view(run, cfg["max_points"])
    if view is None:
        return []
    ranks, steps, field = view
    out = []
    for name, label, log in _DIVERGE:
        if field(name) is None:
            continue
        x, p = field(name)
        for d in signals.divergent(x, p, window=int(cfg["window"]), z=float(cfg["z"]), min_rel=float(cfg["min_rel"]),
                                   enough=float(cfg["enough"]), min_ranks=int(cfg["min_ranks"]), log=log):
            r = ranks[d["row"]]
            first, last = int(steps[d["first_col"]]), int(steps[d["last_col"]])
            value = "non-finite values" if d["nonfinite"] else "%s" % fmt(d["value"])
            out.append(Finding("rank_diverging", WARN,
                               "The %s of %s departs from the other ranks' over steps %d-%d: %s against a median "
                               "of %s. With data parallelism the ranks' local values should agree closely: check "
                               "that rank's data shard, its device, and that its weights are synchronised." % (
                                   label, _who(r), first, last, value, fmt(d["median"])), "", (first, last)))
    return out


@rule("rank_stopped", ERROR,
      "our heuristic: a rank whose rows end at least 2 recorded points before the newest one while most ranks went on",
      "A rank that stopped writing (hung or dead) while the others go on.",
      min_behind=2)
def rank_stopped(run, cfg):
    data = cluster_of(run)
    if data is None:
        return []
    min_behind = int(cfg["min_behind"])
    ranks, steps, _, _, behind = data.tail(max(2, min_behind + 1))
    if len(ranks) < 2 or not steps.size:
        return []
    # each rank's column on the step axis, counted back from the newest step (a rank further behind than the
    # newest steps looked at sits in one column before them: it is behind by at least that much)
    last_cols = np.where(behind < 0, -1, steps.size - behind)
    newest = int(steps[-1])
    out = []
    for row in signals.stopped(last_cols, steps.size + 1, min_behind=min_behind):
        r = ranks[row]
        last = int(r.arrays()[0][-1])
        out.append(Finding("rank_stopped", ERROR,
                           "%s stopped writing at step %d while the other ranks went on to step %d: it hung or died "
                           "(see its log; with collectives the others will wait for it)." % (
                               _who(r)[0].upper() + _who(r)[1:], last, newest), "", (last, newest)))
    return out


def _ranks_text(rows, ranks):
    names = sorted(ranks[i].rank for i in rows)
    if len(names) <= 6:
        return "rank%s %s" % ("s" if len(names) > 1 else "", ", ".join(str(n) for n in names))
    return "%d ranks (%s, ...)" % (len(names), ", ".join(str(n) for n in names[:4]))


@rule("memory_growth", WARN,
      "our heuristic: Theil-Sen slope of the memory after the first 30% of the run, growth >= 10% and >= 64 MB, "
      "60% of the changes upward (a leak grows steadily; a cache fills and stops)",
      "Host or device memory of the training process growing steadily (a leak).",
      warmup=0.3, min_points=8, min_growth=0.1, min_mb=64.0, rising=0.6)
def memory_growth(run, cfg):
    data = cluster_of(run)
    if data is None:
        return []
    ranks = data.ranks
    out = []
    for field, label in (("host_memory_mb", "Host memory (RSS)"), ("device_memory_mb", "Device memory")):
        # each rank's own rows, nothing aligned: a memory value not measured is NaN, which memory_growth leaves out
        columns = data.rank_columns(field, present=False)
        if columns is None:
            continue
        found = signals.memory_growth_many(columns, warmup=cfg["warmup"], min_points=cfg["min_points"],
                                           min_growth=cfg["min_growth"], min_mb=cfg["min_mb"], rising=cfg["rising"])
        hits = [(i, g) for i, g in enumerate(found) if g is not None]
        if not hits:
            continue
        i, g = max(hits, key=lambda h: h[1]["mb_per_1000_steps"])
        out.append(Finding("memory_growth", WARN,
                           "%s of %s grows steadily: %s MB per 1,000 steps (%s: from %s MB at step %d to %s MB at "
                           "step %d). Look for tensors, outputs or metrics kept across steps (lists that grow, "
                           "asnumpy() results kept), or a growing cache." % (
                               label, _ranks_text([h[0] for h in hits], ranks), fmt(g["mb_per_1000_steps"]),
                               _who(ranks[i]), fmt(g["start_mb"]), g["first_step"], fmt(g["end_mb"]),
                               g["last_step"]), "", (g["first_step"], g["last_step"])))
    return out


@rule("device_memory_limit", WARN,
      "our heuristic: device memory at 90% of the device's limit, or growing fast enough to reach it within as many "
      "steps as the run has taken",
      "Device memory close to the device limit (out-of-memory ahead).",
      fraction=0.9)
def device_memory_limit(run, cfg):
    data = cluster_of(run)
    if data is None:
        return []
    ranks = data.ranks
    used_columns = data.rank_columns("device_memory_mb", present=False)
    limit_columns = data.rank_columns("device_limit_mb", present=False)
    if used_columns is None or limit_columns is None:
        return []
    worst = None
    for i, (used, limit) in enumerate(zip(used_columns, limit_columns)):
        if used is None or limit is None or used[2] == used[1].size or limit[2] == limit[1].size:
            continue     # no finite value (known without looking: the CPU backend records none): nothing to judge
        lim = limit[1][data.present("device_limit_mb", limit[1]) & np.isfinite(limit[1])]
        up = data.present("device_memory_mb", used[1])
        if not lim.size or not up.any():
            continue
        steps, values = used[0][up], used[1][up]
        growth = signals.memory_growth(steps, values)
        hit = signals.near_limit(steps, values, float(lim[-1]), cfg["fraction"], growth)
        if hit is not None and (worst is None or hit["share"] > worst[1]["share"]):
            worst = (i, hit)
    if worst is None:
        return []
    i, hit = worst
    ahead = (" and, at its current growth, reaches it in about %s steps" % fmt(hit["steps_left"])
             if hit["steps_left"] is not None else "")
    return [Finding("device_memory_limit", WARN,
                    "Device memory of %s reached %s MB of its %s MB limit (%.0f%%) at step %d%s: an out-of-memory "
                    "error is ahead. Lower the batch size or sequence length, enable recomputation, or shard the "
                    "optimizer state." % (_who(ranks[i]), fmt(hit["used_mb"]), fmt(hit["limit_mb"]),
                                          hit["share"] * 100, hit["step"], ahead), "", (hit["step"], hit["step"]))]


# ---------------------------------------------------------------------------------------------------------------
# Judged once per state of a cluster
class _Judged:
    """``[Finding]`` per ``(cluster state, rule, thresholds)``, worked out once: a check that asks while another
    thread works the same key out waits for it. Bounded (least recently used first); copies go in and out (the
    engine changes the findings it gets)."""

    def __init__(self, max_entries=MAX_JUDGED):
        self._done = collections.OrderedDict()
        self._flights = {}
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.computed = 0       # judged here, all threads together
        self.ahead = 0          # of which ahead of the checks (judge_ahead)
        self._local = threading.local()

    def get(self, key, compute):
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return copy.deepcopy(self._done[key])
            flight = self._flights.get(key)
            mine = flight is None
            if mine:
                flight = self._flights[key] = threading.Event()
        if not mine:
            flight.wait(WAIT_JUDGED_SECS)
            with self._lock:
                if key in self._done:
                    return copy.deepcopy(self._done[key])
            return list(compute() or [])      # the other thread failed (or is still at it): judged here
        try:
            found = list(compute() or [])
            with self._lock:
                self._done[key] = copy.deepcopy(found)
                self.computed += 1
                self.ahead += int(getattr(self._local, "ahead", False))
                while len(self._done) > self.max_entries:
                    self._done.popitem(last=False)
            return found
        finally:
            with self._lock:
                self._flights.pop(key, None)
            flight.set()


JUDGED = _Judged()


def judged(rule_, run, cfg):
    """``rule_.fn(run, cfg)`` of a rule in :data:`CLUSTER_ONLY`, worked out once per state of the run's cluster and
    thresholds (another rule runs as it is)."""
    if rule_.id not in CLUSTER_ONLY:
        return rule_.fn(run, cfg)
    view = cluster_of(run)
    if view is None:
        return []
    key = (view.token, rule_.id, tuple(sorted(cfg.items())))
    return JUDGED.get(key, lambda: rule_.fn(run, cfg))


def judge_ahead(folder, view, rules_and_cfgs):
    """Judges the state ``view`` of the cluster at ``folder`` with the :data:`CLUSTER_ONLY` rules among
    ``rules_and_cfgs`` (``[(rule, cfg)]``), before any check asks: a check of a run of that cluster then finds the
    findings ready (:func:`judged`)."""
    run = RunSeries(run="", state=RunState(now=0.0, directory=folder))
    JUDGED._local.ahead = True
    try:
        with clusters.judging(folder, view):
            for rule_, cfg in rules_and_cfgs:
                if rule_.id in CLUSTER_ONLY:
                    try:
                        judged(rule_, run, cfg)
                    except Exception:   # the check judges it again, and says so in the log
                        continue
    finally:
        JUDGED._local.ahead = False
