"""Benchmark: the cost table of BENCHMARKS.md: what core + diagnostic monitoring costs a step, per execution mode,
entry point and model size, so a user can predict it for their model.

    python bench/cost_table.py [--sizes 0.1m,1m,4m,10m] [--modes graph,pynative] [--entries model,loop]
                               [--max-minutes 0.5] [--ci 0.005]
    python bench/cost_table.py --quick      # the smallest model, a few rounds: checks that every row runs

For every (mode, entry point, model) one ``bench/paired.py`` measurement (one network and optimizer, blocks of steps
without and with monitoring alternating, everything compiled first) with the monitors' defaults: core every 10
steps, live health, flight recorder, per-rank statistics, weight norms every 100 steps in the loop and at epoch
ends in ``Model.train`` (each block is one ``train`` call, so once a block there: more often than in a real run).
Models (``bench/cost_models.py``): MLPs of about 0.1M, 1M and 10M parameters (14 parameter tensors each), batch 32,
AdamWeightDecay; ``demo`` (the demo transformer, 0.4M parameters, 30 tensors) may be added to ``--sizes``.

Per row: the bare step time, the fixed cost (monitored minus bare, milliseconds per step, wall and CPU time of
this process), the median of the per-round ratios with its 95% interval, and the command that reproduces the row
alone. Rounds: at least ``--rounds``, then more until the interval is within ``+-ci`` of the median or
``--max-minutes`` per row have passed (``*`` marks a row whose interval is wider). Prints the table (Markdown), then,
as the last line, one JSON object.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import cost_models  # noqa: E402
import paired  # noqa: E402

# Steps per block, per mode and model: a block lasts a few tenths of a second on two cores.
BLOCKS = {"graph": {"0.1m": 40, "1m": 20, "4m": 8, "demo": 10, "demo-b8": 20, "demo-b4": 40, "10m": 4},
          "pynative": {"0.1m": 10, "1m": 8, "4m": 4, "demo": 2, "demo-b8": 4, "demo-b4": 8, "10m": 2}}
ENTRY_NAMES = {"model": "Model.train", "loop": "loop + LoopMonitor"}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0.1m,1m,4m,10m", help="comma-separated: %s" % ", ".join(cost_models.SIZES))
    parser.add_argument("--modes", default="graph,pynative", help="comma-separated: graph, pynative")
    parser.add_argument("--entries", default="model,loop", help="comma-separated: model (Model.train), loop")
    parser.add_argument("--rounds", type=int, default=10, help="at least this many rounds per row (default 10)")
    parser.add_argument("--max-rounds", type=int, default=400, help="at most this many rounds per row")
    parser.add_argument("--max-minutes", type=float, default=0.5,
                        help="no new round after this many minutes per row (default 0.5)")
    parser.add_argument("--ci", type=float, default=0.005, help="target half-width of the 95%% interval (0.005)")
    parser.add_argument("--quick", action="store_true", help="0.1m only, 3 rounds of 3 steps: checks that it runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.rounds, args.max_rounds, args.max_minutes = "0.1m", 3, 3, 0.1
    sizes = [s for s in args.sizes.split(",") if s]
    for size in sizes:
        cost_models.check_size(size)
    modes = [m for m in args.modes.split(",") if m]
    entries = [e for e in args.entries.split(",") if e]
    bad = [m for m in modes if m not in BLOCKS] + [e for e in entries if e not in ENTRY_NAMES]
    if bad:
        parser.error("unknown mode / entry point: %s" % ", ".join(bad))
    if args.rounds < 1 or args.max_rounds < args.rounds:
        parser.error("need 1 <= --rounds <= --max-rounds")
    args.size_list, args.mode_list, args.entry_list = sizes, modes, entries
    return args


def row_command(mode, entry, size, block, args):
    """The ``bench/paired.py`` command that measures one row alone."""
    return ("python bench/paired.py --size %s --modes %s --entries %s --tiers core_diag --diagnostic-freq default "
            "--%s %d --rounds %d --max-minutes %g" % (size, mode, entry, "block" if mode == "graph" else
                                                      "pynative-block", block, args.rounds, args.max_minutes))


def measure_row(mode, entry, size, args, out):
    block = 3 if args.quick else BLOCKS[mode][size]
    settings = argparse.Namespace(size=size, rounds=args.rounds, max_rounds=args.max_rounds,
                                  max_minutes=args.max_minutes, ci=args.ci)
    started = time.perf_counter()
    blocks = paired._model_blocks if entry == "model" else paired._blocks
    times, errors, _ = blocks(mode, "core_diag", settings, block, out, None)
    s = paired.summary(times, block, args.ci)
    net, _, _ = cost_models.parts(size)
    s.update(mode=mode, entry=entry, size=size, block=block, errors=errors,
             parameters=cost_models.parameter_count(net), tensors=len(net.trainable_params()),
             seconds=round(time.perf_counter() - started, 1), load_average=[round(v, 2) for v in os.getloadavg()],
             command=row_command(mode, entry, size, block, args))
    return s


def print_table(rows):
    print("| mode | entry point | model | parameters | bare ms/step | fixed ms/step (wall) | fixed ms/step (CPU) "
          "| median ratio [95% interval] | rounds | load |")
    print("|---|---|---|---:|---:|---:|---:|---|---:|---|")
    for s in rows:
        print("| %s | %s | %s | %.2fM (%d tensors) | %.2f | %+.3f | %+.3f | %.4f %s | %d | %s |" % (
            "GRAPH_MODE" if s["mode"] == "graph" else "PYNATIVE_MODE", ENTRY_NAMES[s["entry"]], s["size"],
            s["parameters"] / 1e6, s["tensors"], s["bare_ms_per_step"], s["fixed_ms"], s["fixed_cpu_ms"],
            s["median_round"], paired._ci_text(s), s["rounds"], " ".join("%.1f" % v for v in s["load_average"])))
    print()
    for s in rows:
        print("    %s" % s["command"])


def main(argv=None):
    args = parse_args(argv)
    import mindspore as ms

    out = tempfile.mkdtemp(prefix="tbms_cost_table_")
    rows = []
    try:
        for mode in args.mode_list:
            for size in args.size_list:
                for entry in args.entry_list:
                    s = measure_row(mode, entry, size, args, out)
                    rows.append(s)
                    print("  %-8s %-5s %-5s bare %8.2f ms/step  fixed %+.3f ms (CPU %+.3f)  median %.4f %s  "
                          "%d rounds, %.0f s" % (mode, entry, size, s["bare_ms_per_step"], s["fixed_ms"],
                                                 s["fixed_cpu_ms"], s["median_round"], paired._ci_text(s),
                                                 s["rounds"], s["seconds"]), flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print()
    print_table(rows)
    print(json.dumps({"rows": rows, "quick": args.quick, "cpu_count": os.cpu_count(),
                      "mindspore_version": ms.__version__}, sort_keys=True))


if __name__ == "__main__":
    main()
