"""Tiny real MindSpore trainings engineered to show one problem each, recorded by MonitoredTrainCell + TrainMonitor.

Eval loss, per-layer update ratio and data wait come from TrainMonitor's own diagnostic and debug tiers. Where the
installed TrainMonitor has no such tiers (or with ``TB_MINDSPORE_TEST_EXTRA_TIERS=1``), ``ExtraTiers``, a test-side
callback, records them with our own SummaryWriter and the exact tags of the data contract: eval loss
(``diagnostic/eval_loss``), per-layer update ratio measured from the real parameter change across the optimizer
step (``debug/update_ratio``) and data wait (``debug/data_wait_ms``: time between the end of one step and the
start of the next, which is when ``Model.train`` fetches the next batch in non-sink mode).
"""

import time

import numpy as np

from tb_plugin_mindspore import metadata

STEPS_PER_EPOCH = 8
BATCH = 32


def _ms():
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE)
    return ms


def classification_data(n=STEPS_PER_EPOCH * BATCH, features=8, classes=3, seed=0, poison_row=None, noise=0.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w = np.random.default_rng(1234).normal(size=(features, classes)).astype(np.float32)
    y = (x @ w).argmax(axis=1).astype(np.int32)
    if noise:
        flip = rng.random(n) < noise
        y[flip] = rng.integers(0, classes, int(flip.sum())).astype(np.int32)
    if poison_row is not None:
        x[poison_row, 0] = np.inf
    return x, y


def dataset(x, y, batch=BATCH, slow_ms=0.0):
    import mindspore.dataset as ds

    if not slow_ms:
        return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch, drop_remainder=True)

    def batches():
        for i in range(0, len(x) - batch + 1, batch):
            time.sleep(slow_ms / 1000.0)           # a slow decode / augmentation step
            yield x[i:i + batch], y[i:i + batch]

    return ds.GeneratorDataset(batches, column_names=["x", "y"], shuffle=False)


def dense_net(features=8, hidden=16, classes=3, depth=1):
    """``depth`` hidden Dense+ReLU layers, then the classification head (the last cell)."""
    from mindspore import nn

    cells, width = [], features
    for _ in range(depth):
        cells += [nn.Dense(width, hidden), nn.ReLU()]
        width = hidden
    return nn.SequentialCell(cells + [nn.Dense(width, classes)])


class ExtraTiers:
    """Builds the test-side callback (imports MindSpore lazily)."""

    @staticmethod
    def make(logdir, net, every=1, eval_data=None, eval_every_epochs=1, loss_fn=None, update_ratio=True,
             data_wait=True):
        from mindspore import Tensor, nn
        from mindspore.train import Callback

        from tb_plugin_mindspore.writing.writer import SummaryWriter

        class _Extra(Callback):
            def __init__(self):
                super().__init__()
                self.writer = SummaryWriter(str(logdir), flush_secs=0.5)
                self.params = [p for p in net.trainable_params()]
                self.names = [p.name for p in self.params]
                self.before = None
                self.last_end = None
                self.eval_cell = None
                if eval_data is not None:
                    self.eval_cell = nn.WithLossCell(net, loss_fn or nn.SoftmaxCrossEntropyWithLogits(
                        sparse=True, reduction="mean"))
                    self.eval_x, self.eval_y = Tensor(eval_data[0]), Tensor(eval_data[1])

            def on_train_step_begin(self, run_context):
                cb = run_context.original_args()
                step = int(cb.cur_step_num)
                now = time.perf_counter()
                if data_wait and self.last_end is not None and step % every == 0:
                    self.writer.scalar(metadata.DATA_WAIT_MS, (now - self.last_end) * 1000.0, step)
                if update_ratio and step % every == 0:
                    self.before = [p.asnumpy().copy() for p in self.params]

            def on_train_step_end(self, run_context):
                cb = run_context.original_args()
                step = int(cb.cur_step_num)
                if self.before is not None:
                    after = [p.asnumpy() for p in self.params]
                    ratios = [float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-12))
                              for a, b in zip(after, self.before)]
                    self.writer.layers(metadata.UPDATE_RATIO_LAYERS, self.names, ratios, step)
                    self.before = None
                self.last_end = time.perf_counter()

            def on_train_epoch_end(self, run_context):
                cb = run_context.original_args()
                if self.eval_cell is not None and int(cb.cur_epoch_num) % eval_every_epochs == 0:
                    self.eval_cell.set_train(False)
                    value = float(self.eval_cell(self.eval_x, self.eval_y).asnumpy())
                    self.eval_cell.set_train(True)
                    self.writer.scalar(metadata.EVAL_LOSS, value, int(cb.cur_step_num))
                self.last_end = time.perf_counter()

            def on_train_end(self, run_context):
                self.writer.close()

        return _Extra()


def monitor_has_tiers():
    """Whether TrainMonitor records the diagnostic and debug tiers itself (eval loss, update ratio, data wait), through
    its option objects (``Debug``, ``Eval``, ``Storage``)."""
    import os

    import tb_mindspore_callbacks

    if os.environ.get("TB_MINDSPORE_TEST_EXTRA_TIERS") == "1":
        return False
    return all(hasattr(tb_mindspore_callbacks, name) for name in ("Debug", "Eval", "Storage"))


