"""Benchmark: what monitoring costs, measured on one model in alternating blocks (``Model.train`` and the loop).

    python bench/paired.py [--modes graph,pynative] [--entries model,loop] [--tiers core_diag,core_diag_debug]
                           [--rounds 25] [--block 20] [--pynative-block 4] [--diagnostic-freq 10]

``bench/overhead.py`` builds a model per configuration; on this machine two identical models of the demo
transformer differ in step time by up to 15% (seen side by side in one process), more than the monitor's cost.
Here one network, one optimizer and one ``grad_fn`` serve both sides of the comparison: blocks of ``--block``
steps of the README's loop *without* monitoring (``loss, grads = grad_fn(x, y); optimizer(grads)``) alternate with
blocks of the same loop *with* ``LoopMonitor`` (``mon.begin_step()``, ``mon.update(grads)``,
``mon.step(loss, grads, inputs=(x,))``), in a rotating order, for ``--rounds`` rounds; the monitor's steps are
counted only in its own blocks, so its points fall every ``collect_freq`` monitored steps as in a real run.
``Model.train`` the same way (``--entries model``): ``Model(net, loss_fn, optimizer).train`` blocks alternate with
``Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer)).train`` blocks and one ``TrainMonitor`` kept across them,
timed from the end of each block's first step to the end of its last.

Tiers as in ``bench/overhead.py`` (collect and weight norms every 10 steps, the latter set by
``--diagnostic-freq``; ``core_diag_debug`` adds ``debug="all"`` every ``debug_freq`` steps: 100 in GRAPH_MODE,
2 x ``--pynative-block`` x rounds / 4 in PYNATIVE_MODE, so a few debug points fall in the timed blocks). Before
timing, the monitor runs past its first debug point (everything compiled) and each side runs a block untimed.
The batches are made once and cycled (no dataset pipeline, so the data wait is the same on both sides).

Figures per mode and tier: ``ratio`` = total monitored time / total bare time over all rounds (every debug
point included), ``median_round`` = median of the per-round ratios, ``cpu_ratio`` the same with this process's
CPU time. Prints a table, then, as the last line, one JSON object.

Do not edit the package's source files while this runs: MindSpore reads a cell's source when it compiles it.
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


def _settings(tier, debug_freq, diagnostic_freq):
    """The monitor's settings of a timed tier (``bench/overhead.py``'s) with weight norms every ``diagnostic_freq``."""
    from overhead import _monitor_kwargs

    from tb_mindspore_callbacks import Diagnostic

    return dict(_monitor_kwargs(tier, False, debug_freq), diagnostic=Diagnostic(every=diagnostic_freq))


def _blocks(mode, tier, rounds, block, out, diagnostic_freq):
    import mindspore as ms

    from overhead import _parts
    from tb_mindspore_callbacks import LoopMonitor
    from tb_mindspore_callbacks.demo import synthetic_dataset

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    net, loss_fn, optimizer = _parts(None)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    batches = list(synthetic_dataset(64).create_tuple_iterator(num_epochs=1))
    debug_freq = 100 if mode == "graph" else max(2 * block * rounds // 4, 2)
    mon = LoopMonitor(os.path.join(out, "%s_%s" % (mode, tier)), optimizer, network=net,
                      **_settings(tier, debug_freq, diagnostic_freq))
    cursor = [0]

    def batch():
        cursor[0] = (cursor[0] + 1) % len(batches)
        return batches[cursor[0]]

    def bare(n):
        for _ in range(n):
            x, y = batch()
            loss, grads = grad_fn(x, y)
            optimizer(grads)
        loss.asnumpy()

    def monitored(n):
        for _ in range(n):
            x, y = batch()
            mon.begin_step()
            loss, grads = grad_fn(x, y)
            mon.update(grads)
            mon.step(loss, grads, inputs=(x,))
        loss.asnumpy()

    warm = debug_freq + 1 if tier == "core_diag_debug" else 11
    monitored(warm)
    bare(block)
    times = {"bare": [], "monitored": []}
    for r in range(rounds):
        order = ("bare", "monitored") if r % 2 == 0 else ("monitored", "bare")
        for side in order:
            wall, cpu = time.perf_counter(), time.process_time()
            (bare if side == "bare" else monitored)(block)
            times[side].append((time.perf_counter() - wall, time.process_time() - cpu))
    errors = mon.monitor.errors
    mon.close()
    return times, errors, debug_freq


def _model_blocks(mode, tier, rounds, block, out, diagnostic_freq):
    """``Model.train``: blocks of ``Model(net, loss_fn, optimizer).train`` alternate with blocks of
    ``Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer)).train`` + one ``TrainMonitor`` kept across its calls
    (network and optimizer shared). A block's time runs from the end of its first step to the end of its last
    (the first step of a ``train`` call also starts the dataset iterator)."""
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore.train import Callback, Model

    from overhead import _parts
    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor
    from tb_mindspore_callbacks.demo import synthetic_arrays

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    net, loss_fn, optimizer = _parts(None)
    bare_model = Model(net, loss_fn, optimizer)
    mon_model = Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))
    debug_freq = 100 if mode == "graph" else max(2 * block * rounds // 4, 2)
    monitor = TrainMonitor(os.path.join(out, "model_%s_%s" % (mode, tier)),
                           **_settings(tier, debug_freq, diagnostic_freq))
    tokens, labels = synthetic_arrays(64 * 32)

    class Clock(Callback):
        def on_train_begin(self, run_context):
            self.marks = []

        def on_train_step_end(self, run_context):
            self.marks.append((time.perf_counter(), time.process_time()))

    clock = Clock()

    def data(n):
        return ds.NumpySlicesDataset({"tokens": tokens[:n * 32], "label": labels[:n * 32]},
                                     shuffle=False).batch(32, drop_remainder=True)

    def run(model, n, callbacks):
        model.train(1, data(n), callbacks=callbacks + [clock], dataset_sink_mode=False)
        (w0, c0), (w1, c1) = clock.marks[0], clock.marks[-1]
        return w1 - w0, c1 - c0

    warm = debug_freq + 1 if tier == "core_diag_debug" else 11
    run(mon_model, warm, [monitor])
    run(bare_model, block, [])
    times = {"bare": [], "monitored": []}
    for r in range(rounds):
        order = ("bare", "monitored") if r % 2 == 0 else ("monitored", "bare")
        for side in order:
            times[side].append(run(bare_model, block + 1, []) if side == "bare"
                               else run(mon_model, block + 1, [monitor]))
    return times, monitor.errors, debug_freq


def _summary(times):
    bare, mon = times["bare"], times["monitored"]
    rounds = [m[0] / b[0] for b, m in zip(bare, mon)]
    return {
        "ratio": round(sum(m[0] for m in mon) / sum(b[0] for b in bare), 4),
        "median_round": round(statistics.median(rounds), 4),
        "cpu_ratio": round(sum(m[1] for m in mon) / sum(b[1] for b in bare), 4),
        "q25_q75": [round(q, 4) for q in statistics.quantiles(rounds, n=4)[::2]] if len(rounds) >= 2 else None,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="graph,pynative", help="comma-separated: graph, pynative")
    parser.add_argument("--entries", default="model,loop", help="comma-separated: model (Model.train), loop")
    parser.add_argument("--tiers", default="core_diag,core_diag_debug", help="comma-separated tiers")
    parser.add_argument("--rounds", type=int, default=25, help="rounds of one bare and one monitored block")
    parser.add_argument("--block", type=int, default=20, help="steps per block in GRAPH_MODE (default 20)")
    parser.add_argument("--pynative-block", type=int, default=4, help="steps per block in PYNATIVE_MODE")
    parser.add_argument("--diagnostic-freq", type=int, default=10,
                        help="weight norms every this many monitored steps (default 10: 10x the loop's default)")
    args = parser.parse_args(argv)
    out = tempfile.mkdtemp(prefix="tbms_loop_paired_")
    results, table = {}, []
    try:
        for mode in args.modes.split(","):
            block = args.block if mode == "graph" else args.pynative_block
            for entry, tier in [(e, t) for e in args.entries.split(",") for t in args.tiers.split(",")]:
                blocks = _model_blocks if entry == "model" else _blocks
                times, errors, debug_freq = blocks(mode, tier, args.rounds, block, out, args.diagnostic_freq)
                s = _summary(times)
                s.update(errors=errors, block=block, rounds=args.rounds, debug_freq=debug_freq,
                         diagnostic_freq=args.diagnostic_freq,
                         bare_ms_per_step=round(1000 * sum(b[0] for b in times["bare"]) /
                                                (block * args.rounds), 2))
                results.setdefault(mode, {}).setdefault(entry, {})[tier] = s
                table.append((mode, entry, tier, s))
                print("  %-9s %-6s %-16s ratio %.4f  median round %.4f  cpu %.4f  (bare %.1f ms/step)"
                      % (mode, entry, tier, s["ratio"], s["median_round"], s["cpu_ratio"], s["bare_ms_per_step"]),
                      flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print()
    print("%-9s %-6s %-16s %8s %13s %9s %14s" % ("mode", "entry", "tier", "ratio", "median round", "cpu",
                                                  "bare ms/step"))
    for mode, entry, tier, s in table:
        print("%-9s %-6s %-16s %8.4f %13.4f %9.4f %14.1f" % (mode, entry, tier, s["ratio"], s["median_round"],
                                                              s["cpu_ratio"], s["bare_ms_per_step"]))
    import mindspore as ms

    print(json.dumps({"ratios": {m: {e: {t: v["ratio"] for t, v in te.items()} for e, te in r.items()}
                                 for m, r in results.items()},
                      "details": results, "cpu_count": os.cpu_count(), "mindspore_version": ms.__version__},
                     sort_keys=True))


if __name__ == "__main__":
    main()
