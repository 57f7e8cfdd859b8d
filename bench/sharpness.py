"""Cost of SharpnessCallback on the demo transformer: training with and without it, side by side.

Each configuration trains the demo model (``tb_mindspore_callbacks.demo``: 2-layer transformer, AdamWeightDecay with
warm-up and cosine decay, ``MonitoredTrainCell``) for ``--steps`` steps in a fresh process; ``on`` adds
``SharpnessCallback(every=--every)`` with its defaults (probe batch of 8 samples, forward differences: one gradient
at the centre, 6 Lanczos products warm-started (12 the first time), 2 trace probes; AdamWeightDecay: as many again
for the preconditioned sharpness; the 21 x 2 point profile every 4th measurement). Configurations alternate (off, on, on, off, ...)
so machine load hits both alike.

Reported: training wall time of each run, the slowdown ratio (includes the one-off compilation of the gradient
graph at the first measurement), the cost of each measurement, and the amortised steady-state cost at N = --every:
(a measurement after the first) / (N x the median step time of the same run; its median step has no measurement).

    python bench/sharpness.py                       # 1000 steps, every 500, 2 pairs
    python bench/sharpness.py --steps 60 --every 20 --reps 1     # the short form
Prints a table, then one JSON line.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _step_clock_class():
    from mindspore.train import Callback

    class StepClock(Callback):
        def __init__(self):
            super().__init__()
            self.ends = []

        def on_train_step_end(self, run_context):
            self.ends.append(time.perf_counter())
    return StepClock


def _StepClock():
    return _step_clock_class()()


def child(config, steps, every, mode):
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Model

    from tb_mindspore_callbacks import MonitoredTrainCell, SharpnessCallback
    from tb_mindspore_callbacks.demo import DEMO_CONFIG, WarmupCosineLR, build_model, synthetic_arrays, \
        synthetic_dataset

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    c = dict(DEMO_CONFIG)
    net = build_model(c)
    schedule = WarmupCosineLR(c["lr"], min(c["warmup"], steps // 2), steps, end=c["lr"] * 0.05)
    opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=schedule, weight_decay=0.01)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, opt, clip_grad_norm=c["clip"]))
    callbacks = []
    import tempfile
    logdir = tempfile.mkdtemp(prefix="bench_sharpness_")
    if config == "on":
        callbacks.append(SharpnessCallback(logdir, synthetic_arrays(64, c, seed=7), every=every))
    data = synthetic_dataset(steps, c)
    clock = _StepClock()
    started = time.perf_counter()
    model.train(1, data, callbacks=[clock] + callbacks, dataset_sink_mode=False)
    wall = time.perf_counter() - started
    ends = clock.ends   # step 1 holds the compilation of the training graph: timed from its end
    out = {"config": config, "steps": steps, "wall_s": wall, "after_first_s": ends[-1] - ends[0],
           "step_ms_median": 1000 * float(sorted(b - a for a, b in zip(ends, ends[1:]))[(len(ends) - 1) // 2]),
           "measurements": []}
    if callbacks:
        cb = callbacks[0]
        out["failed"] = cb.failed
        out["measurements"] = [{"step": r.step, "seconds": r.seconds, "hvps": r.hvps, "sharpness": r.sharpness,
                                "preconditioned": r.preconditioned, "threshold": r.threshold,
                                "ratio": r.stability_ratio, "trace": r.trace} for r in cb.results]
    print("RESULT " + json.dumps(out))


def run_child(config, steps, every, mode):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", config, "--steps", str(steps), "--every",
           str(every), "--mode", mode]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.dirname(HERE))
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError("child %s failed (rc %s): %s" % (config, proc.returncode, proc.stderr[-2000:]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--reps", type=int, default=2, help="pairs of runs (off, on), order alternating")
    ap.add_argument("--mode", choices=("graph", "pynative"), default="graph")
    ap.add_argument("--child", choices=("on", "off"))
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.steps, args.every, args.mode)
    runs = []
    for rep in range(args.reps):
        for config in (("off", "on") if rep % 2 == 0 else ("on", "off")):
            r = run_child(config, args.steps, args.every, args.mode)
            runs.append(r)
            print("rep %d %-3s %7.1f s  %s" % (rep, config, r["after_first_s"], " ".join(
                "[step %d: %.2f s, %d HVPs, sharpness %.4g, preconditioned %s, line %s]" % (
                    m["step"], m["seconds"], m["hvps"], m["sharpness"],
                    "%.4g" % m["preconditioned"] if m["preconditioned"] is not None else "-",
                    "%.4g" % m["threshold"] if m["threshold"] is not None else "-")
                for m in r["measurements"])), flush=True)
    off = [r["after_first_s"] for r in runs if r["config"] == "off"]
    on = [r["after_first_s"] for r in runs if r["config"] == "on"]
    ratios = [b / a for a, b in zip(off, on)]
    # The step time of the runs with the callback (their median step has no measurement in it): the machine's load
    # can change between runs, so the cost is compared with steps taken at the same time.
    step_s = float(np.median([r["step_ms_median"] for r in runs if r["config"] == "on"])) / 1000.0
    first = [r["measurements"][0]["seconds"] for r in runs if r["config"] == "on" and r["measurements"]]
    warm = sorted(m["seconds"] for r in runs if r["config"] == "on" for m in r["measurements"][1:])
    amortised = (warm[(len(warm) - 1) // 2] / (args.every * step_s)) if warm else None
    print()
    print("| config | runs | training after step 1 (s) | median step (ms) |")
    print("| --- | --- | --- | --- |")
    for name, config in (("without", "off"), ("SharpnessCallback(every=%d)" % args.every, "on")):
        rs = [r for r in runs if r["config"] == config]
        print("| %s | %d | %s | %s |" % (name, len(rs), ", ".join("%.1f" % r["after_first_s"] for r in rs),
                                         ", ".join("%.0f" % r["step_ms_median"] for r in rs)))
    print("slowdown, pairwise on/off (includes compiling the gradient graph once): %s"
          % ", ".join("%.3f" % v for v in ratios))
    print("first measurement (with compilation): %s s; later ones: %s s" % (
        ", ".join("%.2f" % v for v in first), ", ".join("%.2f" % v for v in warm) or "-"))
    if amortised is not None:
        print("amortised steady-state cost at N=%d: median later measurement / (N x median step) = %.2f %%"
              % (args.every, 100 * amortised))
    print(json.dumps({"bench": "sharpness", "mode": args.mode, "steps": args.steps, "every": args.every,
                      "off_s": off, "on_s": on, "ratios": ratios, "step_ms": 1000 * step_s,
                      "first_measurement_s": first, "warm_measurement_s": warm,
                      "amortised_fraction": amortised}))


if __name__ == "__main__":
    main()
