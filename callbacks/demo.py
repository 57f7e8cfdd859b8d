"""The demo: a small transformer classifier on synthetic data, recorded with every tier (``run_demo``), and the
whole ``tb-mindspore demo`` (``run_full_demo``): a healthy run with a loss landscape, a run whose learning rate is
far too high, and a short ``SummaryCollector`` run, with a progress bar and a graceful Ctrl-C.

The task is learnable but not trivial: every sequence is random tokens (from a small vocabulary, so motif tokens
also occur at random) with one of ``classes`` planted motifs (a short fixed token pattern) at a random position,
and the label is which motif was planted. The model has to find the motif anywhere in the sequence, so the loss
falls from ``ln(classes)`` over a few hundred steps.

``build_model`` and ``synthetic_dataset`` are also used by ``bench/overhead.py``: ``DEMO_CONFIG`` is the benchmark
model (hidden 128, seq 64); the demo trains ``DEMO_SMALL`` (hidden 64, seq 32), about a fifth of its cost per step.
"""

import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import mindspore as ms
from mindspore import nn, ops, Tensor
import mindspore.dataset as ds
from mindspore.nn.learning_rate_schedule import LearningRateSchedule
from mindspore.train import Callback, Model

from .landscape.run import LandscapeInterrupted
from .monitor import TrainMonitor
from .recorders.options import Debug, Diagnostic, Eval
from .common.run_dir import make_run_dir
from .cells.train_cell import MonitoredTrainCell
from .landscape import LandscapeCallback

__all__ = ["run_demo", "run_full_demo", "summary_collector_run", "build_model", "synthetic_dataset", "WarmupCosineLR",
           "DEMO_CONFIG", "DEMO_SMALL", "DEFAULT_STEPS", "DemoInterrupted"]

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

# The demo's own size: a quarter of the benchmark model's cost per step (hidden 64, seq 32), so that the whole demo
# (two runs, a landscape and a SummaryCollector run) is ready in under two minutes on an idle 2-core machine.
DEMO_SMALL = dict(DEMO_CONFIG, hidden=64, seq=32, ffn=256)
DEFAULT_STEPS = 600
# The problem run: the peak learning rate 1000x the healthy one (1.0, a plain SGD value given to Adam) and no
# gradient clipping. The loss turns Inf between two recorded points within a few dozen steps (the interval
# statistics catch it) and the head's update ratio ||dw||/||w|| goes above 0.1; the Health panel names both and, as
# their most likely cause, the learning rate (the update ratios, and a peak 1000x Adam's usual 1e-3). The gradient
# norm rises about tenfold over a hundred steps, not the 10x jump over its recent median that makes a grad_explosion
# finding (Megatron-LM's spike factor), so none is promised. (30x and 100x, with or without clipping, only collapse
# this model to chance level, which no rule names.)
PROBLEM_LR_FACTOR = 1000.0
PROBLEM_CONFIG = {"clip": None}


# What the SummaryCollector run records with MindSpore's summary operators (the tab's "Images and tensors").
IMAGE_INPUTS = "input_tokens"          # the first 8 input sequences, one row each, grey level = token id
IMAGE_ATTENTION = "attention_layer0_head0"   # the first encoder layer's attention, head 0, first sequence
TENSOR_PROBABILITIES = "class_probabilities"  # the predicted class probabilities of the first 4 sequences


