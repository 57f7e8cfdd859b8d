"""A one-minute demo run: a small transformer classifier on synthetic data, recorded with the core tier.

The task is learnable but not trivial: every sequence is random tokens (from a small vocabulary, so motif tokens
also occur at random) with one of ``classes`` planted motifs (a short fixed token pattern) at a random position,
and the label is which motif was planted. The model has to find the motif anywhere in the sequence, so the loss
falls from ``ln(classes)`` over a few hundred steps.

``build_model`` and ``synthetic_dataset`` are also used by ``bench/overhead.py`` (same model as the benchmark).
"""

import math
import os
import shlex
import shutil
import sys
import time

import numpy as np

import mindspore as ms
from mindspore import nn, ops, Tensor
import mindspore.dataset as ds
from mindspore.nn.learning_rate_schedule import LearningRateSchedule
from mindspore.train import Callback, Model

from .monitor import TrainMonitor
from .run_dir import make_run_dir
from .train_cell import MonitoredTrainCell

__all__ = ["run_demo", "build_model", "synthetic_dataset", "WarmupCosineLR", "DEMO_CONFIG"]

DEMO_CONFIG = {
    "hidden": 128,
    "seq": 64,
    "batch": 32,
    "layers": 2,
    "heads": 4,
    "ffn": 512,
    "vocab": 64,
    "classes": 4,
    "motif_len": 4,
    "lr": 1e-3,
    "warmup": 50,
    "clip": 1.0,
}


