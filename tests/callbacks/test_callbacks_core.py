"""Core tier from real (tiny) MindSpore training: tags, step numbers, grad norm, learning rate, intervals."""

import logging
import math
import os

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import Tensor, nn  # noqa: E402
from mindspore.train import Model  # noqa: E402

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor, make_run_dir  # noqa: E402
from tb_mindspore_callbacks.common.run_dir import run_dir_name  # noqa: E402

from cb_helpers import (LossWithBump, classification_data, dense_net, event_files, last_step_row,  # noqa: E402
                        read_run, run_info, set_mode, train_in_sinks)
from tb_mindspore_callbacks.recorders.base import StepRecord  # noqa: E402
from tb_mindspore_callbacks.recorders.source import CellSource  # noqa: E402

CE = dict(sparse=True, reduction="mean")


def steps_of(series):
    return [s for s, _ in series]


def interval_at(tensors, tag, step):
    for s, v in tensors[metadata.interval_tag(tag)]:
        if s == step:
            return dict(zip(metadata.INTERVAL_FIELDS, v.tolist()))
    raise AssertionError("no interval of %s at step %d" % (tag, step))


# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sink", [False, True], ids=["nosink", "sink"])
@pytest.mark.slow
def test_model_train_writes_core_tags_at_right_steps(tmp_path, mode, sink):
    steps = 22
    net = dense_net()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(MonitoredTrainCell.wrap(net, nn.SoftmaxCrossEntropyWithLogits(**CE), opt))
    monitor = TrainMonitor(str(tmp_path), collect_freq=5)
    model.train(2, classification_data(steps // 2), callbacks=[monitor], dataset_sink_mode=sink)

    scalars, tensors = read_run(tmp_path)
    # On CPU MindSpore runs sink mode as non-sink, so both give a callback every step.
    expected = [5, 10, 15, 20, 22]
    for tag in (metadata.LOSS, metadata.LEARNING_RATE, metadata.GRAD_NORM, metadata.STEP_TIME_MS,
                metadata.THROUGHPUT):
        assert steps_of(scalars[tag]) == expected, tag
    for tag in (metadata.LOSS, metadata.GRAD_NORM, metadata.STEP_TIME_MS):
        assert steps_of(tensors[metadata.interval_tag(tag)]) == expected, tag
    # Every step lands in exactly one interval.
    assert sum(interval_at(tensors, metadata.LOSS, s)["count"] for s in expected) == steps
    assert [interval_at(tensors, metadata.GRAD_NORM, s)["count"] for s in expected] == [5, 5, 5, 5, 2]
    assert all(v == pytest.approx(0.05) for _, v in scalars[metadata.LEARNING_RATE])
    assert all(v > 0 and math.isfinite(v) for _, v in scalars[metadata.GRAD_NORM])
    assert all(v > 0 for _, v in scalars[metadata.THROUGHPUT])
    # The recorded loss is the loss of the last step of the interval, inside [min, max].
    for s, v in scalars[metadata.LOSS]:
        iv = interval_at(tensors, metadata.LOSS, s)
        assert iv["min"] - 1e-6 <= v <= iv["max"] + 1e-6
        assert iv["min"] <= iv["mean"] <= iv["max"]
    step, info = run_info(tensors)
    assert step == 0
    assert info["content_version"] == metadata.CONTENT_VERSION
    assert info["mindspore_version"] == ms.__version__
    assert info["collect_freq"] == 5 and info["rank"] == 0 and info["monitored_cell"] is True
    assert info["batch_size"] == 8
    assert monitor.errors == 0 and monitor.writer is None  # closed at train end


@pytest.mark.slow
def test_tbparse_reads_the_scalars(tmp_path):
    from tbparse import SummaryReader

    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    Model(MonitoredTrainCell.wrap(net, nn.SoftmaxCrossEntropyWithLogits(**CE), opt)).train(
        1, classification_data(10), callbacks=[TrainMonitor(str(tmp_path), collect_freq=5)])
    df = SummaryReader(str(tmp_path)).scalars
    loss = df[df.tag == metadata.LOSS]
    assert loss.step.tolist() == [5, 10]


# ---------------------------------------------------------------------------------------------------------------
def _numpy_grad_norm(params, x, t):
    """Global L2 gradient norm of MSE(Dense(8, 1)(relu(Dense(4, 8)(x))), t), backpropagated by hand."""
    w1, b1, w2, b2 = params
    h_pre = x @ w1.T + b1
    h = np.maximum(h_pre, 0)
    p = h @ w2.T + b2
    dp = 2.0 * (p - t) / p.size
    gw2 = dp.T @ h
    gb2 = dp.sum(0)
    dh = (dp @ w2) * (h_pre > 0)
    gw1 = dh.T @ x
    gb1 = dh.sum(0)
    return math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in (gw1, gb1, gw2, gb2)))


