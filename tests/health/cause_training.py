"""Tiny real MindSpore trainings for the issue-16 rules: healthy controls (constant LR, warm-up + cosine, piecewise,
BatchNorm, a hand-written loop) and problems (a schedule declared but not applied, a frozen parameter group, NaN
that reaches the weights, gradients vanishing with depth, a BatchNorm train/eval mismatch).

Each recorded by ``MonitoredTrainCell`` + ``TrainMonitor`` (or ``LoopMonitor``) with the debug items the rules read
(update ratio, per-layer gradient norm, data wait) at every ``collect_freq`` steps, 48 steps of batch 32.
"""

import numpy as np

import health_training as ht

STEPS_PER_EPOCH = ht.STEPS_PER_EPOCH
DEBUG = ["update_ratio", "layer_grad_norm", "data_wait"]


def _ms():
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE)
    return ms


def grad_scale_cell(factor):
    """Identity forward; backward multiplies the gradient by ``factor`` (a custom bprop): what a deep stack of
    saturating activations does to the layers before it, in one place."""
    from mindspore import nn

    class GradScale(nn.Cell):
        def __init__(self):
            super().__init__()
            self.factor = float(factor)

        def construct(self, x):
            return x

        def bprop(self, x, out, dout):
            return (dout * self.factor,)

    return GradScale()


def vanishing_net(features=8, hidden=16, classes=3, factor=1e-7):
    """Dense -> [grad x factor] -> ReLU -> Dense -> [grad x factor] -> ReLU -> Dense -> ReLU -> Dense: the first two
    layers get gradients 1e-7 and 1e-14 times those of the last two, from step 1."""
    from mindspore import nn

    return nn.SequentialCell([nn.Dense(features, hidden), grad_scale_cell(factor), nn.ReLU(),
                              nn.Dense(hidden, hidden), grad_scale_cell(factor), nn.ReLU(),
                              nn.Dense(hidden, hidden), nn.ReLU(), nn.Dense(hidden, classes)])


def bn_net(features=8, hidden=16, classes=3, momentum=0.9):
    """Dense -> BatchNorm1d -> ReLU -> Dense. MindSpore's momentum weighs the old moving statistics
    (moving = momentum * moving + (1 - momentum) * batch)."""
    from mindspore import nn

    return nn.SequentialCell([nn.Dense(features, hidden), nn.BatchNorm1d(hidden, momentum=momentum), nn.ReLU(),
                              nn.Dense(hidden, classes)])


def train(logdir, net=None, lr=0.05, schedule="constant", epochs=6, collect_freq=2, train_data=None,
          eval_data=None, hparams=None, head_lr=None, optimizer="momentum", diagnostic_freq=None, debug=DEBUG,
          seed=0, **monitor_kwargs):
    """One tiny ``Model.train`` run recorded into ``logdir``. ``schedule``: "constant" (a float), "piecewise" (a
    list: lr then lr/10 from the middle), "warmup_cosine" (a LearningRateSchedule). ``monitor_kwargs`` go to
    TrainMonitor (``on_anomaly=``, ``live_health=``, ...)."""
    ms = _ms()
    from mindspore import nn
    from mindspore.train import Model

    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor
    from tb_mindspore_callbacks.demo import WarmupCosineLR

    ms.set_seed(seed)
    x, y = train_data if train_data is not None else ht.classification_data(seed=seed)
    net = net if net is not None else ht.dense_net(features=x.shape[1])
    total = (len(x) // ht.BATCH) * epochs
    if schedule == "piecewise":
        learning_rate = nn.piecewise_constant_lr([total // 2, total], [lr, lr / 10])
    elif schedule == "warmup_cosine":
        learning_rate = WarmupCosineLR(lr, max(2, total // 6), total, end=lr / 100)
    else:
        learning_rate = lr
    params = net.trainable_params()
    if head_lr is not None:
        head = params[-2:]        # the last Dense's weight and bias
        params = [{"params": params[:-2]}, {"params": head, "lr": head_lr}]
    if optimizer == "adam":
        opt = nn.Adam(params, learning_rate=learning_rate)
    else:
        opt = nn.Momentum(params, learning_rate=learning_rate, momentum=0.9)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, opt))
    kwargs = dict(debug=list(debug), debug_freq=collect_freq, registry=None, hparams=hparams, **monitor_kwargs)
    if diagnostic_freq:
        kwargs["diagnostic_freq"] = diagnostic_freq
    if eval_data is not None:
        kwargs["eval_dataset"] = ht.dataset(eval_data[0], eval_data[1], batch=min(ht.BATCH, len(eval_data[0])))
    monitor = TrainMonitor(str(logdir), collect_freq=collect_freq, flush_secs=0.5, **kwargs)
    model.train(epochs, ht.dataset(x, y), callbacks=[monitor], dataset_sink_mode=False)
    return monitor


def train_loop(logdir, steps=48, lr=0.05, collect_freq=4, seed=0, nan_step=None):
    """A hand-written loop (``mindspore.value_and_grad``) recorded by ``LoopMonitor`` as a context manager;
    ``nan_step``: one +Inf sample in that step's batch."""
    ms = _ms()
    from mindspore import nn

    from tb_mindspore_callbacks import LoopMonitor

    ms.set_seed(seed)
    poison = None if nan_step is None else (nan_step - 1) * ht.BATCH + 5
    x, y = ht.classification_data(n=steps * ht.BATCH, seed=seed, poison_row=poison)
    net = ht.dense_net(features=x.shape[1])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)

    def forward(a, b):
        return loss_fn(net(a), b)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)

    @ms.jit
    def train_step(a, b):
        loss, grads = grad_fn(a, b)
        opt(grads)
        return loss, grads

    with LoopMonitor(str(logdir), opt, network=net, collect_freq=collect_freq, flush_secs=0.5, registry=None,
                     debug=["update_ratio", "layer_grad_norm"], debug_freq=collect_freq) as mon:
        for a, b in ht.dataset(x, y).create_tuple_iterator():
            loss, grads = train_step(a, b)
            mon.step(loss, grads)
    return mon


def poisoned(nan_step, epochs_batches=16):
    """Training data whose batch ``nan_step`` (1-based) holds one +Inf sample: NaN from that step on."""
    return ht.classification_data(n=epochs_batches * ht.BATCH, poison_row=(nan_step - 1) * ht.BATCH + 5)


def shifted(n, seed, offset):
    """Classification data with every feature offset by ``offset`` (BatchNorm's moving mean starts at 0)."""
    x, y = ht.classification_data(n=n, seed=seed)
    return (x + np.float32(offset)).astype(np.float32), y
