"""Benchmark: the loss landscape's printed cost estimate against the measured cost per point, on the demo model.

    python bench/landscape_estimate.py [--reps 4] [--samples 64] [--model small|bench]

Each repetition computes the demo's landscape (11 x 11 random plane, ``--samples`` held-out samples; ``small`` is
the model ``tb-mindspore demo`` trains, ``bench`` the benchmark one) and compares the estimate (``seconds_per_point``,
what the printed estimate is made of) with the measured mean time per grid point (from ``on_point`` timestamps),
next to the former estimate, one timed loss evaluation after compiling. Target (issue 19): within 1.5x.
Prints a table, then, as the last line, one JSON object with every figure.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def measure(reps, samples, model):
    import mindspore as ms
    from mindspore import nn

    from tb_mindspore_callbacks import demo
    from tb_mindspore_callbacks.landscape import compute_landscape
    from tb_mindspore_callbacks.landscape.evaluation import EvalData, LossEvaluator

    ms.set_context(mode=ms.GRAPH_MODE)
    config = demo.DEMO_SMALL if model == "small" else demo.DEMO_CONFIG
    loss_net = nn.WithLossCell(demo.build_model(config), nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                                        reduction="mean"))
    data = demo.synthetic_arrays(samples, config, seed=2)
    rows = []
    for _ in range(reps):
        stamps = []
        result = compute_landscape(loss_net, data, "random", grid=11, progress=False, log=lambda m: None,
                                   on_point=lambda *a: stamps.append(time.perf_counter()))
        measured = (stamps[-1] - stamps[0]) / (len(stamps) - 1)
        ev = LossEvaluator(loss_net, EvalData.take(data))
        with ev.session():          # the former estimate: one loss evaluation after the compiling one
            ev.loss()
            t0 = time.perf_counter()
            ev.loss()
            former = time.perf_counter() - t0
        rows.append({"estimate_s": result.seconds_per_point, "former_estimate_s": former, "measured_s": measured,
                     "ratio": result.seconds_per_point / measured, "former_ratio": former / measured})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--model", choices=("small", "bench"), default="small")
    args = ap.parse_args(argv)
    rows = measure(args.reps, args.samples, args.model)
    print("%-4s  %12s  %12s  %8s  %14s  %12s" % ("rep", "measured ms", "estimate ms", "ratio", "former est. ms",
                                                 "former ratio"))
    for i, r in enumerate(rows):
        print("%-4d  %12.1f  %12.1f  %8.2f  %14.1f  %12.2f" % (i + 1, 1000 * r["measured_s"], 1000 * r["estimate_s"],
                                                              r["ratio"], 1000 * r["former_estimate_s"],
                                                              r["former_ratio"]))
    print(json.dumps({"model": args.model, "samples": args.samples, "grid": 11, "rows": rows,
                      "load_avg": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
