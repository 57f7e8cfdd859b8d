"""Tiny real MindSpore trainings recorded by the companion callbacks, for tests that need real event files."""

import numpy as np

# The hyperparameters the ``monitored_run`` fixture (tests/conftest.py) gives TrainMonitor.
MONITORED_HPARAMS = {"lr": 0.05, "optimizer": "momentum", "hidden": 16, "warmup": False, "schedule": "piecewise"}


def tiny_dataset(n=256, features=8, classes=3, batch=32, seed=0):
    import mindspore.dataset as ds

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w = rng.normal(size=(features, classes)).astype(np.float32)
    y = (x @ w).argmax(axis=1).astype(np.int32)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch, drop_remainder=True)


def train_tiny(logdir, epochs=4, lr=0.05, collect_freq=5, mode="graph", sink=False, seed=0, hparams=None):
    """Trains a 2-layer Dense classifier (8 steps per epoch) with MonitoredTrainCell + TrainMonitor into logdir."""
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Model

    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(seed)
    net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 3))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    steps = 8 * epochs
    schedule = nn.piecewise_constant_lr([steps // 2, steps], [lr, lr / 10])
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=schedule, momentum=0.9)
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))
    monitor = TrainMonitor(str(logdir), collect_freq=collect_freq, hparams=hparams)
    model.train(epochs, tiny_dataset(seed=seed), callbacks=[monitor], dataset_sink_mode=sink)
    return monitor
