"""The Health panel's ``health`` route on a long, wide run: 1,024 ranks x 100,000 steps, cold, warm and after an
append.

Writes a synthetic cluster under a temporary folder (removed at the end): one rank file per rank (the format
``RankStats`` writes; 100,000 rows, the most a rank keeps; 8 nodes; rank 7 12% slower, in data wait; the last rank
stopped halfway) and rank 0's event file with the core scalars (loss, learning rate, gradient norm, step time,
throughput) at every step, so the per-run rules judge long series too. Then:

* **served**: a real ``tensorboard`` (``tests/tb_harness.tensorboard_process``, reload every second) answers
  ``/data/plugin/mindspore/health?run=job`` (what the Health panel asks for): cold (the first answer that judges the
  whole run), warm (median of ``--repeat``, nothing changed), then twice after ``--append`` steps were appended to
  every rank file that is still written and to the event file. (A) asked all along: a request every 50 ms from the
  append on; ``after_append_ms`` is the request that returns the first answer that includes the new steps,
  ``fresh_after_s`` the time from the append to that answer (the reloads included). (B) asked after the reload:
  the next ``--append`` steps, TensorBoard and the plugin's readers left to read and judge them (until the server
  is idle again: under 50 ms of CPU in a second, once TensorBoard holds the new last step), then one request
  (``after_reload_ms``): what the Health panel waits for when it asks after a reload. Wall time of the request and
  CPU time of the server process (``/proc/<pid>/stat``: every thread, the readers' too; and of the request's own
  thread), and the server's CPU from the append to the answer.
* **in process**: the same through TensorBoard's WSGI app in this process (Python loader), with the CPU time of
  the request's own thread, split into the reading (``health.sources.read_runs``) and the judging
  (``engine.check_run``); the bytes the rank-file reader read after the first read (only what was appended); how
  many cluster-rule judgings the request after the reload did itself (the rank files' reader judges each new state
  of a cluster ahead of the checks); and each data rule's time, worked out again.

Prints a table and, as its last line, one JSON object. ``--ranks`` / ``--steps`` / ``--append`` make a smaller
form (the test runs 64 x 2,000 + 200).

    .venv/bin/python bench/health_scale.py                      # 1,024 x 100,000 + 1,000 (4.5 GB on disk)
    .venv/bin/python bench/health_scale.py --ranks 64 --steps 2000 --append 200 --no-served
"""

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))

import numpy as np  # noqa: E402

from tb_harness import tensorboard_process  # noqa: E402

RUN = "job"
SLOW_RANK = 7
ROUTE = "/data/plugin/mindspore/health?run=" + RUN
CORE = ("core/loss", "core/learning_rate", "core/grad_norm", "core/step_time_ms", "core/throughput")
T0 = 1_700_000_000.0
EVENTS_NAME = "events.out.tfevents.1700000000.bench.scalars"
RELOAD_INTERVAL = 1.0       # tensorboard's --reload_interval here (tests/tb_harness.py)
QUIET_CPU_S = 0.05          # the server's CPU seconds a second when idle is below this (its readers' passes: ~0.01)


# ---------------------------------------------------------------------------------------------------------------
# The synthetic run
def _rank_rows(rank, steps, ranks, seed):
    """The record array of ``rank`` at ``steps`` (every field of ``metadata.RANK_FIELDS``; no device memory, as on
    CPU)."""
    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.contract import rank_file

    rs = np.random.RandomState(seed * 100003 + rank)
    n = steps.size
    rec = np.zeros(n, dtype=rank_file.record_dtype(metadata.RANK_FIELDS))
    rec["step"] = steps
    rec["wall_time"] = T0 + steps * 0.1
    t = 100.0 * (1 + 0.01 * rs.standard_normal(n))
    w = 5.0 * (1 + 0.05 * rs.standard_normal(n))
    if rank == SLOW_RANK:
        t += 12.0
        w += 11.0
    rec["step_time_ms"], rec["data_wait_ms"] = t, w
    rec["loss"] = 2.0 * np.exp(-steps / 30000.0) + 0.2 + 0.02 * rs.standard_normal(n)
    rec["grad_norm"] = np.exp(0.05 * rs.standard_normal(n))
    rec["host_memory_mb"] = 2000.0 + rs.standard_normal(n)
    for field in rec.dtype.names[2:]:
        if field in ("device_memory_mb", "device_limit_mb"):
            rec[field] = np.nan
        elif field == "host_load":
            rec[field] = 0.5          # load average per CPU of the node: CPUs to spare
    return rec


