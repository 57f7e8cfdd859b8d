"""Benchmark: the MindSpore tab's server under load, in real ``tensorboard`` processes on 127.0.0.1.

    python bench/server_load.py [--path DIR] [--loaders false,true] [--clients 50] [--seconds 60]
                                [--big-steps 100000] [--big-tags 30] [--small-runs 200] [--keep-all]

Data (made once under ``--path/data``, reused; the ``live`` run is new on every start):

* ``big/big``: one run of ``--big-steps`` steps x ``--big-tags`` scalar tags (5 ``core/*``, the rest
  ``diagnostic/*``) with interval statistics for ``core/loss``, ``core/grad_norm``, ``core/step_time_ms`` at every
  step (a spike and a NaN hidden in the interval rows);
* ``many/run_NNN``: ``--small-runs`` small runs, 500 steps each: ``core/loss``, ``core/learning_rate``,
  ``core/grad_norm`` with their interval rows, and a ``debug/update_ratio`` vector of 8 layers every 10 steps;
* ``live``: a run a writer thread appends to during the load (10 points a second), so cached answers go stale.

Per loader (``--load_fast=false``: TensorBoard's Python loader; ``true``: its Rust data server), one
``tensorboard`` process over the whole data folder, with the plugin's default sample limits (``--keep-all``:
``--samples_per_plugin scalars=1000000,mindspore=0``, every point in memory):

* ``health`` of the big run: cold (first call after loading) and warm (median of 5); ``health`` of every run
  (the small runs' first call, then warm); ``scalars_batch`` of the big run's tags, cold and warm;
* load, once every route and every small run's series, health and layers were asked once (the caches filled):
  ``--clients`` threads for ``--seconds`` s, each looping over a mix of routes (runs, tags, status,
  scalars_batch of the big run and of small runs, scalars, health of every run / the big run / a small run,
  layers), one request at a time, 30 s timeout: requests, errors, p50 / p99 overall and per route;
* server memory (resident set of ``tensorboard`` plus its data server): after loading, before the load (every
  route answered once), the peak during it, and after it;
* server CPU (user + system of ``tensorboard`` and its data server, from /proc): per route asked alone
  (``--route-cpu N`` requests each, one at a time, before the load: milliseconds of server CPU per request, which
  other processes' load does not inflate, so the slow routes can be found on a busy machine), and for the whole
  load (requests per CPU second).

``--soak SECONDS``: instead, one run is written for that long (``--soak-rate`` recorded steps a second, the
callbacks' layout) while, per loader, one ``tensorboard`` with the plugin's sample limits and one keeping every
point read it; their memory is sampled every 10 s.

Targets (issue 14): health of 100,000 steps x 30 tags warm <= 300 ms, cold <= 3 s; 200 runs warm <= 1 s; load:
0 errors, p99 <= 2 s, memory after within 20 % of before. Issue 34, on a quiet 2-core machine: every route's p99
<= 1 s under the load, 0 errors, memory after <= 1.05 x before, both loaders. Prints a table, then, as the last line, one JSON object.
"""

import argparse
import gzip
import json
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

PREFIX = "/data/plugin/mindspore"
CORE = ["core/loss", "core/learning_rate", "core/grad_norm", "core/step_time_ms", "core/throughput"]
INTERVAL_TAGS = ["core/loss", "core/grad_norm", "core/step_time_ms"]
SMALL_TAGS = ["core/loss", "core/learning_rate", "core/grad_norm"]
SMALL_STEPS = 500
SMALL_LAYERS = ["layer%d.weight" % i for i in range(8)]
KEEP_ALL = "scalars=1000000,mindspore=0"
BIG_RUN = "big/big"


def big_tags(n):
    return (CORE + ["diagnostic/metric_%02d" % i for i in range(max(0, n - len(CORE)))])[:n]


# -- data ---------------------------------------------------------------------------------------------------------
def _event(step, values, wall):
    from tensorboard.compat.proto import event_pb2, summary_pb2

    return event_pb2.Event(wall_time=wall, step=step, summary=summary_pb2.Summary(value=values))


