"""Trains one run of the health corpus (a :class:`corpus_catalogue.Spec`): a tiny real MindSpore training recorded
by the companion callbacks, healthy or with one fault injected, into ``<out>/runs/<id>/``; what happened while it
trained (the steps the fault was injected at, with their wall times; each live health event with the time it was
raised) goes to ``<out>/meta/<id>.json``.

    python bench/corpus_train.py OUT ID [ID ...]     # trains those runs of the plan stored in OUT/plan.json

Faults are injected through the model itself, never through the monitoring: a :class:`Knob` is an identity in the
forward pass whose backward pass multiplies the gradient by a factor held in a ``Parameter`` (changed between steps
without recompiling), placed on one layer's weight, on a layer's output or on the logits; NaN from an input scale set
to +Inf for one step; a dead layer from ``ops.stop_gradient``; a frozen one from ``requires_grad=False``.
"""

import gc
import json
import math
import os
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import corpus_catalogue as cat  # noqa: E402

FEATURES, CLASSES, HIDDEN = 16, 4, 32
IMAGE = 8
VOCAB, SEQ, MOTIF = 16, 8, 2
BASE_LR = {"momentum": 0.05, "adam": 2e-3, "adamw": 2e-3}
STEPS_PER_EPOCH = 16
EXPLOSION = 1000.0
VANISH = 1e-7
OVERFLOW = 1e9
LEAK_BYTES = 1 << 20
# input_bound: a batch waits PACE times the median step measured so far (over the last PACE_WINDOW steps), at least
# SLOW_BATCH_S (a sleep in the pipeline: not slowed by machine load), so that the pipeline dominates whatever the load.
SLOW_BATCH_S = 0.1
PACE = 2.0
PACE_WINDOW = 16


# -------------------------------------------------------------------------------------------------------------
# Data (numpy): learnable synthetic tasks, the same for every seed's teacher so that train and eval agree.
def task_arrays(arch, n, seed, label_noise=0.0, shift=0.0):
    rs = np.random.RandomState(seed)
    teacher = np.random.RandomState(1234)
    if arch == "mlp":
        w = teacher.normal(size=(FEATURES, CLASSES))
        x = rs.normal(size=(n, FEATURES))
        y = np.argmax(x @ w, axis=1)
    elif arch == "cnn_bn":
        templates = teacher.choice((-1.0, 1.0), size=(CLASSES, 1, IMAGE, IMAGE))
        y = rs.randint(0, CLASSES, n)
        x = 0.7 * templates[y] + rs.normal(size=(n, 1, IMAGE, IMAGE))
    else:
        motifs = teacher.randint(0, VOCAB, size=(CLASSES, MOTIF))
        y = rs.randint(0, CLASSES, n)
        x = rs.randint(0, VOCAB, size=(n, SEQ))
        start = rs.randint(0, SEQ - MOTIF + 1, n)
        for i in range(n):
            x[i, start[i]:start[i] + MOTIF] = motifs[y[i]]
    if label_noise:
        flip = rs.random_sample(n) < label_noise
        y = np.where(flip, rs.randint(0, CLASSES, n), y)
    if arch == "transformer":
        return x.astype(np.int32), y.astype(np.int32)
    return (x + shift).astype(np.float32), y.astype(np.int32)


