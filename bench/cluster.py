"""A synthetic 1,024-rank x 10,000-step cluster: how fast the ``cluster`` route answers and the heatmap draws.

Writes one rank file per rank (the format ``RankStats`` writes, 10,000 rows each, 8 nodes, one slow rank, one rank
stopped halfway) plus rank 0's event file, starts a real ``tensorboard`` on it, then measures:

* ``cluster`` route, cold (first request: every rank file read and aligned) and warm (the same answer again, kept
  while no file changed; median of ``--repeat``), and the ``clusters`` listing;
* the cluster rules over the whole cluster (``slow_rank``, ``rank_diverging``, ``rank_stopped``, ``memory_growth``)
  in this process;
* with ``--browser``, in headless Chromium: the tab's Cluster section from the request to the drawn heatmap
  (``load``) and the drawing alone (``render``), median over metric switches.

Prints a table and, as its last line, one JSON object. ``--ranks`` / ``--steps`` make a smaller cluster (the tests
run 64 x 500).

    .venv/bin/python bench/cluster.py --browser
"""

import argparse
import json
import os
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
sys.path.insert(0, os.path.join(ROOT, "tests", "frontend"))

import numpy as np  # noqa: E402

from tb_harness import tensorboard_process  # noqa: E402

METRICS = ("step_time_ms", "data_wait_ms", "grad_norm", "host_memory_mb")


def write(root, ranks, steps, nodes=8):
    """The synthetic cluster under ``root/job``; returns seconds spent."""
    from cluster_data import T0, write_rank_file

    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.writer import SummaryWriter

    t0 = time.perf_counter()
    run = os.path.join(root, "job")
    rs = np.random.RandomState(0)
    step_axis = np.arange(1, steps + 1, dtype=np.int64)
    walls = T0 + step_axis * 0.1
    per_node = max(1, ranks // nodes)
    base_loss = 2.0 * np.exp(-step_axis / 3000.0) + 0.2
    for r in range(ranks):
        keep = step_axis <= steps // 2 if r == ranks - 1 else slice(None)
        t = 100.0 * (1 + 0.01 * rs.standard_normal(steps)).astype(np.float32)
        w = 5.0 * (1 + 0.05 * rs.standard_normal(steps)).astype(np.float32)
        if r == 7:
            t += 12.0
            w += 11.0
        cols = {"step_time_ms": t, "data_wait_ms": w,
                "loss": (base_loss + 0.02 * rs.standard_normal(steps)).astype(np.float32),
                "grad_norm": np.exp(0.05 * rs.standard_normal(steps)).astype(np.float32),
                "host_memory_mb": (2000 + rs.standard_normal(steps)).astype(np.float32)}
        write_rank_file(os.path.join(run, metadata.CLUSTER_DIR, "rank%d%s" % (r, metadata.RANK_FILE_SUFFIX)), r,
                        step_axis[keep], walls[keep], {k: v[keep] for k, v in cols.items()},
                        host="node%d" % (r // per_node), rank_size=ranks)
    with SummaryWriter(run, flush_secs=0.5) as wr:
        wr.run_info({"logdir": run, "rank": 0, "rank_size": ranks}, step=0)
        for s in range(10, steps + 1, 10):
            wr.scalar(metadata.LOSS, float(base_loss[s - 1]), s, wall_time=float(walls[s - 1]))
    return time.perf_counter() - t0


def timed_get(url):
    t0 = time.perf_counter()
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=600) as r:
        body = r.read()
        code = r.status
    assert code == 200, (url, code)
    return (time.perf_counter() - t0) * 1000.0, len(body)


def route_times(base, repeat):
    prefix = base + "/data/plugin/mindspore"
    listing_ms, _ = timed_get(prefix + "/clusters")
    out = {"clusters_cold_ms": listing_ms}
    for metric in METRICS:
        url = prefix + "/cluster?run=job&metric=%s&max_steps=1000" % metric
        cold, size = timed_get(url)
        warm = [timed_get(url)[0] for _ in range(repeat)]
        out[metric] = {"cold_ms": cold, "warm_ms": statistics.median(warm), "warm_max_ms": max(warm),
                       "gzip_bytes": size}
    return out


def rule_times(root):
    from tb_plugin_mindspore.health import series
    from tb_plugin_mindspore.health.rules import RULES_BY_ID

    run = series.RunSeries(run="job", state=series.RunState(now=time.time(), directory=os.path.join(root, "job")))
    out = {}
    for rid in ("slow_rank", "rank_diverging", "rank_stopped", "memory_growth"):
        rule = RULES_BY_ID[rid]
        t0 = time.perf_counter()
        found = rule.fn(run, dict(rule.defaults))
        out[rid] = {"ms": (time.perf_counter() - t0) * 1000.0, "findings": [f.message[:80] for f in found]}
    return out


def browser_times(base, repeat):
    from browser_helpers import CHROMIUM_ARGS, chromium_path, open_tab
    from playwright.sync_api import sync_playwright

    loads, renders = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        frame = open_tab(page, base, timeout=600000)
        panel = "[data-testid=cluster-panel]"
        frame.wait_for_selector(panel + "[data-state=ready]", timeout=600000)
        for i in range(repeat):
            metric = METRICS[(i + 1) % len(METRICS)]
            frame.evaluate("() => { const p = document.querySelector('[data-testid=cluster-panel]'); "
                           "p.dataset.state = 'switching'; }")
            frame.select_option("[data-testid=cluster-metric]", metric)
            frame.wait_for_selector(panel + "[data-state=ready]", timeout=600000)
            info = frame.eval_on_selector(panel, "(p) => ({...p.dataset})")
            loads.append(float(info["loadMs"]))
            renders.append(float(info["renderMs"]))
        browser.close()
    return {"load_ms": statistics.median(loads), "render_ms": statistics.median(renders),
            "render_max_ms": max(renders), "ranks_drawn": int(info["ranks"]), "cols_drawn": int(info["cols"])}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--browser", action="store_true", help="also time the heatmap in headless Chromium")
    args = parser.parse_args(argv)
    figures = {"ranks": args.ranks, "steps": args.steps}
    with tempfile.TemporaryDirectory() as tmp:
        logs = os.path.join(tmp, "logs")
        os.makedirs(logs)
        figures["write_s"] = write(logs, args.ranks, args.steps)
        figures["rules"] = rule_times(logs)
        with tensorboard_process(logs, timeout=300) as base:
            figures["routes"] = route_times(base, args.repeat)
            if args.browser:
                figures["browser"] = browser_times(base, args.repeat)
    print("%-22s %10s %10s %10s" % ("cluster route", "cold ms", "warm ms", "gzip KB"))
    for metric in METRICS:
        m = figures["routes"][metric]
        print("%-22s %10.0f %10.1f %10.0f" % (metric, m["cold_ms"], m["warm_ms"], m["gzip_bytes"] / 1024.0))
    for rid, r in figures["rules"].items():
        print("rule %-17s %10.0f ms  %s" % (rid, r["ms"], "; ".join(r["findings"])[:100]))
    if "browser" in figures:
        b = figures["browser"]
        print("browser: load %.0f ms, render %.0f ms (max %.0f) for %d x %d cells" % (
            b["load_ms"], b["render_ms"], b["render_max_ms"], b["ranks_drawn"], b["cols_drawn"]))
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