def write_big(folder, steps, ntags):
    """One event per step: every scalar tag and 3 interval rows (metadata on the first event only, as our writer
    does). ``core/loss`` has 20 single-step spikes; step ``steps // 3`` holds a NaN only its interval row knows."""
    import numpy as np
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from tb_plugin_mindspore.writing import summary

    tags = big_tags(ntags)
    os.makedirs(folder, exist_ok=True)
    w = EventFileWriter(folder, max_queue_size=10000, flush_secs=120)
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.05, size=(steps, len(tags)))
    spikes = set(rng.integers(1, steps, size=20).tolist())
    for s in range(1, steps + 1):
        values = []
        for k, tag in enumerate(tags):
            v = 2.0 / math.sqrt(s) + 0.1 * k + noise[s - 1, k]
            if tag == "core/loss" and s in spikes:
                v *= 1000.0
            values.append(summary_pb2.Summary.Value(tag=tag, simple_value=float(v)))
        for tag in INTERVAL_TAGS:
            row = summary.interval(tag, 0.9, 1.0, 1.1, 10, 1 if s == steps // 3 else 0)
            if s > 1:
                row.ClearField("metadata")
            values.append(row)
        w.add_event(_event(s, values, 1.7e9 + 0.1 * s))
    w.close()


def write_small(folder, index, steps=SMALL_STEPS):
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from tb_plugin_mindspore.writing import summary

    os.makedirs(folder, exist_ok=True)
    w = EventFileWriter(folder, max_queue_size=10000, flush_secs=120)
    for s in range(1, steps + 1):
        loss = 3.0 * math.exp(-s / 200.0) + 0.01 * index
        values = [summary_pb2.Summary.Value(tag="core/loss", simple_value=loss),
                  summary_pb2.Summary.Value(tag="core/learning_rate", simple_value=1e-3),
                  summary_pb2.Summary.Value(tag="core/grad_norm", simple_value=1.0 + 0.001 * s)]
        for tag in SMALL_TAGS:
            row = summary.interval(tag, 0.5, 1.0, 1.5, 10, 0)
            if s > 1:
                row.ClearField("metadata")
            values.append(row)
        if s % 10 == 0:
            values.append(summary.layers("debug/update_ratio", SMALL_LAYERS,
                                         [1e-3 * (1 + i) for i in range(len(SMALL_LAYERS))]))
        w.add_event(_event(s, values, 1.7e9 + s))
    w.close()


def make_data(path, big_steps, ntags, small_runs):
    """Writes what is missing under ``path``; returns ``{part: seconds}`` of what was written."""
    made = {}
    marker = os.path.join(path, "big", ".done-%d-%d" % (big_steps, ntags))
    if not os.path.exists(marker):
        shutil.rmtree(os.path.join(path, "big"), ignore_errors=True)
        t0 = time.time()
        write_big(os.path.join(path, BIG_RUN), big_steps, ntags)
        open(marker, "w").close()
        made["big"] = round(time.time() - t0, 1)
    t0 = time.time()
    for i in range(small_runs):
        folder = os.path.join(path, "many", "run_%03d" % i)
        if not os.path.isdir(folder) or not os.listdir(folder):
            write_small(folder, i)
    made["many"] = round(time.time() - t0, 1)
    return made


class LiveWriter:
    """Appends to the run ``live`` at ``rate`` points a second (loss with its interval row) until stopped."""

    def __init__(self, path, rate=10.0):
        self.folder = os.path.join(path, "live")
        shutil.rmtree(self.folder, ignore_errors=True)
        self.rate = rate
        self.points = 0
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        from tb_plugin_mindspore.writing.writer import SummaryWriter

        self._writer = SummaryWriter(self.folder, flush_secs=1.0)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.points += 1
            s = self.points
            self._writer.scalar("core/loss", 1.0 / s, s)
            self._writer.interval("core/loss", 0.5 / s, 1.0 / s, 2.0 / s, 10, 0, s)
            self._stop.wait(1.0 / self.rate)

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._writer.close()


# -- the server ---------------------------------------------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tree(pid):
    """``pid`` and all its descendants, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def rss_mb(pid):
    """Resident memory of ``pid`` and all its descendants (MB), from /proc."""
    total = 0
    for p in _tree(pid):
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024.0


def cpu_seconds(pid):
    """CPU time (user + system) used so far by ``pid`` and all its descendants, from /proc (the Rust data server
    of ``--load_fast=true`` is a child of ``tensorboard``)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in _tree(pid):
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / tick


class Server:
    """A real ``tensorboard`` process on 127.0.0.1 over ``logdir``."""

    def __init__(self, logdir, load_fast, extra=(), timeout=120, reload_interval=5):
        self.port = free_port()
        exe = os.path.join(os.path.dirname(sys.executable), "tensorboard")
        cmd = [exe, "--logdir", logdir, "--port", str(self.port), "--host", "127.0.0.1",
               "--reload_interval", str(reload_interval),
               "--load_fast", load_fast] + list(extra)
        self.log_path = os.path.join(os.path.dirname(os.path.abspath(logdir)), "tensorboard-%d.log" % self.port)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT)
        self.base = "http://127.0.0.1:%d" % self.port
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("tensorboard exited with %s; see %s" % (self.proc.returncode, self.log_path))
            try:
                get(self.base, "/data/plugins_listing", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    self.close()
                    raise RuntimeError("tensorboard did not answer within %d s" % timeout)
                time.sleep(0.3)

    def rss(self):
        return rss_mb(self.proc.pid)

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def get(base, route, query=None, timeout=30):
    """``(status, milliseconds, decoded body)`` of one GET with gzip accepted; HTTP errors are returned."""
    url = base + route
    if query:
        url += "?" + urllib.parse.urlencode(query, doseq=True)
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body, status, encoding = r.read(), r.status, r.headers.get("Content-Encoding")
    except urllib.error.HTTPError as e:
        body, status, encoding = e.read(), e.code, e.headers.get("Content-Encoding")
    ms = (time.perf_counter() - t0) * 1000
    return status, ms, (gzip.decompress(body) if encoding == "gzip" else body)


def get_json(base, route, query=None, timeout=600):
    status, ms, body = get(base, PREFIX + route, query, timeout=timeout)
    if status != 200:
        raise RuntimeError("%s answered %d: %s" % (route, status, body[:300]))
    return ms, json.loads(body)


def wait_loaded(base, big_steps, small_runs, timeout=1800):
    """Seconds until every run is listed and the big run's last step is served."""
    t0 = time.time()
    while True:
        try:
            _, runs = get_json(base, "/runs", timeout=60)
            have = set(runs["runs"])
            small = sum(1 for r in have if r.startswith("many/"))
            if BIG_RUN in have and "live" in have and small >= small_runs:
                _, body = get_json(base, "/scalars", {"run": BIG_RUN, "tag": "core/loss", "max_points": 10})
                if body["points"] and body["points"][-1][0] >= big_steps:
                    return time.time() - t0
        except (OSError, RuntimeError, ValueError, KeyError):
            pass
        if time.time() - t0 > timeout:
            raise RuntimeError("the data was not loaded within %d s" % timeout)
        time.sleep(1.0)


# -- load ---------------------------------------------------------------------------------------------------------
def request_mix(tags, small_runs):
    """``[(name, route, query factory)]`` the clients pick from at random."""
    small = ["many/run_%03d" % i for i in range(small_runs)]

    def one_small():
        return random.choice(small)

    return [
        ("runs", "/runs", lambda: None),
        ("tags", "/tags", lambda: None),
        ("status", "/status", lambda: None),
        ("scalars_batch big", "/scalars_batch", lambda: {"run": BIG_RUN, "tag": tags, "max_points": 2000}),
        ("scalars_batch small", "/scalars_batch",
         lambda: {"run": random.sample(small, min(4, len(small))), "tag": SMALL_TAGS, "max_points": 2000}),
        ("scalars", "/scalars", lambda: {"run": one_small(), "tag": "core/loss"}),
        ("health all", "/health", lambda: None),
        ("health big", "/health", lambda: {"run": BIG_RUN}),
        ("health small", "/health", lambda: {"run": one_small()}),
        ("layers", "/layers", lambda: {"run": one_small(), "tag": "debug/update_ratio"}),
        ("health live", "/health", lambda: {"run": "live"}),
    ]


def warm_up(base, mix, small_runs):
    """Every route once, and the series and health of every small run: "before" holds what the caches keep, and
    the load measures the server with its caches filled (the first answers are the cold figures above)."""
    for _, route, query in mix:
        get(base, PREFIX + route, query(), timeout=600)
    small = ["many/run_%03d" % i for i in range(small_runs)]
    for i in range(0, len(small), 50):
        get(base, PREFIX + "/scalars_batch", {"run": small[i:i + 50], "tag": SMALL_TAGS, "max_points": 2000},
            timeout=600)
    for run in small:
        for route, query in (("/health", {"run": run}), ("/scalars", {"run": run, "tag": "core/loss"}),
                             ("/layers", {"run": run, "tag": "debug/update_ratio"})):
            get(base, PREFIX + route, query, timeout=600)


def route_cpu(server, mix, requests):
    """Server CPU milliseconds per request of each route of the mix, asked alone, one request at a time
    (``requests`` times each, caches filled): what a route costs the server whatever else loads the machine. Under
    load the latency of every route grows with the CPU all requests together ask for, so the expensive routes
    show here first."""
    out = {}
    for name, route, query in mix:
        cpu, t0 = server.cpu(), time.perf_counter()
        for _ in range(requests):
            get(server.base, PREFIX + route, query(), timeout=120)
        out[name] = {"cpu_ms": round(1000.0 * (server.cpu() - cpu) / requests, 1),
                     "wall_ms": round(1000.0 * (time.perf_counter() - t0) / requests, 1)}
    return out


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(math.ceil(q / 100.0 * len(values))) - 1)]


