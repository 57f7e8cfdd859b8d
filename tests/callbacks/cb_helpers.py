"""Shared pieces of the callback tests (imported by the test modules): tiny real MindSpore nets and datasets, reading event files back."""

import json
import os

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import Tensor, nn  # noqa: E402
import mindspore.dataset as ds  # noqa: E402

IN, HIDDEN, OUT = 4, 8, 2


def set_mode(mode):
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)


def dense_net(out=OUT, seed=0):
    """Dense(4, 8) - ReLU - Dense(8, out) with weights drawn from ``seed`` (same weights in every mode)."""
    net = nn.SequentialCell(nn.Dense(IN, HIDDEN), nn.ReLU(), nn.Dense(HIDDEN, out))
    rs = np.random.RandomState(seed)
    for p in net.trainable_params():
        p.set_data(Tensor((rs.randn(*p.shape) * 0.5).astype(np.float32)))
    return net


def classification_data(n_batches, batch=8, seed=0, bump=None):
    """A learnable 2-class problem; ``bump[i]`` (one value per batch) is an extra column, see ``LossWithBump``."""
    rs = np.random.RandomState(seed)
    x = rs.randn(n_batches * batch, IN).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int32)
    columns = {"x": x, "y": y}
    if bump is not None:
        columns["bump"] = np.repeat(np.asarray(bump, dtype=np.float32), batch)
    return ds.NumpySlicesDataset(columns, shuffle=False).batch(batch)


class LossTimesBump(nn.Cell):
    """Cross-entropy times ``1 + bump``: a NaN / Inf bump makes every gradient non-finite (an overflow step), 1000
    multiplies them by 1001."""

    def __init__(self, net):
        super().__init__(auto_prefix=False)
        self.net = net
        self.ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, x, y, bump):
        return self.ce(self.net(x), y) * (1.0 + bump.mean())


class LossWithBump(nn.Cell):
    """Cross-entropy plus a per-batch constant from the data: moves the loss, never the gradients."""

    def __init__(self, net):
        super().__init__(auto_prefix=False)
        self.net = net
        self.ce = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    def construct(self, x, y, bump):
        return self.ce(self.net(x), y) + bump.mean()


def read_run(logdir):
    """``(scalars, tensors)``: tag -> list of (step, value) / (step, numpy array), from every event file."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    ea = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    scalars = {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}
    tensors = {t: [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in ea.Tensors(t)]
               for t in ea.Tags()["tensors"]}
    return scalars, tensors


def run_info(tensors):
    from tb_plugin_mindspore import metadata

    (step, value), = tensors[metadata.RUN_INFO]
    raw = value.reshape(-1)[0] if value.shape else value.item()
    return step, json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)


def event_files(logdir):
    out = []
    for root, _, files in os.walk(str(logdir)):
        out += [os.path.join(root, f) for f in files if f.startswith("events.out.tfevents")]
    return out


def last_step_row(cell):
    """``{column: value}`` of the newest row of a MonitoredTrainCell's step ring (one host read)."""
    rows, count = cell.step_rows()
    assert count >= 1, "the cell ran no step"
    return dict(zip(cell.step_columns, rows[(count - 1) % rows.shape[0]].tolist()))


def train_in_sinks(monitor, cell, bumps, sink_size, after_begin=None):
    """Trains ``cell`` (a MonitoredTrainCell over ``LossWithBump``) on ``classification_data(len(bumps), bump=bumps)``
    the way ``Model._train_dataset_sink_process`` does on a device: ``sink_size`` steps, then one step-end callback
    of ``monitor`` with the real callback protocol (``_InternalCallbackParam`` / ``RunContext``; MindSpore refuses
    sink mode on a CPU). ``after_begin()`` is called after the monitor's train begin."""
    from mindspore.train.callback import _InternalCallbackParam, RunContext

    cell.set_train()
    batches = iter(list(classification_data(len(bumps), bump=bumps).create_tuple_iterator()))
    cb = _InternalCallbackParam()
    cb.cur_step_num, cb.train_network, cb.optimizer, cb.train_dataset = 0, cell, None, None
    cb.dataset_sink_mode, cb.sink_size, cb.batch_num = True, sink_size, sink_size
    ctx = RunContext(cb)
    monitor.on_train_begin(ctx)
    if after_begin is not None:
        after_begin()
    for _ in range(len(bumps) // sink_size):
        for _ in range(sink_size):
            cb.net_outputs = cell(*next(batches))
        cb.cur_step_num += sink_size
        monitor.on_train_step_end(ctx)
    monitor.on_train_end(ctx)
