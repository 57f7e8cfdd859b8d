"""Benchmark: zoom windows of a million-step series, and the server memory it takes, in real ``tensorboard``
processes on 127.0.0.1, side by side with stock TensorBoard (no MindSpore plugin) on the same data.

    python bench/long_series.py [--path DIR] [--points 1000000] [--load-fast true] [--reps 7]

Data (made once under ``--path``, reused): ``long/run``, one event per step with ``core/loss`` (a random walk with
20 single-step spikes x1000 and 5 NaNs) and its interval row (``interval/core/loss``, the callbacks' layout at
``collect_freq=1``): ``--points`` scalar points and as many interval rows. ``base/run``: 10 steps of the same.

Servers: ``ours``, ``tensorboard`` with this plugin (its default sample limits); ``stock``, the same TensorBoard
without any dynamic plugin (stock sample limits). Measured:

* memory: resident set of the server (and its data server) on ``base`` and on ``long`` once everything is loaded
  (for ``ours``: after the plugin has read the run, i.e. once its ``scalars`` answer counts every point); the
  difference per million steps; for ``ours`` also before the plugin reads the run (TensorBoard's own load), so
  the plugin's share per million stored points (scalar points and interval rows) is known;
* windows, interleaved between the servers, ``--reps`` times each, each time a new window (shifted by a few steps,
  so nothing comes from a cache): ours, ``scalars`` with ``x_min`` / ``x_max`` / ``width=800`` (``max_points``
  4002) for the whole run, 50 %, 1 %, 0.1 % and 0.01 % of it; whether the answer is
  exact (per pixel column the true first, last, min, max and first NaN of every point, checked here against the
  data); stock: its ``scalars`` route (no windows: the whole sample), and how many of the spikes and NaNs it shows.

Target (issue 18): any window <= 100 ms, memory <= 40 MB per million points. Prints a table, then one JSON line.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from server_load import Server, free_port, get  # noqa: E402

PREFIX = "/data/plugin/mindspore"
TAG = "core/loss"
WIDTH = 800
FRACTIONS = [1.0, 0.5, 0.01, 0.001, 0.0001]


def series_values(points, seed=0):
    rng = np.random.default_rng(seed)
    values = (2.0 + np.cumsum(rng.normal(size=points)) * 0.001).astype(np.float32)
    spikes = rng.choice(np.arange(10, points - 10), size=min(20, points // 20), replace=False)
    values[spikes] *= 1000.0
    nans = rng.choice(np.setdiff1d(np.arange(10, points - 10), spikes), size=min(5, points // 40), replace=False)
    values[nans] = np.nan
    return values, np.sort(spikes) + 1, np.sort(nans) + 1     # steps are 1-based


def write_run(folder, points):
    """One event file: per step ``core/loss`` and its interval row (metadata on the first event only)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from tb_plugin_mindspore.io import records
    from tb_plugin_mindspore.writing import summary

    os.makedirs(folder, exist_ok=True)
    values, _, _ = series_values(points)
    path = os.path.join(folder, "events.out.tfevents.%010d.bench.1.0" % 1700000000)
    with open(path, "wb") as f:
        f.write(records.frame(event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()))
        chunk = []
        for i, v in enumerate(values.tolist()):
            row = summary.interval(TAG, v - 0.1, v, v + 0.1, 1, 0 if math.isfinite(v) else 1)
            if i:
                row.ClearField("metadata")
            event = event_pb2.Event(wall_time=1.7e9 + 0.05 * i, step=i + 1, summary=summary_pb2.Summary(
                value=[summary_pb2.Summary.Value(tag=TAG, simple_value=v), row]))
            chunk.append(records.frame(event.SerializeToString()))
            if len(chunk) >= 10000:
                f.write(b"".join(chunk))
                chunk = []
        f.write(b"".join(chunk))


def make_data(path, points):
    for name, n in (("long", points), ("base", 10)):
        marker = os.path.join(path, name, ".done-%d" % n)
        if not os.path.exists(marker):
            write_run(os.path.join(path, name, "run"), n)
            open(marker, "w").close()


class StockServer(Server):
    """TensorBoard without dynamic plugins (so without this one and its sample limits)."""

    def __init__(self, logdir, load_fast, timeout=300):
        code = ("import sys; from tensorboard import default, program; "
                "tb = program.TensorBoard(plugins=default.get_plugins()); tb.configure(argv=sys.argv); "
                "sys.exit(tb.main())")
        self.port = free_port()
        cmd = [sys.executable, "-c", code, "--logdir", logdir, "--port", str(self.port), "--host", "127.0.0.1",
               "--load_fast", load_fast]
        self.log_path = os.path.join(os.path.dirname(os.path.abspath(logdir)), "stock-%d.log" % self.port)
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


def stock_scalars(base):
    status, ms, body = get(base, "/data/plugin/scalars/scalars", {"run": "run", "tag": TAG}, timeout=600)
    if status != 200:
        return None, ms
    return json.loads(body), ms


