"""Live health while training: NaN / Inf, gradient explosion and loss spikes found within one collect interval
(GRAPH and PYNATIVE, ``Model.train`` and the loop), with the log line, the recorded ``_meta/health_event`` and each
action (stop, skip, checkpoint); healthy controls stay quiet; the run end marker and the declared LR intent."""

import json
import logging
import math

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import nn  # noqa: E402
from mindspore.train import Callback, Model  # noqa: E402

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_mindspore_callbacks import LoopMonitor, MonitoredTrainCell, TrainMonitor  # noqa: E402

from cb_helpers import LossTimesBump, LossWithBump, classification_data, dense_net, read_run, run_info  # noqa: E402

STEPS = 24
FREQ = 4
# GRAPH_MODE in the quick set, PYNATIVE_MODE behind the slow mark (the NaN and skip tests run both quick).
GRAPH_QUICK = pytest.mark.parametrize("mode", ["graph", pytest.param("pynative", marks=pytest.mark.slow)],
                                      indirect=True)


def bumps(at=None, value=float("nan"), steps=STEPS):
    out = [0.0] * steps
    if at is not None:
        out[at - 1] = value       # steps are 1-based
    return out


def json_series(logdir, tag):
    _, tensors = read_run(logdir)
    out = []
    for step, value in tensors.get(tag, []):
        raw = value.reshape(-1)[0] if value.shape else value.item()
        out.append((step, json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)))
    return out


def events(logdir):
    return [metadata.decode_health_event(e) for _, e in json_series(logdir, metadata.HEALTH_EVENT)]


def run_end(logdir):
    series = json_series(logdir, metadata.RUN_END)
    assert series, "no run end marker"
    return metadata.decode_run_end(series[-1][1])


class StepCount(Callback):
    def __init__(self):
        super().__init__()
        self.last = 0

    def on_train_step_end(self, run_context):
        self.last = run_context.original_args().cur_step_num


def train_model(logdir, bump, loss_cell=LossTimesBump, lr=0.05, **kw):
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=lr)
    monitor = TrainMonitor(str(logdir), collect_freq=FREQ, registry=None, **kw)
    counter = StepCount()
    Model(MonitoredTrainCell(loss_cell(net), opt)).train(
        1, classification_data(len(bump), bump=bump), callbacks=[monitor, counter], dataset_sink_mode=False)
    assert monitor.errors == 0
    return net, monitor, counter.last


def train_loop(logdir, bump, loss_cell=LossTimesBump, lr=0.05, **kw):
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=lr)
    grad_fn = ms.value_and_grad(loss_cell(net), None, opt.parameters)
    steps = 0
    with LoopMonitor(str(logdir), opt, collect_freq=FREQ, registry=None, **kw) as mon:
        for x, y, b in classification_data(len(bump), bump=bump).create_tuple_iterator():
            loss, grads = grad_fn(x, y, b)
            mon.update(grads)
            steps += 1
            if not mon.step(loss, grads):
                break
    assert mon.monitor.errors == 0
    return net, mon, steps


def finite_weights(net):
    return all(np.all(np.isfinite(p.asnumpy())) for p in net.trainable_params())


def health_lines(caplog):
    return [r.getMessage() for r in caplog.records if "live health" in r.getMessage()]


# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ["model", "loop"])
@pytest.mark.slow
def test_nan_found_within_one_interval(tmp_path, mode, entry, caplog):
    caplog.set_level(logging.WARNING, logger="tb_mindspore_callbacks")
    train = train_model if entry == "model" else train_loop
    net, _, steps = train(tmp_path, bumps(at=10))
    assert steps == STEPS                                  # "log" only: training goes on
    found = events(tmp_path)
    assert len(found) == 1, found                          # once, although the weights stay NaN afterwards
    e = found[0]
    assert (e["rule"], e["severity"], e["step"], e["first_step"]) == ("nonfinite", "error", 12, 10)
    assert e["action"] == "none" and e["source"] == "live"
    assert "since step 10" in e["message"] and "gradient norm" in e["message"] and "weights" in e["message"]
    lines = health_lines(caplog)
    assert len(lines) == 1 and "nonfinite at step 12" in lines[0] and "since step 10" in lines[0]
    assert "What to do" in lines[0]
    assert not finite_weights(net)
    assert run_end(tmp_path)["status"] == "finished"


@GRAPH_QUICK
@pytest.mark.parametrize("entry", ["model", "loop"])
@pytest.mark.slow
def test_stop_ends_training_at_the_detection_step(tmp_path, mode, entry):
    train = train_model if entry == "model" else train_loop
    _, _, steps = train(tmp_path, bumps(at=10), on_anomaly="stop")
    assert steps == 12
    (e,) = events(tmp_path)
    assert e["action"] == "stopped" and e["step"] == 12
    end = run_end(tmp_path)
    assert (end["status"], end["step"]) == ("stopped", 12) and "nonfinite" in end["reason"]


