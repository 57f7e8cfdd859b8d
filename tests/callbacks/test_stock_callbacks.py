"""MindSpore's own callbacks next to TrainMonitor, with the wrapped cell (``Model(MonitoredTrainCell.wrap(...))``)."""

import os

import pytest

ms = pytest.importorskip("mindspore")
from mindspore import nn  # noqa: E402
from mindspore.train import (  # noqa: E402
    BackupAndRestore, CheckpointConfig, EarlyStopping, FlopsUtilizationCollector, History, LambdaCallback,
    LearningRateScheduler, LossMonitor, Model, ModelCheckpoint, ReduceLROnPlateau, SummaryCollector, TimeMonitor,
)

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor  # noqa: E402

from cb_helpers import classification_data, dense_net, read_run  # noqa: E402
from summary_watchdog import unblock_summary_writers  # noqa: E402

STEPS_PER_EPOCH, EPOCHS, LR = 4, 3, 0.05


def _halve_after_step_3(lr, step):
    return lr * 0.5 if step == 3 else lr


@pytest.mark.slow
def test_every_stock_callback_next_to_ours_listed_first(tmp_path, mode):
    """MindSpore's stock callbacks listed BEFORE TrainMonitor in one model.train; the learning rate changes
    made by LearningRateScheduler (step 3) and ReduceLROnPlateau (end of epoch 2) reach the LR the cell applies."""
    run = tmp_path / "run"
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=LR)
    model = Model(MonitoredTrainCell.wrap(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt))
    lambda_steps = []
    # min_delta so large that only the first epoch "improves": epoch 2 reduces the LR (patience 1), by 0.1.
    plateau = ReduceLROnPlateau(monitor="loss", factor=0.1, patience=1, min_delta=1e9, min_lr=1e-6)
    stock = [
        plateau,
        LearningRateScheduler(_halve_after_step_3),
        EarlyStopping(monitor="loss", patience=100),
        ModelCheckpoint(prefix="net", directory=str(tmp_path / "ckpt"),
                        config=CheckpointConfig(save_checkpoint_steps=STEPS_PER_EPOCH, keep_checkpoint_max=2)),
        LossMonitor(1),
        TimeMonitor(),
        LambdaCallback(on_train_step_end=lambda rc: lambda_steps.append(rc.original_args().cur_step_num)),
        SummaryCollector(str(run), collect_freq=2),
        History(),
        BackupAndRestore(str(tmp_path / "backup")),
    ]
    if mode == "graph":     # "FlopsUtilizationCollector now only support graph mode"
        stock.append(FlopsUtilizationCollector(data_size=STEPS_PER_EPOCH))
    monitor = TrainMonitor(str(run), collect_freq=1, registry=None)
    with unblock_summary_writers() as train_end:  # MindSpore's writer pool can deadlock at close
        model.train(EPOCHS, classification_data(STEPS_PER_EPOCH), callbacks=[train_end] + stock + [monitor],
                    dataset_sink_mode=False)

    total = STEPS_PER_EPOCH * EPOCHS
    assert monitor.errors == 0
    assert lambda_steps == list(range(1, total + 1))
    assert sorted(f for f in os.listdir(tmp_path / "ckpt") if f.endswith(".ckpt"))
    assert [f for f in os.listdir(run) if f.endswith("_MS")], "SummaryCollector wrote nothing"
    assert stock[8].epoch["epoch"] == list(range(1, EPOCHS + 1))                # History
    assert os.path.isdir(tmp_path / "backup")        # BackupAndRestore (its backup is removed at train end)
    scalars, _ = read_run(run)
    applied = dict(scalars[metadata.LEARNING_RATE])
    assert sorted(applied) == list(range(1, total + 1))
    expected = {s: LR if s <= 3 else LR * 0.5 if s <= 2 * STEPS_PER_EPOCH else LR * 0.05 for s in applied}
    for step, value in applied.items():
        assert value == pytest.approx(expected[step], rel=1e-5), (step, applied)
    # Epoch 3 did not improve either: reduced once more after its last step.
    assert float(opt.learning_rate.asnumpy()) == pytest.approx(LR * 0.005, rel=1e-5)
