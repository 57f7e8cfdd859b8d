"""Benchmark: what monitoring costs, measured on one model in alternating blocks (``Model.train`` and the loop).

    python bench/paired.py [--modes graph,pynative] [--entries model,loop] [--tiers core_diag,core_diag_debug]
                           [--rounds 25] [--block 20] [--pynative-block 4] [--diagnostic-freq 10]
                           [--size demo] [--ci 0.005] [--max-rounds 400] [--max-minutes 10]

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

``--size``: the model (``bench/cost_models.py``: ``demo``, the demo transformer, by default; ``demo-b8``, the same
on batches of 8 (a 55 ms step); ``demo-b4``, on batches of 4 (a 28 ms step); ``0.1m``, ``1m``, ``4m`` (a 25 ms step), ``10m`` MLPs). ``--diagnostic-freq default`` keeps the monitors' own weight-norm cadence (every 100 steps in the
loop, at epoch ends in ``Model.train``: every block here).

Figures per mode and tier: ``ratio`` = total monitored time / total bare time over all rounds (every debug
point included), ``median_round`` = median of the per-round ratios with ``ci95``, its distribution-free 95%
confidence interval (order statistics of the rounds: the binomial interval for a median, no assumption on the
ratios' distribution), ``cpu_ratio`` the total ratio with this process's CPU time, ``fixed_ms`` /
``fixed_cpu_ms`` the extra milliseconds per step (monitored minus bare, wall / CPU). Rounds: at least
``--rounds``, then more until the confidence interval is within ``+-ci`` of the median (``--ci 0.005``: +-0.5%),
``--max-rounds`` or ``--max-minutes`` per configuration is reached (``ci_met`` says which). Prints a table, then, as
the last line, one JSON object.

Do not edit the package's source files while this runs: MindSpore reads a cell's source when it compiles it.
"""

import argparse
import json
import math
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
    """The monitor's settings of a timed tier (``bench/overhead.py``'s) with weight norms every ``diagnostic_freq``
    steps (None: the monitor's default)."""
    from cost_models import steady_state
    from overhead import _monitor_kwargs

    from tb_mindspore_callbacks import Diagnostic

    steady_state()
    kwargs = _monitor_kwargs(tier, False, debug_freq)
    if diagnostic_freq is None:
        kwargs.pop("diagnostic")
    else:
        kwargs["diagnostic"] = Diagnostic(every=diagnostic_freq)
    return kwargs


def median_ci(values, confidence=0.95):
    """``(low, high)``: a distribution-free confidence interval of the median of ``values`` (order statistics
    ``k`` and ``n + 1 - k``, with ``k`` the largest for which the binomial(n, 1/2) tail below it is at most
    ``(1 - confidence) / 2``); None for fewer than 6 values (no such interval reaches 95% there)."""
    xs = sorted(values)
    n = len(xs)
    if n < 6:
        return None
    alpha = (1.0 - confidence) / 2.0
    tail, k = 0.0, 0
    for j in range(n):
        tail += math.comb(n, j) / 2.0 ** n          # P(B <= j)
        if tail > alpha:
            break
        k = j + 1
    k = max(k, 1)
    return xs[k - 1], xs[n - k]


def ci_met(values, target):
    """Whether the confidence interval of the median of ``values`` lies within ``+-target`` of the median."""
    ci = median_ci(values)
    if ci is None:
        return False
    m = statistics.median(values)
    return ci[1] - m <= target and m - ci[0] <= target


def _enough(times, args, started):
    """Whether a configuration has run enough rounds (see the module's docstring)."""
    rounds = len(times["monitored"])
    if rounds < args.rounds:
        return False
    if rounds >= args.max_rounds or time.perf_counter() - started > 60.0 * args.max_minutes:
        return True
    return ci_met([m[0] / b[0] for b, m in zip(times["bare"], times["monitored"])], args.ci)