def _rank_path(run, rank):
    from tb_plugin_mindspore import metadata
    return os.path.join(run, metadata.CLUSTER_DIR, "rank%d%s" % (rank, metadata.RANK_FILE_SUFFIX))


def _stopped_at(ranks, steps):
    return steps // 2      # the last rank writes no row after this step


def _event_bytes(first, last):
    """Framed event records of the core scalars at steps ``first..last`` (one event a step, as rank 0 writes)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from tb_plugin_mindspore.io.records import frame

    out = []
    for s in range(first, last + 1):
        loss = 2.0 * np.exp(-s / 30000.0) + 0.2 + 0.01 * np.sin(s)
        values = (loss, 1e-3, 1.0 + 0.05 * np.sin(s / 7.0), 100.0 + np.sin(s / 3.0), 320.0 + np.cos(s / 5.0))
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=t, simple_value=float(v))
                                             for t, v in zip(CORE, values)])
        out.append(frame(event_pb2.Event(wall_time=T0 + s * 0.1, step=s, summary=summary).SerializeToString()))
    return b"".join(out)


def write(logs, ranks, steps, nodes=8, seed=0):
    """The run ``logs/job``: rank files and rank 0's event files; returns ``(seconds, bytes written)``."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.contract import rank_file
    from tb_plugin_mindspore.io.records import frame
    from tb_plugin_mindspore.writing import summary as summary_builders

    t0 = time.perf_counter()
    run = os.path.join(logs, RUN)
    os.makedirs(os.path.join(run, metadata.CLUSTER_DIR))
    per_node = max(1, ranks // nodes)
    total = 0
    axis = np.arange(1, steps + 1, dtype=np.int64)
    stop = _stopped_at(ranks, steps)
    for r in range(ranks):
        rows = _rank_rows(r, axis[axis <= stop] if r == ranks - 1 else axis, ranks, seed)
        head = rank_file.header_bytes({"rank": r, "rank_size": ranks, "host": "node%d" % (r // per_node),
                                       "local_rank": r % per_node, "pid": 0, "start_time": T0, "collect_freq": 1,
                                       "fields": list(metadata.RANK_FIELDS)})
        with open(_rank_path(run, r), "wb") as fh:
            fh.write(head)
            fh.write(rows.tobytes())
        total += len(head) + rows.nbytes
    info = summary_builders.run_info({"logdir": run, "rank": 0, "rank_size": ranks, "collect_freq": 1})
    with open(os.path.join(run, EVENTS_NAME), "wb") as fh:   # one file, appended to as a writer does
        fh.write(frame(event_pb2.Event(wall_time=T0, file_version="brain.Event:2").SerializeToString()))
        fh.write(frame(event_pb2.Event(wall_time=T0, step=0, summary=summary_pb2.Summary(value=[info]))
                       .SerializeToString()))
        for first in range(1, steps + 1, 10000):
            data = _event_bytes(first, min(steps, first + 9999))
            fh.write(data)
            total += len(data)
    return time.perf_counter() - t0, total


def append(logs, ranks, steps, more, seed=1):
    """Appends steps ``steps+1 .. steps+more`` to every rank file still written and to the event file; returns the
    rank files' bytes appended."""
    run = os.path.join(logs, RUN)
    axis = np.arange(steps + 1, steps + more + 1, dtype=np.int64)
    appended = 0
    for r in range(ranks - 1):       # the last rank stopped
        rows = _rank_rows(r, axis, ranks, seed)
        with open(_rank_path(run, r), "ab") as fh:
            fh.write(rows.tobytes())
        appended += rows.nbytes
    with open(os.path.join(run, EVENTS_NAME), "ab") as fh:
        fh.write(_event_bytes(steps + 1, steps + more))
    return appended


# ---------------------------------------------------------------------------------------------------------------
# What an answer says
def newest_step(answer):
    """The newest step the answer judged, or None: the smaller of what the cluster rules saw (``rank_stopped``: "the
    other ranks went on to step N") and what the per-run rules saw (``lr_constant``: "steps 1-N"), so an answer
    counts as fresh only when both the rank files and the event file were read to their new end. An answer given
    while the rank files were being appended to (some ranks already at the new end, others not: several
    ``rank_stopped`` findings) is not counted."""
    for run in answer.get("runs", []):
        if run["run"] == RUN:
            stopped = [f for f in run["findings"] if f["rule"] == "rank_stopped"]
            ends = {f["rule"]: f["steps"][1] for f in run["findings"] if f["rule"] in ("rank_stopped", "lr_constant")}
            return min(ends.values()) if len(ends) == 2 and len(stopped) == 1 else None
    return None


def every_point(answer):
    """Whether the per-run rules judged every point (``lr_constant``'s range starts at step 1), not TensorBoard's
    sample of the event file (which starts later): an answer given while the plugin's store of every point is still
    reading what was appended is from the sample, and is judged again once the store has caught up."""
    for run in answer.get("runs", []):
        if run["run"] == RUN:
            return any(f["rule"] == "lr_constant" and f["steps"][0] == 1 for f in run["findings"])
    return False


def summary(answer):
    out = []
    for run in answer.get("runs", []):
        for f in run["findings"]:
            out.append("%s %s %s" % (f["rule"], f["level"], f["message"][:70]))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Served by a real tensorboard
def _clk():
    return os.sysconf("SC_CLK_TCK")


def _cpu_s(pid):
    """User + system CPU seconds of process ``pid`` and its threads."""
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / _clk()


def _threads_cpu_s(pid):
    """``{thread id: CPU seconds}`` of the threads of process ``pid`` alive now."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                parts = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[tid] = (int(parts[11]) + int(parts[12])) / _clk()
    return out


def _children():
    out = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                out.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return out


def _get(url):
    req = urllib.request.Request(url, headers={"Accept-Encoding": "identity"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=900) as r:
        body = r.read()
    return (time.perf_counter() - t0) * 1000.0, json.loads(body)


def _timed(url, pid, own=None):
    """``(wall ms, server CPU ms, answer)``; with a dict ``own``, ``own["cpu_ms"]`` gets the CPU of the threads that
    started meanwhile (the server's thread for this request: TensorBoard's server starts one per request), the
    server's CPU less what its threads from before the request (the readers) took meanwhile."""
    c0, t0 = _cpu_s(pid), _threads_cpu_s(pid)
    ms, answer = _get(url)
    c1, t1 = _cpu_s(pid), _threads_cpu_s(pid)
    if own is not None:
        others = sum(t1[tid] - t0[tid] for tid in t1 if tid in t0)
        own["cpu_ms"] = max(0.0, c1 - c0 - others) * 1000.0
    return ms, (c1 - c0) * 1000.0, answer


def _wait_loaded(base, steps, timeout):
    """Until TensorBoard holds the loss up to ``steps`` (its last point)."""
    deadline = time.time() + timeout
    url = base + "/data/plugin/scalars/scalars?run=%s&tag=core/loss" % RUN
    while time.time() < deadline:
        try:
            _, pts = _get(url)
            if pts and int(pts[-1][1]) >= steps:
                return
        except Exception:   # not listed yet (404)
            pass
        time.sleep(0.5)
    raise AssertionError("tensorboard did not load step %d within %d s" % (steps, timeout))


def served(logs, ranks, steps, more, repeat, timeout):
    before = _children()
    with tensorboard_process(logs, timeout=timeout) as base:
        pid = max(_children() - before)
        url = base + ROUTE
        t_load = time.perf_counter()
        _wait_loaded(base, steps, timeout)
        out = {"tb_load_s": time.perf_counter() - t_load}
        cold_ms, cold_cpu, answer = _timed(url, pid)
        assert newest_step(answer) == steps, summary(answer)
        out.update(cold_ms=cold_ms, cold_cpu_ms=cold_cpu, findings=summary(answer))
        time.sleep(1.2)     # past the answer's 1 s memo: a warm answer is the kept one, tokens checked
        warm = [_timed(url, pid) for _ in range(repeat)]
        out.update(warm_ms=statistics.median(w[0] for w in warm), warm_max_ms=max(w[0] for w in warm),
                   warm_cpu_ms=statistics.median(w[1] for w in warm))
        idle0 = _cpu_s(pid)
        time.sleep(2.0)
        out["idle_cpu_ms_per_s"] = (_cpu_s(pid) - idle0) * 1000.0 / 2.0
        # (A) asked all along: a request every 50 ms from the append on, until one answers with the new steps
        t_append, c_append = time.perf_counter(), _cpu_s(pid)
        append(logs, ranks, steps, more)
        polls = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            ms, cpu, answer = _timed(url, pid)
            polls.append((ms, cpu))
            if newest_step(answer) == steps + more:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("no answer with step %d within %d s" % (steps + more, timeout))
        out.update(after_append_ms=polls[-1][0], after_append_cpu_ms=polls[-1][1],
                   fresh_after_s=time.perf_counter() - t_append, polls=len(polls),
                   polls_max_ms=max(p[0] for p in polls), polls_cpu_ms=sum(p[1] for p in polls),
                   append_to_fresh_cpu_ms=(_cpu_s(pid) - c_append) * 1000.0, findings_after=summary(answer))
        more_polls = []
        while not every_point(answer) and time.time() < deadline:
            time.sleep(0.2)
            ms, cpu, answer = _timed(url, pid)
            more_polls.append((ms, cpu))
        out.update(every_point_after_s=time.perf_counter() - t_append, every_point=every_point(answer),
                   every_point_ms=more_polls[-1][0] if more_polls else polls[-1][0],
                   every_point_cpu_ms=more_polls[-1][1] if more_polls else polls[-1][1])
        time.sleep(1.2)
        warm = [_timed(url, pid) for _ in range(repeat)]
        out["warm_after_ms"] = statistics.median(w[0] for w in warm)
        # (B) asked after the reload: the next 1,000 steps appended, TensorBoard and the plugin's readers left to
        # read them (three reload intervals past TensorBoard holding the new last step), then one request
        t_append, c_append = time.perf_counter(), _cpu_s(pid)
        append(logs, ranks, steps + more, more)
        _wait_loaded(base, steps + 2 * more, timeout)
        time.sleep(RELOAD_INTERVAL)
        quiet = time.perf_counter() + timeout
        while time.perf_counter() < quiet:      # the reload is over when the server is idle again
            c0 = _cpu_s(pid)
            time.sleep(RELOAD_INTERVAL)
            if _cpu_s(pid) - c0 <= QUIET_CPU_S * RELOAD_INTERVAL:
                break
        out["reload_s"] = time.perf_counter() - t_append
        out["reload_cpu_ms"] = (_cpu_s(pid) - c_append) * 1000.0
        own = {}
        out["after_reload_ms"], out["after_reload_cpu_ms"], answer = _timed(url, pid, own)
        out["after_reload_own_cpu_ms"] = own["cpu_ms"]
        out["after_reload_fresh"] = newest_step(answer) == steps + 2 * more
        out["findings_after_reload"] = summary(answer)
        out["server_cpu_s"] = _cpu_s(pid)
        with open("/proc/%d/status" % pid) as f:
            out["server_rss_mb"] = next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmHWM"))
    return out


# ---------------------------------------------------------------------------------------------------------------
# In this process: reading vs judging
@contextlib.contextmanager
def _timing(module, name, into):
    """Adds the CPU seconds of this thread each call of ``module.name`` takes to ``into[name]`` while inside."""
    original = getattr(module, name)

    def wrapped(*a, **k):
        t0 = time.thread_time()
        try:
            return original(*a, **k)
        finally:
            into[name] = into.get(name, 0.0) + time.thread_time() - t0

    setattr(module, name, wrapped)
    try:
        yield
    finally:
        setattr(module, name, original)


def _rank_bytes():
    from tb_plugin_mindspore.sources import clusters
    return sum(r.bytes_read for data in clusters._HEALTH_REGISTRY._items.values() for r in data.ranks)


def _judged_in_checks():
    """Cluster-rule judgings done by the checks themselves (not ahead of them, by the rank files' reader)."""
    from tb_plugin_mindspore.health.rules import cluster as cluster_rules
    return cluster_rules.JUDGED.computed - cluster_rules.JUDGED.ahead


def in_process(logs, ranks, steps, more, repeat):
    """The health answer through TensorBoard's WSGI app here (Python loader): CPU seconds of the request's thread,
    split into reading and judging, and of the whole process meanwhile (its reader threads too)."""
    from tb_harness import App

    from tb_plugin_mindspore.answers import health as health_answer
    from tb_plugin_mindspore.health import engine
    from tb_plugin_mindspore.sources import clusters

    app = App(logs)
    app.wait_for_runs([RUN], timeout=900)
    plugin = next(p for p in app.wsgi._plugins if p.plugin_name == "mindspore")

    def loaded(step):
        deadline = time.time() + 900
        while time.time() < deadline:       # TensorBoard's Python loader read the event file to its end
            last = app.json("/data/plugin/scalars/scalars", run=RUN, tag="core/loss")
            if last and int(last[-1][1]) >= step:
                return
            time.sleep(0.5)
        raise AssertionError("step %d never loaded" % step)

    loaded(steps)

    def answer():
        split = {}
        judged0 = _judged_in_checks()
        with _timing(health_answer.health_sources, "read_runs", split), \
                _timing(health_answer.engine, "check_run", split):
            w0, c0, t0 = time.perf_counter(), time.process_time(), time.thread_time()
            got = app.plugin("/health", run=RUN)
            split.update(wall=time.perf_counter() - w0, cpu=time.process_time() - c0,
                         thread_cpu=time.thread_time() - t0)
        out = {k: v * 1000.0 for k, v in split.items()}
        out["judged_in_request"] = _judged_in_checks() - judged0
        return got, out

    out = {}
    got, split = answer()
    assert newest_step(got) == steps, summary(got)
    out["cold"] = split
    bytes_first = _rank_bytes()
    warm = []
    for _ in range(repeat):
        time.sleep(1.05)
        warm.append(answer()[1])
    out["warm"] = {k: statistics.median(w.get(k, 0.0) for w in warm) for k in ("wall", "cpu", "thread_cpu")}
    # (A) asked all along, from the append on
    appended = append(logs, ranks, steps, more)
    t_append = time.perf_counter()
    while time.perf_counter() - t_append < 900:
        time.sleep(0.2)
        got, split = answer()
        if newest_step(got) == steps + more:
            break
    out["after_append"] = split
    out["fresh_after_s"] = time.perf_counter() - t_append
    out["rank_bytes_first_read"] = bytes_first
    out["rank_bytes_after_append"] = _rank_bytes() - bytes_first
    out["rank_bytes_appended"] = appended
    out["findings_after"] = summary(got)
    # (B) asked after the reload: the next steps appended, read by TensorBoard and the plugin's readers, one request
    appended += append(logs, ranks, steps + more, more)
    loaded(steps + 2 * more)
    passes = clusters._HEALTH_REGISTRY.passes
    while clusters._HEALTH_REGISTRY.passes < passes + 2:    # two passes of the rank files' reader ended since
        time.sleep(0.1)
    time.sleep(RELOAD_INTERVAL)
    got, out["after_reload"] = answer()
    out["after_reload_fresh"] = newest_step(got) == steps + 2 * more
    out["findings_after_reload"] = summary(got)
    out["rank_bytes_after_reload"] = _rank_bytes() - bytes_first
    out["rank_bytes_appended_both"] = appended
    # each data rule over the series the answer judged, worked out again here (not the judged findings kept)
    entry = next(iter(plugin._health._entries._items.values()))[1]
    series = entry.series
    per_rule = {}
    with clusters.one_reload():
        for rule, cfg in engine.enabled_rules(None, engine.split_rules()[0]):
            t0 = time.thread_time()
            rule.fn(series, cfg)
            per_rule[rule.id] = (time.thread_time() - t0) * 1000.0
    out["rules_cpu_ms"] = dict(sorted(per_rule.items(), key=lambda kv: -kv[1])[:8])
    out["series_points"] = {t: int(s.steps.size) for t, s in sorted(series.scalars.items())}
    app.close()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--append", type=int, default=1000, help="steps appended to every rank and the event file")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--no-served", action="store_true", help="only the in-process figures")
    parser.add_argument("--no-in-process", action="store_true", help="only the served figures")
    parser.add_argument("--dir", default=None, help="where the temporary folder goes (default: the system's)")
    args = parser.parse_args(argv)
    figures = {"ranks": args.ranks, "steps": args.steps, "append": args.append,
               "load_average_start": os.getloadavg()[0]}
    tmp = tempfile.mkdtemp(prefix="health_scale_", dir=args.dir)
    try:
        logs = os.path.join(tmp, "logs")
        os.makedirs(logs)
        if not args.no_served:
            figures["write_s"], figures["bytes"] = write(logs, args.ranks, args.steps)
            figures["served"] = served(logs, args.ranks, args.steps, args.append, args.repeat, args.timeout)
            shutil.rmtree(logs)
            os.makedirs(logs)
        if not args.no_in_process:
            figures["write_s"], figures["bytes"] = write(logs, args.ranks, args.steps)
            figures["in_process"] = in_process(logs, args.ranks, args.steps, args.append, args.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures["load_average_end"] = os.getloadavg()[0]
    print("health route, %d ranks x %d steps (+%d), load average %.1f-%.1f" % (
        args.ranks, args.steps, args.append, figures["load_average_start"], figures["load_average_end"]))
    if "served" in figures:
        s = figures["served"]
        print("%-40s %10s %10s" % ("", "wall ms", "CPU ms (server process)"))
        print("%-40s %10.0f %10.0f" % ("served, cold", s["cold_ms"], s["cold_cpu_ms"]))
        print("%-40s %10.1f %10.1f" % ("served, warm (median)", s["warm_ms"], s["warm_cpu_ms"]))
        print("%-40s %10.0f %10.0f   (its own thread %.0f ms)" % (
            "served, after the reload (B)", s["after_reload_ms"], s["after_reload_cpu_ms"],
            s["after_reload_own_cpu_ms"]))
        print("%-40s %10.0f %10.0f" % ("served, first fresh while polling (A)", s["after_append_ms"],
                                        s["after_append_cpu_ms"]))
        print("  (A) fresh %.1f s after the append (%d requests, %.0f ms CPU in all, slowest %.0f ms; the server's "
              "CPU from the append to that answer %.0f ms); every point judged %.1f s after it (that request %.0f "
              "ms, CPU %.0f ms); (B) the reload took %.1f s and %.0f ms of the server's CPU, the answer was %s; "
              "findings: %s" % (
                  s["fresh_after_s"], s["polls"], s["polls_cpu_ms"], s["polls_max_ms"], s["append_to_fresh_cpu_ms"],
                  s["every_point_after_s"], s["every_point_ms"], s["every_point_cpu_ms"], s["reload_s"],
                  s["reload_cpu_ms"],
                  "fresh" if s["after_reload_fresh"] else "NOT FRESH", "; ".join(s["findings_after"])[:300]))
    if "in_process" in figures:
        p = figures["in_process"]
        print("%-40s %10s %10s %10s" % ("", "wall ms", "CPU ms", "thread CPU"))
        for phase, label in (("cold", "cold"), ("warm", "warm"), ("after_reload", "after the reload (B)"),
                             ("after_append", "first fresh while polling (A)")):
            ph = p[phase]
            print("%-40s %10.0f %10.0f %10.0f   reading %s ms, judging %s ms" % (
                "in process, " + label, ph["wall"], ph["cpu"], ph["thread_cpu"], "%.0f" % ph.get("read_runs", 0.0),
                "%.0f" % ph.get("check_run", 0.0)))
        print("  rank files: %d bytes read after the first read, %d appended; cluster rules judged in the request "
              "after the reload: %d (ahead of it: the rest)" % (
                  p["rank_bytes_after_reload"], p["rank_bytes_appended_both"],
                  p["after_reload"]["judged_in_request"]))
        print("  slowest data rules (CPU ms): %s" % ", ".join("%s %.0f" % kv for kv in p["rules_cpu_ms"].items()))
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