@pytest.mark.parametrize("clip", [None, 0.05], ids=["noclip", "clip"])
def test_grad_norm_matches_hand_computation(mode, clip):
    net = dense_net(out=1, seed=3)
    rs = np.random.RandomState(1)
    x = rs.randn(16, 4).astype(np.float32)
    t = rs.randn(16, 1).astype(np.float32)
    before = [p.asnumpy().copy() for p in net.trainable_params()]
    expected = _numpy_grad_norm(before, x, t)

    loss_net = nn.WithLossCell(net, nn.MSELoss())
    grads = ms.value_and_grad(loss_net, None, net.trainable_params())(Tensor(x), Tensor(t))[1]
    via_ms = math.sqrt(sum(float((g.asnumpy().astype(np.float64) ** 2).sum()) for g in grads))
    assert via_ms == pytest.approx(expected, rel=1e-5)

    lr = 0.1
    cell = MonitoredTrainCell(loss_net, nn.SGD(net.trainable_params(), learning_rate=lr), clip_grad_norm=clip)
    cell.set_train()
    source = CellSource(cell)
    source.reset()
    cell(Tensor(x), Tensor(t))
    assert cell.step_columns == ("loss", "grad_norm", "lr0")
    last = last_step_row(cell)
    assert last["grad_norm"] == pytest.approx(expected, rel=1e-5)     # before clipping, even when clipping
    assert last["lr0"] == pytest.approx(lr)
    # The step's row folded on the host into the interval of the core point at step 1.
    record = StepRecord(1)
    record.first_step = 1
    source.observe(1, None)
    source.read(record)
    grad = record.grad_interval
    assert [grad.min, grad.mean, grad.max, grad.count, grad.nonfinite] == pytest.approx(
        [expected, expected, expected, 1, 0], rel=1e-5)
    assert grad.max_step == 1 and record.grad_norm == pytest.approx(expected, rel=1e-5)
    # The update really used the (clipped) gradient: w_after = w_before - lr * scale * g.
    scale = 1.0 if clip is None else min(1.0, clip / expected)
    for p, w0, g in zip(net.trainable_params(), before, grads):
        np.testing.assert_allclose(p.asnumpy(), w0 - lr * scale * g.asnumpy(), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------------------------------------------
def _cosine(step, lo, hi, decay_steps):
    p = min(step, decay_steps) / decay_steps
    return lo + 0.5 * (hi - lo) * (1 + math.cos(math.pi * p))


def _two_groups(net, lr0, lr1):
    params = net.trainable_params()
    return [{"params": params[:2], "lr": lr0}, {"params": params[2:], "lr": lr1}]


LIST_LR = [0.1 * (0.8 ** i) for i in range(12)]
LR_CASES = {
    # name: (make optimizer from net, [expected lr of each group at optimizer step k])
    "schedule": (lambda net: nn.SGD(net.trainable_params(), learning_rate=nn.CosineDecayLR(0.001, 0.1, 8)),
                 lambda k: [_cosine(k, 0.001, 0.1, 8)]),
    "list": (lambda net: nn.Momentum(net.trainable_params(), learning_rate=LIST_LR, momentum=0.9),
             lambda k: [LIST_LR[k]]),
    "static_groups": (lambda net: nn.Adam(_two_groups(net, 0.01, 0.002), learning_rate=0.5),
                      lambda k: [0.01, 0.002]),
    "mixed_groups": (lambda net: nn.SGD(_two_groups(net, LIST_LR, 0.003), learning_rate=0.5),
                     lambda k: [LIST_LR[k], 0.003]),
}


@pytest.mark.parametrize("wrapped", [True, False], ids=["cell", "nocell"])
@pytest.mark.parametrize("case", sorted(LR_CASES))
@pytest.mark.slow
def test_learning_rate_matches_schedule_every_step(tmp_path, case, wrapped):
    set_mode("graph")
    make_opt, expected = LR_CASES[case]
    net = dense_net()
    opt = make_opt(net)
    loss = nn.SoftmaxCrossEntropyWithLogits(**CE)
    model = Model(MonitoredTrainCell.wrap(net, loss, opt)) if wrapped else Model(net, loss, opt)
    model.train(1, classification_data(10), callbacks=[TrainMonitor(str(tmp_path), collect_freq=1)])
    scalars, _ = read_run(tmp_path)
    groups = len(expected(0))
    for i in range(groups):
        tag = metadata.LEARNING_RATE if groups == 1 else metadata.learning_rate_group_tag(i)
        got = scalars[tag]
        assert steps_of(got) == list(range(1, 11))
        # Recorded step s (1-based) is optimizer step s - 1.
        assert [v for _, v in got] == pytest.approx([expected(s - 1)[i] for s, _ in got], rel=1e-5), tag
    if groups > 1:
        assert [v for _, v in scalars[metadata.LEARNING_RATE]] == [v for _, v in
                                                                   scalars[metadata.learning_rate_group_tag(0)]]


# ---------------------------------------------------------------------------------------------------------------
BUMPS = [0.0] * 20
BUMPS[3] = 1000.0          # step 4: a loss spike
BUMPS[6] = float("nan")    # step 7: a NaN loss (gradients unaffected, training goes on)
BUMPS[14] = float("inf")   # step 15


@pytest.mark.parametrize("wrapped", [True, False], ids=["cell", "nocell"])
@pytest.mark.slow
def test_spike_and_nan_between_points_survive_in_interval(tmp_path, mode, wrapped):
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.05)
    loss_net = LossWithBump(net)
    if wrapped:
        model = Model(MonitoredTrainCell(loss_net, opt))
    else:
        model = Model(nn.TrainOneStepCell(loss_net, opt))
    monitor = TrainMonitor(str(tmp_path), collect_freq=10)
    model.train(1, classification_data(20, bump=BUMPS), callbacks=[monitor])
    assert monitor.errors == 0
    scalars, tensors = read_run(tmp_path)
    assert steps_of(scalars[metadata.LOSS]) == [10, 20]
    assert all(0 < v < 10 for _, v in scalars[metadata.LOSS])      # the recorded points never saw the spike
    first = interval_at(tensors, metadata.LOSS, 10)
    second = interval_at(tensors, metadata.LOSS, 20)
    assert first["max"] > 1000 and first["min"] < 10
    assert first["nonfinite"] == 1 and first["count"] == 10
    assert second["nonfinite"] == 1 and second["count"] == 10 and second["max"] < 10
    assert math.isfinite(first["mean"]) and first["mean"] > 1000 / 9
    if wrapped:
        gn = interval_at(tensors, metadata.GRAD_NORM, 10)
        assert gn["nonfinite"] == 0 and gn["count"] == 10


