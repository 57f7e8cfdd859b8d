"""LoopMonitor's view of a torch-style model over the torch-style module adapter (which parameters, their names, the
learning rates, the gradients on ``.grad``); on MindNLP's real modules in test_mindnlp.py."""

import pytest

from tb_mindspore_callbacks.loop_params import group_params, loop_params


class P:
    def __init__(self, name, shape=(2, 2), requires_grad=True):
        self.name, self.shape, self.requires_grad, self.grad = name, shape, requires_grad, None


class Module:
    def __init__(self, named):
        self.named = named

    def named_parameters(self):
        return iter(self.named)

    def parameters(self):
        return (p for _, p in self.named)


class Opt:
    def __init__(self, groups):
        self.param_groups = groups


def test_the_module_names_its_trainable_parameters():
    a, b, frozen = P("uuid-a"), P("uuid-b"), P("uuid-f", requires_grad=False)
    module = Module([("encoder.layer.0.weight", a), ("frozen.weight", frozen), ("classifier.weight", b)])
    opt = Opt([{"params": [b], "lr": 1e-3}, {"params": [a], "lr": 1e-4}])
    table = loop_params(opt, module)
    assert table.params == [a, b] and table.names == ["encoder.layer.0.weight", "classifier.weight"]
    assert table.lrs() == (1e-3, 1e-4) and table.has_lr
    assert table.grads() is None
    a.grad = "g"
    assert table.grads() == ["g", None]
    named = loop_params(opt, module, param_names=lambda p: "m." + p.name)
    assert named.names == ["m.uuid-a", "m.uuid-b"]


def test_an_optimizer_alone_gives_its_groups_in_order():
    a, b, c = P("u1"), P("u2"), P("u3")
    opt = Opt([{"params": [a, b], "lr": 1e-3}, {"params": [b, c], "lr": 1e-4}])
    assert group_params(opt) == [a, b, c]
    table = loop_params(opt, param_names=["x", "y", "z"])
    assert table.params == [a, b, c] and table.names == ["x", "y", "z"]


def test_names_that_do_not_fit_fail_at_construction():
    a, b = P("a"), P("b")
    opt = Opt([{"params": [a, b], "lr": 1e-3}])
    with pytest.raises(ValueError, match="param_names has 1 names for 2 parameters"):
        loop_params(opt, param_names=["x"])
    with pytest.raises(ValueError, match="parameter names must be unique, 'x' repeat"):
        loop_params(opt, param_names=["x", "x"])
    assert loop_params(Opt([{"params": [], "lr": 1e-3}])) is None


def test_learning_rate_given_or_none():
    module = Module([("w", P("w"))])
    assert loop_params(None, module, lr=lambda: [0.1]).lrs() == (0.1,)
    assert loop_params(None, module, lr=lambda: 0.1).lr_config()["kind"] == "dynamic"
    table = loop_params(None, module)
    assert not table.has_lr and table.lrs() == ()