class TransformerClassifier(nn.Cell):
    """Token + position embedding, ``layers`` x ``nn.TransformerEncoderLayer``, mean pooling, linear head."""

    def __init__(self, vocab, seq, hidden, heads, ffn, layers, classes, dropout=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.position = ms.Parameter(Tensor(np.random.RandomState(0).normal(0, 0.02, (1, seq, hidden))
                                            .astype(np.float32)), name="position")
        self.encoder = nn.CellList([
            nn.TransformerEncoderLayer(hidden, heads, dim_feedforward=ffn, dropout=dropout, batch_first=True)
            for _ in range(layers)
        ])
        self.norm = nn.LayerNorm((hidden,))
        self.head = nn.Dense(hidden, classes)

    def construct(self, tokens):
        h = self.embedding(tokens) + self.position
        for layer in self.encoder:
            h = layer(h)
        return self.head(self.norm(h.mean(axis=1)))


def build_model(config=None, seed=0):
    """The demo / benchmark network (about 0.4M parameters with the default config)."""
    c = dict(DEMO_CONFIG, **(config or {}))
    ms.set_seed(seed)
    return TransformerClassifier(c["vocab"], c["seq"], c["hidden"], c["heads"], c["ffn"], c["layers"],
                                 c["classes"])


def synthetic_arrays(n, config=None, seed=0):
    """``(tokens int32 [n, seq], labels int32 [n])``: random tokens with one planted motif per sequence."""
    c = dict(DEMO_CONFIG, **(config or {}))
    rs = np.random.RandomState(seed)
    motif_rs = np.random.RandomState(1234)   # the motifs are the same for every seed (train and eval agree)
    motifs = motif_rs.randint(0, c["vocab"], size=(c["classes"], c["motif_len"]))
    tokens = rs.randint(0, c["vocab"], size=(n, c["seq"])).astype(np.int32)
    labels = rs.randint(0, c["classes"], size=n).astype(np.int32)
    starts = rs.randint(0, c["seq"] - c["motif_len"] + 1, size=n)
    for i in range(n):
        tokens[i, starts[i]:starts[i] + c["motif_len"]] = motifs[labels[i]]
    return tokens, labels


def synthetic_dataset(steps, config=None, seed=0):
    """A batched ``NumpySlicesDataset`` of ``steps`` batches (fresh samples every step)."""
    c = dict(DEMO_CONFIG, **(config or {}))
    tokens, labels = synthetic_arrays(steps * c["batch"], c, seed)
    return ds.NumpySlicesDataset({"tokens": tokens, "label": labels}, shuffle=False).batch(
        c["batch"], drop_remainder=True)


class WarmupCosineLR(LearningRateSchedule):
    """Linear warmup from 0 to ``peak`` over ``warmup`` steps, then cosine decay to ``end`` at ``total`` steps.

    lr(s) = peak * (s + 1) / warmup                                   for s < warmup
    lr(s) = end + (peak - end) * (1 + cos(pi * p)) / 2, p = (s - warmup) / (total - warmup), clipped to [0, 1]
    """

    def __init__(self, peak, warmup, total, end=0.0):
        super().__init__()
        if warmup < 0 or total <= warmup:
            raise ValueError("need 0 <= warmup < total, got warmup=%r total=%r" % (warmup, total))
        self.peak = float(peak)
        self.end = float(end)
        self.warmup = float(max(warmup, 1))
        self.decay = float(total - warmup)
        self.warmup_steps = float(warmup)

    def construct(self, global_step):
        s = ops.cast(global_step, ms.float32)
        warm = self.peak * (s + 1.0) / self.warmup
        p = ops.clip_by_value((s - self.warmup_steps) / self.decay, 0.0, 1.0)
        cosine = self.end + (self.peak - self.end) * 0.5 * (1.0 + ops.cos(math.pi * p))
        return ops.select(s < self.warmup_steps, warm, cosine)

    def at(self, step):
        """The same schedule on the host (float)."""
        if step < self.warmup_steps:
            return self.peak * (step + 1.0) / self.warmup
        p = min(max((step - self.warmup_steps) / self.decay, 0.0), 1.0)
        return self.end + (self.peak - self.end) * 0.5 * (1.0 + math.cos(math.pi * p))


class _Progress(Callback):
    def __init__(self, log, every, total):
        super().__init__()
        self.log, self.every, self.total = log, every, total
        self.start = None

    def on_train_begin(self, run_context):
        self.start = time.time()

    def on_train_step_end(self, run_context):
        cb = run_context.original_args()
        step = cb.cur_step_num
        if step % self.every == 0 or step == self.total:
            loss = cb.net_outputs
            loss = float(loss.asnumpy()) if hasattr(loss, "asnumpy") else float("nan")
            self.log("  step %4d/%d  loss %.4f  (%.0f s)" % (step, self.total, loss, time.time() - self.start))


def run_demo(root="./summary_log", steps=800, log=print, collect_freq=10, mode="graph"):
    """Trains the demo transformer for ``steps`` steps and records it; returns the run folder.

    About a minute on two CPU cores with the default 800 steps (~65 ms per step in GRAPH_MODE). Records every
    tier: core every ``collect_freq`` steps; weight norms, a held-out evaluation (loss, accuracy) and all debug
    items 8 times per run; hyperparameters for TensorBoard's HParams tab; a line in ``<root>/experiments.md``.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError("steps must be an int >= 2, got %r" % (steps,))
    if mode not in ("graph", "pynative"):
        raise ValueError("mode must be 'graph' or 'pynative', got %r" % (mode,))
    c = dict(DEMO_CONFIG)
    c["warmup"] = min(c["warmup"], steps // 2)
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    run_dir = make_run_dir(root, "demo", {"lr": c["lr"], "bs": c["batch"], "h": c["hidden"], "steps": steps})
    log("tb-mindspore demo: training a %d-layer transformer classifier (hidden %d, seq %d, batch %d) for %d steps"
        % (c["layers"], c["hidden"], c["seq"], c["batch"], steps))
    log("recording to %s" % run_dir)
    net = build_model(c)
    schedule = WarmupCosineLR(c["lr"], c["warmup"], steps, end=c["lr"] * 0.05)
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=schedule, weight_decay=0.01)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    train_net = MonitoredTrainCell.wrap(net, loss_fn, optimizer, clip_grad_norm=c["clip"])
    model = Model(train_net)
    hparams = {"lr": c["lr"], "batch_size": c["batch"], "hidden": c["hidden"], "layers": c["layers"],
               "heads": c["heads"], "steps": steps, "warmup": c["warmup"], "clip_grad_norm": c["clip"],
               "optimizer": "AdamWeightDecay"}
    every = max(steps // 8, 10)
    monitor = TrainMonitor(run_dir, collect_freq=collect_freq, hparams=hparams,
                           # Diagnostic tier: weight norms and a held-out evaluation 8 times per run.
                           diagnostic_freq=every, eval_dataset=synthetic_dataset(8, c, seed=1),
                           eval_metrics=["accuracy"], eval_freq=every,
                           # Debug tier, every item, 8 times per run.
                           debug="all", debug_freq=every)
    started = time.time()
    model.train(1, synthetic_dataset(steps, c), callbacks=[monitor, _Progress(log, every, steps)],
                dataset_sink_mode=False)
    log("done in %.0f s; view it with: %s" % (time.time() - started, tensorboard_command(root)))
    return run_dir


def tensorboard_command(logdir):
    """A ``tensorboard --logdir`` command line that works as printed (the virtual environment may be inactive)."""
    exe = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    on_path = shutil.which("tensorboard")
    if not os.path.exists(exe) or (on_path and os.path.realpath(on_path) == os.path.realpath(exe)):
        exe = "tensorboard"
    return "%s --logdir %s" % (shlex.quote(exe), shlex.quote(str(logdir)))
