"""Lanczos, Hutchinson and the edge-of-stability lines on explicit matrices (numpy only)."""

import numpy as np
import pytest

from tb_plugin_mindspore.landscape.hessian import hutchinson_trace, lanczos_top, stability_threshold


def spd(n=300, seed=1, shift=0.5):
    a = np.random.RandomState(seed).randn(n, n)
    return a @ a.T / n - shift * np.eye(n)


def test_lanczos_top_eigenvalue_and_vector_in_20_products():
    h = spd()
    values, vectors = np.linalg.eigh(h)
    calls = []
    r = lanczos_top(lambda v: calls.append(1) or h @ v, h.shape[0], iterations=20)
    assert len(calls) == r["matvecs"] == 20
    assert r["eigenvalue"] == pytest.approx(values[-1], rel=1e-4)
    assert abs(float(r["vector"] @ vectors[:, -1])) > 0.99
    assert r["eigenvalue"] <= values[-1] + 1e-9   # a Ritz value never exceeds the largest eigenvalue


def test_lanczos_warm_start_converges_in_few_products_and_stops_on_invariant_subspace():
    h = spd()
    top = np.linalg.eigh(h)[1][:, -1]
    warm = lanczos_top(lambda v: h @ v, h.shape[0], iterations=3, v0=top + 0.002 * np.ones(h.shape[0]))
    assert warm["eigenvalue"] == pytest.approx(np.linalg.eigvalsh(h)[-1], rel=1e-4)
    diag = np.diag([1.0, 2.0, 5.0])
    r = lanczos_top(lambda v: diag @ v, 3, iterations=20)
    assert r["matvecs"] <= 3 and r["eigenvalue"] == pytest.approx(5.0)


def test_hutchinson_is_unbiased_with_rademacher_probes():
    h = spd(100, seed=2)
    r = hutchinson_trace(lambda v: h @ v, 100, probes=400, seed=0)
    assert abs(r["trace"] - np.trace(h)) < 4 * r["std_error"]
    assert np.isnan(hutchinson_trace(lambda v: h @ v, 100, probes=1)["std_error"])
    assert hutchinson_trace(lambda v: np.diag(np.arange(5.0)) @ v, 5, probes=1)["trace"] == pytest.approx(10.0)


def test_stability_thresholds_cite_cohen_et_al():
    assert stability_threshold("sgd", 0.1) == pytest.approx(20.0)              # 2 / lr
    assert stability_threshold("momentum", 0.1, 0.9) == pytest.approx(38.0)   # (2 + 2 beta) / lr
    assert stability_threshold("adam", 1e-3, 0.9) == pytest.approx(38000.0)   # 38 / lr at beta1 = 0.9
    assert np.isnan(stability_threshold("sgd", 0.0))
    with pytest.raises(ValueError, match="kind must be one of sgd, momentum, adam, got 'lion'"):
        stability_threshold("lion", 0.1)
    with pytest.raises(ValueError, match="iterations must be an int >= 1, got 0"):
        lanczos_top(lambda v: v, 3, iterations=0)
    with pytest.raises(ValueError, match="probes must be an int >= 1, got 0"):
        hutchinson_trace(lambda v: v, 3, probes=0)
