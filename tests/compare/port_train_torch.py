"""The PyTorch side of a port-check pair: trains one of ``port_spec``'s models from the spec file's initial
weights and batches, recorded by ``TorchMonitor`` (every step). Run in the torch environment:
``python port_train_torch.py JOBS_JSON`` (``port_spec.jobs_of``)."""

import sys

import numpy as np
import torch
from torch import nn

import port_spec as spec
from tb_mindspore_callbacks.torch_style import TorchMonitor


class MLP(nn.Module):
    def __init__(self, _settings):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(10, 32), nn.Linear(32, 32), nn.Linear(32, spec.CLASSES)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class CNN(nn.Module):
    def __init__(self, _settings):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8, momentum=0.1, eps=1e-5)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8, momentum=0.1, eps=1e-5)
        self.fc = nn.Linear(8, spec.CLASSES)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


class Layer(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        d = spec.DIM
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-5), nn.LayerNorm(d, eps=1e-5)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(d, spec.FF), nn.Linear(spec.FF, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        b, t, d = x.shape
        h, hd = spec.HEADS, spec.DIM // spec.HEADS
        y = self.ln1(x)
        q, k, v = (p(y).reshape(b, t, h, hd).transpose(1, 2) for p in (self.q, self.k, self.v))
        att = torch.softmax(q @ k.transpose(-1, -2) / np.sqrt(hd), dim=-1)
        x = x + self.drop(self.o((att @ v).transpose(1, 2).reshape(b, t, d)))
        return x + self.drop(self.ff2(torch.relu(self.ff1(self.ln2(x)))))


class Transformer(nn.Module):
    def __init__(self, settings):
        super().__init__()
        self.emb = nn.Embedding(spec.VOCAB, spec.DIM)
        self.pos = nn.Parameter(torch.zeros(spec.SEQ, spec.DIM))
        self.layers = nn.ModuleList([Layer(settings["dropout"]) for _ in range(2)])
        self.ln = nn.LayerNorm(spec.DIM, eps=1e-5)
        self.head = nn.Linear(spec.DIM, spec.CLASSES)

    def forward(self, x):
        x = self.emb(x) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln(x).mean(dim=1))


MODELS = {"mlp": MLP, "cnn": CNN, "transformer": Transformer}


def main(argv):
    for job in spec.jobs_of(argv):
        train(job["model"], job["spec"], job["run_dir"], job["inject"], job["settings"])


def train(model_name, spec_file, run_dir, inject, s):
    torch.set_num_threads(int(s.get("threads", 1)))     # another thread count: a noise pair (other rounding)
    weights, x, y = spec.load(spec_file)
    model = MODELS[model_name](s)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(weights[name]))
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and n not in ("pos",)]
    rest = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and n not in ("pos",))]
    groups = [{"params": decay, "weight_decay": s["weight_decay"]}, {"params": rest, "weight_decay": 0.0}]
    if s["optimizer"] == "adam":
        opt = torch.optim.Adam(groups, lr=s["lr"], betas=tuple(s["betas"]), eps=s["eps"])
    else:
        opt = torch.optim.SGD(groups, lr=s["lr"], momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step0: spec.warmup_factor(step0, s["warmup"]))
    xt, yt = torch.from_numpy(x), torch.from_numpy(y).long()
    loss_fn = nn.CrossEntropyLoss()
    with TorchMonitor(run_dir, model, opt, collect_freq=1, debug="all", debug_freq=1, diagnostic_freq=1,
                      layers_include=".", max_layers=200, batch_size=spec.BATCH) as mon:
        model.eval()
        with torch.no_grad():          # the model before training, evaluated as at every eval_every steps
            mon.scalar("diagnostic/eval_loss", float(loss_fn(model(xt[0]), yt[0])), step=0)
        for step in range(1, s["steps"] + 1):
            model.train()
            opt.zero_grad()
            loss = loss_fn(model(xt[step - 1]), yt[step - 1])
            loss.backward()
            opt.step()
            sched.step()
            mon.step(loss)
            if step % s["eval_every"] == 0:
                model.eval()
                with torch.no_grad():
                    mon.scalar("diagnostic/eval_loss", float(loss_fn(model(xt[0]), yt[0])))


if __name__ == "__main__":
    main(sys.argv)