def _blocks(mode, tier, args, block, out, diagnostic_freq):
    import mindspore as ms

    import cost_models
    from tb_mindspore_callbacks import LoopMonitor

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    net, loss_fn, optimizer = cost_models.parts(args.size)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    batches = cost_models.batches(args.size, 64)
    debug_freq = 100 if mode == "graph" else max(2 * block * args.rounds // 4, 2)
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

    # Past the first core, diagnostic and debug points: everything the monitor compiles is compiled.
    warm = max(debug_freq if tier == "core_diag_debug" else 10, diagnostic_freq or 100) + 1
    monitored(warm)
    bare(block)
    times = {"bare": [], "monitored": []}
    started, r = time.perf_counter(), 0
    while not _enough(times, args, started):
        order = ("bare", "monitored") if r % 2 == 0 else ("monitored", "bare")
        for side in order:
            wall, cpu = time.perf_counter(), time.process_time()
            (bare if side == "bare" else monitored)(block)
            times[side].append((time.perf_counter() - wall, time.process_time() - cpu))
        r += 1
    errors = mon.monitor.errors
    mon.close()
    return times, errors, debug_freq


def _model_blocks(mode, tier, args, block, out, diagnostic_freq):
    """``Model.train``: blocks of ``Model(net, loss_fn, optimizer).train`` alternate with blocks of
    ``Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer)).train`` + one ``TrainMonitor`` kept across its calls
    (network and optimizer shared). A block's time runs from the end of its first step to the end of its last
    (the first step of a ``train`` call also starts the dataset iterator)."""
    import mindspore as ms
    from mindspore.train import Callback, Model

    import cost_models
    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    net, loss_fn, optimizer = cost_models.parts(args.size)
    bare_model = Model(net, loss_fn, optimizer)
    mon_model = Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))
    debug_freq = 100 if mode == "graph" else max(2 * block * args.rounds // 4, 2)
    monitor = TrainMonitor(os.path.join(out, "model_%s_%s" % (mode, tier)),
                           **_settings(tier, debug_freq, diagnostic_freq))

    class Clock(Callback):
        def on_train_begin(self, run_context):
            self.marks = []

        def on_train_step_end(self, run_context):
            self.marks.append((time.perf_counter(), time.process_time()))

    clock = Clock()

    def data(n):
        return cost_models.dataset(args.size, n)

    def run(model, n, callbacks):
        model.train(1, data(n), callbacks=callbacks + [clock], dataset_sink_mode=False)
        (w0, c0), (w1, c1) = clock.marks[0], clock.marks[-1]
        return w1 - w0, c1 - c0

    warm = max(debug_freq if tier == "core_diag_debug" else 10, diagnostic_freq or 10) + 1
    run(mon_model, warm, [monitor])
    run(bare_model, block, [])
    times = {"bare": [], "monitored": []}
    started, r = time.perf_counter(), 0
    while not _enough(times, args, started):
        order = ("bare", "monitored") if r % 2 == 0 else ("monitored", "bare")
        for side in order:
            times[side].append(run(bare_model, block + 1, []) if side == "bare"
                               else run(mon_model, block + 1, [monitor]))
        r += 1
    return times, monitor.errors, debug_freq


def summary(times, block, target=0.005):
    """The figures of one configuration from its ``{"bare": [(wall s, cpu s)], "monitored": [...]}`` blocks."""
    bare, mon = times["bare"], times["monitored"]
    rounds = [m[0] / b[0] for b, m in zip(bare, mon)]
    steps = block * len(rounds)
    ci = median_ci(rounds)
    return {
        "ratio": round(sum(m[0] for m in mon) / sum(b[0] for b in bare), 4),
        "median_round": round(statistics.median(rounds), 4),
        "ci95": [round(v, 4) for v in ci] if ci else None,
        "ci_met": ci_met(rounds, target),
        "cpu_ratio": round(sum(m[1] for m in mon) / sum(b[1] for b in bare), 4),
        "fixed_ms": round(1000.0 * (sum(m[0] for m in mon) - sum(b[0] for b in bare)) / steps, 3),
        "fixed_cpu_ms": round(1000.0 * (sum(m[1] for m in mon) - sum(b[1] for b in bare)) / steps, 3),
        "q25_q75": [round(q, 4) for q in statistics.quantiles(rounds, n=4)[::2]] if len(rounds) >= 2 else None,
        "rounds": len(rounds),
        "bare_ms_per_step": round(1000 * sum(b[0] for b in bare) / steps, 2),
    }


def _ci_text(s):
    return "[%.4f, %.4f]%s" % (s["ci95"][0], s["ci95"][1], "" if s["ci_met"] else "*") if s["ci95"] else "-"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="graph,pynative", help="comma-separated: graph, pynative")
    parser.add_argument("--entries", default="model,loop", help="comma-separated: model (Model.train), loop")
    parser.add_argument("--tiers", default="core_diag,core_diag_debug", help="comma-separated tiers")
    parser.add_argument("--rounds", type=int, default=25, help="at least this many rounds of one bare and one "
                        "monitored block (default 25)")
    parser.add_argument("--ci", type=float, default=0.005, help="then more rounds until the 95%% interval of the "
                        "median ratio is within +-this (default 0.005)")
    parser.add_argument("--max-rounds", type=int, default=400, help="at most this many rounds (default 400)")
    parser.add_argument("--max-minutes", type=float, default=10.0,
                        help="no new round after this many minutes per configuration (default 10)")
    parser.add_argument("--size", default="demo", help="the model: demo (default), demo-b8, demo-b4, 0.1m, 1m, 4m, 10m")
    parser.add_argument("--block", type=int, default=20, help="steps per block in GRAPH_MODE (default 20)")
    parser.add_argument("--pynative-block", type=int, default=4, help="steps per block in PYNATIVE_MODE")
    parser.add_argument("--diagnostic-freq", default="10",
                        help="weight norms every this many monitored steps (default 10: 10x the loop's default), or "
                             "'default': the monitor's own")
    args = parser.parse_args(argv)
    import cost_models

    cost_models.check_size(args.size)
    diagnostic_freq = None if args.diagnostic_freq == "default" else int(args.diagnostic_freq)
    out = tempfile.mkdtemp(prefix="tbms_loop_paired_")
    results, table = {}, []
    try:
        for mode in args.modes.split(","):
            block = args.block if mode == "graph" else args.pynative_block
            for entry, tier in [(e, t) for e in args.entries.split(",") for t in args.tiers.split(",")]:
                blocks = _model_blocks if entry == "model" else _blocks
                times, errors, debug_freq = blocks(mode, tier, args, block, out, diagnostic_freq)
                s = summary(times, block, args.ci)
                s.update(errors=errors, block=block, debug_freq=debug_freq, diagnostic_freq=args.diagnostic_freq,
                         size=args.size, load_average=[round(v, 2) for v in os.getloadavg()])
                results.setdefault(mode, {}).setdefault(entry, {})[tier] = s
                table.append((mode, entry, tier, s))
                print("  %-9s %-6s %-16s ratio %.4f  median round %.4f %s  cpu %.4f  fixed %+.3f ms (CPU %+.3f)  "
                      "(bare %.1f ms/step, %d rounds)"
                      % (mode, entry, tier, s["ratio"], s["median_round"], _ci_text(s), s["cpu_ratio"],
                         s["fixed_ms"], s["fixed_cpu_ms"], s["bare_ms_per_step"], s["rounds"]), flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print()
    print("%-9s %-6s %-16s %8s %13s %-17s %9s %9s %9s %13s %6s" % (
        "mode", "entry", "tier", "ratio", "median round", "95% interval", "cpu", "fixed ms", "fixed cpu",
        "bare ms/step", "rounds"))
    for mode, entry, tier, s in table:
        print("%-9s %-6s %-16s %8.4f %13.4f %-17s %9.4f %9.3f %9.3f %13.1f %6d" % (
            mode, entry, tier, s["ratio"], s["median_round"], _ci_text(s), s["cpu_ratio"], s["fixed_ms"],
            s["fixed_cpu_ms"], s["bare_ms_per_step"], s["rounds"]))
    import mindspore as ms

    print(json.dumps({"ratios": {m: {e: {t: v["ratio"] for t, v in te.items()} for e, te in r.items()}
                                 for m, r in results.items()},
                      "median_ratios": {m: {e: {t: v["median_round"] for t, v in te.items()} for e, te in r.items()}
                                        for m, r in results.items()},
                      "details": results, "cpu_count": os.cpu_count(), "mindspore_version": ms.__version__},
                     sort_keys=True))


if __name__ == "__main__":
    main()
