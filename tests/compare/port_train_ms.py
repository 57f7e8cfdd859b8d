"""The MindSpore side of a port-check pair: the same models as ``port_train_torch.py`` built from
``mindspore.nn`` (MindSpore's own names: ``gamma`` / ``beta``, ``embedding_table``), trained from the same spec file
in a hand-written loop recorded by ``LoopMonitor`` (every step), GRAPH_MODE (``{"mode": "pynative"}`` in the settings:
PYNATIVE_MODE). An injection changes this side only.
``python port_train_ms.py JOBS_JSON`` (``port_spec.jobs_of``)."""

import sys

import numpy as np

import mindspore as ms
from mindspore import nn, ops

import port_spec as spec
from tb_mindspore_callbacks import Debug, Diagnostic, Layers, LoopMonitor, Storage


class MLP(nn.Cell):
    def __init__(self, _settings):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Dense(10, 32), nn.Dense(32, 32), nn.Dense(32, spec.CLASSES)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))


class CNN(nn.Cell):
    def __init__(self, settings):
        super().__init__()
        # MindSpore's momentum is the weight of the old statistics: 0.9 here is PyTorch's momentum=0.1.
        momentum = settings.get("bn_momentum", 0.9)
        self.conv1 = nn.Conv2d(1, 8, 3, pad_mode="pad", padding=1, has_bias=False)
        self.bn1 = nn.BatchNorm2d(8, momentum=momentum, eps=1e-5)
        self.conv2 = nn.Conv2d(8, 8, 3, pad_mode="pad", padding=1, has_bias=False)
        self.bn2 = nn.BatchNorm2d(8, momentum=momentum, eps=1e-5)
        self.fc = nn.Dense(8, spec.CLASSES)
        self.relu = nn.ReLU()

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(axis=(2, 3)))


class Layer(nn.Cell):
    def __init__(self, dropout):
        super().__init__()
        d = spec.DIM
        self.ln1, self.ln2 = nn.LayerNorm((d,), epsilon=1e-5), nn.LayerNorm((d,), epsilon=1e-5)
        self.q, self.k, self.v, self.o = nn.Dense(d, d), nn.Dense(d, d), nn.Dense(d, d), nn.Dense(d, d)
        self.ff1, self.ff2 = nn.Dense(d, spec.FF), nn.Dense(spec.FF, d)
        self.drop = nn.Dropout(p=dropout) if dropout > 0 else nn.Identity()
        self.relu = nn.ReLU()
        self.softmax = nn.Softmax(axis=-1)

    def construct(self, x):
        b, t, d = x.shape
        h, hd = spec.HEADS, spec.DIM // spec.HEADS
        y = self.ln1(x)
        q = self.q(y).reshape(b, t, h, hd).transpose(0, 2, 1, 3)
        k = self.k(y).reshape(b, t, h, hd).transpose(0, 2, 1, 3)
        v = self.v(y).reshape(b, t, h, hd).transpose(0, 2, 1, 3)
        att = self.softmax(ops.matmul(q, k.transpose(0, 1, 3, 2)) / float(np.sqrt(hd)))
        x = x + self.drop(self.o(ops.matmul(att, v).transpose(0, 2, 1, 3).reshape(b, t, d)))
        return x + self.drop(self.ff2(self.relu(self.ff1(self.ln2(x)))))


class Transformer(nn.Cell):
    def __init__(self, settings):
        super().__init__()
        self.emb = nn.Embedding(spec.VOCAB, spec.DIM)
        self.pos = ms.Parameter(ms.Tensor(np.zeros((spec.SEQ, spec.DIM), np.float32)), name="pos")
        self.layers = nn.CellList([Layer(settings["dropout"]) for _ in range(2)])
        self.ln = nn.LayerNorm((spec.DIM,), epsilon=1e-5)
        self.head = nn.Dense(spec.DIM, spec.CLASSES)

    def construct(self, x):
        x = self.emb(x) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln(x).mean(axis=1))


MODELS = {"mlp": MLP, "cnn": CNN, "transformer": Transformer}


def torch_name(ms_name):
    """The PyTorch name of a parameter of these models (to load the spec's weights)."""
    parts = ms_name.split(".")
    if parts[-1] == "gamma":
        parts[-1] = "weight"
    elif parts[-1] == "beta":
        parts[-1] = "bias"
    elif parts[-1] == "embedding_table":
        parts[-1] = "weight"
    return ".".join(parts)