@pytest.mark.parametrize("entry", ["model", "loop"])
@pytest.mark.slow
def test_skip_leaves_the_weights_finite(tmp_path, mode, entry):
    train = train_model if entry == "model" else train_loop
    net, _, steps = train(tmp_path, bumps(at=10), on_anomaly="skip")
    assert steps == STEPS and finite_weights(net)
    (e,) = events(tmp_path)
    assert (e["rule"], e["action"], e["step"], e["first_step"]) == ("nonfinite", "skipped_update", 12, 10)
    assert "weights" not in e["message"]
    scalars, _ = read_run(tmp_path)
    assert all(math.isfinite(v) for s, v in scalars[metadata.LOSS] if s > 12)


@pytest.mark.slow
def test_skip_spiking_update_in_graph(tmp_path):
    """A gradient 1001x the usual one is not applied by the cell's in-graph guard."""
    net, _, _ = train_model(tmp_path, bumps(at=22, value=1000.0), on_anomaly="skip")
    (e,) = events(tmp_path)
    assert (e["rule"], e["action"], e["step"], e["first_step"]) == ("grad_explosion", "skipped_update", 24, 22)
    ref, _, _ = train_model(tmp_path / "ref", bumps(at=22, value=1000.0))
    skipped = max(np.abs(p.asnumpy()).max() for p in net.trainable_params())
    applied = max(np.abs(p.asnumpy()).max() for p in ref.trainable_params())
    assert skipped < 5 and applied > 3 * skipped


@GRAPH_QUICK
@pytest.mark.parametrize("entry", ["model", "loop"])
@pytest.mark.slow
def test_checkpoint_holds_the_last_good_state(tmp_path, mode, entry):
    train = train_model if entry == "model" else train_loop
    _, _, _ = train(tmp_path, bumps(at=10), on_anomaly=("checkpoint", "stop"))
    (e,) = events(tmp_path)
    assert e["action"] == "stopped" and e["checkpoint"].endswith("last_good_step8.ckpt")
    saved = ms.load_checkpoint(e["checkpoint"])
    names = [p.name for p in dense_net().trainable_params()]
    assert set(names) <= set(saved)
    assert all(np.all(np.isfinite(saved[n].asnumpy())) for n in names)
    # The same weights as a clean run after 8 steps.
    ref, _, _ = train_model(tmp_path / "ref", bumps(steps=8), live_health=False)
    for p in ref.trainable_params():
        np.testing.assert_allclose(saved[p.name].asnumpy(), p.asnumpy(), rtol=1e-5, atol=1e-6)
    net = dense_net(seed=5)
    ms.load_param_into_net(net, saved)
    assert finite_weights(net)


@GRAPH_QUICK
@pytest.mark.parametrize("entry", ["model", "loop"])
@pytest.mark.slow
def test_gradient_explosion(tmp_path, mode, entry, caplog):
    caplog.set_level(logging.WARNING, logger="tb_mindspore_callbacks")
    train = train_model if entry == "model" else train_loop
    train(tmp_path, bumps(at=22, value=1000.0), lr=0.001)
    e = events(tmp_path)[0]
    assert (e["rule"], e["severity"], e["step"], e["first_step"]) == ("grad_explosion", "error", 24, 22)
    assert "loss spike" in e["message"]                    # the same step's loss spike, merged into one event
    assert "grad_explosion at step 24" in health_lines(caplog)[0]


@GRAPH_QUICK
@pytest.mark.slow
def test_loss_spike(tmp_path, mode):
    train_model(tmp_path, bumps(at=21, value=50.0), loss_cell=LossWithBump)
    (e,) = events(tmp_path)
    assert (e["rule"], e["severity"], e["step"], e["first_step"]) == ("loss_spike", "warning", 24, 21)


# ---------------------------------------------------------------------------------------------------------------
@GRAPH_QUICK
@pytest.mark.slow
def test_healthy_controls_stay_quiet(tmp_path, mode, caplog):
    from tb_mindspore_callbacks.demo import WarmupCosineLR

    caplog.set_level(logging.WARNING, logger="tb_mindspore_callbacks")
    steps = 60
    schedules = {"constant": 0.05, "warmup_cosine": WarmupCosineLR(0.05, 10, steps),
                 "list": [0.05 * (0.97 ** i) for i in range(steps)]}
    for name, lr in schedules.items():
        net = dense_net()
        opt = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)
        Model(MonitoredTrainCell.wrap(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt)) \
            .train(1, classification_data(steps), callbacks=[TrainMonitor(str(tmp_path / name), collect_freq=2,
                                                                           registry=None)],
                   dataset_sink_mode=False)
        assert events(tmp_path / name) == [], name
        end = run_end(tmp_path / name)
        assert (end["status"], end["step"]) == ("finished", steps)
        _, tensors = read_run(tmp_path / name)
        config = run_info(tensors)[1]["lr_config"]
        assert config["kind"] == {"constant": "constant", "warmup_cosine": "schedule", "list": "list"}[name]
        if name == "warmup_cosine":
            assert config["class"] == "WarmupCosineLR"
        if name == "constant":
            assert config["groups"] == [{"kind": "constant", "class": None, "value": pytest.approx(0.05)}]
    assert health_lines(caplog) == []


