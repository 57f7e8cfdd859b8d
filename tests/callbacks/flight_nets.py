"""A 4-layer MLP whose third layer gets a NaN or huge gradient at a chosen step, for the flight recorder tests.

``GradScale`` is the identity forward; backward it multiplies the gradient by a factor read from the batch. Placed
on the output of ``d3``, a factor of NaN (or 1e6) at step S makes the gradients of ``d3`` and of every layer before
it non-finite (or huge) at S, while ``d4`` stays normal: the anomaly enters the backward pass at layer 3.
"""

import numpy as np

import mindspore as ms
from mindspore import Tensor, nn, ops
import mindspore.dataset as ds

IN, HIDDEN, OUT, BATCH = 4, 8, 2, 8


class GradScale(nn.Cell):
    def construct(self, x, factor):
        return x

    def bprop(self, x, factor, out, dout):
        return dout * factor, ops.zeros_like(factor)


class Mlp(nn.Cell):
    def __init__(self, seed=0):
        super().__init__()
        self.d1 = nn.Dense(IN, HIDDEN)
        self.d2 = nn.Dense(HIDDEN, HIDDEN)
        self.d3 = nn.Dense(HIDDEN, HIDDEN)
        self.d4 = nn.Dense(HIDDEN, OUT)
        self.relu = nn.ReLU()
        self.scale = GradScale()
        rs = np.random.RandomState(seed)
        for p in self.trainable_params():
            p.set_data(Tensor((rs.randn(*p.shape) * 0.5).astype(np.float32)))

    def construct(self, x, factor):
        h = self.relu(self.d1(x))
        h = self.relu(self.d2(h))
        h = self.relu(self.scale(self.d3(h), factor))
        return self.d4(h)


class MlpWithLoss(nn.Cell):
    def __init__(self, net):
        super().__init__(auto_prefix=False)
        self.net = net
        self.ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, x, y, factor):
        return self.ce(self.net(x, factor), y)


def factors(steps, bad_step=None, value=float("nan")):
    """One gradient factor per step (1-based ``bad_step`` gets ``value``)."""
    f = np.ones(steps, np.float32)
    if bad_step is not None:
        f[bad_step - 1] = value
    return f


def arrays(steps, bad_step=None, value=float("nan"), seed=0):
    """``(x, y, factor)`` for ``steps`` batches of :data:`BATCH`."""
    rs = np.random.RandomState(seed)
    x = rs.randn(steps * BATCH, IN).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int32)
    factor = np.repeat(factors(steps, bad_step, value), BATCH).reshape(-1, 1)
    return x, y, factor


def dataset(steps, bad_step=None, value=float("nan"), seed=0):
    x, y, factor = arrays(steps, bad_step, value, seed)
    return ds.NumpySlicesDataset({"x": x, "y": y, "factor": factor}, shuffle=False).batch(BATCH)


def parts(seed=0, lr=0.05):
    """``(net, net_with_loss, optimizer)``."""
    net = Mlp(seed)
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)
    return net, MlpWithLoss(net), optimizer


def layer3_name(optimizer):
    return [p.name for p in optimizer.parameters if p.name.endswith("d3.weight")][0]


def train_loop(monitor, net_with_loss, optimizer, data):
    """The README's hand-written loop: ``value_and_grad`` + ``optimizer(grads)`` + ``monitor.step``."""
    grad_fn = ms.value_and_grad(net_with_loss, None, optimizer.parameters)
    for x, y, factor in data.create_tuple_iterator(num_epochs=1):
        loss, grads = grad_fn(x, y, factor)
        optimizer(grads)
        monitor.step(loss, grads)
