"""Models and optimizers that do not fit are told so at construction, in one line naming what was given and what to
use instead (MindNLP's torch-style modules are checked in their own environment: test_mindnlp.py)."""

import pytest
from mindspore import nn

from tb_mindspore_callbacks import Eval, LoopMonitor, MonitoredLossScaleCell, MonitoredTrainCell, TrainMonitor
from tb_mindspore_callbacks.common.model_kinds import describe, is_torch_style_optimizer

from cb_helpers import classification_data, dense_net


def one_line(excinfo):
    text = str(excinfo.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("cls", [MonitoredTrainCell, MonitoredLossScaleCell])
def test_wrap_refuses_what_is_not_a_cell(cls):
    net = dense_net()
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True)
    with pytest.raises(TypeError) as e:
        cls.wrap({"weights": 1}, loss, opt)
    assert one_line(e) == "%s.wrap needs a mindspore.nn.Cell, got dict" % cls.__name__
    with pytest.raises(TypeError) as e:
        cls.wrap(net, lambda x, y: x, opt)
    assert "loss_fn needs a mindspore.nn.Cell loss" in one_line(e) and "got function" in one_line(e)
    with pytest.raises(TypeError) as e:
        cls.wrap(net, loss, net.trainable_params())
    assert one_line(e) == "%s.wrap needs a mindspore.nn.Optimizer, got list" % cls.__name__


def test_loop_monitor_names_what_it_takes(tmp_path):
    with pytest.raises(ValueError) as e:
        LoopMonitor(str(tmp_path), optimizer="adam")
    assert one_line(e) == ("LoopMonitor's optimizer needs a mindspore.nn.Optimizer, a torch-style optimizer "
                           "(param_groups) or None, got str")
    with pytest.raises(ValueError) as e:
        LoopMonitor(str(tmp_path), network=42)
    assert "LoopMonitor's network needs a mindspore.nn.Cell, a torch-style module" in one_line(e)
    net = dense_net()
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    with pytest.raises(ValueError) as e:
        LoopMonitor(str(tmp_path), opt, network=net, param_names=["a"])
    assert "param_names= and lr= are for torch-style models" in one_line(e)


def test_a_model_given_as_logdir_is_named(tmp_path):
    net = dense_net()
    with pytest.raises(ValueError) as e:
        TrainMonitor(net)
    assert one_line(e).startswith("logdir must be the run folder (a path), got SequentialCell")
    with pytest.raises(ValueError) as e:
        Eval(classification_data(2), model=net)
    assert one_line(e) == "Eval(model=) needs a mindspore.train.Model, got SequentialCell"


def test_describe_and_torch_style_optimizer_shapes():
    class Groups:
        param_groups = [{"params": [], "lr": 0.1}]

    assert describe(None) == "None" and describe(3) == "int"
    assert is_torch_style_optimizer(Groups()) and not is_torch_style_optimizer(object())
    net = dense_net()
    assert not is_torch_style_optimizer(nn.Momentum(net.trainable_params(), 0.1, 0.9))