# -------------------------------------------------------------------------------------------------------------
# Models: every weight goes through a Knob, so that a fault can be placed on any layer without another graph.
def build(spec, rs):
    """``(net, layers)``: the network and its weight parameters' names in depth order (``first``, ``middle``,
    ``last`` pick from them)."""
    import mindspore as ms
    from mindspore import nn, ops, Parameter, Tensor

    class Knob(nn.Cell):
        """``knob(x, factor)``: identity forward; the backward pass multiplies the gradient by ``factor``.

        ``stop_gradient(x) + (x - stop_gradient(x)) * factor`` is exactly ``x`` forward and has the gradient
        ``factor``; no custom bprop (MindSpore 2.10 aborts on a custom bprop under ``value_and_grad`` of a function
        in PYNATIVE_MODE). The product is taken in float32 and cast back, so that a float16 ``x`` gets a float16
        gradient that overflows when ``factor`` is large (the overflow storm) while the forward value stays exact."""

        def construct(self, x, factor):
            fixed = ops.stop_gradient(x)
            moving = ops.cast(x - fixed, ms.float32) * factor
            return fixed + ops.cast(moving, ops.dtype(x))

    def factor(value=1.0, name="knob"):
        return Parameter(Tensor(np.array(value, np.float32)), name=name, requires_grad=False)

    def he(shape, fan_in, scale=1.0):
        return Parameter(Tensor((rs.normal(0, math.sqrt(2.0 / fan_in), shape) * scale).astype(np.float32)),
                         name="weight")

    class Lin(nn.Cell):
        def __init__(self, din, dout, scale=1.0):
            super().__init__()
            self.weight = he((dout, din), din, scale)
            self.bias = Parameter(Tensor(np.zeros(dout, np.float32)), name="bias")
            self.knob = Knob()
            self.factor = factor()

        def construct(self, x):
            w = ops.cast(self.knob(self.weight, self.factor), ops.dtype(x))
            return ops.matmul(x, ops.transpose(w, (1, 0))) + ops.cast(self.bias, ops.dtype(x))

    class Conv(nn.Cell):
        def __init__(self, cin, cout):
            super().__init__()
            self.weight = he((cout, cin, 3, 3), cin * 9)
            self.knob = Knob()
            self.factor = factor()
            self.conv = ops.Conv2D(out_channel=cout, kernel_size=3, pad_mode="pad", pad=1)

        def construct(self, x):
            return self.conv(x, ops.cast(self.knob(self.weight, self.factor), ops.dtype(x)))

    fp16 = spec.dtype == "fp16"
    case = spec.case
    head_scale = 1e-3 if case == "early_growth" else 1.0

    class First(nn.Cell):
        """On the first layer's output: the vanishing-gradient knob and the dead layer's stop_gradient."""

        def __init__(self):
            super().__init__()
            self.knob = Knob()
            self.factor = factor(VANISH if case == "vanishing_gradients" else 1.0)
            self.dead = case == "dead_layer"

        def construct(self, h):
            h = self.knob(h, self.factor)
            if self.dead:
                h = ops.stop_gradient(h)
            return h

    class Body(nn.Cell):
        """What every model shares: the input scale (NaN at a step), the dtype handling, the knobs on the
        float16 logits (an overflow) and on the float32 logits (every layer's gradient)."""

        def __init__(self):
            super().__init__()
            self.input_scale = Parameter(Tensor(np.array(1.0, np.float32)), name="input_scale", requires_grad=False)
            self.knob = Knob()
            self.half_factor = factor(name="half_factor")
            self.loss_factor = factor(name="loss_factor")
            self.fp16 = fp16

        def cast_in(self, x):
            x = x * ops.cast(self.input_scale, ops.dtype(x))
            return ops.cast(x, ms.float16) if self.fp16 else x

        def cast_out(self, logits):
            return self.knob(ops.cast(self.knob(logits, self.half_factor), ms.float32), self.loss_factor)

    if spec.arch == "mlp":
        hidden = HIDDEN * 4 if case == "overfitting" else HIDDEN

        class Net(Body):
            def __init__(self):
                super().__init__()
                self.l0 = Lin(FEATURES, hidden)
                self.l1 = Lin(hidden, hidden)
                self.l2 = Lin(hidden, CLASSES, head_scale)
                self.relu = nn.ReLU()
                self.first = First()

            def construct(self, x):
                h = self.first(self.relu(self.l0(self.cast_in(x))))
                h = self.relu(self.l1(h))
                return self.cast_out(self.l2(h))

        net = Net()
        return net, ["l0.weight", "l1.weight", "l2.weight"]
    if spec.arch == "cnn_bn":
        momentum = 0.999 if case == "broken_eval" else 0.9

        class Net(Body):
            def __init__(self):
                super().__init__()
                self.c0 = Conv(1, 8)
                self.bn0 = nn.BatchNorm2d(8, momentum=momentum)
                self.c1 = Conv(8, 8)
                self.bn1 = nn.BatchNorm2d(8, momentum=momentum)
                self.l2 = Lin(8, CLASSES, head_scale)
                self.relu = nn.ReLU()
                self.first = First()

            def construct(self, x):
                h = self.first(self.relu(self.bn0(self.c0(self.cast_in(x)))))
                h = self.relu(self.bn1(self.c1(h)))
                return self.cast_out(self.l2(h.mean(axis=(2, 3))))

        net = Net()
        return net, ["c0.weight", "c1.weight", "l2.weight"]

    heads = 2
    dh = HIDDEN // heads

    class Norm(nn.Cell):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm((HIDDEN,))

        def construct(self, x):
            return ops.cast(self.norm(ops.cast(x, ms.float32)), ops.dtype(x))

    class Block(nn.Cell):
        """Pre-norm self-attention and feed-forward with residuals. ``max_logit``: the largest attention logit of
        the last call (kept for the attention-logit probe)."""

        def __init__(self):
            super().__init__()
            self.n1, self.n2 = Norm(), Norm()
            self.q, self.k, self.v, self.o = (Lin(HIDDEN, HIDDEN) for _ in range(4))
            self.f1, self.f2 = Lin(HIDDEN, 2 * HIDDEN), Lin(2 * HIDDEN, HIDDEN)
            self.relu = nn.ReLU()
            self.softmax = nn.Softmax(axis=-1)
            self.scale = 1.0 / math.sqrt(dh)
            self.first = First()

        def split(self, t, b):
            return ops.transpose(ops.reshape(t, (b, SEQ, heads, dh)), (0, 2, 1, 3))

        def construct(self, x):
            b = x.shape[0]
            h = self.n1(x)
            q, k, v = self.split(self.first(self.q(h)), b), self.split(self.k(h), b), self.split(self.v(h), b)
            logits = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * self.scale
            att = ops.cast(self.softmax(ops.cast(logits, ms.float32)), ops.dtype(v))
            a = ops.reshape(ops.transpose(ops.matmul(att, v), (0, 2, 1, 3)), (b, SEQ, HIDDEN))
            x = x + self.o(a)
            return x + self.f2(self.relu(self.f1(self.n2(x))))

    class Net(Body):
        def __init__(self):
            super().__init__()
            self.table = Parameter(Tensor(rs.normal(0, 1.0, (VOCAB, HIDDEN)).astype(np.float32)), name="table")
            self.position = Parameter(Tensor(rs.normal(0, 0.1, (1, SEQ, HIDDEN)).astype(np.float32)),
                                      name="position")
            self.block = Block()
            self.norm = Norm()
            self.head = Lin(HIDDEN, CLASSES, head_scale)

        def construct(self, tokens):
            h = self.cast_in(ops.gather(self.table, tokens, 0) + self.position)
            h = self.block(h)
            return self.cast_out(self.head(self.norm(h).mean(axis=1)))

    net = Net()
    return net, ["block.q.weight", "block.f1.weight", "head.weight"]