@pytest.mark.slow
def test_nan_loss_recorded_as_nan_not_raised(tmp_path):
    set_mode("graph")
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.05)
    bumps = [0.0] * 4 + [float("nan")]
    monitor = TrainMonitor(str(tmp_path), collect_freq=5)
    Model(MonitoredTrainCell(LossWithBump(net), opt)).train(1, classification_data(5, bump=bumps),
                                                             callbacks=[monitor])
    scalars, tensors = read_run(tmp_path)
    (step, value), = scalars[metadata.LOSS]
    assert step == 5 and math.isnan(value)
    iv = interval_at(tensors, metadata.LOSS, 5)
    assert iv["nonfinite"] == 1 and iv["count"] == 5 and math.isfinite(iv["max"])
    assert monitor.errors == 0


# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_without_cell_loss_and_lr_recorded_and_one_warning(tmp_path, caplog):
    set_mode("graph")
    net = dense_net()
    opt = nn.Momentum(net.trainable_params(), learning_rate=nn.CosineDecayLR(0.0, 0.1, 12), momentum=0.9)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(**CE), opt)
    with caplog.at_level(logging.WARNING, logger="tb_mindspore_callbacks"):
        model.train(2, classification_data(6), callbacks=[TrainMonitor(str(tmp_path), collect_freq=4)])
    warnings = [r for r in caplog.records if "MonitoredTrainCell" in r.getMessage()]
    assert len(warnings) == 1
    assert "MonitoredTrainCell.wrap" in warnings[0].getMessage()
    scalars, tensors = read_run(tmp_path)
    assert steps_of(scalars[metadata.LOSS]) == [4, 8, 12]
    assert metadata.GRAD_NORM not in scalars
    assert [v for _, v in scalars[metadata.LEARNING_RATE]] == pytest.approx(
        [_cosine(s - 1, 0.0, 0.1, 12) for s in (4, 8, 12)], rel=1e-5)
    assert run_info(tensors)[1]["monitored_cell"] is False


# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sink_cadence_steps_and_intervals(tmp_path):
    """What Model's sink loop does on a device: the cell runs sink_size steps, then one callback call.

    MindSpore refuses sink mode on CPU, so this drives the real cell and the real callback protocol
    (``_InternalCallbackParam`` / ``RunContext``) the way ``Model._train_dataset_sink_process`` does.
    """
    set_mode("graph")
    net = dense_net()
    cell = MonitoredTrainCell(LossWithBump(net), nn.SGD(net.trainable_params(), learning_rate=0.05))
    sink_size, sinks = 4, 5
    bumps = [0.0] * (sink_size * sinks)
    bumps[5] = 500.0     # inside the second sink, never a callback step
    monitor = TrainMonitor(str(tmp_path), collect_freq=6, batch_size=8)
    train_in_sinks(monitor, cell, bumps, sink_size)
    scalars, tensors = read_run(tmp_path)
    # Multiples of 6 are crossed at steps 8 (6), 12 (12), 20 (18); 20 is also the end.
    assert steps_of(scalars[metadata.LOSS]) == [8, 12, 20]
    counts = [interval_at(tensors, metadata.LOSS, s)["count"] for s in (8, 12, 20)]
    assert counts == [8, 4, 8]
    assert interval_at(tensors, metadata.LOSS, 8)["max"] > 500
    # The first sink (graph compilation) only starts the clock: the point at step 8 times the second sink alone.
    assert steps_of(scalars[metadata.STEP_TIME_MS]) == [8, 12, 20]
    assert [interval_at(tensors, metadata.STEP_TIME_MS, s)["count"] for s in (8, 12, 20)] == [4, 4, 8]
    assert monitor.errors == 0


# ---------------------------------------------------------------------------------------------------------------
def test_rank_other_than_zero_writes_nothing(tmp_path, monkeypatch):
    set_mode("graph")
    monkeypatch.setenv("RANK_ID", "1")
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.05)
    monitor = TrainMonitor(str(tmp_path / "run"), collect_freq=2)
    Model(MonitoredTrainCell.wrap(net, nn.SoftmaxCrossEntropyWithLogits(**CE), opt)).train(
        1, classification_data(4), callbacks=[monitor])
    assert not os.path.exists(tmp_path / "run") or event_files(tmp_path / "run") == []


@pytest.mark.parametrize("kwargs", [
    {"collect_freq": 0}, {"collect_freq": -3}, {"collect_freq": 2.5}, {"collect_freq": True},
    {"flush_secs": 0}, {"flush_secs": "2"}, {"batch_size": 0}, {"rank": -1}, {"max_queue": 0},
])
def test_monitor_rejects_misuse_at_construction(tmp_path, kwargs):
    with pytest.raises(ValueError):
        TrainMonitor(str(tmp_path), **kwargs)


def test_monitor_rejects_empty_logdir():
    with pytest.raises(ValueError):
        TrainMonitor("")


def test_cell_rejects_misuse():
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    with pytest.raises(ValueError):
        MonitoredTrainCell(loss_net, opt, clip_grad_norm=-1.0)
    with pytest.raises(ValueError):
        MonitoredTrainCell(loss_net, opt, sens=0)
    with pytest.raises(TypeError):
        MonitoredTrainCell(loss_net, "sgd")


def test_cell_parameters_are_not_trainable():
    net = dense_net()
    cell = MonitoredTrainCell.wrap(net, nn.MSELoss(), nn.SGD(net.trainable_params(), learning_rate=0.1))
    names = {p.name for p in cell.get_parameters()}
    assert {"tbms_steps", "tbms_steps_count"} <= names
    assert not any(p.name.startswith("tbms_") for p in cell.trainable_params())
    assert isinstance(cell, nn.TrainOneStepCell)


# ---------------------------------------------------------------------------------------------------------------
def test_run_dir_name_and_creation(tmp_path):
    name = run_dir_name("my exp/1", {"lr": 0.001, "batch size": 32, "opt": "adam w", "warm": True}, when=0)
    stamp, rest = name.split("_", 1)
    assert len(stamp) == 15 and stamp[8] == "-"
    assert rest == "my-exp-1_lr0.001_batch-size32_optadam-w_warmtrue"
    a = make_run_dir(str(tmp_path), "demo", {"lr": 1e-3})
    b = make_run_dir(str(tmp_path), "demo", {"lr": 1e-3})
    assert os.path.isdir(a) and os.path.isdir(b) and a != b
    assert os.path.basename(a).endswith("_demo_lr0.001")


# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_demo_short_run_records_core_tier(tmp_path):
    from tb_mindspore_callbacks.demo import WarmupCosineLR

    lines = []
    run_dir = __import__("tb_mindspore_callbacks").run_demo(str(tmp_path), steps=12, log=lines.append,
                                                            collect_freq=4)
    assert os.path.dirname(run_dir) == str(tmp_path)
    assert "_demo_lr0.001_bs32_h64_steps12" in os.path.basename(run_dir)
    assert any(run_dir in line for line in lines)
    scalars, tensors = read_run(run_dir)
    for tag in (metadata.LOSS, metadata.LEARNING_RATE, metadata.GRAD_NORM):
        assert steps_of(scalars[tag]) == [4, 8, 12], tag
    assert all(math.isfinite(v) for _, v in scalars[metadata.LOSS])
    # Every tier: diagnostic and debug every 10 steps (at least), and at the end.
    for tag in (metadata.EVAL_LOSS, metadata.EVAL_METRIC_PREFIX + "accuracy", metadata.WEIGHT_NORM_GLOBAL,
                metadata.DATA_WAIT_MS):
        assert steps_of(scalars[tag]) == [10, 12], tag
    for tag in (metadata.GRAD_NORM_LAYERS, metadata.WEIGHT_NORM_LAYERS):
        assert steps_of(tensors[tag]) == [10, 12], tag
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(run_dir, size_guidance={"histograms": 0})
    ea.Reload()
    assert [e.step for e in ea.Histograms(metadata.ACTIVATION_PREFIX + "encoder.0")] == [10, 12]
    # The update ratio needs the weights from before the step: only at the planned debug steps.
    assert steps_of(tensors[metadata.UPDATE_RATIO_LAYERS]) == [10]
    assert "_hparams_/session_start_info" in tensors
    assert os.path.exists(os.path.join(str(tmp_path), "experiments.md"))
    schedule = WarmupCosineLR(1e-3, 6, 12, end=5e-5)
    assert [v for _, v in scalars[metadata.LEARNING_RATE]] == pytest.approx(
        [schedule.at(s - 1) for s in (4, 8, 12)], rel=1e-5)


def test_warmup_cosine_schedule_in_graph_equals_host():
    set_mode("graph")
    from tb_mindspore_callbacks.demo import WarmupCosineLR

    schedule = WarmupCosineLR(0.1, 5, 20, end=0.01)
    got = [float(schedule(Tensor(np.array([s], np.int32))).asnumpy().reshape(-1)[0]) for s in (0, 4, 5, 12, 20, 30)]
    assert got == pytest.approx([schedule.at(s) for s in (0, 4, 5, 12, 20, 30)], rel=1e-5)
    assert schedule.at(4) == pytest.approx(0.1) and schedule.at(20) == pytest.approx(0.01)


def test_norm_plan_sums_small_parameters_one_kernel_each():
    """Parameters under NORM_EACH_ELEMENTS: one L2Loss kernel each, their rows the parameters' sums in order (no
    segment sum); with larger ones around them, one row id per row of the pieces."""
    from tb_mindspore_callbacks.cells.train_cell import NORM_EACH_ELEMENTS, PIECE_EACH, PIECE_ROWS, norm_plan

    (pieces, ids, count), order = norm_plan([(3, 4), (5,), (1000,), (2, 2), ()])
    assert count == 5 and order is None
    assert [(p[0], p[1]) for p in pieces] == [(PIECE_EACH, (0, 1, 2, 3, 4))] and ids == ()
    (pieces, ids, count), _ = norm_plan([(3,), (512, 256), (NORM_EACH_ELEMENTS - 1,)])
    assert [(p[0], p[1]) for p in pieces] == [(PIECE_ROWS, (1,)), (PIECE_EACH, (0, 2))]
    assert ids.asnumpy().tolist() == [1] * 512 + [0, 2]
    _, order = norm_plan([(2,), (3,)], indices=(1, 0))
    assert order.asnumpy().tolist() == [1, 0]


