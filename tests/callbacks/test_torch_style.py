"""The torch-style adapter's pure helpers (which parameters, their names, the learning rates): plain Python, shared
with recorders of torch-style models; on MindNLP's real modules in test_mindnlp.py."""

import pytest

from tb_mindspore_callbacks.common.torch_style import (ParamTable, group_lrs, lr_values, optimizer_params, parameter_names,
                                                torch_table)


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


def test_parameters_follow_the_groups_each_once():
    a, b, c = P("u1"), P("u2"), P("u3")
    params, sizes = optimizer_params(Opt([{"params": [a, b], "lr": 1e-3}, {"params": [b, c], "lr": 1e-4}]))
    assert params == [a, b, c] and sizes == [2, 1]


def test_names_from_named_parameters_a_list_or_a_callable():
    a, b = P("uuid-a"), P("uuid-b")
    module = Module([("encoder.layer.0.weight", a), ("classifier.weight", b)])
    assert parameter_names([b, a], module) == ["classifier.weight", "encoder.layer.0.weight"]
    assert parameter_names([a, b]) == ["uuid-a", "uuid-b"]
    assert parameter_names([a, b], param_names=["x", "y"]) == ["x", "y"]
    assert parameter_names([a, b], param_names=lambda p: p.name.upper()) == ["UUID-A", "UUID-B"]
    with pytest.raises(ValueError, match="param_names has 1 names for 2 parameters"):
        parameter_names([a, b], param_names=["x"])
    with pytest.raises(ValueError, match="parameter names must be unique, 'x' repeat"):
        parameter_names([a, b], param_names=["x", "x"])


def test_learning_rates_per_group_and_given():
    opt = Opt([{"params": [P("a")], "lr": 1e-3}, {"params": [P("b")]}])
    lrs = group_lrs(opt)
    assert lrs[0] == 1e-3 and lrs[1] != lrs[1]           # NaN where a group has none
    assert lr_values(0.5) == (0.5,) and lr_values([1, 2]) == (1.0, 2.0)
    table = ParamTable([P("a")], ["a"], optimizer=opt, lr=lambda: [0.1, 0.2])
    assert table.lrs() == (0.1, 0.2) and table.has_lr
    config = ParamTable([P("a")], ["a"], optimizer=Opt([{"params": [], "lr": 3e-4}])).lr_config()
    assert config == {"kind": "unknown", "class": None, "source": "param_groups",
                      "groups": [{"kind": "unknown", "class": None, "initial": 3e-4}]}
    assert not ParamTable([], []).has_lr and ParamTable([], []).lrs() == ()


def test_a_module_alone_gives_its_trainable_parameters():
    a, frozen = P("a"), P("f", requires_grad=False)
    table = torch_table(network=Module([("w", a), ("frozen", frozen)]))
    assert table.params == [a] and table.names == ["w"] and table.optimizer is None
    assert table.grads() is None
    a.grad = "g"
    assert table.grads() == ["g"]
    assert torch_table() is None