class TransformerClassifier(nn.Cell):
    """Token + position embedding, ``layers`` x ``nn.TransformerEncoderLayer``, mean pooling, linear head.

    With ``summaries`` it also records, through MindSpore's summary operators (``ImageSummary``, ``TensorSummary``;
    what ``SummaryCollector`` writes into the ``*_MS`` files), a sample of its inputs and the first layer's
    attention map as images and the predicted class probabilities as a tensor.
    """

    def __init__(self, vocab, seq, hidden, heads, ffn, layers, classes, dropout=0.1, summaries=False):
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
        self.summaries = summaries
        self.vocab = float(vocab)
        self.hidden = hidden
        self.head_dim = hidden // heads
        if summaries:
            self.image_summary = ops.ImageSummary()
            self.tensor_summary = ops.TensorSummary()

    def construct(self, tokens):
        embedded = self.embedding(tokens) + self.position
        h = embedded
        for layer in self.encoder:
            h = layer(h)
        logits = self.head(self.norm(h.mean(axis=1)))
        if self.summaries:
            self.image_summary(IMAGE_INPUTS, self.input_image(tokens))
            self.image_summary(IMAGE_ATTENTION, self.attention_image(embedded[0]))
            self.tensor_summary(TENSOR_PROBABILITIES, ops.softmax(logits[:4], axis=-1))
        return logits

    # MindSpore 2.10 (GRAPH_MODE, inside a training cell) drops an ImageSummary whose value comes straight from a
    # Reshape or ExpandDims: each image below ends with a computing op (the scaling) after its reshape.
    def input_image(self, tokens):
        """The first 8 input sequences as a grey image (NCHW in [0, 1]): one row each, grey level = token id."""
        rows = ops.cast(tokens[:8], ms.float32)
        return rows.reshape((1, 1, rows.shape[0], rows.shape[1])) / self.vocab

    def attention_image(self, x):
        """The first encoder layer's head-0 attention over one sequence ``x`` ([seq, hidden]) as a grey image (row:
        query token, column: key token; black the smallest weight of the map, white the largest): softmax(q k^T /
        sqrt(d)), q and k from the layer's own input projection."""
        attn = self.encoder[0].self_attn
        d, n = self.head_dim, self.hidden
        q = ops.matmul(x, attn.in_proj_weight[:d].T) + attn.in_proj_bias[:d]
        k = ops.matmul(x, attn.in_proj_weight[n:n + d].T) + attn.in_proj_bias[n:n + d]
        weights = ops.softmax(ops.matmul(q, k.T) / math.sqrt(d), axis=-1)
        low, high = weights.min(), weights.max()
        image = weights.reshape((1, 1, weights.shape[0], weights.shape[1])) - low
        return image / ops.maximum(high - low, 1e-12)


def build_model(config=None, seed=0, summaries=False):
    """The demo / benchmark network (about 0.4M parameters with the default config); ``summaries``: see
    :class:`TransformerClassifier`."""
    c = dict(DEMO_CONFIG, **(config or {}))
    ms.set_seed(seed)
    return TransformerClassifier(c["vocab"], c["seq"], c["hidden"], c["heads"], c["ffn"], c["layers"],
                                 c["classes"], summaries=summaries)


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
    """A progress bar with the time left: redrawn in place on a terminal, otherwise ``lines`` lines in all (every
    10 % by default)."""

    def __init__(self, label, total, stream=None, stop=None, lines=10):
        super().__init__()
        self.label, self.total = label, total
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.stop = stop                 # a _Stop: request_stop() at the next step once it is set
        self.start = self.first = None
        self.step = 0
        self.lines = max(1, int(lines))
        self.next_tenth = 1              # the next line is due at next_tenth / lines of the steps
        self.last_draw = 0.0

    def _write(self, text, end="\n"):
        self.stream.write(("\r" + text + " " if self.tty else text) + ("" if self.tty and not end else end))
        self.stream.flush()

    def on_train_begin(self, run_context):
        self.start = time.perf_counter()
        self._write("%s: compiling the training graph..." % self.label, end="" if self.tty else "\n")

    def on_train_step_end(self, run_context):
        cb = run_context.original_args()
        self.step = step = int(cb.cur_step_num)
        now = time.perf_counter()
        if self.first is None:
            self.first = (step, now)
            if self.tty:
                self._write("%s: compiled in %.0f s" % (self.label, now - self.start))
        loss = cb.net_outputs[0] if isinstance(cb.net_outputs, (tuple, list)) else cb.net_outputs
        loss = float(np.asarray(loss.asnumpy()).reshape(-1)[0]) if hasattr(loss, "asnumpy") else float("nan")
        per_step = (now - self.first[1]) / (step - self.first[0]) if step > self.first[0] else None
        left = time_left(None if per_step is None else per_step * (self.total - step), now - self.start,
                         step >= self.total)
        line = "%s [%s] %d/%d steps  loss %.3f%s" % (self.label, _bar(step, self.total), step, self.total, loss,
                                                    "  " + left if left else "")
        if self.tty:
            if now - self.last_draw >= 0.2 or step == self.total:
                self.last_draw = now
                self._write(line, end="\n" if step == self.total else "")   # the last draw keeps its line
        elif step == 1 or step * self.lines >= self.next_tenth * self.total:
            while step * self.lines >= self.next_tenth * self.total:
                self.next_tenth += 1
            self._write(line)
        if self.stop is not None and self.stop.requested:
            run_context.request_stop()

    def on_train_end(self, run_context):
        if self.tty:
            self._write("%s: %d/%d steps in %.0f s" % (self.label, self.step, self.total,
                                                     time.perf_counter() - self.start))