def ours_scalars(base, query):
    status, ms, body = get(base, PREFIX + "/scalars", dict(query, run="run", tag=TAG), timeout=600)
    if status != 200:
        raise RuntimeError("scalars answered %d: %s" % (status, body[:300]))
    return json.loads(body), ms


def wait_ours(server, points, timeout=1800):
    """Seconds until TensorBoard lists the last step and the plugin's answer counts every point."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            body, _ = ours_scalars(server.base, {"max_points": 10})
            if body["total_points"] == points:
                return time.time() - t0
        except (OSError, RuntimeError, ValueError, KeyError):
            pass
        time.sleep(1.0)
    raise RuntimeError("the plugin did not serve every point within %d s" % timeout)


def wait_stock(server, points, timeout=1800):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            body, _ = stock_scalars(server.base)
            if body and body[-1][1] >= points:
                return time.time() - t0
        except (OSError, ValueError):
            pass
        time.sleep(1.0)
    raise RuntimeError("stock TensorBoard did not load the run within %d s" % timeout)


def settle_rss(server, seconds=3.0):
    time.sleep(seconds)
    return server.rss()


def window_of(points, fraction, centre):
    """Steps ``[lo, hi]`` of a window holding ``fraction`` of the run around step ``centre``."""
    half = max(1, int(points * fraction / 2))
    lo = max(1, centre - half)
    return lo, min(points, lo + 2 * half - 1)


def exact(values, steps_kept, lo, hi, width):
    """Whether the kept steps hold, per pixel column of [lo, hi], its first, last, finite min / max and first NaN."""
    steps = np.arange(1, values.size + 1)
    kept = set(steps_kept)
    edges = lo + (hi - lo) * np.arange(1, width) / width
    i0, i1 = np.searchsorted(steps, lo), np.searchsorted(steps, hi, side="right")
    cuts = np.r_[i0, np.searchsorted(steps, edges), i1]
    for a, b in zip(cuts[:-1], cuts[1:]):
        if a == b:
            continue
        v = values[a:b].astype(np.float64)
        fin = np.isfinite(v)
        need = {a + 1, b}
        if fin.any():
            mine = [values[s - 1] for s in kept if a < s <= b and np.isfinite(values[s - 1])]
            if not mine or min(mine) != v[fin].min() or max(mine) != v[fin].max():
                return False
        if (~fin).any():
            need.add(a + 1 + int(np.argmax(~fin)))
        if not need <= kept:
            return False
    return True


def builder_cpu_ms(long_dir, windows, reps):
    """CPU milliseconds (``time.process_time``: what the answer costs, not how busy the machine is) of building,
    encoding and compressing each window's answer in this process, from the plugin's own read of the run."""
    from tb_plugin_mindspore.answers import encode
    from tb_plugin_mindspore.answers import scalars as scalar_answer
    from tb_plugin_mindspore.sources import event_series
    from tb_plugin_mindspore.sources.logdir import band_of_rows

    events = event_series.EventSeries(long_dir)
    events.want("run")
    while events.sync("run", wait=None):
        pass
    steps, walls, values, pyr = events.series("run", TAG).final()
    isteps, _, rows, _ = events.interval("run", TAG).final()
    series = scalar_answer.Timeline(steps, walls, values, pyr, band=band_of_rows(isteps, rows))
    out = {}
    for f, (lo, hi) in windows:
        times = []
        for rep in range(reps):
            t0 = time.process_time()
            body = scalar_answer.body("run", TAG, series, 5 * WIDTH + 2,
                                      scalar_answer.Window(lo + 7 * rep, hi + 7 * rep, WIDTH))
            encode.Gzipped(encode.dumps(body))
            times.append((time.process_time() - t0) * 1000)
        out[f] = statistics.median(times)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", default=os.path.join(tempfile.gettempdir(), "tb_ms_long_series"))
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--load-fast", default="true", choices=["true", "false"])
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()

    t0 = time.time()
    make_data(args.path, args.points)
    made_s = time.time() - t0
    values, spikes, nans = series_values(args.points)
    long_dir, base_dir = os.path.join(args.path, "long"), os.path.join(args.path, "base")

    memory = {}
    for name, cls in (("ours", Server), ("stock", StockServer)):
        kwargs = {"load_fast": args.load_fast}
        with (cls(base_dir, **kwargs)) as s:
            (wait_ours if name == "ours" else wait_stock)(s, 10)
            memory[name] = {"base_mb": settle_rss(s)}

    ours = Server(long_dir, args.load_fast, timeout=300)
    stock = StockServer(long_dir, args.load_fast)
    try:
        load = {"stock_s": wait_stock(stock, args.points)}
        # TensorBoard's own load (its scalars route), before the plugin is asked for the run:
        load["ours_tensorboard_s"] = wait_stock(ours, args.points)
        memory["ours"]["tensorboard_only_mb"] = settle_rss(ours)
        load["ours_plugin_s"] = wait_ours(ours, args.points)
        memory["ours"]["long_mb"] = settle_rss(ours)
        memory["stock"]["long_mb"] = settle_rss(stock)
        for m in memory.values():
            m["per_million_points_mb"] = (m["long_mb"] - m["base_mb"]) / (args.points / 1e6)
        # The plugin's own share: what reading the run added to the process, per million stored points (the
        # scalar points and as many interval rows).
        memory["ours"]["plugin_mb"] = memory["ours"]["long_mb"] - memory["ours"]["tensorboard_only_mb"]
        memory["ours"]["plugin_per_million_points_mb"] = memory["ours"]["plugin_mb"] / (2 * args.points / 1e6)

        centre = int(spikes[len(spikes) // 2])
        windows = [window_of(args.points, f, centre) for f in FRACTIONS]
        times = {f: [] for f in FRACTIONS}
        stock_times, answers = [], {}
        for rep in range(args.reps):
            for f, (lo, hi) in zip(FRACTIONS, windows):
                # A new window every time (shifted by a few steps, or one column narrower), so no answer is cached.
                shift = 0 if f == 1.0 else 7 * rep
                width = WIDTH - rep if f == 1.0 else WIDTH
                lo, hi = lo + shift, hi + shift
                body, ms = ours_scalars(ours.base, {"x_min": lo, "x_max": hi, "width": width,
                                                    "max_points": 5 * WIDTH + 2})
                times[f].append(ms)
                answers[f] = (body, lo, hi)
            body, ms = stock_scalars(stock.base)
            stock_times.append(ms)
            stock_body = body
    finally:
        ours.close()
        stock.close()

    load_average = os.getloadavg()[0]
    cpu = builder_cpu_ms(long_dir, list(zip(FRACTIONS, windows)), args.reps)
    stock_steps = {int(row[1]) for row in stock_body or []}
    stock_nan = sum(1 for row in stock_body or [] if isinstance(row[2], str) or not math.isfinite(row[2]))
    rows = []
    for f in FRACTIONS:
        body, lo, hi = answers[f]
        kept = [p[0] for p in body["points"]]
        rows.append({"window": "%g%%" % (100 * f), "steps": [lo, hi], "inside": body["window"]["points_inside"],
                     "points": len(kept), "median_ms": statistics.median(times[f]), "max_ms": max(times[f]),
                     "cpu_ms": cpu[f],
                     "exact": exact(values, kept, lo, hi, body["window"]["width"]),
                     "spikes_in_window": int(((spikes >= lo) & (spikes <= hi)).sum()),
                     "spikes_kept": int(sum(1 for s in spikes if lo <= s <= hi and s in set(kept)))})
    stock_row = {"points": len(stock_body or []), "median_ms": statistics.median(stock_times),
                 "max_ms": max(stock_times), "spikes_kept": int(sum(1 for s in spikes if s in stock_steps)),
                 "nans_kept": stock_nan}

    print("data: %d points of %s + %d interval rows (written in %.0f s); loader --load_fast=%s"
          % (args.points, TAG, args.points, made_s, args.load_fast))
    print("load: stock %.0f s; ours: TensorBoard %.0f s, then the plugin's own read %.0f s"
          % (load["stock_s"], load["ours_tensorboard_s"], load["ours_plugin_s"]))
    print("%-8s %10s %10s %12s" % ("memory", "base MB", "long MB", "MB/M steps"))
    for name, m in memory.items():
        print("%-8s %10.0f %10.0f %12.1f" % (name, m["base_mb"], m["long_mb"], m["per_million_points_mb"]))
    print("ours: %.0f MB once TensorBoard had loaded the run; the plugin's read added %.0f MB = %.1f MB per million "
          "stored points" % (memory["ours"]["tensorboard_only_mb"], memory["ours"]["plugin_mb"],
                             memory["ours"]["plugin_per_million_points_mb"]))
    print("windows over HTTP, load average %.1f on %d cores; cpu ms: building + encoding the answer in-process"
          % (load_average, os.cpu_count()))
    print("%-8s %-20s %9s %7s %10s %8s %7s %6s %7s" % ("window", "steps", "inside", "points", "median ms", "max ms",
                                                         "cpu ms", "exact", "spikes"))
    for r in rows:
        print("%-8s %-20s %9d %7d %10.1f %8.1f %7.1f %6s %3d/%-3d" % (
            r["window"], "%d-%d" % tuple(r["steps"]), r["inside"], r["points"], r["median_ms"], r["max_ms"],
            r["cpu_ms"], r["exact"], r["spikes_kept"], r["spikes_in_window"]))
    print("stock scalars route: %d points, median %.1f ms, max %.1f ms, %d of %d spikes, %d of %d NaNs"
          % (stock_row["points"], stock_row["median_ms"], stock_row["max_ms"], stock_row["spikes_kept"], len(spikes),
             stock_row["nans_kept"], len(nans)))
    print(json.dumps({"points": args.points, "load_fast": args.load_fast, "load_average": load_average,
                      "load": load, "memory": memory,
                      "windows": rows, "stock": stock_row, "spikes": len(spikes), "nans": len(nans)}))


if __name__ == "__main__":
    main()
