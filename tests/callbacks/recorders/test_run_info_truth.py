"""The run info says what was monitored (entry point, step source, train cell, optimizer and its kind) and which
items are recorded and which are not, and why; what is not is said once in the log too."""

import logging

import pytest

ms = pytest.importorskip("mindspore")
from mindspore import nn  # noqa: E402
from mindspore.train import Model  # noqa: E402

from tb_mindspore_callbacks import Debug, LoopMonitor, MonitoredTrainCell, Storage, TrainMonitor  # noqa: E402

from cb_helpers import classification_data, dense_net, read_run, run_info  # noqa: E402

CE = dict(sparse=True, reduction="mean")


def info_of(logdir):
    return run_info(read_run(logdir)[1])[1]


def lines(caplog):
    return [r.getMessage() for r in caplog.records if "does not record" in r.getMessage()]


def loop(logdir, make_opt=None, with_grads=True, steps=4, **kwargs):
    net = dense_net()
    opt = make_opt(net) if make_opt is not None else None
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(**CE))
    grad_fn = ms.value_and_grad(loss_net, None, opt.parameters if opt is not None else net.trainable_params())
    with LoopMonitor(str(logdir), opt, collect_freq=2, storage=Storage(registry=None), **kwargs) as mon:
        for x, y in classification_data(steps).create_tuple_iterator():
            loss, grads = grad_fn(x, y)
            if opt is not None:
                mon.update(grads)
            mon.step(loss, grads if with_grads else None)


@pytest.mark.slow
def test_loop_with_an_optimizer_records_everything_asked(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="tb_mindspore_callbacks")
    loop(tmp_path, lambda net: nn.Momentum(net.trainable_params(), 0.05, 0.9), debug=Debug(items=["layer_grad_norm"]))
    info = info_of(tmp_path)
    assert (info["entry_point"], info["step_source"], info["train_cell"]) == ("loop", "loop", None)
    assert (info["optimizer"], info["optimizer_kind"], info["monitored_cell"]) == ("Momentum", "mindspore", False)
    assert info["not_recorded"] == {} and lines(caplog) == []
    assert info["recorded"] == ["loss", "learning_rate", "grad_norm", "weight_norms", "layer_grad_norm",
                                "flight_recorder", "live_health"]


def test_loop_without_optimizer_says_what_it_cannot_read(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="tb_mindspore_callbacks")
    loop(tmp_path, None, debug=Debug(items=["update_ratio"]))
    info = info_of(tmp_path)
    assert info["optimizer"] is None and info["optimizer_kind"] is None
    missing = info["not_recorded"]
    assert set(missing) == {"learning_rate", "weight_norms", "update_ratio", "flight_recorder"}
    assert "optimizer=" in missing["learning_rate"] and "optimizer=" in missing["update_ratio"]
    assert "grad_norm" in info["recorded"]
    (line,) = lines(caplog)
    assert line.startswith("tb-mindspore: LoopMonitor does not record core/learning_rate: ")


def test_loop_without_gradients_says_so_and_writes_no_nan(tmp_path):
    loop(tmp_path, None, with_grads=False)
    missing = info_of(tmp_path)["not_recorded"]
    assert missing["grad_norm"] == "the loop gives no gradients: call mon.step(loss, grads)"
    assert "core/grad_norm" not in read_run(tmp_path)[0]


@pytest.mark.slow
def test_gradients_given_to_update_only_are_recorded(tmp_path, mode):
    loop(tmp_path, lambda net: nn.Momentum(net.trainable_params(), 0.05, 0.9), with_grads=False)
    info = info_of(tmp_path)
    assert "grad_norm" in info["recorded"] and info["not_recorded"] == {}
    norms = [v for _, v in read_run(tmp_path)[0]["core/grad_norm"]]
    assert len(norms) == 2 and all(v > 0 for v in norms)


@pytest.mark.slow
def test_model_train_with_and_without_the_cell(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="tb_mindspore_callbacks")
    net = dense_net()
    opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(**CE)
    Model(MonitoredTrainCell.wrap(net, loss_fn, opt)).train(
        1, classification_data(4), callbacks=[TrainMonitor(str(tmp_path / "cell"), collect_freq=2,
                                                   storage=Storage(registry=None))],
        dataset_sink_mode=False)
    info = info_of(tmp_path / "cell")
    assert (info["entry_point"], info["step_source"], info["train_cell"]) == ("Model.train", "monitored_cell",
                                                                              "MonitoredTrainCell")
    assert info["monitored_cell"] is True and info["optimizer"] == "Momentum" and info["not_recorded"] == {}
    assert lines(caplog) == []
    Model(net, loss_fn, opt).train(
        1, classification_data(4), callbacks=[TrainMonitor(str(tmp_path / "plain"), collect_freq=2,
                                                   storage=Storage(registry=None))],
        dataset_sink_mode=False)
    info = info_of(tmp_path / "plain")
    assert (info["step_source"], info["train_cell"], info["monitored_cell"]) == ("host", None, False)
    assert info["optimizer"] == "Momentum"
    assert set(info["not_recorded"]) == {"grad_norm", "flight_recorder"}
    assert "MonitoredTrainCell.wrap(net, loss_fn, optimizer)" in info["not_recorded"]["grad_norm"]
    (line,) = lines(caplog)
    assert "core/grad_norm, flight recorder: the training network has no MonitoredTrainCell" in line