def _bar(done, total, width=24):
    filled = int(width * done / max(total, 1))
    return "#" * filled + "." * (width - filled)


def _seconds(s):
    return "%d:%02d" % divmod(int(round(s)), 60)


def time_left(seconds, elapsed, finished):
    """The time part of a progress line: ``"ETA 1:05"``, ``"ETA under 1 s"`` when the estimate rounds to nothing,
    ``"done in 0:42"`` at the end; ``""`` while there is no estimate. Never a zero or negative time left."""
    if finished:
        return "done in %s" % _seconds(elapsed)
    if seconds is None or not math.isfinite(seconds):
        return ""
    return "ETA %s" % _seconds(seconds) if seconds >= 0.5 else "ETA under 1 s"


class _Stop:
    """Ctrl-C / SIGTERM during the demo: remembered (``requested``) and training stops after the current step.

    MindSpore's runtime turns Ctrl-C during a graph call into SIGTERM for the process; both are caught here and
    the previous handlers are back on exit.
    """

    def __init__(self):
        self.requested = False
        self._previous = {}

    def _handler(self, signum, frame):
        if self.requested:       # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[sig] = signal.signal(sig, self._handler)
            except (ValueError, OSError):    # not the main thread
                pass
        return self

    def __exit__(self, *exc):
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        return False


class DemoInterrupted(KeyboardInterrupt):
    """Ctrl-C during the demo; the message says where it stopped and what was recorded."""