def train(logdir, epochs=6, lr=0.05, schedule=True, collect_freq=2, poison_row=None, head_lr=None,
          eval_data=None, train_data=None, slow_ms=0.0, extra=True, regression=False, optimizer="momentum",
          stop_at_step=None, hidden=16, depth=1, batch=BATCH, seed=0, monitors=None, hparams=None):
    """One tiny training recorded into ``logdir``; returns the TrainMonitor (also appended to ``monitors``)."""
    ms = _ms()
    from mindspore import nn
    from mindspore.train import Callback, Model

    from tb_mindspore_callbacks import MonitoredTrainCell, Storage, TrainMonitor

    ms.set_seed(seed)
    if regression:
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(STEPS_PER_EPOCH * BATCH, 8)).astype(np.float32) * 3.0
        y = (x @ rng.normal(size=(8, 1)).astype(np.float32)).astype(np.float32)
        net = nn.Dense(8, 1)
        loss_fn = nn.MSELoss()
    else:
        x, y = train_data if train_data is not None else classification_data(seed=seed, poison_row=poison_row)
        net = dense_net(features=x.shape[1], hidden=hidden, depth=depth)
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    steps_per_epoch = len(x) // batch
    total = steps_per_epoch * epochs
    learning_rate = nn.piecewise_constant_lr([total // 2, total], [lr, lr / 10]) if schedule else lr
    params = net.trainable_params()
    if head_lr is not None:
        head_prefix = net[len(net) - 1].weight.name.rsplit(".", 1)[0] + "."
        head = [p for p in params if p.name.startswith(head_prefix)]
        body = [p for p in params if not p.name.startswith(head_prefix)]
        params = [{"params": body}, {"params": head, "lr": head_lr}]
    if optimizer == "adam":
        opt = nn.Adam(params, learning_rate=learning_rate)
    elif optimizer == "sgd":
        opt = nn.SGD(params, learning_rate=learning_rate)
    else:
        opt = nn.Momentum(params, learning_rate=learning_rate, momentum=0.9)
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, opt))
    callbacks = []
    storage = Storage(flush_secs=0.5, registry=None)
    if extra and monitor_has_tiers():
        # The companion callbacks' own diagnostic and debug tiers.
        from tb_mindspore_callbacks import Debug, Eval

        kwargs = dict(debug=Debug(items=["update_ratio", "data_wait", "layer_grad_norm"], every=collect_freq))
        if eval_data is not None:
            kwargs["eval"] = Eval(dataset(eval_data[0], eval_data[1], batch=min(batch, len(eval_data[0]))))
        monitor = TrainMonitor(str(logdir), collect_freq=collect_freq, hparams=hparams, storage=storage, **kwargs)
    else:
        monitor = TrainMonitor(str(logdir), collect_freq=collect_freq, hparams=hparams, storage=storage)
        if extra:
            callbacks.append(ExtraTiers.make(logdir, net, every=collect_freq, eval_data=eval_data, loss_fn=loss_fn))
    if monitors is not None:
        monitors.append(monitor)
    callbacks.insert(0, monitor)

    class _Crash(Callback):
        def on_train_step_end(self, run_context):
            if int(run_context.original_args().cur_step_num) == stop_at_step:
                raise RuntimeError("simulated crash at step %d" % stop_at_step)

    if stop_at_step is not None:
        callbacks.append(_Crash())
    import mindspore.dataset as ds

    prefetch = ds.config.get_prefetch_size()
    if slow_ms:
        ds.config.set_prefetch_size(1)     # no deep queue filled while the graph compiles: the wait shows
    try:
        model.train(epochs, dataset(x, y, batch=batch, slow_ms=slow_ms), callbacks=callbacks,
                    dataset_sink_mode=False)
    finally:
        ds.config.set_prefetch_size(prefetch)
    return monitor


def train_collector(logdir, train_data, epochs=2, collect_freq=1):
    """MindSpore's own SummaryCollector (writes ``*_MS`` files: ``loss/auto`` and weight histograms)."""
    ms = _ms()
    from mindspore import nn
    from mindspore.train import Model, SummaryCollector

    ms.set_seed(0)
    x, y = train_data
    net = dense_net(features=x.shape[1])
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt)
    wanted = {"collect_metric": True, "histogram_regular": ".*weight.*", "collect_graph": False,
              "collect_dataset_graph": False}
    collector = SummaryCollector(str(logdir), collect_freq=collect_freq, collect_specified_data=wanted,
                                 keep_default_action=False)
    from summary_watchdog import unblock_summary_writers

    with unblock_summary_writers() as train_end:  # MindSpore's writer pool can deadlock at close
        model.train(epochs, dataset(x, y), callbacks=[train_end, collector], dataset_sink_mode=False)
    # SummaryRecord finishes writing in the background and makes the file read-only (0400) once it is closed.
    import glob
    import os
    import stat

    deadline = time.time() + 30
    while time.time() < deadline:
        files = glob.glob(os.path.join(str(logdir), "*_MS"))
        if files and all(not (os.stat(f).st_mode & stat.S_IWUSR) for f in files):
            break
        time.sleep(0.1)
