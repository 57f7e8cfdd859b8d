"""Benchmark: what the in-graph statistics of ``MonitoredTrainCell`` cost inside the compiled step.

    python bench/train_cell_cost.py [--blocks 30] [--block-steps 10] [--cells monitored,...] [--clock wall|cpu]

The demo's 2-layer transformer classifier (as in ``bench/overhead.py``: hidden 128, seq 64, batch 32, GRAPH_MODE,
AdamWeightDecay) as four training cells, each called directly (no ``Model.train``, no callback, no dataset
pipeline), alternating in blocks of ``--block-steps`` steps with the order rotating every block, so slow drifts of
the machine's speed fall on all of them alike:

* ``plain``: MindSpore's ``nn.TrainOneStepCell`` (what ``Model(net, loss_fn, optimizer)`` builds);
* ``plain_again``: a second, identical ``TrainOneStepCell`` (how far two identical cells differ: the noise floor);
* ``monitored``: ``MonitoredTrainCell`` (global gradient norm, applied LR, interval statistics every step);
* ``monitored_layers``: the same, also keeping every parameter's gradient norm (the ``layer_grad_norm`` debug
  item);
* ``monitored_flight``: ``monitored`` with the flight recorder's ring (on by default in the monitors): the default
  layers' gradient norms written into 110 rows kept on the device at every step;
* with ``--mode pynative`` also ``monitored_eager`` / ``monitored_layers_eager``: the same two cells with
  ``MS_JIT=0`` set around their calls, so their statistics run op by op as before they were compiled functions
  (the earlier PYNATIVE behaviour, side by side with the current one).

The ratio of a cell is its block time over the ``plain`` block time of the same round (median over rounds).
Prints a table, then, as the last line, one JSON object with the median ratios and milliseconds per step.
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CELLS = ("plain", "plain_again", "monitored", "monitored_layers", "monitored_flight")
EAGER_CELLS = ("monitored_eager", "monitored_layers_eager")


def _cell(kind):
    from mindspore import nn

    from tb_mindspore_callbacks import MonitoredTrainCell
    from tb_mindspore_callbacks.demo import DEMO_CONFIG, build_model

    net = build_model(seed=0)
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=DEMO_CONFIG["lr"], weight_decay=0.01)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    if kind.startswith("plain"):
        cell = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    else:
        cell = MonitoredTrainCell.wrap(net, loss_fn, optimizer)
        if kind.startswith("monitored_layers"):
            cell.track_layer_grad_norms(range(len(cell.weights)))
        if kind == "monitored_flight":
            from tb_mindspore_callbacks.cells.layers import LayerSelection

            ids = [id(p) for p in cell.weights]
            cell.track_flight([ids.index(id(p)) for p in LayerSelection().select(list(cell.weights))], 110)
    cell.set_train()
    return cell


@contextlib.contextmanager
def _eager(enabled):
    """``MS_JIT=0`` inside: ``mindspore.jit`` functions run their Python body op by op (read at every call)."""
    if not enabled:
        yield
        return
    old = os.environ.get("MS_JIT")
    os.environ["MS_JIT"] = "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MS_JIT", None)
        else:
            os.environ["MS_JIT"] = old


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=30, help="rounds of blocks (default 30)")
    parser.add_argument("--block-steps", type=int, default=10, help="steps per block (default 10)")
    parser.add_argument("--mode", choices=("graph", "pynative"), default="graph", help="execution mode")
    parser.add_argument("--cells", default=None, help="comma-separated subset of the cells (plain is always run)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time blocks by wall time or by this process's CPU time (all its threads: steadier "
                             "on a machine shared with other jobs)")
    args = parser.parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    import mindspore as ms
    from mindspore import Tensor

    from tb_mindspore_callbacks.demo import DEMO_CONFIG, synthetic_arrays

    ms.set_context(mode=ms.GRAPH_MODE if args.mode == "graph" else ms.PYNATIVE_MODE)
    batch = DEMO_CONFIG["batch"]
    tokens, labels = synthetic_arrays(batch * 8, seed=0)
    xs = [Tensor(tokens[i * batch:(i + 1) * batch]) for i in range(8)]
    ys = [Tensor(labels[i * batch:(i + 1) * batch]) for i in range(8)]
    kinds = CELLS + (EAGER_CELLS if args.mode == "pynative" else ())
    if args.cells:
        wanted = set(args.cells.split(","))
        kinds = tuple(k for k in kinds if k == "plain" or k in wanted)
    cells = {}
    for kind in kinds:
        started = time.perf_counter()
        cells[kind] = _cell(kind)
        with _eager(kind.endswith("_eager")):
            for i in range(3):
                cells[kind](xs[i], ys[i]).asnumpy()
        print("  %-22s compiled in %.1f s" % (kind, time.perf_counter() - started), flush=True)

    ms_per_step = {k: [] for k in kinds}
    for block in range(args.blocks):
        order = kinds[block % len(kinds):] + kinds[:block % len(kinds)]
        for kind in order:
            cell = cells[kind]
            with _eager(kind.endswith("_eager")):
                started = clock()
                for i in range(args.block_steps):
                    out = cell(xs[i % 8], ys[i % 8])
                out.asnumpy()
                ms_per_step[kind].append((clock() - started) * 1000.0 / args.block_steps)

    ratios = {k: [t / b for t, b in zip(ms_per_step[k], ms_per_step["plain"])] for k in kinds}
    print()
    print("%-22s %12s %12s %16s" % ("cell", "median ms", "median ratio", "ratio q25-q75"))
    result = {}
    for k in kinds:
        qs = statistics.quantiles(ratios[k], n=4) if len(ratios[k]) > 1 else [ratios[k][0]] * 3
        print("%-22s %12.2f %12.4f   %.3f-%.3f" % (k, statistics.median(ms_per_step[k]), statistics.median(ratios[k]),
                                                  qs[0], qs[2]))
        if k != "plain":
            result[k] = round(statistics.median(ratios[k]), 4)
    result.update({
        "ms_per_step": {k: round(statistics.median(v), 3) for k, v in ms_per_step.items()},
        "blocks": args.blocks, "block_steps": args.block_steps, "mode": args.mode, "clock": args.clock,
        "mindspore_version": ms.__version__, "cpu_count": os.cpu_count(),
    })
    print(json.dumps(result, sort_keys=True))
    return result


if __name__ == "__main__":
    main()