class Schedule(nn.learning_rate_schedule.LearningRateSchedule):
    """Linear warm-up (``port_spec.warmup_factor``) of the 0-based step MindSpore gives; ``shift`` steps ahead."""

    def __init__(self, lr, warmup, shift=0):
        super().__init__()
        self.lr, self.warmup, self.shift = lr, float(warmup), shift

    def construct(self, global_step):
        step = ops.cast(global_step, ms.float32) + self.shift
        return self.lr * ops.minimum((step + 1.0) / self.warmup, 1.0)


def main(argv):
    for job in spec.jobs_of(argv):
        train(job["model"], job["spec"], job["run_dir"], job["inject"], job["settings"])


def train(model_name, spec_file, run_dir, inject, s):
    if inject == "bn_momentum":
        s["bn_momentum"] = 0.1
    if inject == "dropout":
        s["dropout"] = 0.2
    ms.set_context(mode=ms.GRAPH_MODE if s.get("mode", "graph") == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(0)                     # dropout masks the same at every run of this test
    weights, x, y = spec.load(spec_file)
    if inject == "data_order":
        order = np.arange(len(x))
        order[1:-1:2], order[2::2] = order[2::2].copy(), order[1:-1:2].copy()[:len(order[2::2])]
        x, y = x[order], y[order]
    net = MODELS[model_name](s)
    target = spec.TARGET[model_name]
    for p in net.trainable_params():
        value = weights[torch_name(p.name)]
        if inject == "init" and torch_name(p.name) == target:
            value = value * 1.5
        p.set_data(ms.Tensor(value))
    params = net.trainable_params()
    is_decay = [len(p.shape) >= 2 and p.name != "pos" for p in params]
    if inject == "weight_decay_bias":
        is_decay = [True] * len(params)
    lr = Schedule(s["lr"], s["warmup"], shift=1 if inject == "lr_off_by_one" else 0)
    decay = [p for p, d in zip(params, is_decay) if d]
    rest = [p for p, d in zip(params, is_decay) if not d]
    groups = [{"params": decay, "weight_decay": s["weight_decay"]}]
    if rest:
        groups.append({"params": rest, "weight_decay": 0.0})
    groups.append({"order_params": params})
    betas = tuple(s["betas"])
    if inject == "bias_correction":
        opt = nn.AdamWeightDecay(groups, learning_rate=lr, beta1=betas[0], beta2=betas[1], eps=s["eps"])
    elif s["optimizer"] == "adam":
        opt = nn.Adam(groups, learning_rate=lr, beta1=betas[0], beta2=betas[1], eps=s["eps"])
    else:
        opt = nn.Momentum(groups, learning_rate=lr, momentum=0.9)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def forward(xb, yb):
        return loss_fn(net(xb), yb)

    grad_fn = ms.jit(ms.value_and_grad(forward, None, opt.parameters))
    target_index = [torch_name(p.name) for p in opt.parameters].index(target)
    with LoopMonitor(run_dir, opt, collect_freq=1, batch_size=spec.BATCH, flight_recorder=0, health=False,
                     debug=Debug(items=["update_ratio", "layer_grad_norm"], every=1), diagnostic=Diagnostic(every=1),
                     layers=Layers(include=".", max=200), storage=Storage(registry=None)) as mon:
        net.set_train(False)           # the model before training, evaluated as at every eval_every steps
        eval0 = float(forward(ms.Tensor(x[0]), ms.Tensor(y[0])).asnumpy())
        for step in range(1, s["steps"] + 1):
            net.set_train(True)
            mon.begin_step()          # the weights before this step's update (update ratio from step 1)
            loss, grads = grad_fn(ms.Tensor(x[step - 1]), ms.Tensor(y[step - 1]))
            if inject == "backward":
                grads = tuple(g * 0.5 if i == target_index else g for i, g in enumerate(grads))
            mon.update(grads)
            mon.step(loss, grads)
            if step == 1:              # the monitor writes once it has seen a step
                mon.scalar("diagnostic/eval_loss", eval0, step=0)
            if step % s["eval_every"] == 0:
                net.set_train(False)
                mon.scalar("diagnostic/eval_loss", float(forward(ms.Tensor(x[0]), ms.Tensor(y[0])).asnumpy()))


if __name__ == "__main__":
    main(sys.argv)
