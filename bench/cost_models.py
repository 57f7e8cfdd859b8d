"""The models of the cost benchmarks (``bench/step_cost.py``, ``bench/cost_table.py``, ``bench/paired.py``), and
their steady-state setting of the monitors (:func:`steady_state`).

``demo``: the demo's 2-layer transformer classifier (0.4M parameters, ``bench/overhead.py``'s model); ``demo-b8``:
the same model on batches of 8 (the same parameters and so the same monitoring work, a step of about 55 ms on
two CPU cores instead of about 110: batch 8 does not cut the step by four); ``demo-b4``, on batches of 4 (a
transformer step of about 28 ms). ``0.1m``,
``1m``, ``4m``, ``10m``: multi-layer perceptrons of about 0.1, 1, 4 and 10 million parameters (``4m``: a step of
about 25 ms on two CPU cores) (six hidden ``Dense`` + ReLU
layers and a 10-class head: 14 parameter tensors, the same count for every size, so only the size changes), on
float32 inputs, so the step time goes from about a millisecond to about a hundred on two CPU cores. Every model
trains with ``AdamWeightDecay`` (lr 1e-3) on a softmax cross-entropy loss, batch 32, from a few fixed batches
cycled (no dataset pipeline in the loop).
"""

import numpy as np


def steady_state():
    """The activation and attention probes' blocks compiled at their first pass, as before
    ``callbacks/cells/tiering.py`` ran them op by op first: these benchmarks time the steady cost of recording after
    a warm-up, and the op-by-op passes and the deferred compile would otherwise fall in the timed steps."""
    from tb_mindspore_callbacks.cells import tiering

    tiering.COMPILE_AFTER_CALLS = 0

# name: (input width, hidden width); six hidden layers, ten classes.
MLP_SIZES = {"0.1m": (64, 130), "1m": (256, 400), "4m": (512, 800), "10m": (1024, 1300)}
DEMO_BATCHES = {"demo": 32, "demo-b8": 8, "demo-b4": 4}
SIZES = tuple(DEMO_BATCHES) + tuple(MLP_SIZES)
HIDDEN_LAYERS = 6
CLASSES = 10
BATCH = 32


def batch_of(size):
    """The batch size of a model size's steps."""
    return DEMO_BATCHES.get(size, BATCH)


def check_size(size):
    if size not in SIZES:
        raise SystemExit("unknown model size %r (choose from %s)" % (size, ", ".join(SIZES)))
    return size


def _mlp(size):
    from mindspore import nn

    width, hidden = MLP_SIZES[size]
    layers, inputs = [], width
    for _ in range(HIDDEN_LAYERS):
        layers += [nn.Dense(inputs, hidden), nn.ReLU()]
        inputs = hidden
    layers.append(nn.Dense(inputs, CLASSES))
    return nn.SequentialCell(layers)


def parts(size, seed=0):
    """``(net, loss_fn, optimizer)`` of a model size."""
    import mindspore as ms
    from mindspore import nn

    check_size(size)
    if size in DEMO_BATCHES:
        from tb_mindspore_callbacks.demo import DEMO_CONFIG, build_model

        net, lr = build_model(None, seed=seed), DEMO_CONFIG["lr"]
    else:
        ms.set_seed(seed)
        net, lr = _mlp(size), 1e-3
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=lr, weight_decay=0.01)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return net, loss_fn, optimizer


def arrays(size, n, seed=0):
    """``(inputs, labels int32)`` numpy arrays of ``n`` samples for a model size."""
    check_size(size)
    if size in DEMO_BATCHES:
        from tb_mindspore_callbacks.demo import synthetic_arrays

        return synthetic_arrays(n, None, seed)
    rs = np.random.RandomState(seed)
    x = rs.normal(size=(n, MLP_SIZES[size][0])).astype(np.float32)
    y = rs.randint(0, CLASSES, size=n).astype(np.int32)
    return x, y


def batches(size, count=8, seed=0):
    """``count`` batches as ``(Tensor, Tensor)`` pairs, cycled by the loops."""
    from mindspore import Tensor

    b = batch_of(size)
    x, y = arrays(size, count * b, seed)
    return [(Tensor(x[i * b:(i + 1) * b]), Tensor(y[i * b:(i + 1) * b])) for i in range(count)]


def dataset(size, steps, seed=0):
    """A batched ``NumpySlicesDataset`` of ``steps`` batches (``Model.train``), from the same 8 batches cycled."""
    import mindspore.dataset as ds

    b = batch_of(size)
    x, y = arrays(size, 8 * b, seed)
    reps = -(-steps // 8)
    x, y = np.concatenate([x] * reps)[:steps * b], np.concatenate([y] * reps)[:steps * b]
    return ds.NumpySlicesDataset({"x": x, "label": y}, shuffle=False).batch(b, drop_remainder=True)


def parameter_count(net):
    return int(sum(int(np.prod(p.shape)) for p in net.trainable_params()))
