"""Benchmark: what LoopMonitor costs on a torch-style model (MindNLP 0.5 on MindSpore 2.7), in alternating blocks.

    python bench/torch_style.py [--env mindnlp] [--tiers core_diag,core_diag_debug] [--rounds 10] [--block 4]
                                [--hidden 64] [--layers 2] [--seq 32] [--batch 8]

A small BERT-style classifier built from a config (``BertForSequenceClassification``, no downloads) trained in
MindNLP's hand-written loop (``mindtorch.autograd.value_and_grad``, a torch-style AdamW of elementwise operations
(MindNLP's own optimizers have no CPU kernels), ``model.zero_grad()``), PYNATIVE_MODE as MindNLP runs. As in
``bench/paired.py``, one model, optimizer and ``grad_fn`` serve both sides: blocks of ``--block`` bare steps
(``grad_fn``, ``opt.step()``) alternate with blocks of the same steps recorded by ``LoopMonitor(logdir, opt,
network=model)`` (``mon.begin_step()``, ``mon.update()``, ``mon.step(loss, inputs=batch)``: gradients read from
``.grad``), in a rotating order, for ``--rounds`` rounds. Tiers as in ``bench/overhead.py`` (core and weight norms
every 10 steps; ``core_diag_debug`` adds ``debug="all"`` every 2 x block x rounds / 4 steps). Before timing, the
monitor runs past its first debug point and each side runs a block untimed.

``--env mindnlp`` runs this script in the MindNLP environment built by ``scripts/extras.sh mindnlp`` (this checkout
on its path); otherwise the current interpreter must import MindNLP and ``tb_mindspore_callbacks``.

Figures per tier: ``ratio`` = total monitored time / total bare time, ``median_round``, ``cpu_ratio`` (this
process's CPU time). Prints a table, then, as the last line, one JSON object.
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
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def _in_env(name, argv):
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from extras import run_in_env

    r = run_in_env(name, [os.path.abspath(__file__)] + argv, timeout=7200)
    sys.stdout.write(r.stdout)
    if r.returncode:
        sys.stderr.write(r.stderr[-4000:])
    return r.returncode


def _tier_settings(tier, debug_freq):
    from cost_models import steady_state
    from overhead import _monitor_kwargs

    steady_state()
    return _monitor_kwargs(tier, False, debug_freq)


def _blocks(tier, args, out):
    sys.path.insert(0, os.path.join(REPO, "tests", "callbacks"))
    import numpy as np
    import mindspore as ms
    import mindtorch as torch
    from mindnlp.transformers import BertConfig, BertForSequenceClassification

    from mindnlp_child import adamw_class
    from tb_mindspore_callbacks import LoopMonitor

    ms.set_context(mode=ms.PYNATIVE_MODE)
    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=1000, hidden_size=args.hidden, num_hidden_layers=args.layers, num_attention_heads=4,
        intermediate_size=4 * args.hidden, num_labels=2))
    model.train()
    opt = adamw_class()(model.parameters(), lr=1e-4)
    params = [p for group in opt.param_groups for p in group["params"]]

    def loss_fn(input_ids, labels):
        return model(input_ids=input_ids, labels=labels).loss

    grad_fn = torch.autograd.value_and_grad(loss_fn, tuple(params))
    rng = np.random.default_rng(0)
    batches = [{"input_ids": torch.tensor(rng.integers(0, 1000, (args.batch, args.seq)), dtype=torch.long),
                "labels": torch.tensor(rng.integers(0, 2, (args.batch,)), dtype=torch.long)} for _ in range(8)]
    debug_freq = max(2 * args.block * args.rounds // 4, 2)
    mon = LoopMonitor(os.path.join(out, tier), opt, network=model, **_tier_settings(tier, debug_freq))
    cursor = [0]

    def batch():
        cursor[0] = (cursor[0] + 1) % len(batches)
        return batches[cursor[0]]

    def bare(n):
        for _ in range(n):
            b = batch()
            loss = grad_fn(b["input_ids"], b["labels"])
            opt.step()
            model.zero_grad()
        loss.asnumpy()

    def monitored(n):
        for _ in range(n):
            b = batch()
            mon.begin_step()
            loss = grad_fn(b["input_ids"], b["labels"])
            mon.update()
            mon.step(loss, inputs=b)
            model.zero_grad()
        loss.asnumpy()

    monitored(debug_freq + 1 if tier == "core_diag_debug" else 11)
    bare(args.block)
    times = {"bare": [], "monitored": []}
    for r in range(args.rounds):
        for side in (("bare", "monitored") if r % 2 == 0 else ("monitored", "bare")):
            wall, cpu = time.perf_counter(), time.process_time()
            (bare if side == "bare" else monitored)(args.block)
            times[side].append((time.perf_counter() - wall, time.process_time() - cpu))
    errors = mon.monitor.errors
    mon.close()
    return times, errors, debug_freq


def _summary(times):
    bare, mon = times["bare"], times["monitored"]
    rounds = [m[0] / b[0] for b, m in zip(bare, mon)]
    return {"ratio": round(sum(m[0] for m in mon) / sum(b[0] for b in bare), 4),
            "median_round": round(statistics.median(rounds), 4),
            "cpu_ratio": round(sum(m[1] for m in mon) / sum(b[1] for b in bare), 4)}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default=None, help="run in this environment of scripts/extras.sh (mindnlp)")
    parser.add_argument("--tiers", default="core_diag,core_diag_debug", help="comma-separated tiers")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--block", type=int, default=4, help="steps per block")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args(argv)
    if args.env:
        rest = [a for i, a in enumerate(argv) if a != "--env" and (i == 0 or argv[i - 1] != "--env")
                and not a.startswith("--env=")]
        return _in_env(args.env, rest)
    out = tempfile.mkdtemp(prefix="tbms_torch_style_")
    results = {}
    try:
        for tier in args.tiers.split(","):
            times, errors, debug_freq = _blocks(tier, args, out)
            s = _summary(times)
            s.update(errors=errors, debug_freq=debug_freq, block=args.block, rounds=args.rounds,
                     bare_ms_per_step=round(1000 * sum(b[0] for b in times["bare"]) / (args.block * args.rounds), 1))
            results[tier] = s
            print("  %-16s ratio %.4f  median round %.4f  cpu %.4f  (bare %.1f ms/step)"
                  % (tier, s["ratio"], s["median_round"], s["cpu_ratio"], s["bare_ms_per_step"]), flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    import mindspore as ms
    import mindnlp

    print()
    print("%-16s %8s %13s %9s %14s" % ("tier", "ratio", "median round", "cpu", "bare ms/step"))
    for tier, s in results.items():
        print("%-16s %8.4f %13.4f %9.4f %14.1f" % (tier, s["ratio"], s["median_round"], s["cpu_ratio"],
                                                   s["bare_ms_per_step"]))
    print(json.dumps({"ratios": {t: s["ratio"] for t, s in results.items()}, "details": results,
                      "model": {"hidden": args.hidden, "layers": args.layers, "seq": args.seq, "batch": args.batch},
                      "mode": "PYNATIVE_MODE", "entry": "loop", "mindspore_version": ms.__version__,
                      "mindnlp_version": getattr(mindnlp, "__version__", None), "cpu_count": os.cpu_count()},
                     sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
