"""Benchmark: what ``TorchMonitor`` costs a plain PyTorch training loop (CPU), in alternating blocks on one model.

    <torch env>/bin/python bench/torch_overhead.py [--blocks 6] [--steps 40] [--threads 1]

(``bash scripts/extras.sh torch`` builds the environment; this script puts this checkout on its path.) The model:
a 2-layer ``nn.TransformerEncoder`` classifier (d_model 128, 4 heads, feed-forward 256, sequence 64, batch 32,
about 0.4M parameters: the size of the MindSpore demo's), AdamW with a warm-up schedule and gradient clipping, on
synthetic tokens. The same model and optimizer train in blocks of ``--steps`` steps, alternating: no monitor; the
monitor with its defaults (core every 10 steps, weight norms every 100); the monitor with every debug item
(per-layer gradient norms and update ratios at ``debug_freq=100``, every parameter a layer). Per block the CPU time
of the process per step; the ratio is the median monitored block over the median bare block. Under load the
blocks' ratio is noisy, so the monitor's own CPU time is also counted call by call (``time.thread_time`` around
every entry of the monitor on the training thread: the gradient hook and end-of-backward callback, the optimizer
hooks, ``step``; the writer thread's work is in the block times only): ``own`` is that time per step over the bare
step. Target (issue 37): <= 1.05. Prints a table, then one JSON line.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _use_checkout():
    """This checkout's packages under their import names (tb_mindspore_callbacks is callbacks/)."""
    shim = tempfile.mkdtemp(prefix="tbms-bench-")
    os.symlink(os.path.join(ROOT, "tb_plugin_mindspore"), os.path.join(shim, "tb_plugin_mindspore"))
    os.symlink(os.path.join(ROOT, "callbacks"), os.path.join(shim, "tb_mindspore_callbacks"))
    sys.path.insert(0, shim)


def build(torch, seed=0):
    from torch import nn

    torch.manual_seed(seed)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(1000, 128)
            layer = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(128, 4)

        def forward(self, x):
            return self.head(self.encoder(self.emb(x)).mean(dim=1))

    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100))
    return model, opt, sched


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=6, help="blocks of each kind")
    ap.add_argument("--steps", type=int, default=40, help="steps per block")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    _use_checkout()
    import torch

    from tb_mindspore_callbacks.torch_style import TorchMonitor, monitor as monitor_module

    own = {"s": 0.0}

    def counted(fn):
        def wrapper(*a, **k):
            t0 = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                own["s"] += time.thread_time() - t0
        return wrapper

    for cls, names in ((monitor_module.GradTap, ("_hook", "_end_of_pass")),
                       (TorchMonitor, ("_pre_hook", "_post_hook", "step"))):
        for name in names:
            setattr(cls, name, counted(getattr(cls, name)))

    torch.set_num_threads(args.threads)
    model, opt, sched = build(torch)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 1000, (32, 64), generator=g)
    y = torch.randint(0, 4, (32,), generator=g)
    loss_fn = torch.nn.CrossEntropyLoss()
    logdir = tempfile.mkdtemp(prefix="tbms-torch-bench-")
    kinds = {"bare": None, "defaults": {}, "debug": {"debug": "all", "layers_include": "."}}
    times = {k: [] for k in kinds}
    owns = {k: [] for k in kinds}

    def block(kind):
        mon = None
        if kinds[kind] is not None:
            mon = TorchMonitor(os.path.join(logdir, "%s_%d" % (kind, len(times[kind]))), model, opt,
                               collect_freq=10, batch_size=32, **kinds[kind])
        for _ in range(2):                    # warm-up steps, not timed
            _step(mon)
        own["s"] = 0.0
        c0 = time.process_time()
        for _ in range(args.steps):
            _step(mon)
        cpu = (time.process_time() - c0) / args.steps
        owns[kind].append(own["s"] * 1000.0 / args.steps)
        if mon is not None:
            mon.close()
        times[kind].append(cpu * 1000.0)

    def _step(mon):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if mon is not None:
            mon.step(loss)

    # Debug points at every 100th step: a block of 40 steps sees one now and then; run each kind for the same steps.
    for _ in range(args.blocks):
        for kind in kinds:
            block(kind)
    bare = statistics.median(times["bare"])
    out = {"bench": "torch_overhead", "steps_per_block": args.steps, "blocks": args.blocks,
           "threads": args.threads, "torch": torch.__version__, "bare_ms": round(bare, 2),
           "load": round(os.getloadavg()[0], 1), "target": 1.05}
    print("%-10s %10s %8s %12s %8s" % ("kind", "ms/step", "ratio", "own ms/step", "own"))
    for kind in kinds:
        med = statistics.median(times[kind])
        mine = statistics.median(owns[kind])
        out["%s_ms" % kind] = round(med, 2)
        out["%s_ratio" % kind] = round(med / bare, 4)
        out["%s_own_ms" % kind] = round(mine, 3)
        out["%s_own_ratio" % kind] = round(1 + mine / bare, 4)
        print("%-10s %10.2f %8.4f %12.3f %8.4f" % (kind, med, med / bare, mine, 1 + mine / bare))
    print("CPU time of the process per step, median of %d blocks of %d steps; load average %.1f"
          % (args.blocks, args.steps, out["load"]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
