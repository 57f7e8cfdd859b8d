"""Trains a small PyTorch model in a plain loop with ``TorchMonitor`` (gradient clipping, a warm-up schedule, two
parameter groups) and writes, next to the run, what the monitor must have recorded, computed by hand from the same
training: ``expected.json``. Run in the torch environment: ``python loop_child.py RUN_DIR``."""

import json
import os
import sys

import torch

from tb_mindspore_callbacks.torch_style import TorchMonitor

STEPS, COLLECT, DEBUG, DIAG = 40, 5, 10, 10


def main(run_dir):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.ReLU(), torch.nn.LayerNorm(12),
                                torch.nn.Linear(12, 3))
    decay = [p for n, p in model.named_parameters() if n.endswith("weight") and p.dim() == 2]
    rest = [p for n, p in model.named_parameters() if not (n.endswith("weight") and p.dim() == 2)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=0.02)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 8))
    names = [n for n, _ in model.named_parameters()]
    params = [p for _, p in model.named_parameters()]
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(64, 6, generator=g), torch.randint(0, 3, (64,), generator=g)
    expected = {"loss": {}, "grad_norm": {}, "lr": {}, "layer_grad_norm": {}, "update_ratio": {},
                "layer_weight_norm": {}, "weight_norm": {}, "names": names}
    with TorchMonitor(run_dir, model, opt, collect_freq=COLLECT, debug="all", debug_freq=DEBUG,
                      diagnostic_freq=DIAG, layers_include=".", batch_size=64) as mon:
        for step in range(1, STEPS + 1):
            i = (step * 16) % 64
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[i:i + 16]), y[i:i + 16])
            loss.backward()
            with torch.no_grad():
                norms = [float(p.grad.norm()) for p in params]
            expected["loss"][step] = float(loss)
            expected["grad_norm"][step] = sum(n * n for n in norms) ** 0.5
            expected["lr"][step] = [grp["lr"] for grp in opt.param_groups]
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
            before = [p.detach().clone() for p in params]
            opt.step()
            sched.step()
            if step % DEBUG == 0:
                expected["layer_grad_norm"][step] = norms
                expected["update_ratio"][step] = [float((p.detach() - b).norm() / b.norm())
                                                  for p, b in zip(params, before)]
            if step % DIAG == 0:
                w = [float(p.detach().norm()) for p in params]
                expected["layer_weight_norm"][step] = w
                expected["weight_norm"][step] = sum(v * v for v in w) ** 0.5
            mon.step(loss)
    expected["mindspore_imported"] = "mindspore" in sys.modules
    with open(os.path.join(run_dir, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main(sys.argv[1])
