"""Trains a small BERT-style classifier built from a config (no downloads) with MindNLP 0.5 on MindSpore 2.7 (run in
the MindNLP environment by test_mindnlp.py): ``python mindnlp_child.py OUT SCENARIO...``.

* ``errors``: MindNLP's torch-style modules given where a ``mindspore.nn.Cell`` is needed fail at construction, in
  one line naming what was given and what to use;
* ``loop``: a hand-written loop (``mindtorch.autograd.value_and_grad``, a torch-style AdamW with two parameter
  groups, a linear decay of their ``lr`` stepped by hand) recorded by ``LoopMonitor`` with every tier; the
  reference (per-layer gradient norms, weight norms, update ratios, learning rates of every step) is computed on the
  host from the parameters and written to ``OUT/loop/reference.json``;
* ``explicit``: no optimizer given; ``param_names=`` and ``lr=`` callables, the gradients given to ``mon.step``;
* ``trainer``: MindNLP's ``Trainer`` (transformers' API) with its own TensorBoard callback and the
  ``TrainerMonitor`` TrainerCallback (``tb_mindspore_callbacks.torch_style``) recording every tier.

MindNLP's own optimizers have no CPU kernels (``addcdiv``, ``raw_sgd``) and its ``Optimizer.zero_grad`` fails
(``mindtorch.autograd.profiler``): the loop uses an AdamW of elementwise operations and ``model.zero_grad()``.
"""

import json
import os
import sys

import numpy as np

OUT = sys.argv[1]
SCENARIOS = sys.argv[2:]
STEPS = 6
LR = (1e-3, 5e-4)


def _imports():
    import mindnlp  # noqa: F401  (sets up mindtorch and the transformers API)
    import mindtorch as torch
    from mindnlp.transformers import BertConfig, BertForSequenceClassification

    return torch, BertConfig, BertForSequenceClassification


def make_model():
    torch, BertConfig, BertForSequenceClassification = _imports()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, num_labels=2)
    return BertForSequenceClassification(config)


def adamw_class():
    torch = _imports()[0]

    class ElementwiseAdamW(torch.optim.Optimizer):
        """AdamW (Loshchilov & Hutter 2019) from elementwise operations, which have CPU kernels."""

        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

        def step(self, closure=None):
            with torch.no_grad():
                for group in self.param_groups:
                    b1, b2 = group["betas"]
                    for p in group["params"]:
                        if p.grad is None:
                            continue
                        state = self.state[p]
                        if not state:
                            state["step"] = 0
                            state["m"] = torch.zeros_like(p)
                            state["v"] = torch.zeros_like(p)
                        state["step"] += 1
                        g = p.grad
                        state["m"].mul_(b1).add_(g * (1 - b1))
                        state["v"].mul_(b2).add_(g * g * (1 - b2))
                        m_hat = state["m"] / (1 - b1 ** state["step"])
                        v_hat = state["v"] / (1 - b2 ** state["step"])
                        p.mul_(1 - group["lr"] * group["weight_decay"])
                        p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))

    return ElementwiseAdamW


def batches(n, seed):
    torch = _imports()[0]
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield {"input_ids": torch.tensor(rng.integers(0, 100, (4, 16)), dtype=torch.long),
               "labels": torch.tensor(rng.integers(0, 2, (4,)), dtype=torch.long)}


def scenario_errors():
    import mindspore as ms
    from mindspore import nn
    from tb_mindspore_callbacks import LoopMonitor, MonitoredTrainCell, TrainMonitor

    model = make_model()
    out = {}
    for name, call in [
        ("wrap", lambda: MonitoredTrainCell.wrap(model, nn.CrossEntropyLoss(), nn.Adam([ms.Parameter(
            ms.Tensor(np.zeros(2, np.float32)), name="w")]))),
        ("loop_ms_optimizer", lambda: LoopMonitor(os.path.join(OUT, "x"), nn.Adam([ms.Parameter(
            ms.Tensor(np.zeros(2, np.float32)), name="w")]), network=model)),
        ("train_monitor", lambda: TrainMonitor(model)),
    ]:
        try:
            call()
            out[name] = None
        except (TypeError, ValueError) as e:
            out[name] = "%s: %s" % (type(e).__name__, e)
    _write("errors", "errors.json", out)


def _norm(a):
    return float(np.sqrt(np.sum(np.asarray(a, np.float64) ** 2)))


def _ratio(a, b):
    return a / b if b > 0 else (float("inf") if a > 0 else float("nan"))


