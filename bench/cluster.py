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

``--overhead`` instead measures what the per-rank statistics cost in training: the recorder's hooks alone (per step,
at ``collect_freq=10``), and the demo transformer trained with ``Model.train`` + ``MonitoredTrainCell`` +
``TrainMonitor(collect_freq=10, diagnostic_freq=10)`` (bench/overhead.py's ``core_diag``) with and without the
rank statistics recorder, side by side: each repetition builds and compiles both anew and times them in a random
order; the figure is the median ratio of the step times.

    .venv/bin/python bench/cluster.py --browser
    .venv/bin/python bench/cluster.py --overhead [--reps 3] [--train-steps 100]
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
    from tb_plugin_mindspore.writing.writer import SummaryWriter

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


def hook_cost(steps=20000, collect_freq=10):
    """Microseconds per training step spent in RankStatsRecorder's hooks (on_step every step, on_interval every
    ``collect_freq`` steps: memory read, one row queued), on this thread."""
    from tb_mindspore_callbacks.recorders.rank_stats import RankStatsRecorder
    from tb_mindspore_callbacks.recorders.base import StepRecord

    class Settings:
        logdir = tempfile.mkdtemp()

    Settings.collect_freq = collect_freq

    class Ctx:
        settings, rank, info, writer = Settings, 0, {"rank_size": 1}, None

    rec = RankStatsRecorder()
    rec.on_start(Ctx)
    records = [StepRecord(i + 1, wall_time=time.time(), step_time_ms=65.0, data_wait_ms=0.5, loss=1.0,
                          grad_norm=2.0) for i in range(steps)]
    t0 = time.perf_counter()
    for r in records:
        rec.on_step(r)
        if r.step % collect_freq == 0:
            rec.on_interval(r)
    spent = time.perf_counter() - t0
    rec.on_end(None)
    return spent / steps * 1e6


def training_ratio(reps, steps, warm_steps=3, seed=0):
    """Median over ``reps`` of (step time with rank statistics) / (step time without), demo transformer."""
    import random

    from mindspore import nn
    from mindspore.train import Callback, Model

    import tb_mindspore_callbacks.monitor as monitor_module
    from tb_mindspore_callbacks import Diagnostic, MonitoredTrainCell, Storage, TrainMonitor
    from tb_mindspore_callbacks.demo import DEMO_CONFIG, build_model, synthetic_dataset
    from tb_mindspore_callbacks.recorders.rank_stats import RankStatsRecorder

    with_stats = monitor_module.default_recorders

    def without_stats(settings, extra=()):
        return [r for r in with_stats(settings, extra) if not isinstance(r, RankStatsRecorder)]

    class Clock(Callback):
        def __init__(self):
            self.times = []

        def on_train_step_end(self, run_context):
            self.times.append(time.perf_counter())

    rng = random.Random(seed)
    per_rep = []
    step_ms = {"with": [], "without": []}
    for rep in range(reps):
        order = ["with", "without"]
        rng.shuffle(order)
        got = {}
        for config in order:
            monitor_module.default_recorders = with_stats if config == "with" else without_stats
            try:
                net = build_model(None, seed=0)
                opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=DEMO_CONFIG["lr"], weight_decay=0.01)
                loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
                model = Model(MonitoredTrainCell.wrap(net, loss_fn, opt))
                clock = Clock()
                with tempfile.TemporaryDirectory() as run_dir:
                    mon = TrainMonitor(run_dir, collect_freq=10, diagnostic=Diagnostic(every=10),
                                       storage=Storage(registry=None))
                    model.train(1, synthetic_dataset(warm_steps + steps, seed=rep), callbacks=[mon, clock],
                                dataset_sink_mode=False)
            finally:
                monitor_module.default_recorders = with_stats
            t = clock.times[warm_steps:]
            got[config] = (t[-1] - t[0]) / (len(t) - 1) * 1000.0
            step_ms[config].append(got[config])
            print("repetition %d, %s rank statistics: %.1f ms a step" % (rep, config, got[config]), flush=True)
        per_rep.append(got["with"] / got["without"])
    return {"ratio": statistics.median(per_rep), "ratios_per_rep": per_rep, "step_ms": step_ms}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--browser", action="store_true", help="also time the heatmap in headless Chromium")
    parser.add_argument("--overhead", action="store_true", help="the training cost of the rank statistics instead")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--train-steps", type=int, default=100)
    args = parser.parse_args(argv)
    if args.overhead:
        figures = {"hook_us_per_step": hook_cost(), "load_average": os.getloadavg()[0]}
        figures["training"] = training_ratio(args.reps, args.train_steps)
        t = figures["training"]
        print("rank statistics hooks: %.1f us a step (collect_freq=10)" % figures["hook_us_per_step"])
        print("core_diag with / without rank statistics: %.3f (per repetition: %s); step ms with %s, without %s"
              % (t["ratio"], ", ".join("%.3f" % r for r in t["ratios_per_rep"]),
                 ", ".join("%.0f" % v for v in t["step_ms"]["with"]),
                 ", ".join("%.0f" % v for v in t["step_ms"]["without"])))
        print(json.dumps(figures))
        return figures
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