def _loss_fn():
    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def run_demo(root="./summary_log", steps=DEFAULT_STEPS, log=print, collect_freq=10, mode="graph", config=None,
             lr_factor=1.0, name="demo", landscape=False, stop=None, label="training", stream=None, on_run_dir=None):
    """Trains the demo transformer for ``steps`` steps and records it with every tier; returns the run folder.

    Records core every ``collect_freq`` steps; weight norms, a held-out evaluation (loss, accuracy) and all debug
    items 8 times per run; hyperparameters for TensorBoard's HParams tab; a line in ``<root>/experiments.md``.
    ``config`` replaces entries of :data:`DEMO_SMALL`; ``lr_factor`` multiplies the peak learning rate; with
    ``landscape`` an 11 x 11 random-plane loss landscape on 64 held-out samples is computed at the end.
    ``on_run_dir(path)`` is called once the run folder exists.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError("steps must be an int >= 2, got %r" % (steps,))
    if mode not in ("graph", "pynative"):
        raise ValueError("mode must be 'graph' or 'pynative', got %r" % (mode,))
    c = dict(DEMO_SMALL, **(config or {}))
    c["warmup"] = min(c["warmup"], steps // 2)
    lr = c["lr"] * lr_factor
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    run_dir = make_run_dir(root, name, {"lr": lr, "bs": c["batch"], "h": c["hidden"], "steps": steps})
    if on_run_dir is not None:
        on_run_dir(run_dir)
    log("%s: a %d-layer transformer classifier (hidden %d, seq %d, batch %d), peak LR %g, %d steps -> %s"
        % (label, c["layers"], c["hidden"], c["seq"], c["batch"], lr, steps, run_dir))
    net = build_model(c)
    schedule = WarmupCosineLR(lr, c["warmup"], steps, end=lr * 0.05)
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=schedule, weight_decay=0.01)
    train_net = MonitoredTrainCell.wrap(net, _loss_fn(), optimizer, clip_grad_norm=c["clip"])
    model = Model(train_net)
    hparams = {"lr": lr, "batch_size": c["batch"], "hidden": c["hidden"], "layers": c["layers"],
               "heads": c["heads"], "steps": steps, "warmup": c["warmup"], "clip_grad_norm": c["clip"],
               "optimizer": "AdamWeightDecay"}
    every = max(steps // 8, 10)
    callbacks = [TrainMonitor(run_dir, collect_freq=collect_freq, hparams=hparams,
                              # Diagnostic tier: weight norms and a held-out evaluation 8 times per run.
                              diagnostic=Diagnostic(every=every),
                              eval=Eval(synthetic_dataset(8, c, seed=1), metrics=["accuracy"], every=every),
                              # Debug tier, every item, 8 times per run.
                              debug=Debug(items="all", every=every)),
                 _Progress(label, steps, stream=stream, stop=stop)]
    if landscape:
        callbacks.append(LandscapeCallback(run_dir, eval_data=synthetic_arrays(64, c, seed=2), methods=("random",),
                                           grid=11, log=log, progress=True))
    model.train(1, synthetic_dataset(steps, c), callbacks=callbacks, dataset_sink_mode=False)
    return run_dir


def summary_collector_run(root, steps=20, config=None, name="mindspore_summary_collector", progress=None):
    """A short run recorded by MindSpore's own ``SummaryCollector`` (``*_MS`` files): the loss, weight histograms,
    the lineage, and what the network's summary operators record (images of its inputs and of an attention map, a
    tensor of class probabilities); returns its folder. ``progress``: a label to print progress lines with (to
    standard output)."""
    from mindspore.train import SummaryCollector

    c = dict(DEMO_SMALL, **(config or {}))
    ms.set_context(mode=ms.GRAPH_MODE)
    run_dir = os.path.join(root, name)
    net = build_model(c, summaries=True)
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=c["lr"], weight_decay=0.01)
    model = Model(net, _loss_fn(), optimizer)
    collector = SummaryCollector(run_dir, collect_freq=max(1, steps // 10),
                                 collect_specified_data={"collect_input_data": False,
                                                         "histogram_regular": "head.*|encoder.0.*dense1.*"})
    callbacks = [collector]
    if progress:
        callbacks.append(_Progress(progress, steps, stream=sys.stdout, lines=4))
    model.train(1, synthetic_dataset(steps, c, seed=3), callbacks=callbacks, dataset_sink_mode=False)
    return run_dir


def _collector_in_child(root, steps, log, stop, limit=180.0, label="[3/3] SummaryCollector run"):
    """Runs :func:`summary_collector_run` in a child process: SummaryCollector forks a writer pool, which can hang
    in a multi-threaded parent; a child that hangs is killed after ``limit`` seconds. Returns the folder or None."""
    cmd = [sys.executable, "-c", "import sys; from tb_mindspore_callbacks import demo; "
           "demo.summary_collector_run(sys.argv[1], int(sys.argv[2]), progress=sys.argv[3])", root, str(steps),
           label]
    with tempfile.TemporaryFile(mode="w+") as errors:   # MindSpore's warnings: the last line says why it failed
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, text=True,
                                 start_new_session=True)    # Ctrl-C reaches the demo only; it stops the child
        # Its progress lines (compiling, steps) are passed on as they come, so this stage is not silent.
        relay = threading.Thread(target=_relay, args=(child.stdout, label, log), daemon=True)
        relay.start()
        started = time.perf_counter()
        while child.poll() is None:
            if stop.requested or time.perf_counter() - started > limit:
                child.kill()
                child.wait()
                if not stop.requested:
                    log("SummaryCollector run skipped: it did not finish in %.0f s" % limit)
                return None
            time.sleep(0.1)
        relay.join(5)
        if child.returncode != 0:
            errors.seek(0)
            err = errors.read().strip().splitlines()
            log("SummaryCollector run failed: %s" % (err[-1] if err else "exit status %d" % child.returncode))
            return None
    return os.path.join(root, "mindspore_summary_collector")


def _relay(pipe, label, log):
    """Passes the child's progress lines (those starting with ``label``) to ``log``."""
    for line in pipe:
        if line.startswith(label):
            log(line.rstrip("\n"))