def scenario_loop():
    torch = _imports()[0]
    from tb_mindspore_callbacks import Debug, Diagnostic, LoopMonitor, Storage

    model = make_model()
    model.train()
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in named if not (n.endswith("bias") or "LayerNorm" in n)]
    no_decay = [p for n, p in named if n.endswith("bias") or "LayerNorm" in n]
    opt = adamw_class()([{"params": decay, "lr": LR[0]}, {"params": no_decay, "lr": LR[1], "weight_decay": 0.0}])
    order = decay + no_decay                      # the optimizer's order: the gradients follow it
    names = {id(p): n for n, p in named}

    def loss_fn(input_ids, labels):
        return model(input_ids=input_ids, labels=labels).loss

    grad_fn = torch.autograd.value_and_grad(loss_fn, tuple(order))
    mon = LoopMonitor(os.path.join(OUT, "loop", "run"), opt, network=model, collect_freq=2,
                      debug=Debug(items="all", every=2), diagnostic=Diagnostic(every=2),
                      storage=Storage(registry=None))
    reference = []
    for step, batch in enumerate(batches(STEPS, 0), start=1):
        mon.begin_step()
        before = {names[id(p)]: p.asnumpy().copy() for p in order}
        lrs = [g["lr"] for g in opt.param_groups]
        loss = grad_fn(batch["input_ids"], batch["labels"])
        grads = {names[id(p)]: _norm(p.grad.asnumpy()) for p in order}
        mon.update()
        mon.step(loss, inputs=batch)
        model.zero_grad()
        after = {names[id(p)]: p.asnumpy() for p in order}
        reference.append({
            "step": step, "loss": float(loss.asnumpy()), "lrs": lrs, "grad_norm": grads,
            "weight_norm": {n: _norm(a) for n, a in after.items()},
            "update_ratio": {n: _ratio(_norm(after[n] - before[n]), _norm(before[n])) for n in after},
        })
        for g, lr0 in zip(opt.param_groups, LR):        # a linear decay stepped by hand, as a scheduler does
            g["lr"] = lr0 * (1 - step / STEPS)
    mon.close()
    _write("loop", "reference.json", {"steps": reference, "errors": mon.monitor.errors,
                                      "order": [names[id(p)] for p in order]})


def scenario_explicit():
    """No optimizer given: the module's parameters, names from ``param_names=`` (a callable), the learning rate
    from ``lr=`` (a callable), gradients given to ``mon.step(loss, grads)`` (``attach_grads=False``)."""
    torch = _imports()[0]
    from tb_mindspore_callbacks import Debug, LoopMonitor, Storage

    model = make_model()
    model.train()
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    names = {id(p): n for n, p in named}
    params = [p for _, p in named]
    opt = adamw_class()(params, lr=1e-3)

    def loss_fn(input_ids, labels):
        return model(input_ids=input_ids, labels=labels).loss

    grad_fn = torch.autograd.value_and_grad(loss_fn, tuple(params), attach_grads=False)
    mon = LoopMonitor(os.path.join(OUT, "explicit", "run"), network=model, collect_freq=1,
                      param_names=lambda p: "m." + names[id(p)], lr=lambda: opt.param_groups[0]["lr"],
                      debug=Debug(items=["layer_grad_norm"], every=1), storage=Storage(registry=None))
    reference = []
    for step, batch in enumerate(batches(3, 1), start=1):
        loss, grads = grad_fn(batch["input_ids"], batch["labels"])
        for p, g in zip(params, grads):
            p.grad = torch.tensor(g, device=p.device)     # as mindtorch attaches them
        opt.step()
        model.zero_grad()
        mon.step(loss, grads)
        reference.append({"step": step, "lr": opt.param_groups[0]["lr"],
                          "grad_norm": {"m." + names[id(p)]: _norm(g.asnumpy()) for p, g in zip(params, grads)}})
        opt.param_groups[0]["lr"] *= 0.5
    mon.close()
    _write("explicit", "reference.json", {"steps": reference, "errors": mon.monitor.errors})


def scenario_trainer():
    torch = _imports()[0]               # MindNLP first: it sets up the transformers API on MindSpore
    from transformers import Trainer, TrainingArguments

    model = make_model()

    class Data(torch.utils.data.Dataset):
        def __init__(self, n, seed):
            rng = np.random.default_rng(seed)
            self.ids = rng.integers(0, 100, (n, 16))
            self.labels = rng.integers(0, 2, (n,))

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            return {"input_ids": torch.tensor(self.ids[i]), "labels": torch.tensor(self.labels[i])}

    from transformers import TrainerCallback
    from tb_mindspore_callbacks.torch_style import TrainerMonitor

    class KeepLogs(TrainerCallback):
        def __init__(self):
            self.logs = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            self.logs.append(dict(logs or {}, step=state.global_step))

    out = os.path.join(OUT, "trainer")
    # max_grad_norm=0: MindNLP's gradient clipping calls a norm without a CPU path (LpNorm with axis None).
    args = TrainingArguments(output_dir=os.path.join(out, "output"), logging_dir=os.path.join(out, "hf"),
                             report_to=["tensorboard"], per_device_train_batch_size=4, max_steps=4, logging_steps=2,
                             eval_strategy="steps", eval_steps=4, per_device_eval_batch_size=8,
                             save_strategy="no", use_cpu=True, max_grad_norm=0, disable_tqdm=True)
    opt = adamw_class()(model.parameters(), lr=1e-3)
    keep = KeepLogs()
    monitor = TrainerMonitor(os.path.join(out, "ours"), collect_freq=2, debug="all", debug_freq=2, diagnostic_freq=2)
    Trainer(model=model, args=args, train_dataset=Data(16, 0), eval_dataset=Data(8, 1), optimizers=(opt, None),
            callbacks=[keep, monitor]).train()
    _write("trainer", "trainer_logs.json", {"logs": keep.logs})


def _write(name, filename, body):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, filename), "w") as f:
        json.dump(body, f)


def main():
    os.makedirs(OUT, exist_ok=True)
    for s in SCENARIOS:
        {"errors": scenario_errors, "loop": scenario_loop, "explicit": scenario_explicit,
         "trainer": scenario_trainer}[s]()
        print("done", s, flush=True)


if __name__ == "__main__":
    main()
