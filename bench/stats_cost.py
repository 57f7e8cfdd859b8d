"""Benchmark: the monitors' in-graph statistics alone, per entry point, in CPU time per compiled call.

    python bench/stats_cost.py [--size 0.1m] [--mode graph|pynative] [--rounds 20] [--calls 40]

The part of the fixed cost per step that runs inside MindSpore's compiled calls, measured without the rest of the
step (and so less exposed to the machine's load than a whole step; ``bench/step_cost.py`` measures the monitor's
host calls and its threads). Each entry point's compiled call, bare and monitored, both set up exactly as the
monitors' defaults set them up (a short monitored run first: live health, flight recorder, rank statistics, the
layers they track), called alternately in blocks of ``--calls`` calls over ``--rounds`` rounds:

* ``loop``: ``optimizer(grads)`` (jit) against ``LoopMonitor.update``'s compiled call (the optimizer and the gradient
  statistics; GRAPH_MODE), or, in PYNATIVE_MODE, against the optimizer followed by the statistics' own call;
* ``model``: ``nn.TrainOneStepCell`` against ``MonitoredTrainCell`` (the whole training step, forward and backward
  included) on one batch.

CPU time of the whole process (MindSpore's threads included) per call: median over the rounds of the monitored
block minus the bare block of the same round, with the quartiles. Prints a table, then, as the last line, one JSON
object.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import cost_models  # noqa: E402


def _loop_calls(size, out):
    """``(bare, monitored)`` callables of one step's optimizer call in the README's loop."""
    import mindspore as ms
    from mindspore import nn

    from tb_mindspore_callbacks import LoopMonitor, Storage

    net, loss_fn, opt = cost_models.parts(size)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)
    x, y = cost_models.batches(size)[0]
    mon = LoopMonitor(os.path.join(out, "loop"), opt, network=net, storage=Storage(registry=None))
    for _ in range(12):
        loss, grads = grad_fn(x, y)
        mon.update(grads)
        mon.step(loss, grads, inputs=(x,))
    source = mon._source
    grads = ms.mutable(tuple(grads))

    class Optimize(nn.Cell):
        def __init__(self):
            super().__init__(auto_prefix=False)
            self.optimizer = opt

        @ms.jit
        def construct(self, g):
            return self.optimizer(g)

    bare = Optimize()
    if source._update:
        update = source._update

        def monitored():
            return update(grads)
    else:
        stats = source.cell

        def monitored():
            bare(grads)
            return stats(grads)
    return (lambda: bare(grads)), monitored, mon.close, opt.parameters[0]


def _model_calls(size, out):
    """``(bare, monitored)`` callables of one whole training step of ``Model.train``'s network."""
    from mindspore import nn
    from mindspore.train import Model

    from tb_mindspore_callbacks import MonitoredTrainCell, Storage, TrainMonitor

    net, loss_fn, opt = cost_models.parts(size)
    cell = MonitoredTrainCell.wrap(net, loss_fn, opt)
    monitor = TrainMonitor(os.path.join(out, "model"), storage=Storage(registry=None))
    Model(cell).train(1, cost_models.dataset(size, 12), callbacks=[monitor], dataset_sink_mode=False)
    monitor.close()
    bare = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
    x, y = cost_models.batches(size)[0]
    return (lambda: bare(x, y)), (lambda: cell(x, y)), (lambda: None), opt.parameters[0]


def measure(size, mode, entry, rounds, calls):
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    out = tempfile.mkdtemp(prefix="tbms_stats_cost_")
    try:
        bare, monitored, close, param = (_loop_calls if entry == "loop" else _model_calls)(size, out)
        sides = {"bare": bare, "monitored": monitored}
        for fn in sides.values():
            for _ in range(5):
                fn()
        param.asnumpy()
        per = {name: [] for name in sides}
        for r in range(rounds):
            for name in (("bare", "monitored") if r % 2 == 0 else ("monitored", "bare")):
                fn = sides[name]
                start = time.process_time()
                for _ in range(calls):
                    fn()
                param.asnumpy()                     # everything queued has run
                per[name].append((time.process_time() - start) * 1000.0 / calls)
        close()
    finally:
        shutil.rmtree(out, ignore_errors=True)
    extra = sorted(m - b for m, b in zip(per["monitored"], per["bare"]))
    q = len(extra) // 4
    return {"size": size, "mode": mode, "entry": entry, "rounds": rounds, "calls": calls,
            "bare_cpu_ms": round(statistics.median(per["bare"]), 4),
            "monitored_cpu_ms": round(statistics.median(per["monitored"]), 4),
            "extra_cpu_ms": round(statistics.median(extra), 4),
            "extra_cpu_ms_quartiles": [round(extra[q], 4), round(extra[-1 - q], 4)],
            "load": [round(v, 1) for v in os.getloadavg()]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="0.1m", help="model: %s (default 0.1m)" % ", ".join(cost_models.SIZES))
    parser.add_argument("--mode", default="graph", choices=("graph", "pynative"))
    parser.add_argument("--entries", default="loop,model", help="loop, model or both (default)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args(argv)
    cost_models.steady_state()
    cost_models.check_size(args.size)
    rows = [measure(args.size, args.mode, entry, args.rounds, args.calls) for entry in args.entries.split(",")]
    print("| entry point | mode | model | bare call CPU ms | monitored call CPU ms | statistics CPU ms/call "
          "[quartiles] | load |")
    print("|---|---|---|---:|---:|---|---|")
    for r in rows:
        print("| %s | %s | %s | %.3f | %.3f | %+.3f [%+.3f, %+.3f] | %s |" % (
            r["entry"], r["mode"], r["size"], r["bare_cpu_ms"], r["monitored_cpu_ms"], r["extra_cpu_ms"],
            r["extra_cpu_ms_quartiles"][0], r["extra_cpu_ms_quartiles"][1], " ".join(map(str, r["load"]))))
    print(json.dumps({"rows": rows}, sort_keys=True))


if __name__ == "__main__":
    main()