def _collect_freq(steps):
    """Every 10 steps, more often in short runs (at least about 50 points for the health rules)."""
    return max(1, min(10, steps // 50))


def run_full_demo(root="./summary_log", steps=DEFAULT_STEPS, log=print, stream=None):
    """The whole demo: a healthy run with a loss landscape, the same run with a learning rate 1000x too high and no
    gradient clipping (the Health panel names its problems), and a short ``SummaryCollector`` run (``*_MS`` files).
    Returns the folders.

    Ctrl-C stops training after the current step and raises :class:`DemoInterrupted` saying what was recorded.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError("steps must be an int >= 2, got %r" % (steps,))
    problem_steps = max(2, steps // 2)
    collector_steps = max(2, min(20, steps))
    runs = {}
    started = time.perf_counter()
    log("tb-mindspore demo: [1/3] a healthy run, %d steps, and its loss landscape; [2/3] the learning rate 1000x too "
        "high, %d steps; [3/3] a SummaryCollector run, %d steps. Under two minutes on an idle 2-core machine with the "
        "default 600 steps." % (steps, problem_steps, collector_steps))
    with _Stop() as stop:
        def stopped(where):
            done = ", ".join("%s (%s)" % (k, v) for k, v in runs.items()) or "nothing"
            return DemoInterrupted("stopped by Ctrl-C during %s; recorded so far: %s" % (where, done))

        try:
            where = "the healthy run"
            run_demo(root, steps, log=log, collect_freq=_collect_freq(steps), landscape=True, stop=stop,
                     stream=stream, label="[1/3] healthy run", on_run_dir=lambda d: runs.__setitem__("healthy", d))
            if stop.requested:
                raise stopped(where)
            where = "the run with the learning rate too high"
            run_demo(root, problem_steps, log=log, collect_freq=_collect_freq(problem_steps),
                     lr_factor=PROBLEM_LR_FACTOR, config=PROBLEM_CONFIG, name="demo_lr_too_high", stop=stop,
                     stream=stream, label="[2/3] LR %gx too high, no clipping" % PROBLEM_LR_FACTOR,
                     on_run_dir=lambda d: runs.__setitem__("problem", d))
            if stop.requested:
                raise stopped(where)
        except DemoInterrupted:
            raise
        except KeyboardInterrupt as e:   # Ctrl-C during the landscape (its finished points are written), or twice
            raise stopped("the healthy run's loss landscape" if isinstance(e, LandscapeInterrupted) else where)
        log("[3/3] MindSpore's own SummaryCollector (*_MS files: loss, weight histograms, images, a tensor), %d "
            "steps, in a child process (starting MindSpore there)..." % collector_steps)
        collector = _collector_in_child(root, collector_steps, log, stop)
        if stop.requested:
            raise stopped("the SummaryCollector run")
        if collector:
            runs["summary_collector"] = collector
    log("done in %.0f s; view it with: %s" % (time.perf_counter() - started, tensorboard_command(root)))
    for line in closing_lines(runs):
        log(line)
    return runs


def closing_lines(runs):
    """What to look at in each section of the MindSpore tab, for the runs the demo recorded (``run_full_demo``'s
    answer: ``healthy``, ``problem``, ``summary_collector``)."""
    healthy, problem = os.path.basename(runs.get("healthy", "")), os.path.basename(runs.get("problem", ""))
    lines = ["What to look at in the MindSpore tab, section by section:",
             "  Health: the run with the learning rate %gx too high is named with the step its loss turned Inf "
             "(caught between two recorded points) and what else went wrong in it; click a finding to see its "
             "chart." % PROBLEM_LR_FACTOR,
             "  Core: loss, learning rate (on a log scale: the two runs differ %gx), gradient norm with the "
             "min-max band of every step in between, step time, throughput, memory; compile time as points."
             % PROBLEM_LR_FACTOR,
             "  Diagnostic: evaluation loss and accuracy, per-layer weight norms (a heatmap, layers x steps).",
             "  Debug: the per-layer update-ratio heatmap first: pick %s and compare with %s side by side (its "
             "layers change far faster: red where the healthy run's are near the scale's centre); gradient norms per "
             "layer, activation distributions, data wait."
             % (healthy or "the healthy run", problem or "the other run")]
    if runs.get("summary_collector"):
        lines.append("  Weight distributions of the SummaryCollector run (its *_MS files, read with no MindSpore "
                     "needed): how its weights spread over training.")
    lines += ["  Loss landscape: the healthy run's 11 x 11 loss surface around its final weights (heatmap, "
              "isolines, 3-D).",
              "  Run info: each run's hyperparameters side by side (make_run_dir's, hparams= and MindSpore's "
              "lineage under one name each), and how it was recorded."]
    if runs.get("summary_collector"):
        lines.append("  Images and tensors: the SummaryCollector run's input tokens and its first layer's "
                     "attention map, step by step (ImageSummary), and its class probabilities (TensorSummary).")
    lines.append("  Cluster: each run's ranks x steps (one rank here; with msrun one row per rank, a slow or "
                 "stopped rank stands out).")
    return lines


def tensorboard_command(logdir):
    """A ``tensorboard --logdir`` command line that works as printed (the virtual environment may be inactive)."""
    exe = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    on_path = shutil.which("tensorboard")
    if not os.path.exists(exe) or (on_path and os.path.realpath(on_path) == os.path.realpath(exe)):
        exe = "tensorboard"
    return "%s --logdir %s" % (shlex.quote(exe), shlex.quote(str(logdir)))