# -------------------------------------------------------------------------------------------------------------
def layer_name(spec, layers):
    """The expected layer of a layer fault (a parameter name) or None."""
    if spec.fault_layer is None:
        return None
    return layers[{"first": 0, "middle": 1, "last": 2}[spec.fault_layer]]


def knob_of(net, param_name):
    """The gradient factor of the weight ``param_name`` (``l1.weight`` -> ``l1.factor``)."""
    cell = net
    for part in param_name.split(".")[:-1]:
        cell = getattr(cell, part)
    return cell.factor


def _set(param, value):
    from mindspore import Tensor

    param.set_data(Tensor(np.array(value, np.float32)))


class Pace:
    """input_bound's data delay, relative to the step: each batch waits ``PACE`` times the median of the last
    ``PACE_WINDOW`` steps measured by the trainer (from a step's start to its end: the data wait left out; the first
    step, a graph compilation, too), at least ``SLOW_BATCH_S``. A fixed delay was shorter than the step itself on a
    loaded machine (steps of 0.6-0.8 s against 100 ms), so the prefetching pipeline kept up and the runs were not
    input-bound; this one makes the pipeline twice as slow as the step whatever the load. :meth:`summary` (the
    meta's ``pace``) lets the judge tell whether it did."""

    def __init__(self):
        self.steps_s = []
        self.delays_s = []
        self._start = None

    def begin(self):
        self._start = time.perf_counter()

    def end(self, step):
        if self._start is not None and step > 1:
            self.steps_s.append(time.perf_counter() - self._start)
        self._start = None

    def delay(self):
        """The wait of the next batch (called from the dataset's thread)."""
        recent = self.steps_s[-PACE_WINDOW:]
        d = max(SLOW_BATCH_S, PACE * float(np.median(recent))) if recent else SLOW_BATCH_S
        self.delays_s.append(d)
        return d

    def wait(self):
        time.sleep(self.delay())

    def summary(self):
        med = (lambda v: round(1000.0 * float(np.median(v)), 2) if v else None)
        return {"factor": PACE, "min_batch_ms": 1000.0 * SLOW_BATCH_S, "batches": len(self.delays_s),
                "batch_ms_median": med(self.delays_s), "steps": len(self.steps_s), "step_ms_median": med(self.steps_s)}