def run_load(server, clients, seconds, mix, sample_every=0.5):
    """``clients`` threads for ``seconds`` s; returns latencies per route, errors and memory samples."""
    deadline = time.time() + seconds
    lat = {name: [] for name, _, _ in mix}
    errors = []
    lock = threading.Lock()

    def client(seed):
        rnd = random.Random(seed)
        while time.time() < deadline:
            name, route, query = mix[rnd.randrange(len(mix))]
            try:
                status, ms, body = get(server.base, PREFIX + route, query(), timeout=30)
                ok = status == 200 and (body[:1] in (b"{", b"["))
            except OSError as e:
                status, ms, ok = type(e).__name__, 30000.0, False
            with lock:
                lat[name].append(ms)
                if not ok:
                    errors.append((name, status))

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    rss = []
    while any(t.is_alive() for t in threads):
        rss.append(server.rss())
        time.sleep(sample_every)
    for t in threads:
        t.join()
    return lat, errors, rss


# -- one loader ---------------------------------------------------------------------------------------------------
def measure(data, loader, args):
    tags = big_tags(args.big_tags)
    extra = ["--samples_per_plugin", KEEP_ALL] if args.keep_all else []
    live = LiveWriter(data).start()   # listed from the start; cached answers of it go stale all along
    out = {"loader": loader, "samples": KEEP_ALL if args.keep_all else "plugin defaults"}
    with Server(data, loader, extra, reload_interval=args.reload_interval) as server:
        out["load_s"] = round(wait_loaded(server.base, args.big_steps, args.small_runs), 1)
        out["rss_loaded_mb"] = round(server.rss(), 1)
        time.sleep(1.2)   # the provider listings the loading polls left behind expire
        out["health_big_cold_ms"], body = get_json(server.base, "/health", {"run": BIG_RUN})
        out["health_big_findings"] = sorted({f["rule"] for f in body["runs"][0]["findings"]})
        out["health_big_warm_ms"] = [get_json(server.base, "/health", {"run": BIG_RUN})[0] for _ in range(args.reps)]
        out["health_all_cold_ms"], body = get_json(server.base, "/health")
        out["health_all_runs"] = len(body["runs"])
        out["health_all_warm_ms"] = [get_json(server.base, "/health")[0] for _ in range(args.reps)]
        time.sleep(1.2)
        out["health_big_revalidated_ms"] = get_json(server.base, "/health", {"run": BIG_RUN})[0]
        q = {"run": BIG_RUN, "tag": tags, "max_points": 2000}
        out["batch_big_cold_ms"], body = get_json(server.base, "/scalars_batch", q)
        out["batch_big_total_points"] = body["series"][0]["total_points"]
        out["batch_big_warm_ms"] = [get_json(server.base, "/scalars_batch", q)[0] for _ in range(args.reps)]
        mix = [m for m in request_mix(tags, args.small_runs) if m[0] not in args.skip_routes]
        warm_up(server.base, mix, args.small_runs)
        time.sleep(2)
        if args.route_cpu:
            out["route_cpu"] = route_cpu(server, mix, args.route_cpu)
        out["rss_before_mb"] = round(server.rss(), 1)
        cpu = server.cpu()
        lat, errors, rss = run_load(server, args.clients, args.seconds, mix)
        out["load_cpu_s"] = round(server.cpu() - cpu, 1)
        live.stop()
        time.sleep(args.settle)
        out["rss_during_max_mb"] = round(max(rss), 1) if rss else None
        out["rss_during_mb"] = [round(v) for v in rss[::max(1, len(rss) // 30)]]     # its course, ~30 samples
        out["rss_after_mb"] = round(server.rss(), 1)
        out["live_points"] = live.points
    every = [ms for values in lat.values() for ms in values]
    out.update(requests=len(every), errors=len(errors), error_samples=errors[:10], clients=args.clients,
               seconds=args.seconds, p50_ms=percentile(every, 50), p99_ms=percentile(every, 99),
               routes={name: {"n": len(v), "p50_ms": percentile(v, 50), "p99_ms": percentile(v, 99)}
                       for name, v in lat.items()})
    for key in ("health_big_cold_ms", "health_all_cold_ms", "health_big_revalidated_ms", "batch_big_cold_ms",
                "p50_ms", "p99_ms"):
        out[key] = round(out[key], 1) if out[key] is not None else None
    for key in ("health_big_warm_ms", "health_all_warm_ms", "batch_big_warm_ms"):
        out[key] = [round(x, 1) for x in out[key]]
    for v in out["routes"].values():
        v["p50_ms"] = round(v["p50_ms"], 1) if v["p50_ms"] is not None else None
        v["p99_ms"] = round(v["p99_ms"], 1) if v["p99_ms"] is not None else None
    out["rss_after_vs_before"] = round(out["rss_after_mb"] / out["rss_before_mb"], 3)
    return out


def print_table(results, args):
    med = statistics.median
    rows = []
    for r in results:
        L = "[load_fast=%s, %s] " % (r["loader"], r["samples"])
        rows += [
            (L + "data loaded (s)", "%.1f" % r["load_s"], ""),
            (L + "health %s, %d steps x %d tags: cold (ms)" % (BIG_RUN, args.big_steps, args.big_tags),
             "%.1f" % r["health_big_cold_ms"], "<= 3000"),
            (L + "health %s: warm (ms)" % BIG_RUN, "median %.1f" % med(r["health_big_warm_ms"]), "<= 300"),
            (L + "health %s: revalidated after 1.2 s (ms)" % BIG_RUN, "%.1f" % r["health_big_revalidated_ms"], ""),
            (L + "health of all %d runs: first call (ms)" % r["health_all_runs"], "%.1f" % r["health_all_cold_ms"],
             ""),
            (L + "health of all %d runs: warm (ms)" % r["health_all_runs"], "median %.1f" % med(
                r["health_all_warm_ms"]), "<= 1000"),
            (L + "scalars_batch %s, %d tags: cold / warm (ms)" % (BIG_RUN, args.big_tags), "%.1f / %.1f" % (
                r["batch_big_cold_ms"], med(r["batch_big_warm_ms"])), ""),
            (L + "load: %d clients x %d s: requests / errors" % (r["clients"], r["seconds"]),
             "%d / %d" % (r["requests"], r["errors"]), "errors 0"),
            (L + "load: p50 / p99 (ms)", "%.1f / %.1f" % (r["p50_ms"], r["p99_ms"]), "p99 <= 1000"),
            (L + "load: server CPU (s) / requests per CPU second", "%.1f / %.1f" % (
                r["load_cpu_s"], r["requests"] / r["load_cpu_s"] if r["load_cpu_s"] else float("nan")), ""),
            (L + "memory (MB): loaded / before / max during / after", "%.0f / %.0f / %.0f / %.0f" % (
                r["rss_loaded_mb"], r["rss_before_mb"], r["rss_during_max_mb"], r["rss_after_mb"]),
             "after <= 1.05 x before (%.3f)" % r["rss_after_vs_before"]),
        ]
        alone = r.get("route_cpu", {})
        for name, v in r["routes"].items():
            cpu = alone.get(name)
            rows.append((L + "  %s: n / p50 / p99 (ms)%s" % (name, " / CPU ms alone" if cpu else ""),
                         "%d / %s / %s%s" % (v["n"], v["p50_ms"], v["p99_ms"], " / %s" % cpu["cpu_ms"] if cpu else ""),
                         "p99 <= 1000"))
    width = max(len(row[0]) for row in rows)
    print("%-*s  %-30s %s" % (width, "figure", "measured", "target"))
    for row in rows:
        print("%-*s  %-30s %s" % (width, row[0], row[1], row[2]))


# -- memory while a run grows -------------------------------------------------------------------------------------
SOAK_SCALARS = CORE
SOAK_INTERVALS = ["core/loss", "core/grad_norm", "core/step_time_ms"]


def soak(path, loaders, seconds, rate, sample_every=10.0):
    """One run written at ``rate`` recorded steps a second for ``seconds`` s (5 scalars and 3 interval rows a step,
    one value per event as the callbacks write them), read at the same time by a ``tensorboard`` per loader with
    the plugin's sample limits and one with every point kept. Returns the memory samples of each server."""
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    logdir = os.path.join(path, "soak")
    shutil.rmtree(logdir, ignore_errors=True)
    os.makedirs(os.path.join(logdir, "run"))
    servers = {}
    for loader in loaders:
        servers[(loader, "plugin defaults")] = Server(logdir, loader)
        servers[(loader, "keep all")] = Server(logdir, loader, ["--samples_per_plugin",
                                                                "scalars=100000000,mindspore=0"])
    samples = {key: [] for key in servers}
    step = 0
    t0 = time.time()
    next_sample = t0
    try:
        with SummaryWriter(os.path.join(logdir, "run"), max_queue=100000, flush_secs=1.0) as w:
            while time.time() - t0 < seconds:
                target = int((time.time() - t0) * rate)
                while step < target:
                    step += 1
                    loss = 2.0 / math.sqrt(step)
                    for k, tag in enumerate(SOAK_SCALARS):
                        w.scalar(tag, loss + k, step)
                    for tag in SOAK_INTERVALS:
                        w.interval(tag, 0.9 * loss, loss, 1.1 * loss, 10, 0, step)
                if time.time() >= next_sample:
                    next_sample += sample_every
                    for key, server in servers.items():
                        samples[key].append((round(time.time() - t0, 1), step, round(server.rss(), 1)))
                time.sleep(0.05)
            dropped = w.dropped
        time.sleep(sample_every)
        for key, server in servers.items():
            samples[key].append((round(time.time() - t0, 1), step, round(server.rss(), 1)))
            try:
                _, body = get_json(server.base, "/scalars", {"run": "run", "tag": "core/loss", "max_points": 10},
                                   timeout=60)
                samples[key].append(("loaded", body["points"][-1][0], body["total_points"]))
            except (OSError, RuntimeError, ValueError, KeyError, IndexError) as e:
                samples[key].append(("loaded", None, type(e).__name__))
            samples[key].append(("writer dropped", dropped))
    finally:
        for server in servers.values():
            server.close()
    return {"%s / %s" % key: v for key, v in samples.items()}, step


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default=os.path.join(tempfile.gettempdir(), "tb-mindspore-bench", "server_load"),
                        help="folder for the generated event files (kept and reused)")
    parser.add_argument("--loaders", default="false,true", help="values of --load_fast to measure, comma-separated")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--big-steps", type=int, default=100_000)
    parser.add_argument("--big-tags", type=int, default=30)
    parser.add_argument("--small-runs", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--reload-interval", type=int, default=5, help="tensorboard's --reload_interval")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds between the load and 'after'")
    parser.add_argument("--soak", type=float, default=0.0,
                        help="instead of the load: write one run for this many seconds and sample server memory")
    parser.add_argument("--soak-rate", type=float, default=200.0, help="recorded steps a second in --soak")
    parser.add_argument("--skip-routes", type=lambda v: [x.strip() for x in v.split(",") if x.strip()], default=[],
                        help="names of the mix to leave out of the load, comma-separated (e.g. 'status')")
    parser.add_argument("--route-cpu", type=int, default=10,
                        help="before the load, ask each route of the mix alone this many times and report the "
                             "server's CPU ms per request (0: skip)")
    parser.add_argument("--keep-all", action="store_true",
                        help="--samples_per_plugin %s (every point in memory)" % KEEP_ALL)
    args = parser.parse_args(argv)
    for name in ("clients", "seconds", "big_steps", "big_tags", "small_runs", "reps"):
        if getattr(args, name) <= 0:
            parser.error("--%s must be positive" % name.replace("_", "-"))
    if args.big_tags < len(INTERVAL_TAGS):
        parser.error("--big-tags must be at least %d" % len(INTERVAL_TAGS))
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.soak > 0:
        samples, steps = soak(args.path, args.loaders.split(","), args.soak, args.soak_rate)
        for key, rows in samples.items():
            print("%-32s %s" % (key, "  ".join("%s s/%s: %s" % row for row in rows)))
        print(json.dumps({"soak_s": args.soak, "steps": steps, "samples": samples}))
        return
    data = os.path.join(args.path, "data")
    made = make_data(data, args.big_steps, args.big_tags, args.small_runs)
    results = [measure(data, loader, args) for loader in args.loaders.split(",")]
    print_table(results, args)
    print(json.dumps({"generated_s": made, "args": vars(args), "results": results}))


if __name__ == "__main__":
    main()