def test_norm_plan_packs_bounded_groups_of_what_no_row_width_divides():
    """Large parameters whose size no usable row width divides (primes) are packed into groups of at most
    ``limit`` elements, each starting a row; one larger than ``limit`` is reduced whole."""
    from tb_mindspore_callbacks.cells.train_cell import PIECE_EACH, PIECE_PACKED, PIECE_WHOLE, norm_plan

    (pieces, ids, count), _ = norm_plan([(65537,), (65539,), (3,)], limit=200000)
    assert [(p[0], p[1]) for p in pieces] == [(PIECE_EACH, (2,)), (PIECE_PACKED, (0, 1))]
    kind, members, sizes, pads, width = pieces[1]
    assert sizes == (65537, 65539) and width == 4096 and pads == (4095, 4093)   # each starts a row of 4096
    rows = ids.asnumpy().tolist()
    assert rows == [2] + [0] * 17 + [1] * 17 and count == 3
    (pieces, _, _), _ = norm_plan([(65537,), (65539,)], limit=100000)
    assert [(p[0], p[1]) for p in pieces] == [(PIECE_PACKED, (0,)), (PIECE_PACKED, (1,))]
    (pieces, _, _), _ = norm_plan([(65537,)], limit=1000)
    assert [(p[0], p[1]) for p in pieces] == [(PIECE_WHOLE, (0,))]


def test_norm_plan_sums_large_parameters_where_they_lie():
    """A large parameter is reduced by rows of a width that divides it (no copy into a group); the small ones
    around it one kernel each; one whose size no usable width divides is packed."""
    from tb_mindspore_callbacks.cells.train_cell import PIECE_EACH, PIECE_PACKED, PIECE_ROWS, norm_plan

    (pieces, ids, count), _ = norm_plan([(1300, 1300), (1300,), (400, 400), (400,), (65537,)])
    kinds = {p[1]: (p[0], p[4]) for p in pieces}
    assert kinds[(0,)][0] == PIECE_ROWS and 1300 * 1300 % kinds[(0,)][1] == 0 and kinds[(0,)][1] >= 256
    assert kinds[(2,)][0] == PIECE_ROWS and 400 * 400 % kinds[(2,)][1] == 0
    assert kinds[(1, 3)][0] == PIECE_EACH
    assert kinds[(4,)][0] == PIECE_PACKED                      # 65537 is prime: no row width divides it
    rows = ids.asnumpy()
    assert count == 5 and sorted(set(rows.tolist())) == [0, 1, 2, 3, 4]
    assert (rows == 0).sum() * kinds[(0,)][1] == 1300 * 1300


@pytest.mark.parametrize("mode", ["graph", "pynative"])
@pytest.mark.slow
def test_square_sums_per_parameter_and_global_norm_are_exact(mode):
    """Every parameter's sum of squares (float16 and scalar gradients, an empty one, groups of one, large ones
    reduced by rows where they lie), in order, inside a compiled function as the monitors call it."""
    import mindspore as ms
    from mindspore import nn

    from tb_mindspore_callbacks.cells.train_cell import global_norm, grad_norms, norm_plan

    set_mode(mode)
    try:
        rs = np.random.RandomState(0)
        arrays = [rs.randn(3, 4).astype(np.float32), rs.randn(5).astype(np.float16), rs.randn(1000).astype(np.float32),
                  rs.randn(2, 2).astype(np.float32), np.float32(3.0), np.zeros((0, 3), np.float32),
                  rs.randn(7, 9).astype(np.float32), rs.randn(300, 256).astype(np.float32),
                  rs.randn(256, 260).astype(np.float16),         # these two: reduced by rows where they lie
                  rs.randn(65537).astype(np.float32)]            # prime: packed, or whole above the limit
        shapes = [a.shape for a in arrays]
        indices = (6, 0, 5, 8, 3, 1, 4, 7, 9)
        expected = [float((np.asarray(a, np.float64) ** 2).sum()) for a in arrays]

        class Norms(nn.Cell):
            def __init__(self, plan):
                super().__init__()
                self.plan = plan

            @ms.jit
            def construct(self, grads):
                total, layer = grad_norms(grads, self.plan)
                return total, layer, global_norm(grads, self.plan)

        for limit in (20, 1 << 22, 1):
            plan = norm_plan(shapes, indices, limit=limit)
            total, layer, again = Norms(plan)(ms.mutable(tuple(Tensor(a) for a in arrays)))
            assert (layer.asnumpy() ** 2).tolist() == pytest.approx([expected[i] for i in indices], rel=1e-4), limit
            assert float(total.asnumpy()) == pytest.approx(np.sqrt(sum(expected)), rel=1e-5), limit
            assert float(again.asnumpy()) == pytest.approx(np.sqrt(sum(expected)), rel=1e-5), limit
    finally:
        set_mode("graph")