class Plan:
    """What happens at which step: ``actions[step] -> [callable]``; ``injected`` records (step, wall time);
    ``pace``: input_bound's data delay (:class:`Pace`), None otherwise."""

    def __init__(self):
        self.actions = {}
        self.injected = []
        self.leak = []
        self.leak_from = None
        self.pace = None

    def at(self, step, fn, label):
        self.actions.setdefault(int(step), []).append((fn, label))

    def before_step(self, step):
        for fn, label in self.actions.get(int(step), ()):
            fn()
            self.injected.append({"step": int(step), "time": time.time(), "what": label})
        if self.pace is not None:
            self.pace.begin()

    def after_step(self, step):
        if self.pace is not None:
            self.pace.end(step)
        if self.leak_from is not None and step >= self.leak_from:
            self.leak.append(np.ones(LEAK_BYTES // 4, np.float32))


def fault_plan(spec, net, layers):
    plan = Plan()
    s = spec.fault_step
    if spec.case == "grad_explosion":
        plan.at(s, lambda: _set(net.loss_factor, EXPLOSION), "loss gradient x%g" % EXPLOSION)
        plan.at(s + 3, lambda: _set(net.loss_factor, 1.0), "loss gradient x1")
    elif spec.case == "layer_explosion":
        knob = knob_of(net, layer_name(spec, layers))
        plan.at(s, lambda: _set(knob, EXPLOSION), "%s gradient x%g" % (layer_name(spec, layers), EXPLOSION))
        plan.at(s + 3, lambda: _set(knob, 1.0), "layer gradient x1")
    elif spec.case == "overflow_storm":
        plan.at(s, lambda: _set(net.half_factor, OVERFLOW), "float16 logits' gradient x%g (overflow)" % OVERFLOW)
    elif spec.case == "memory_leak":
        plan.leak_from = s
        plan.injected.append({"step": int(s), "time": None, "what": "leak 1 MB per step"})
    elif spec.case == "input_bound":
        plan.pace = Pace()
    elif spec.case == "nan_at_step":
        from mindspore import Tensor

        def scale(value):
            return lambda: net.input_scale.set_data(Tensor(np.array(value, np.float32)))

        plan.at(s, scale(np.inf), "inputs x Inf")
        plan.at(s + 1, scale(1.0), "inputs x 1")
    return plan


# -------------------------------------------------------------------------------------------------------------
def schedule_of(spec, lr, total):
    from mindspore import nn

    from tb_mindspore_callbacks.demo import WarmupCosineLR

    if spec.case == "warmup_never_ends":
        return WarmupCosineLR(lr, 20 * total, 21 * total, end=lr * 0.05), "warmup_cosine"
    if spec.schedule == "step":
        return nn.piecewise_constant_lr([total // 2, total + 1], [lr, lr / 10]), "step"
    if spec.schedule == "warmup_cosine":
        return WarmupCosineLR(lr, max(1, total // 10), total + 1, end=lr * 0.05), "warmup_cosine"
    return lr, "constant"


def optimizer_of(spec, params, learning_rate):
    from mindspore import nn

    if spec.optimizer == "adam":
        return nn.Adam(params, learning_rate=learning_rate)
    if spec.optimizer == "adamw":
        return nn.AdamWeightDecay(params, learning_rate=learning_rate, weight_decay=0.01)
    return nn.Momentum(params, learning_rate=learning_rate, momentum=0.9)


def hparams_of(spec, schedule_name, total):
    hp = {"lr": BASE_LR[spec.optimizer] * (0.25 if spec.case == "small_batch" else 1.0), "batch_size": spec.batch,
          "optimizer": spec.optimizer, "arch": spec.arch, "steps": total}
    if spec.case == "lr_not_applied":
        hp.update(lr_schedule="warmup_cosine", warmup_steps=max(1, total // 10))
    elif spec.case == "declared_constant":
        hp["lr_schedule"] = "constant"
    elif spec.case == "warmup_never_ends":
        hp.update(lr_schedule="warmup_cosine", warmup_steps=20 * total)
    elif schedule_name != "constant" and spec.index % 2 == 0:
        hp["lr_schedule"] = schedule_name
    return hp


class LiveTimes:
    """Builds a Recorder that keeps each live health event with the wall time it was raised."""

    @staticmethod
    def make(out):
        from tb_mindspore_callbacks import Recorder

        class _Times(Recorder):
            name = "corpus_live_times"

            def on_anomaly(self, event):
                out.append({"rule": event.get("rule"), "step": event.get("step"),
                            "first_step": event.get("first_step"), "time": time.time()})

        return _Times()


def datasets(spec, total):
    """``(train x, train y, eval x or None, eval y)`` for the spec."""
    n = spec.batch * STEPS_PER_EPOCH
    noise, shift = 0.0, 0.0
    if spec.case == "overfitting":
        n, noise = 64, 0.3
    if spec.case == "broken_eval" and spec.arch == "cnn_bn":
        shift = 4.0
    x, y = task_arrays(spec.arch, n, spec.seed, label_noise=noise, shift=shift)
    ex = ey = None
    if spec.eval:
        ex, ey = task_arrays(spec.arch, 256, spec.seed + 1, shift=shift)
        if spec.case == "broken_eval" and spec.arch == "mlp":
            ex = ex * 5.0 + 3.0
        elif spec.case == "broken_eval" and spec.arch == "transformer":
            ey = (ey + 1) % CLASSES
    return x, y, ex, ey


def total_steps(spec):
    return spec.steps


def start_run(spec, out):
    """The start of a run of the corpus or of its precursor set: MindSpore's mode and seed set from ``spec``, the
    meta folder made. Returns ``(run_dir, meta_path, rs, cpu0)``: ``<out>/runs/<id>``, ``<out>/meta/<id>.json``, the
    run's numpy generator (seeded as MindSpore) and the process's CPU time at the start."""
    import mindspore as ms

    cpu0 = time.process_time()
    run_dir = os.path.join(out, "runs", spec.id)
    meta_path = os.path.join(out, "meta", spec.id + ".json")
    os.makedirs(os.path.dirname(meta_path), exist_ok=True)
    ms.set_context(mode=ms.GRAPH_MODE if spec.mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(spec.seed % (1 << 31))
    return run_dir, meta_path, np.random.RandomState(spec.seed % (1 << 31)), cpu0


def record_error(meta, error):
    """A training that failed is recorded as such in its meta (the set goes on)."""
    meta["status"] = "error"
    meta["error"] = "%s: %s" % (type(error).__name__, error)
    meta["traceback"] = traceback.format_exc()[-4000:]


def finish_run(meta, meta_path, cpu0):
    """Stamps ``meta`` with the run's end (``finished``, ``cpu_s``, ``wall_s``) and writes it to ``meta_path``
    through a temporary file; returns it."""
    meta["finished"] = time.time()
    meta["cpu_s"] = round(time.process_time() - cpu0, 2)
    meta["wall_s"] = round(meta["finished"] - meta["started"], 2)
    with open(meta_path + ".tmp", "w") as f:
        json.dump(meta, f, indent=1, default=str)
    os.replace(meta_path + ".tmp", meta_path)
    return meta


def train_run(spec, out):
    """Trains ``spec`` into ``<out>/runs/<id>`` and writes ``<out>/meta/<id>.json``; returns the meta dict."""
    run_dir, meta_path, rs, cpu0 = start_run(spec, out)
    net, layers = build(spec, rs)
    total = total_steps(spec)
    live = []
    meta = {"spec": spec.to_json(), "run_dir": os.path.relpath(run_dir, out), "layers": layers,
            "fault_layer_name": layer_name(spec, layers), "started": time.time(), "live": live}
    plan = fault_plan(spec, net, layers)
    if spec.case == "frozen_layer":
        dict(net.parameters_and_names())[layer_name(spec, layers)].requires_grad = False
    try:
        if spec.entry == "model":
            stopped = _train_model(spec, net, run_dir, total, plan, live)
        else:
            stopped = _train_loop(spec, net, run_dir, total, plan, live)
        meta["stopped_early_at"] = stopped
        meta["status"] = "trained"
    except Exception as e:
        record_error(meta, e)
    plan.leak.clear()
    meta["injected"] = plan.injected
    if plan.pace is not None:
        meta["pace"] = plan.pace.summary()
    return finish_run(meta, meta_path, cpu0)


def _monitor_kwargs(spec, total, hparams, live):
    kw = dict(collect_freq=spec.collect_freq, flush_secs=1.0, registry=None, hparams=hparams,
              recorders=[LiveTimes.make(live)])
    if spec.debug:
        kw.update(debug=["update_ratio", "layer_grad_norm", "data_wait"], debug_freq=2 * spec.collect_freq)
    kw["diagnostic_freq"] = max(spec.collect_freq, total // 16 // spec.collect_freq * spec.collect_freq)
    return kw


def _eval_every(spec, total):
    """About 8 evaluations a run (12 for overfitting's longer runs), on core points."""
    return max(spec.collect_freq, total // (12 if spec.case == "overfitting" else 8) // spec.collect_freq
               * spec.collect_freq)


def _loss_fn():
    from mindspore import nn

    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")


def _train_model(spec, net, run_dir, total, plan, live):
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Callback, EarlyStopping, Model, ReduceLROnPlateau

    from tb_mindspore_callbacks import MonitoredLossScaleCell, MonitoredTrainCell, TrainMonitor

    x, y, ex, ey = datasets(spec, total)
    per_epoch = len(x) // spec.batch
    epochs = max(1, int(math.ceil(total / per_epoch)))
    total = epochs * per_epoch
    lr = BASE_LR[spec.optimizer] * (0.25 if spec.case == "small_batch" else 1.0)
    schedule, name = schedule_of(spec, lr, total)
    opt = optimizer_of(spec, net.trainable_params(), schedule)
    hparams = hparams_of(spec, name, total)
    if spec.dtype == "fp16":
        init = 2.0 ** 24 if spec.case == "occasional_overflow" else 2.0 ** 16
        scale = nn.DynamicLossScaleUpdateCell(loss_scale_value=init, scale_factor=2, scale_window=50)
        cell = MonitoredLossScaleCell.wrap(net, _loss_fn(), opt, scale_sense=scale)
    else:
        cell = MonitoredTrainCell.wrap(net, _loss_fn(), opt)
    model = Model(cell)
    kw = _monitor_kwargs(spec, total, hparams, live)
    if ex is not None:
        kw.update(eval_dataset=ds.NumpySlicesDataset({"x": ex, "y": ey}, shuffle=False).batch(64),
                  eval_freq=_eval_every(spec, total))

    def data():
        if spec.case != "input_bound":
            return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(spec.batch, drop_remainder=True)

        def batches():
            for i in range(per_epoch):
                plan.pace.wait()
                yield x[i * spec.batch:(i + 1) * spec.batch], y[i * spec.batch:(i + 1) * spec.batch]

        return ds.GeneratorDataset(batches, ["x", "y"], shuffle=False)

    class Inject(Callback):
        def __init__(self):
            super().__init__()
            self.last = 0

        def on_train_step_begin(self, run_context):
            self.last = int(run_context.original_args().cur_step_num)
            plan.before_step(self.last + offset[0])

        def on_train_step_end(self, run_context):
            plan.after_step(int(run_context.original_args().cur_step_num) + offset[0])

    offset = [0]
    extra = []
    if spec.case == "early_stopping":
        extra.append(EarlyStopping(monitor="loss", patience=1, min_delta=0.02))
    if spec.case == "reduce_lr_on_plateau":
        extra.append(ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=0.01))
    prefetch = ds.config.get_prefetch_size()
    if spec.case == "input_bound":
        ds.config.set_prefetch_size(1)
    inject = Inject()
    try:
        if spec.case == "resumed":
            first = epochs // 2
            model.train(first, data(), callbacks=[TrainMonitor(run_dir, **kw), inject], dataset_sink_mode=False)
            offset[0] = first * per_epoch
            kw["recorders"] = [LiveTimes.make(live)]
            model.train(epochs, data(), callbacks=[TrainMonitor(run_dir, **kw), inject], dataset_sink_mode=False,
                        initial_epoch=first)
        else:
            model.train(epochs, data(), callbacks=[TrainMonitor(run_dir, **kw), inject] + extra,
                        dataset_sink_mode=False)
    finally:
        ds.config.set_prefetch_size(prefetch)
    del ms
    return inject.last if inject.last < total else None


class GradStep:
    """Builds ``value_and_grad(loss_net, None, weights)`` inside a cell (GRAPH_MODE loops; see ``_train_loop``)."""

    def __new__(cls, loss_net, weights):
        import mindspore as ms
        from mindspore import nn

        class _Step(nn.Cell):
            def __init__(self):
                super().__init__(auto_prefix=False)
                self.loss_net = loss_net
                self.grad = ms.value_and_grad(loss_net, None, weights)

            def construct(self, a, b):
                return self.grad(a, b)

        return _Step()


def _loop_batches(spec, x, y, total, pace=None):
    """The loop's batches as users take them: a MindSpore dataset's tuple iterator, epoch after epoch (its pipeline
    prefetches; input_bound's generator waits ``pace`` a batch, as in ``Model.train``)."""
    import mindspore.dataset as ds

    per_epoch = len(x) // spec.batch
    while True:
        if spec.case == "input_bound":
            def slow():
                for i in range(per_epoch):
                    pace.wait()
                    yield x[i * spec.batch:(i + 1) * spec.batch], y[i * spec.batch:(i + 1) * spec.batch]

            data = ds.GeneratorDataset(slow, ["x", "y"], shuffle=False)
        else:
            data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(spec.batch, drop_remainder=True)
        for a, b in data.create_tuple_iterator():
            yield a, b


def _train_loop(spec, net, run_dir, total, plan, live):
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import Tensor, nn

    from tb_mindspore_callbacks import LoopMonitor
    from tb_plugin_mindspore import metadata

    x, y, ex, ey = datasets(spec, total)
    per_epoch = len(x) // spec.batch
    lr = BASE_LR[spec.optimizer] * (0.25 if spec.case == "small_batch" else 1.0)
    schedule, name = schedule_of(spec, lr, total)
    opt = optimizer_of(spec, net.trainable_params(), schedule)
    hparams = hparams_of(spec, name, total)
    loss_fn = _loss_fn()
    prefetch = ds.config.get_prefetch_size()
    if spec.case == "input_bound":
        ds.config.set_prefetch_size(1)

    loss_net = nn.WithLossCell(net, loss_fn)
    if spec.mode == "graph":
        # value_and_grad inside a cell: a jit-compiled function takes the Parameters it reaches through its closure
        # (the fault knobs, the input scale) as constants of its first compilation in MindSpore 2.10, a cell's
        # construct reads them at every call.
        grad_fn = GradStep(loss_net, opt.parameters)
    else:
        grad_fn = ms.value_and_grad(loss_net, None, opt.parameters)
    eval_fn = None
    if ex is not None:
        eval_fn = loss_net
        ex_t, ey_t = Tensor(ex), Tensor(ey)
    kw = _monitor_kwargs(spec, total, hparams, live)
    every = _eval_every(spec, total)
    best, bad_epochs, epoch_losses = math.inf, 0, []
    stopped = None
    with LoopMonitor(run_dir, opt, network=net, batch_size=spec.batch, **kw) as mon:
        batches = _loop_batches(spec, x, y, total, plan.pace)
        for step in range(1, total + 1):
            a, b = next(batches)
            mon.begin_step()
            plan.before_step(step)
            loss, grads = grad_fn(a, b)
            mon.update(grads)
            mon.step(loss, grads)
            plan.after_step(step)
            if eval_fn is not None and step % every == 0:
                with mon.paused():          # the evaluation is neither data wait nor step time
                    net.set_train(False)
                    mon.scalar(metadata.EVAL_LOSS, float(eval_fn(ex_t, ey_t).asnumpy()), step)
                    net.set_train(True)
            if spec.case in ("early_stopping", "reduce_lr_on_plateau"):
                epoch_losses.append(float(loss.asnumpy()))
                if step % per_epoch == 0:
                    mean = float(np.mean(epoch_losses))
                    epoch_losses = []
                    delta = 0.02 if spec.case == "early_stopping" else 0.01
                    if mean < best - delta:
                        best, bad_epochs = mean, 0
                    else:
                        bad_epochs += 1
                    if spec.case == "early_stopping" and bad_epochs > 1:
                        stopped = step
                        break
                    if spec.case == "reduce_lr_on_plateau" and bad_epochs > 1:
                        opt.learning_rate.set_data(Tensor(np.array(
                            float(opt.learning_rate.asnumpy()) * 0.5, np.float32)))
                        bad_epochs = 0
    ds.config.set_prefetch_size(prefetch)
    return stopped


def main(argv):
    out, ids = argv[0], set(argv[1:])
    with open(os.path.join(out, "plan.json")) as f:
        specs = [cat.Spec.from_json(d) for d in json.load(f)["specs"]]
    for spec in specs:
        if spec.id in ids:
            started = time.time()
            meta = train_run(spec, out)
            print("TRAINED %s %s %.1f s" % (spec.id, meta["status"], time.time() - started), flush=True)
            # What outlives a run (MindSpore's modules, loaded at the first) is frozen: MindSpore collects garbage
            # fully before each compile, and would walk it again for every graph of the next runs.
            gc.collect()
            gc.freeze()


if __name__ == "__main__":
    main(sys.argv[1:])
