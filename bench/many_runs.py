"""Benchmark: a logdir of many runs (issue 18 item 2, backend part): the ``runs`` and ``tags`` routes of the
MindSpore tab next to TensorBoard's own ``/data/runs`` and ``/data/plugin/scalars/tags``, in the same real
``tensorboard`` process on the same data; and ``tb-mindspore check`` on that logdir with one process and with a
pool over every core.

    python bench/many_runs.py [--runs 2000] [--tags 20] [--points 50] [--loaders false,true] [--reps 5]
                              [--check-reps 2] [--path DIR]

The logdir is ``bench/many_runs_ui.py``'s (``--runs`` runs x ``--tags`` scalar tags of ``--points`` points, run
information with hyperparameters), made once under ``--path``. Per loader (``--load_fast``), once TensorBoard lists
every run:

* ``cold``: the first request of each route; ``fresh``: median over ``--reps`` rounds, each after the plugin's 1 s
  listing memo expired (the provider is asked again: what a user's periodic refresh costs); ``warm``: the same
  request again at once. Routes are interleaved round by round. Target: ``runs`` and ``tags`` <= 1 s.

``check``: ``--check-reps`` rounds, one process (``jobs=1``) and the pool (every core) interleaved, each in a fresh
Python process (imports included); wall time, CPU time of the process and its children, and cores used = CPU / wall.

Prints a table, then, as the last line, one JSON object with every figure.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from tb_harness import fetch_json, tensorboard_process  # noqa: E402

ROUTES = (("ours runs", "/data/plugin/mindspore/runs"), ("stock runs", "/data/runs"),
          ("ours tags", "/data/plugin/mindspore/tags"), ("stock scalars tags", "/data/plugin/scalars/tags"))


def make_logdir(path, runs, tags, points):
    """The logdir (made once; a marker file says with which sizes)."""
    import many_runs_ui

    logdir = os.path.join(path, "many_%d_%d_%d" % (runs, tags, points))
    marker = os.path.join(path, "many_%d_%d_%d.done" % (runs, tags, points))
    if not os.path.exists(marker):
        t0 = time.time()
        many_runs_ui.write_runs(logdir, runs=runs, tags=tags, points=points)
        open(marker, "w").close()
        print("wrote %d runs in %.0f s" % (runs, time.time() - t0), file=sys.stderr)
    return logdir


def get_ms(url):
    """Milliseconds for one GET with gzip accepted (what a browser sends), the body read whole."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as r:
        r.read()
        assert r.status == 200, (url, r.status)
    return (time.perf_counter() - t0) * 1000.0


def wait_loaded(base, runs, timeout):
    deadline = time.time() + timeout
    while True:
        try:
            ours = fetch_json(base + "/data/plugin/mindspore/runs")["runs"]
            stock = fetch_json(base + "/data/runs")
            if len(ours) >= runs and len(stock) >= runs:
                return
        except Exception:
            pass
        if time.time() > deadline:
            raise AssertionError("the server did not list %d runs within %d s" % (runs, timeout))
        time.sleep(2)


def measure_routes(logdir, runs, loader, reps, timeout):
    t0 = time.time()
    with tensorboard_process(logdir, "--load_fast", loader, "--reload_interval", "3600", timeout=timeout) as base:
        wait_loaded(base, runs, timeout)
        load_s = time.time() - t0
        cold = {name: get_ms(base + route) for name, route in ROUTES}
        fresh, warm = {n: [] for n, _ in ROUTES}, {n: [] for n, _ in ROUTES}
        for _ in range(reps):
            time.sleep(1.2)      # the plugin's listing memo (1 s) has expired
            for name, route in ROUTES:
                fresh[name].append(get_ms(base + route))
                warm[name].append(get_ms(base + route))
    return {"load_s": round(load_s, 1),
            "routes": {n: {"cold_ms": round(cold[n], 1), "fresh_ms": round(statistics.median(fresh[n]), 1),
                           "warm_ms": round(statistics.median(warm[n]), 1)} for n, _ in ROUTES}}


_CHECK = ("import sys; from tb_plugin_mindspore.commands import logdir_check; "
          "r = logdir_check.report(sys.argv[1], jobs=None if sys.argv[2] == 'pool' else int(sys.argv[2])); "
          "print(len(r['runs']))")


def time_check(logdir, jobs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHECK, logdir, jobs], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "runs": int(proc.stdout.split()[-1])}


def measure_check(logdir, reps):
    out = {"1": [], "pool": []}
    for _ in range(reps):
        for jobs in ("1", "pool"):
            out[jobs].append(time_check(logdir, jobs))
    summary = {}
    for jobs, rows in out.items():
        wall = statistics.median(r["wall_s"] for r in rows)
        cpu = statistics.median(r["cpu_s"] for r in rows)
        summary[jobs] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cores_used": round(cpu / wall, 2),
                         "runs": rows[0]["runs"]}
    summary["speedup"] = round(summary["1"]["wall_s"] / summary["pool"]["wall_s"], 2)
    return summary


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=2000)
    p.add_argument("--tags", type=int, default=20)
    p.add_argument("--points", type=int, default=50)
    p.add_argument("--loaders", default="false,true", help="--load_fast values, comma separated")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--check-reps", type=int, default=2)
    p.add_argument("--timeout", type=int, default=1800, help="seconds TensorBoard may take to load the logdir")
    p.add_argument("--path", default=os.path.join(tempfile.gettempdir(), "tb-mindspore-bench"))
    args = p.parse_args(argv)
    os.makedirs(args.path, exist_ok=True)
    logdir = make_logdir(args.path, args.runs, args.tags, args.points)
    from tb_plugin_mindspore.commands import logdir_check

    result = {"runs": args.runs, "tags": args.tags, "points": args.points, "cores": logdir_check.default_jobs(),
              "loaders": {}}
    for loader in [x for x in args.loaders.split(",") if x]:
        result["loaders"][loader] = measure_routes(logdir, args.runs, loader, args.reps, args.timeout)
    if args.check_reps > 0:
        result["check"] = measure_check(logdir, args.check_reps)

    print("%d runs x %d tags x %d points, %d cores" % (args.runs, args.tags, args.points, result["cores"]))
    print("%-12s %-20s %10s %10s %10s" % ("load_fast", "route", "cold ms", "fresh ms", "warm ms"))
    for loader, got in result["loaders"].items():
        for name, _ in ROUTES:
            r = got["routes"][name]
            print("%-12s %-20s %10.1f %10.1f %10.1f" % (loader, name, r["cold_ms"], r["fresh_ms"], r["warm_ms"]))
        print("%-12s %-20s %10.1f s" % (loader, "(loaded in)", got["load_s"]))
    if "check" in result:
        c = result["check"]
        for jobs in ("1", "pool"):
            print("check jobs=%-5s wall %.2f s, cpu %.2f s, cores used %.2f (%d runs)"
                  % (jobs, c[jobs]["wall_s"], c[jobs]["cpu_s"], c[jobs]["cores_used"], c[jobs]["runs"]))
        print("check speedup (pool / one process): %.2fx" % c["speedup"])
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