def test_lr_config_groups_and_dynamic(tmp_path):
    from mindspore.train import ReduceLROnPlateau

    from tb_mindspore_callbacks.recorders import lr_config

    net = dense_net()
    params = net.trainable_params()
    opt = nn.Momentum([{"params": params[:2], "lr": 0.0}, {"params": params[2:], "lr": 0.1}], learning_rate=0.1,
                      momentum=0.9)
    config = lr_config(opt)
    assert config["kind"] == "constant"
    assert [g["value"] for g in config["groups"]] == [0.0, pytest.approx(0.1)]
    dynamic = lr_config(nn.Momentum(params, 0.1, 0.9), [ReduceLROnPlateau()])
    assert dynamic["kind"] == "dynamic" and dynamic["changed_by"] == ["ReduceLROnPlateau"]
    assert lr_config(None)["kind"] == "unknown"


def test_loop_records_lr_config_and_end(tmp_path):
    train_loop(tmp_path, bumps(steps=8))
    _, tensors = read_run(tmp_path)
    assert run_info(tensors)[1]["lr_config"]["kind"] == "constant"
    assert run_end(tmp_path)["status"] == "finished" and run_end(tmp_path)["step"] == 8


# ---------------------------------------------------------------------------------------------------------------
class Interrupt(Callback):
    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == 6:
            raise KeyboardInterrupt


def test_ctrl_c_writes_interrupted(tmp_path):
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.05)
    with pytest.raises(KeyboardInterrupt):
        Model(MonitoredTrainCell(LossTimesBump(net), opt)).train(
            1, classification_data(STEPS, bump=bumps()), dataset_sink_mode=False,
            callbacks=[TrainMonitor(str(tmp_path), collect_freq=FREQ, registry=None), Interrupt()])
    end = run_end(tmp_path)
    assert (end["status"], end["step"]) == ("interrupted", 6)
    scalars, _ = read_run(tmp_path)
    assert [s for s, _ in scalars[metadata.LOSS]] == [4, 6]          # the final point written too


def test_loop_exception_writes_failed(tmp_path):
    with pytest.raises(RuntimeError):
        with LoopMonitor(str(tmp_path), collect_freq=2, registry=None) as mon:
            for i in range(3):
                mon.step(ms.Tensor(np.float32(1.0)))
            raise RuntimeError("boom")
    end = run_end(tmp_path)
    assert (end["status"], end["step"]) == ("failed", 3) and "boom" in end["reason"]


def test_stall_found_by_the_watchdog(tmp_path, caplog):
    import time

    caplog.set_level(logging.WARNING, logger="tb_mindspore_callbacks")
    with LoopMonitor(str(tmp_path), collect_freq=2, registry=None, live_health={"stall_s": 0.5}) as mon:
        for i in range(4):
            mon.step(ms.Tensor(np.float32(1.0)))
        time.sleep(1.6)
        for i in range(2):
            mon.step(ms.Tensor(np.float32(1.0)))
    found = events(tmp_path)
    # On a loaded machine the first steps (compiling) can outlast 0.5 s too: a stall there is a true one.
    (e,) = [f for f in found if f["step"] == 4]
    assert all(f["rule"] == "run_stalled" and f["step"] < 4 for f in found if f is not e)
    assert (e["rule"], e["step"], e["severity"]) == ("run_stalled", 4, "warning")
    assert "no training step" in e["message"] and any("run_stalled" in line for line in health_lines(caplog))
    assert run_end(tmp_path)["step"] == 6


# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [
    ({"on_anomaly": "explode"}, "on_anomaly must be one of 'log', 'stop', 'skip', 'checkpoint'"),
    ({"on_anomaly": ["stop", 3]}, "on_anomaly must be one of"),
    ({"live_health": "yes"}, "live_health must be True, False or a dict of thresholds"),
    ({"live_health": {"grad_factr": 5}}, "unknown live_health threshold(s) 'grad_factr'"),
    ({"live_health": {"grad_factor": 0.5}}, "live_health['grad_factor'] must be None or a number > 1"),
    ({"live_health": {"stall_s": -1}}, "live_health['stall_s'] must be None or a number > 0"),
    ({"live_health": {"warmup_points": 0}}, "live_health['warmup_points'] must be an int >= 1"),
    ({"live_health": False, "on_anomaly": "stop"}, "needs live_health on"),
    ({"checkpoint_dir": 3}, "checkpoint_dir must be a path or None"),
    ({"recorders": [object()]}, "recorders must be tb_mindspore_callbacks.recorders.Recorder objects"),
])
def test_bad_arguments(tmp_path, kwargs, message):
    with pytest.raises(ValueError) as err:
        TrainMonitor(str(tmp_path), **kwargs)
    assert message in str(err.value)


def test_loop_skip_needs_optimizer(tmp_path):
    with pytest.raises(ValueError, match="on_anomaly='skip' needs optimizer="):
        LoopMonitor(str(tmp_path), on_anomaly="skip")
