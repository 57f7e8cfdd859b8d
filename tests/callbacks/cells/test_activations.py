"""The activation probe (``callbacks/cells/activations.py``): exact outputs of nested and uncompilable cells, the
training network left as it was, op by op until compiling pays, compiled blocks reused."""

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import Tensor, nn  # noqa: E402

from tb_mindspore_callbacks.cells import activations, tiering  # noqa: E402
from tb_mindspore_callbacks.cells.activations import ActivationProbe  # noqa: E402

from cb_helpers import set_mode  # noqa: E402


class Block(nn.Cell):
    """Dense + ReLU: the probe captures both this block and its Dense (a probed cell inside a probed cell)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Dense(n_in, n_out)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.fc(x))


class Untraceable(nn.Cell):
    """A block MindSpore cannot compile (``try`` is not supported in graphs); it runs fine op by op."""

    def __init__(self, n):
        super().__init__()
        self.fc = nn.Dense(n, n)

    def construct(self, x):
        try:
            y = self.fc(x) * 2.0
        except ValueError:
            y = x
        return y


class Net(nn.Cell):
    def __init__(self, seed, untraceable=True):
        super().__init__()
        self.block = Block(4, 6)
        self.odd = Untraceable(6) if untraceable else nn.Dense(6, 6)
        self.head = nn.Dense(6, 2)
        rs = np.random.RandomState(seed)
        for p in self.trainable_params():
            p.set_data(Tensor((rs.randn(*p.shape) * 0.5).astype(np.float32)))

    def construct(self, x):
        return self.head(self.odd(self.block(x)))


def _np_params(net):
    return {p.name: p.asnumpy().astype(np.float64) for p in net.trainable_params()}


def _expected(net, x, untraceable):
    w = _np_params(net)
    fc = x @ w["block.fc.weight"].T + w["block.fc.bias"]
    block = np.maximum(fc, 0.0)
    if untraceable:
        odd = (block @ w["odd.fc.weight"].T + w["odd.fc.bias"]) * 2.0
    else:
        odd = block @ w["odd.weight"].T + w["odd.bias"]
    head = odd @ w["head.weight"].T + w["head.bias"]
    return {"block.fc": fc, "block": block, "odd": odd, "head": head}


@pytest.fixture
def compile_at_once(monkeypatch):
    """Probes compile their blocks at the first pass (no op-by-op passes first)."""
    monkeypatch.setattr(tiering, "COMPILE_AFTER_S", 0.0)


@pytest.mark.parametrize("start_mode,untraceable", [("graph", True), ("pynative", True), ("graph", False)])
def test_probe_captures_exact_outputs_and_restores_everything(start_mode, untraceable, compile_at_once):
    set_mode(start_mode)
    try:
        net = Net(seed=0, untraceable=untraceable)
        net.set_train(True)
        cells = [("block", net.block), ("block.fc", net.block.fc), ("odd", net.odd), ("head", net.head)]
        probe = ActivationProbe(net, cells, samples=3)
        # The Dense inside the probed block is probed itself, so the block runs op by op; its Dense is compiled.
        assert probe._compile == [net.block.fc, net.odd, net.head]
        x = np.random.RandomState(1).randn(5, 4).astype(np.float32)
        for _ in range(2):                      # the second pass runs the blocks compiled before
            got = probe([Tensor(x)])
            want = _expected(net, x[:3].astype(np.float64), untraceable)
            assert sorted(got) == sorted(want)
            for name in want:
                assert got[name].shape == want[name].shape, name
                np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)
            assert ms.get_context("mode") == (ms.GRAPH_MODE if start_mode == "graph" else ms.PYNATIVE_MODE)
            assert net.training
            assert all("construct" not in c.__dict__ for _, c in cells)
        if untraceable:     # the uncompilable block made the probe fall back to running op by op (and stay so)
            assert probe._compile == []
            assert activations._COMPILED.get(net.odd, "absent") is None
        else:               # every leaf block ran compiled
            assert probe._compile == [net.block.fc, net.odd, net.head]
            assert all(activations._COMPILED.get(c) is not None for c in probe._compile)
    finally:
        set_mode("graph")


@pytest.mark.parametrize("budget", ["calls", "seconds"])
def test_probe_runs_op_by_op_until_that_has_cost_a_compile_then_compiles(monkeypatch, budget):
    """A probe's first passes run op by op (nothing compiled: a short run never pays the compile); after
    ``COMPILE_AFTER_CALLS`` of them, or once they have taken ``COMPILE_AFTER_S`` together, the blocks are compiled,
    with the same outputs."""
    set_mode("graph")
    net = Net(seed=0, untraceable=False)
    cells = [("block", net.block), ("odd", net.odd), ("head", net.head)]
    probe = ActivationProbe(net, cells, samples=3)
    x = Tensor(np.random.RandomState(1).randn(5, 4).astype(np.float32))
    first = probe([x])
    second = probe([x])
    calls, spent = probe._op_by_op
    assert calls == 2 and spent > 0
    assert all(activations._COMPILED.get(c, "absent") == "absent" for _, c in cells)
    # The op-by-op passes have paid the compile.
    if budget == "calls":
        monkeypatch.setattr(tiering, "COMPILE_AFTER_CALLS", 2)
    else:
        monkeypatch.setattr(tiering, "COMPILE_AFTER_S", spent)
    compiles = tiering.compile_time()
    third = probe([x])
    assert probe._op_by_op == [calls, spent]
    assert all(activations._COMPILED.get(c) is not None for _, c in cells)
    assert tiering.compile_time()[0] > compiles[0]      # counted as compile time
    for name in first:
        np.testing.assert_array_equal(second[name], first[name])
        np.testing.assert_allclose(third[name], first[name], rtol=1e-6, atol=1e-6, err_msg=name)
    # A new probe on the same network starts compiled: its blocks are compiled already.
    monkeypatch.setattr(tiering, "COMPILE_AFTER_CALLS", 10 ** 9)
    monkeypatch.setattr(tiering, "COMPILE_AFTER_S", 1e9)
    again = ActivationProbe(net, cells, samples=3)
    compiles = tiering.compile_time()
    again([x])
    assert again._op_by_op == [0, 0.0] and tiering.compile_time() == compiles


@pytest.mark.slow
def test_probe_leaves_training_unchanged_and_reuses_compiled_blocks(mode, compile_at_once):
    """A network probed between steps trains bit-identically to an unprobed one; a second probe (a new monitor on
    the same network) reuses the compiled blocks."""
    nets = [Net(seed=3, untraceable=False), Net(seed=3, untraceable=False)]
    rs = np.random.RandomState(2)
    xs = [Tensor(rs.randn(8, 4).astype(np.float32)) for _ in range(4)]
    ys = [Tensor(rs.randint(0, 2, 8).astype(np.int32)) for _ in range(4)]
    steps = []
    for net in nets:
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Adam(net.trainable_params(), 0.01))
        step.set_train()
        steps.append(step)
    probed = nets[0]
    cells = [("block", probed.block), ("odd", probed.odd), ("head", probed.head)]
    losses = [[], []]
    for i in range(4):
        for k, step in enumerate(steps):
            losses[k].append(float(step(xs[i], ys[i]).asnumpy()))
        if i == 1:
            first = ActivationProbe(steps[0].network, cells, samples=4)
            out = first([xs[i], ys[i]])         # WithLossCell: only the data goes to the backbone
            assert {k: v.shape for k, v in out.items()} == {"block": (4, 6), "odd": (4, 6), "head": (4, 2)}
            compiled = {name: activations._COMPILED[cell] for name, cell in cells}
            again = ActivationProbe(steps[0].network, cells, samples=4)([xs[i], ys[i]])
            assert all(activations._COMPILED[cell] is compiled[name] for name, cell in cells)
            for name in out:
                np.testing.assert_array_equal(again[name], out[name])
    assert losses[0] == losses[1]
    for a, b in zip(nets[0].trainable_params(), nets[1].trainable_params()):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
