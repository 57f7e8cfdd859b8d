"""Benchmark: what the monitors add to MindSpore's compile time, and what their small graphs cost per call.

    python bench/compile_cost.py [--builds 4] [--calls 100] [--quick]

GRAPH_MODE, in one process (garbage collection frozen after the imports, as a long-lived process has it):

* ``train``: the first call (the compile) of ``nn.TrainOneStepCell`` against ``MonitoredTrainCell`` on a new
  network each build (``Dense(4, 8) - ReLU - Dense(8, 2)``, 4 parameter tensors, and the demo transformer, 30):
  median over the builds after the first;
* ``reductions``: the weight norms' graph on a new network of the same shapes each build, per network (a network
  of more than ``layers.SHARED_MAX_TENSORS`` tensors) and shared by shape signature (at most that many): the first
  build compiles, the shared graph's later builds compile nothing;
* ``per_call``: the weight norms' and the update ratio's call, a graph per network against the shared graph (the
  tensors passed at each call), on stacks of ``Dense(64, 64)`` of 4, 8, 16 and 30 tensors: median ms over 3 blocks
  of ``--calls`` calls.

``--quick``: the MLP and 4 and 8 tensors only (no demo transformer: checks that it runs).

Prints a table, then, as the last line, one JSON object.
"""

import argparse
import gc
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _first_call_ms(make, call):
    thing = make()
    start = time.perf_counter()
    call(thing)
    return (time.perf_counter() - start) * 1000.0


def _median_later(values):
    return statistics.median(values[1:]) if len(values) > 1 else values[0]


def _train_compiles(builds, quick=False):
    import numpy as np
    import mindspore as ms
    from mindspore import Tensor, nn

    from tb_mindspore_callbacks import MonitoredTrainCell
    from tb_mindspore_callbacks.demo import DEMO_CONFIG, build_model, synthetic_arrays

    def mlp():
        return nn.SequentialCell(nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 2))

    tokens, labels = synthetic_arrays(DEMO_CONFIG["batch"], None, seed=0)
    inputs = {
        "mlp": (mlp, (Tensor(np.random.RandomState(0).randn(8, 4).astype(np.float32)), Tensor(np.zeros(8, np.int32)))),
        "demo": (lambda: build_model(DEMO_CONFIG, seed=0), (Tensor(tokens), Tensor(labels))),
    }
    if quick:
        del inputs["demo"]
    rows = []
    for name, (net_of, batch) in inputs.items():
        times = {}
        for kind in ("plain", "monitored"):
            def make(kind=kind):
                net = net_of()
                loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
                opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
                if kind == "plain":
                    return nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
                return MonitoredTrainCell.wrap(net, loss, opt)
            times[kind] = [_first_call_ms(make, lambda cell: cell(*batch)) for _ in range(builds)]
        tensors = len(net_of().trainable_params())
        rows.append({"network": name, "tensors": tensors,
                     "plain_ms": round(_median_later(times["plain"]), 1),
                     "monitored_ms": round(_median_later(times["monitored"]), 1),
                     "plain_all_ms": [round(t) for t in times["plain"]],
                     "monitored_all_ms": [round(t) for t in times["monitored"]]})
        ms.set_context(mode=ms.GRAPH_MODE)
    return rows


def _stack(tensors):
    from mindspore import nn

    return nn.SequentialCell(*[nn.Dense(64, 64) for _ in range(tensors // 2)])


def _reduction_compiles(builds, quick=False):
    from tb_mindspore_callbacks.cells import layers

    rows = []
    for tensors in (4,) if quick else (4, 30):
        for how in ("own", "shared"):
            def make(how=how, tensors=tensors):
                params = _stack(tensors).trainable_params()
                if how == "own":
                    return layers.WeightNorms(params)
                return layers._bound(layers.WeightNorms, params)
            times = [_first_call_ms(make, lambda cell: cell()) for _ in range(builds)]
            rows.append({"tensors": tensors, "graph": how, "first_ms": round(times[0], 1),
                         "later_ms": round(_median_later(times), 1)})
    return rows


def _per_call(calls, quick=False):
    from tb_mindspore_callbacks.cells import layers

    def block(fn):
        best = []
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            best.append((time.perf_counter() - start) * 1000.0 / calls)
        return round(statistics.median(best), 3)

    rows = []
    for tensors in (4, 8) if quick else (4, 8, 16, 30):
        params = _stack(tensors).trainable_params()
        own_norms = layers.WeightNorms(params)
        own_ratio = layers.UpdateRatio(layers.Snapshot(params))
        shared_norms = layers._bound(layers.WeightNorms, params)
        shared_ratio = layers._bound(layers.UpdateRatio, params)
        for fn in (own_norms, own_ratio, shared_norms, shared_ratio):
            fn()
        rows.append({"tensors": tensors,
                     "weight_norms_own_ms": block(own_norms), "weight_norms_shared_ms": block(shared_norms),
                     "update_ratio_own_ms": block(own_ratio), "update_ratio_shared_ms": block(shared_ratio)})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--builds", type=int, default=4, help="new networks per measurement (default 4)")
    parser.add_argument("--calls", type=int, default=100, help="calls per timed block (default 100)")
    parser.add_argument("--quick", action="store_true", help="the MLP and 4 and 8 tensors only: checks that it runs")
    args = parser.parse_args(argv)
    if args.builds < 2 or args.calls < 1:
        parser.error("--builds must be at least 2 and --calls at least 1")

    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE)
    gc.collect()
    gc.freeze()
    train = _train_compiles(args.builds, args.quick)
    reductions = _reduction_compiles(args.builds, args.quick)
    per_call = _per_call(args.calls, args.quick)

    print("compile (first call), ms, median of the builds after the first")
    print("%-8s %8s %10s %12s" % ("network", "tensors", "plain", "monitored"))
    for r in train:
        print("%-8s %8d %10.0f %12.0f" % (r["network"], r["tensors"], r["plain_ms"], r["monitored_ms"]))
    print("\nweight norms' graph compile, ms: first build, later builds (median)")
    for r in reductions:
        print("%3d tensors %-7s %8.0f %8.0f" % (r["tensors"], r["graph"], r["first_ms"], r["later_ms"]))
    print("\nper call, ms (own graph / shared graph)")
    for r in per_call:
        print("%3d tensors  weight norms %6.2f / %6.2f   update ratio %6.2f / %6.2f" % (
            r["tensors"], r["weight_norms_own_ms"], r["weight_norms_shared_ms"], r["update_ratio_own_ms"],
            r["update_ratio_shared_ms"]))
    result = {"train": train, "reductions": reductions, "per_call": per_call, "builds": args.builds,
              "calls": args.calls, "quick": args.quick, "mindspore_version": ms.__version__, "cpu_count": os.cpu_count()}
    print(json.dumps(result, sort_keys=True))
    return result


if __name__ == "__main__":
    main()
