"""The monitors' own graphs run op by op first and compiled after ``COMPILE_AFTER_CALLS`` such calls or
``COMPILE_AFTER_S`` of them (``callbacks/cells/tiering.py``): the same weight norms and update ratios either way,
in both modes, the global mode left as it was. (Plain tensors, a torch-style module's, are compiled from the first
call: MindNLP's do not run MindSpore's operators op by op; tests/callbacks/test_mindnlp.py.)"""

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import Parameter, Tensor  # noqa: E402

from tb_mindspore_callbacks.cells import tiering  # noqa: E402
from tb_mindspore_callbacks.cells.layers import Snapshot, UpdateRatio, WeightNorms, cached  # noqa: E402


def _values(seed=0):
    rs = np.random.RandomState(seed)
    arrays = [rs.randn(*shape).astype(np.float32) for shape in [(6, 4), (6,), (300, 256), (3, 5, 7)]]
    return [Parameter(Tensor(a), name="tiering_%d_%d" % (seed, i)) for i, a in enumerate(arrays)]


def _norms(values):
    return np.array([np.linalg.norm(v.asnumpy().astype(np.float64)) for v in values])


def test_weight_norms_and_update_ratio_are_the_same_op_by_op_and_compiled(mode, monkeypatch):
    params = _values(seed=1)
    norms, snapshot, ratio = cached(WeightNorms, params), cached(Snapshot, params), cached(UpdateRatio, params)
    cells = [norms, snapshot, ratio]
    before = [p.asnumpy().astype(np.float64) for p in params]
    results = []
    monkeypatch.setattr(tiering, "COMPILE_AFTER_CALLS", 10 ** 9)
    for budget in (1e9, 0.0):               # op by op, then compiled
        monkeypatch.setattr(tiering, "COMPILE_AFTER_S", budget)
        spent = [c.op_by_op_s for c in cells]
        snapshot()
        for p, b in zip(params, before):    # the optimizer's step
            p.assign_value(Tensor((b * 1.5 + 0.25).astype(np.float32)))
        got_norms = norms().asnumpy()
        got_ratio, got_after = (t.asnumpy() for t in ratio())
        results.append((got_norms, got_ratio, got_after))
        grew = [c.op_by_op_s > s for c, s in zip(cells, spent)]
        assert grew == [budget > 0] * 3
        assert ms.get_context("mode") == (ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
        for p, b in zip(params, before):    # back to the weights before, for the next round
            p.assign_value(Tensor(b.astype(np.float32)))
    after = [b * 1.5 + 0.25 for b in before]
    want_ratio = [np.linalg.norm(a - b) / np.linalg.norm(b) for a, b in zip(after, before)]
    for got_norms, got_ratio, got_after in results:
        np.testing.assert_allclose(got_norms, [np.linalg.norm(a) for a in after], rtol=1e-5)
        np.testing.assert_allclose(got_after, [np.linalg.norm(a) for a in after], rtol=1e-5)
        np.testing.assert_allclose(got_ratio, want_ratio, rtol=1e-5)
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)


@pytest.mark.parametrize("budget", ["calls", "seconds"])
def test_a_cell_compiles_after_its_op_by_op_calls_have_paid_for_it(monkeypatch, budget):
    ms.set_context(mode=ms.GRAPH_MODE)
    params = _values(seed=3 if budget == "calls" else 4)
    norms = WeightNorms(params)
    compiles = tiering.compile_time()
    first = norms().asnumpy()
    norms()
    calls, spent = norms.op_by_op_calls, norms.op_by_op_s
    assert calls == 2 and spent > 0 and not norms.compile_cache and not norms.compiled
    assert tiering.compile_time() == compiles           # an op-by-op call is no compile
    if budget == "calls":
        monkeypatch.setattr(tiering, "COMPILE_AFTER_CALLS", 2)
    else:
        monkeypatch.setattr(tiering, "COMPILE_AFTER_S", spent)
    second = norms().asnumpy()
    assert (norms.op_by_op_calls, norms.op_by_op_s) == (calls, spent)
    assert norms.compile_cache and norms.compiled      # compiled now
    wall, cpu = (now - before for now, before in zip(tiering.compile_time(), compiles))
    assert wall > 0 and cpu > 0                         # counted as compile time (kept out of the recording cost)
    compiles = tiering.compile_time()
    norms()
    assert tiering.compile_time() == compiles           # a compiled call after it is no compile either
    np.testing.assert_allclose(second, first, rtol=1e-6)
    np.testing.assert_allclose(first, _norms(params), rtol=1e-5)
