"""The monitors' small graphs (``callbacks/cells/layers.py``): weight norms, the update ratio and its snapshot give
the same values whether a network has graphs of its own or shares them by shape signature, in both modes; networks
of few tensors share one graph per kind and signature (a second network compiles nothing: ``bench/compile_cost.py``
times it), larger ones keep their own."""

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import Tensor, nn  # noqa: E402

from tb_mindspore_callbacks.cells import layers  # noqa: E402
from tb_mindspore_callbacks.cells.layers import Snapshot, UpdateRatio, WeightNorms, cached  # noqa: E402

from cb_helpers import dense_net, set_mode  # noqa: E402


def _stack(tensors, seed=0):
    net = nn.SequentialCell(*[nn.Dense(6, 6) for _ in range(tensors // 2)])
    rs = np.random.RandomState(seed)
    for p in net.trainable_params():
        p.set_data(Tensor(rs.randn(*p.shape).astype(np.float32)))
    return net


def _moved(params, seed):
    rs = np.random.RandomState(seed)
    for p in params:
        p.set_data(Tensor((p.asnumpy() + 0.1 * rs.randn(*p.shape)).astype(np.float32)))


@pytest.mark.parametrize("mode", ["graph", "pynative"])
@pytest.mark.parametrize("tensors", [4, layers.SHARED_MAX_TENSORS + 2])
def test_norms_and_update_ratio_match_numpy_shared_or_not(mode, tensors):
    set_mode(mode)
    try:
        for seed in (0, 1):              # a second network of the same shapes: the shared graphs again
            params = _stack(tensors, seed).trainable_params()
            snapshot, ratio = cached(Snapshot, params), cached(UpdateRatio, params)
            norms = cached(WeightNorms, params)
            before = [p.asnumpy().copy() for p in params]
            snapshot()
            _moved(params, seed + 10)
            got, after = ratio()
            expected = [np.linalg.norm(p.asnumpy() - b) / np.linalg.norm(b) for p, b in zip(params, before)]
            np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-5)
            now = [np.linalg.norm(p.asnumpy()) for p in params]
            np.testing.assert_allclose(after.asnumpy(), now, rtol=1e-5)
            np.testing.assert_allclose(norms().asnumpy(), now, rtol=1e-5)
    finally:
        set_mode("graph")


def test_few_tensors_share_one_graph_per_signature_and_many_keep_their_own():
    set_mode("graph")
    a, b = dense_net(seed=0).trainable_params(), dense_net(seed=1).trainable_params()
    assert len(a) <= layers.SHARED_MAX_TENSORS
    for kind in (WeightNorms, Snapshot, UpdateRatio):
        first, second = cached(kind, a), cached(kind, b)
        assert first is not second and first.cell is second.cell, kind      # one compiled cell, two networks
        assert cached(kind, a) is first                                      # and the same binding for a again
    # The update ratio reads the copy its network's snapshot keeps.
    assert cached(UpdateRatio, a).inputs[1] is cached(Snapshot, a).inputs[1]
    assert cached(UpdateRatio, b).inputs[1] is not cached(UpdateRatio, a).inputs[1]
    np.testing.assert_allclose(cached(WeightNorms, b)().asnumpy(), [np.linalg.norm(p.asnumpy()) for p in b],
                               rtol=1e-5)
    # Another signature, another graph.
    other = dense_net(out=3).trainable_params()
    assert cached(WeightNorms, other).cell is not cached(WeightNorms, a).cell
    # More tensors than that: graphs of the network's own, holding its Parameters.
    many = _stack(layers.SHARED_MAX_TENSORS + 2).trainable_params()
    assert isinstance(cached(WeightNorms, many), WeightNorms)
    assert isinstance(cached(UpdateRatio, many), UpdateRatio)
    assert cached(UpdateRatio, many).before is cached(Snapshot, many).before

