"""Benchmark: ``tb-mindspore compare`` of two 100,000-step runs with 200 layers.

    python bench/compare_speed.py [--steps 100000] [--layers 200] [--layer-every 10] [--reps 5] [--files DIR]

Two runs as ``check`` / ``compare`` read them (``RunSeries``, built here in memory): the loss, learning rate,
gradient norm and weight norm at every step, the per-layer gradient norms, update ratios and weight norms of
``--layers`` layers every ``--layer-every`` steps (the callbacks' ``debug_freq`` / ``diagnostic_freq``; 10 here,
the default is 100). The second run is the first with float32 rounding noise, and one layer's update ratio 2x from
step ``--steps // 2`` on, so the comparison runs to a real parting (found, classified, reported). Measured:

* ``engine``: :func:`tb_plugin_mindspore.compare.engine.compare` on the two runs (mapping, alignment, differences,
  tolerances, partings, the likely class, the JSON answer), CPU time (the median of ``--reps``) and wall time;
* with ``--files DIR``: the same runs written as event files by the plugin's writer (once, reused), and the whole
  command (``tb-mindspore compare RUN REFERENCE --format json`` in a new process: reading both runs with
  TensorBoard's loader, then the engine), wall time of one run.

Target (issue 37): the engine <= 2 s. Prints a table, then one JSON line.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tb_plugin_mindspore.compare import engine  # noqa: E402
from tb_plugin_mindspore.health.series import LayerSeries, RunSeries, Series  # noqa: E402


def make_runs(steps, layers, every, seed=0):
    rng = np.random.default_rng(seed)
    s = np.arange(1, steps + 1)
    walls = 1.7e9 + s * 0.05
    loss = 2.0 * np.exp(-s / (steps / 5)) + 0.1 * rng.random(steps)
    lr = 1e-3 * np.minimum(1.0, s / 1000)
    grad = 1.0 + 0.2 * rng.random(steps)
    wnorm = 30 + s / steps
    ls = np.arange(every, steps + 1, every)
    names = ["model.layers.%d.%s" % (i // 4, ("self_attn.q_proj.weight", "mlp.up_proj.weight", "input_layernorm.weight",
                                               "mlp.down_proj.weight")[i % 4]) for i in range(layers)]
    base = {"layer_grad_norm": 0.1 * (1 + rng.random((ls.size, layers))),
            "update_ratio": 1e-3 * (1 + rng.random((ls.size, layers))),
            "layer_weight_norm": 1 + np.outer(ls / steps, np.ones(layers)) + 0.01 * rng.random((ls.size, layers))}
    tags = {"layer_grad_norm": "debug/layer_grad_norm", "update_ratio": "debug/update_ratio",
            "layer_weight_norm": "diagnostic/layer_weight_norm"}

    def run(name, noise, apart):
        jitter = np.random.default_rng(seed + 1 + int(apart))

        def n(x):
            return x * (1 + noise * jitter.standard_normal(x.shape))
        scalars = {"core/loss": Series.from_points("core/loss", s, walls, n(loss)),
                   "core/learning_rate": Series.from_points("core/learning_rate", s, walls, lr),
                   "core/grad_norm": Series.from_points("core/grad_norm", s, walls, n(grad)),
                   "diagnostic/weight_norm": Series.from_points("diagnostic/weight_norm", s, walls, n(wnorm))}
        layer_series = {}
        for q, values in base.items():
            v = n(values)
            if apart and q == "update_ratio":
                v[ls >= steps // 2, 17] *= 2.0
            layer_series[tags[q]] = LayerSeries.from_rows(tags[q], names, ls, walls[ls - 1], v)
        return RunSeries(run=name, scalars=scalars, layers=layer_series,
                         info={"layer_shapes": {x: [64, 64] if x.endswith("proj.weight") else [64] for x in names}})

    return run("port", 1e-7, True), run("reference", 0.0, False)


def write_files(folder, runs):
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    for r in runs:
        path = os.path.join(folder, r.run)
        if os.path.isdir(path) and os.listdir(path):
            continue
        with SummaryWriter(path, max_queue=1 << 20) as w:
            w.run_info(r.info, step=0)
            for tag, series in r.scalars.items():
                for step, value in zip(series.steps.tolist(), series.values.tolist()):
                    w.scalar(tag, value, step)
            for tag, ls in r.layers.items():
                for step, row in zip(ls.steps.tolist(), ls.values):
                    w.layers(tag, ls.layers, row, step)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--layers", type=int, default=200)
    ap.add_argument("--layer-every", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--files", default=None, help="folder for the event files (the whole command is timed too)")
    args = ap.parse_args()
    run, ref = make_runs(args.steps, args.layers, args.layer_every)
    cpu, wall, result = [], [], None
    for _ in range(args.reps):
        t0, c0 = time.perf_counter(), time.process_time()
        result = engine.compare(run, ref)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    out = {"bench": "compare_speed", "steps": args.steps, "layers": args.layers, "layer_every": args.layer_every,
           "engine_cpu_s": round(statistics.median(cpu), 3), "engine_wall_s": round(statistics.median(wall), 3),
           "verdict": result["verdict"], "first": result["first"],
           "load": round(os.getloadavg()[0], 1), "target_s": 2.0}
    if args.files:
        os.makedirs(args.files, exist_ok=True)
        write_files(args.files, (run, ref))
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "compare",
                               os.path.join(args.files, "port"), os.path.join(args.files, "reference"),
                               "--format", "json"], capture_output=True, text=True)
        out["command_wall_s"] = round(time.perf_counter() - t0, 2)
        out["command_exit"] = proc.returncode
    print("%-28s %s" % ("runs", "%d steps, %d layers every %d steps (%d rows)" % (
        args.steps, args.layers, args.layer_every, args.steps // args.layer_every)))
    print("%-28s %.3f s CPU, %.3f s wall (median of %d)" % ("engine", out["engine_cpu_s"], out["engine_wall_s"],
                                                              args.reps))
    if "command_wall_s" in out:
        print("%-28s %.2f s wall (exit %d)" % ("whole command (files)", out["command_wall_s"], out["command_exit"]))
    print("%-28s %s at step %s in %s" % ("found", result["verdict"], (result["first"] or {}).get("step"),
                                         (result["first"] or {}).get("layers")))
    print("%-28s %.1f" % ("load average", out["load"]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
