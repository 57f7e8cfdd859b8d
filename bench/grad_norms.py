"""Benchmark: the per-step gradient norms (every parameter's sum of squares) alone, in CPU time per compiled call.

    python bench/grad_norms.py [--sizes 0.1m,1m,10m] [--calls 10] [--rounds 12]

What the monitors compute every step (``train_cell.square_sums``, in ``MonitoredTrainCell``'s step and in
``LoopMonitor.update``'s compiled call), on the gradients of the cost models (``bench/cost_models.py``), in three plans
side by side in one process, alternating blocks of ``--calls`` calls over ``--rounds`` rounds:

* ``current``: the plan the monitors use (``train_cell.norm_plan``): a parameter under 64K elements summed alone by
  one ``L2Loss`` kernel, a large one squared and summed by rows where it lies;
* ``rows``: as before 2026-12-07: large ones by rows, the small ones packed into groups (copied into one
  concatenation, squared, summed by rows, one segment sum);
* ``packed``: every parameter packed into groups of at most 4M elements, as before 2026-12-06 (each gradient copied
  into its group's concatenation every step).

Also, on one 1300 x 1300 gradient, the single kernels the plans are made of (a full ``reduce_sum`` against a sum by
rows then of the rows). Prints a table (median CPU milliseconds per call, all threads, with the quartiles), then, as
the last line, one JSON object.
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import cost_models  # noqa: E402

PLANS = ("current", "rows", "packed")


def _cells():
    import mindspore as ms
    from mindspore import nn, ops

    from tb_mindspore_callbacks.cells import train_cell

    class Sums(nn.Cell):
        def __init__(self, shapes, plan):
            super().__init__()
            saved = train_cell.NORM_ALONE_ELEMENTS, train_cell.NORM_EACH_ELEMENTS
            if plan in ("rows", "packed"):
                train_cell.NORM_EACH_ELEMENTS = 0              # nothing summed alone by L2Loss
            if plan == "packed":
                train_cell.NORM_ALONE_ELEMENTS = 1 << 62       # nothing by rows where it lies: every parameter packed
            try:
                self.groups = train_cell.norm_plan(shapes)[0]
            finally:
                train_cell.NORM_ALONE_ELEMENTS, train_cell.NORM_EACH_ELEMENTS = saved

        @ms.jit
        def construct(self, grads):
            return train_cell.square_sums(grads, self.groups)

    class FullReduce(nn.Cell):
        @ms.jit
        def construct(self, t):
            return ops.reduce_sum(t * t)

    class ByRows(nn.Cell):
        @ms.jit
        def construct(self, t):
            return ops.reduce_sum(ops.reduce_sum(t * t, 1))

    return Sums, FullReduce, ByRows


def _time(calls, n, rounds):
    """``{name: [CPU ms per call, one per round]}``, blocks of ``n`` calls alternating in order and reversed."""
    got = {name: [] for name in calls}
    for r in range(rounds):
        names = list(calls) if r % 2 == 0 else list(reversed(list(calls)))
        for name in names:
            fn = calls[name]
            fn().asnumpy()
            start = time.process_time()
            for _ in range(n):
                out = fn()
            out.asnumpy()
            got[name].append((time.process_time() - start) * 1000.0 / n)
    return got


def _summary(values):
    q25, q75 = np.percentile(values, [25, 75])
    return {"median_ms": round(statistics.median(values), 3), "q25_ms": round(float(q25), 3),
            "q75_ms": round(float(q75), 3)}


def measure(sizes, n, rounds):
    import mindspore as ms
    from mindspore import Tensor

    ms.set_context(mode=ms.GRAPH_MODE)
    Sums, FullReduce, ByRows = _cells()
    result = {"models": {}, "load_average": None}
    for size in sizes:
        net, loss_fn, optimizer = cost_models.parts(size)

        def forward(x, y):
            return loss_fn(net(x), y)

        grads = tuple(ms.value_and_grad(forward, None, optimizer.parameters)(*cost_models.batches(size)[0])[1])
        shapes = [tuple(g.shape) for g in grads]
        cells = {plan: Sums(shapes, plan) for plan in PLANS}
        exact = np.array([float((g.asnumpy().astype(np.float64) ** 2).sum()) for g in grads])
        got = _time({name: (lambda c=c: c(ms.mutable(grads))) for name, c in cells.items()}, n, rounds)
        result["models"][size] = {name: _summary(v) for name, v in got.items()}
        result["models"][size]["parameters"] = cost_models.parameter_count(net)
        for name, cell in cells.items():
            sums = cell(ms.mutable(grads)).asnumpy().astype(np.float64)
            result["models"][size][name]["max_relative_error"] = float(
                np.max(np.abs(sums - exact) / np.maximum(exact, 1e-30)))
    t = Tensor(np.random.RandomState(0).normal(size=(1300, 1300)).astype(np.float32))
    full, rows = FullReduce(), ByRows()
    got = _time({"full_reduce": lambda: full(t), "by_rows": lambda: rows(t)}, n, rounds)
    result["kernels_1300x1300"] = {name: _summary(v) for name, v in got.items()}
    result["load_average"] = [round(v, 1) for v in os.getloadavg()]
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0.1m,1m,10m", help="comma-separated: %s" % ", ".join(cost_models.SIZES))
    parser.add_argument("--calls", type=int, default=10, help="calls per block (default 10)")
    parser.add_argument("--rounds", type=int, default=12, help="rounds of alternating blocks (default 12)")
    args = parser.parse_args(argv)
    sizes = [cost_models.check_size(s) for s in args.sizes.split(",") if s]
    r = measure(sizes, args.calls, args.rounds)
    print("CPU ms per call of the gradient norms' compiled call (median [q25, q75]), load average %s"
          % " ".join(str(v) for v in r["load_average"]))
    print("| model | parameters | current plan | rows (before 2026-12-07) | packed (before 2026-12-06) | "
          "largest relative error of a sum (current, rows, packed) |")
    print("|---|---:|---:|---:|---:|---|")
    for size, m in r["models"].items():
        cells = " | ".join("%.3f [%.3f, %.3f]" % (m[p]["median_ms"], m[p]["q25_ms"], m[p]["q75_ms"]) for p in PLANS)
        errors = ", ".join("%.1e" % m[p]["max_relative_error"] for p in PLANS)
        print("| %s | %.2fM | %s | %s |" % (size, m["parameters"] / 1e6, cells, errors))
    k = r["kernels_1300x1300"]
    print("one 1300 x 1300 gradient: full reduce_sum %.3f ms, by rows then the rows %.3f ms"
          % (k["full_reduce"]["median_ms"], k["by_rows"]["median_ms"]))
    print(json.dumps(r, sort_keys=True))


if __name__ == "__main__":
    main()
