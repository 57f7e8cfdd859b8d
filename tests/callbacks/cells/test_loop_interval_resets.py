"""Interval statistics stay right over many read-and-reset cycles in both modes.

The statistics are updated by compiled functions (``mindspore.jit`` in PYNATIVE_MODE too); resetting them must
write into the same Parameter the compiled graph updates (``Parameter.set_data`` in PYNATIVE_MODE gave the
Parameter a new tensor, and every interval after the first reset came out empty).
"""

import math

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import nn  # noqa: E402
from mindspore.train import Model  # noqa: E402

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_mindspore_callbacks import LoopMonitor, MonitoredLossScaleCell, MonitoredTrainCell, TrainMonitor  # noqa

from cb_helpers import LossTimesBump, LossWithBump, classification_data, dense_net, read_run  # noqa: E402

BUMP = [0.0] * 5 + [float("nan")] + [0.0] * 3 + [float("inf")] + [0.0] * 2      # steps 6 and 10 non-finite


def intervals(tensors, tag):
    return {step: dict(zip(metadata.INTERVAL_FIELDS, value.tolist()))
            for step, value in tensors[metadata.interval_tag(tag)]}


def check(tmp_path):
    scalars, tensors = read_run(tmp_path)
    loss = intervals(tensors, metadata.LOSS)
    assert sorted(loss) == [3, 6, 9, 12]
    assert [loss[s]["count"] for s in (3, 6, 9, 12)] == [3, 3, 3, 3]
    assert [loss[s]["nonfinite"] for s in (3, 6, 9, 12)] == [0, 1, 0, 1]
    grad = intervals(tensors, metadata.GRAD_NORM)
    assert all(grad[s]["count"] == 3 and grad[s]["nonfinite"] == 0 and grad[s]["min"] > 0 for s in grad)
    assert math.isnan(dict(scalars[metadata.LOSS])[6])


@pytest.mark.slow
def test_model_train_intervals_across_resets(tmp_path, mode):
    net = dense_net()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(MonitoredTrainCell(LossWithBump(net), opt))
    model.train(1, classification_data(12, bump=BUMP), callbacks=[TrainMonitor(str(tmp_path), collect_freq=3,
                                                                                registry=None)],
                dataset_sink_mode=False)
    check(tmp_path)


@pytest.mark.slow
def test_loop_intervals_across_resets(tmp_path, mode):
    net = dense_net()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    loss_net = LossWithBump(net)
    grad_fn = ms.value_and_grad(loss_net, None, opt.parameters)
    with LoopMonitor(str(tmp_path), opt, collect_freq=3, registry=None) as mon:
        for x, y, bump in classification_data(12, bump=BUMP).create_tuple_iterator():
            loss, grads = grad_fn(x, y, bump)
            opt(grads)
            mon.step(loss, grads)
    assert mon.monitor.errors == 0
    check(tmp_path)


@pytest.mark.slow
def test_loss_scale_overflow_count_resets(tmp_path, mode):
    net = dense_net()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    scale = nn.FixedLossScaleUpdateCell(1024.0)
    model = Model(MonitoredLossScaleCell(LossTimesBump(net), opt, scale))
    model.train(1, classification_data(12, bump=BUMP), callbacks=[TrainMonitor(str(tmp_path), collect_freq=3,
                                                                                registry=None)],
                dataset_sink_mode=False)
    scalars, _ = read_run(tmp_path)
    overflow = dict(scalars[metadata.OVERFLOW_STEPS])
    # Steps 6 and 10 overflow, one in each of two intervals; the count starts again after each point.
    assert [overflow[s] for s in (3, 6, 9, 12)] == [0, 1, 0, 1]


@pytest.mark.slow
def test_loop_interval_with_more_updates_than_the_ring_holds(tmp_path):
    """Two ``mon.update`` calls a step (GRAPH_MODE: each records its gradients) and no flight recorder: six rows an
    interval in a ring of three (``collect_freq``); the ring is folded before it wraps, and the interval holds all
    six norms at their steps."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = dense_net()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    grad_fn = ms.value_and_grad(LossWithBump(net), None, opt.parameters)
    norms = {}
    with LoopMonitor(str(tmp_path), opt, collect_freq=3, flight_recorder=0, registry=None) as mon:
        for step, (x, y, bump) in enumerate(classification_data(12, bump=[0.0] * 12).create_tuple_iterator(), 1):
            for _ in range(2):
                loss, grads = grad_fn(x, y, bump)
                norms.setdefault(step, []).append(math.sqrt(sum(float((g.asnumpy().astype(np.float64) ** 2).sum())
                                                                for g in grads)))
                mon.update(grads)
            mon.step(loss)
    assert mon.monitor.errors == 0
    _, tensors = read_run(tmp_path)
    grad = intervals(tensors, metadata.GRAD_NORM)
    assert sorted(grad) == [3, 6, 9, 12]
    for end in grad:
        seen = [v for s in range(end - 2, end + 1) for v in norms[s]]
        assert grad[end]["count"] == 6 and grad[end]["nonfinite"] == 0
        np.testing.assert_allclose([grad[end]["min"], grad[end]["mean"], grad[end]["max"]],
                                   [min(seen), sum(seen) / 6, max(seen)], rtol=1e-5)
