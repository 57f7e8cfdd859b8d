"""The numpy side of loss landscapes: filter normalization, PCA of a trajectory, projection, grids, the bounded
trajectory record and the record format (no MindSpore needed)."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.landscape import (
    Layout, Trajectory, auto_extent, axes, landscape_record, normalize_direction, normalize_record, pca_directions,
    project, random_directions,
)
from tb_plugin_mindspore.landscape.grid import extent_box, format_seconds, grid_shape


def _filter_norms(a):
    return np.linalg.norm(np.asarray(a, np.float64).reshape(a.shape[0], -1), axis=1)


shapes = st.lists(st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(shapes=shapes, seed=st.integers(0, 2 ** 31 - 1), bias_bn=st.sampled_from(["ignore", "include"]))
def test_filter_normalized_directions_have_the_weights_filter_norms(shapes, seed, bias_bn):
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(s).astype(np.float32) * rng.uniform(0.1, 3) for s in shapes]
    d1, d2 = random_directions(weights, seed=seed, bias_bn=bias_bn)
    for d in (d1, d2):
        for w, dk in zip(weights, d):
            assert dk.shape == w.shape and dk.dtype == np.float32
            if w.ndim <= 1:
                np.testing.assert_array_equal(dk, np.zeros_like(w) if bias_bn == "ignore" else w)
            else:
                np.testing.assert_allclose(_filter_norms(dk), _filter_norms(w), rtol=1e-5, atol=1e-6)
    # Same seed, same draws; different seeds differ.
    again = random_directions(weights, seed=seed, bias_bn=bias_bn)
    assert all(np.array_equal(a, b) for a, b in zip(d1, again[0]))


def test_layer_normalization_and_none():
    w = np.arange(12, dtype=np.float64).reshape(3, 4) + 1
    d = np.ones((3, 4))
    layer = normalize_direction(d, w, norm="layer")
    assert np.linalg.norm(layer) == pytest.approx(np.linalg.norm(w))
    np.testing.assert_array_equal(normalize_direction(d, w, norm="none"), d)
    with pytest.raises(ValueError):
        normalize_direction(d, w, norm="filters")
    with pytest.raises(ValueError):
        normalize_direction(d, w, bias_bn="zero")


def test_layout_round_trip_and_low_dim_mask():
    arrays = [np.ones((2, 3)), np.arange(4.0), np.zeros((1, 2, 2))]
    layout = Layout.of(arrays)
    flat = layout.flatten(arrays)
    assert flat.size == 14
    back = layout.unflatten(flat)
    assert all(np.array_equal(a, b) for a, b in zip(arrays, back))
    mask = layout.low_dim_mask()
    assert mask.sum() == 4 and mask[6:10].all()


def _plane_trajectory(size=500, n=9, seed=0):
    """Snapshots theta_i = final + a_i u + b_i v (u, v orthonormal, sum((a - mean) (b - mean)) = 0)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((size, 2)))
    u, v = q[:, 0], q[:, 1]
    final = rng.standard_normal(size)
    a = np.linspace(-4.0, -0.5, n)                 # large spread along u
    b = 0.4 * np.sin(np.linspace(0, np.pi, n)) - 0.3   # small, uncorrelated with a (even about the middle)
    snaps = final + a[:, None] * u + b[:, None] * v
    return snaps, final, u, v, a, b


def test_pca_of_a_trajectory_in_a_known_plane_reproduces_its_points():
    snaps, final, u, v, a, b = _plane_trajectory()
    assert abs(np.dot(a - a.mean(), b - b.mean())) < 1e-9
    pca = pca_directions(snaps, final)
    c = pca["components"].astype(np.float64)
    # The components are u and v (up to sign, fixed so that the first snapshot is at negative coordinates).
    assert abs(abs(c[0] @ u) - 1) < 1e-5 and abs(abs(c[1] @ v) - 1) < 1e-5
    np.testing.assert_allclose(pca["coords"][:, 0], a, atol=1e-5)
    np.testing.assert_allclose(pca["coords"][:, 1], b, atol=1e-5)
    np.testing.assert_allclose(pca["residual"], 0, atol=1e-5)
    assert sum(pca["explained_variance_ratio"]) == pytest.approx(1.0)
    assert pca["explained_variance"][0] == pytest.approx(np.var(a, ddof=1), rel=1e-6)
    assert pca["explained_variance"][1] == pytest.approx(np.var(b, ddof=1), rel=1e-6)


def test_pca_in_small_column_blocks_and_from_a_memmap(tmp_path):
    snaps, final, *_ = _plane_trajectory(size=300)
    path = tmp_path / "m.npy"
    np.save(path, snaps.astype(np.float32))
    mm = np.load(path, mmap_mode="r")
    whole = pca_directions(snaps.astype(np.float32), final, chunk=1 << 20)
    blocks = pca_directions(mm, final, chunk=7)
    np.testing.assert_allclose(whole["coords"], blocks["coords"], atol=1e-5)
    np.testing.assert_allclose(whole["explained_variance"], blocks["explained_variance"], rtol=1e-5)


def test_pca_needs_three_varied_snapshots():
    final = np.zeros(10)
    with pytest.raises(ValueError, match="at least 3"):
        pca_directions(np.ones((2, 10)), final)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        pca_directions(np.outer(np.arange(5.0), np.ones(10)), final)


def test_pca_ignore_mask_zeroes_those_entries_and_projects_by_least_squares():
    snaps, final, *_ = _plane_trajectory(size=50)
    mask = np.zeros(50, dtype=bool)
    mask[:5] = True
    pca = pca_directions(snaps, final, ignore_mask=mask)
    assert not pca["components"][:, :5].any()
    coords, residual = project(snaps, final, pca["components"])
    np.testing.assert_allclose(coords, pca["coords"], atol=1e-6)


def test_projection_of_points_off_the_plane_has_a_residual():
    d = np.eye(3)[:2]
    coords, residual = project(np.array([[1.0, 2.0, 2.0], [0.0, 0.0, 0.0]]), np.zeros(3), d)
    np.testing.assert_allclose(coords[0], [1, 2])
    assert residual[0] == pytest.approx(2 / 3)
    assert np.isnan(residual[1])


def test_grids_and_extents():
    x, y = axes(21, 1.0)
    assert x.size == 21 and x[10] == 0 and y[0] == -1 and y[-1] == 1
    x, y = axes((5, 3), (-1, 3, 0, 1))
    assert list(x) == [-1, 0, 1, 2, 3] and list(y) == [0, 0.5, 1]
    assert extent_box((2, 0.5)) == (-2, 2, -0.5, 0.5)
    assert grid_shape(7) == (7, 7)
    with pytest.raises(ValueError):
        grid_shape(1)
    with pytest.raises(ValueError):
        extent_box((1, 1, 0, 1))
    box = auto_extent([[-4, -1], [-2, 0.5]])
    assert box[0] < -4 and box[1] > 0 and box[2] < -1 and box[3] > 0.5
    assert format_seconds(0.0412) == "41 ms" and format_seconds(137) == "2 min 17 s"


def test_trajectory_stays_bounded_and_evenly_spaced(tmp_path):
    for directory in (None, str(tmp_path / "snaps")):
        t = Trajectory(max_snapshots=8, directory=directory)
        for step in range(0, 1001):
            if t.wants(step):
                t.add(step, np.full(4, step, np.float32))
        assert 4 <= len(t) < 8
        steps = t.steps
        assert steps[0] == 0 and steps == sorted(steps)
        gaps = np.diff(steps)
        assert gaps.max() <= 2 * gaps.min() + 1
        assert t.first[0] == 0
        got_steps, m = t.matrix(final=np.full(4, 1000.5, np.float32), final_step=1001)
        assert got_steps[-1] == 1001 and m.shape == (len(t) + 1, 4)
        np.testing.assert_array_equal(m[:-1, 0], steps)
        if directory:
            import os

            assert len([f for f in os.listdir(directory) if f.startswith("snapshot_")]) == len(t)


def test_record_round_trip_through_the_summary_json():
    z = np.arange(12.0).reshape(3, 4)
    z[2, 3] = np.nan
    rec = landscape_record([0, 1, 2, 3], [-1, 0, 1], z, "pca",
                           path={"steps": [10, 20, 30], "x": [-2, -1, 0], "y": [0.5, 0.2, 0], "z": [9, 5, 1]},
                           center=(0, 0, 1.0), explained_variance_ratio=[0.9, 0.05], complete=False)
    value = summary.landscape("landscape/pca", rec)
    text = value.tensor.string_val[0].decode("utf-8")
    back = normalize_record(json.loads(text))
    assert back["method"] == "pca" and back["source"] == "tb_mindspore_callbacks" and back["dims"] == 2
    np.testing.assert_array_equal(back["z"], z)
    assert back["path"]["steps"] == [10, 20, 30] and list(back["path"]["x"]) == [-2, -1, 0]
    assert back["center"] == {"x": 0.0, "y": 0.0, "z": 1.0}
    assert back["complete"] is False and back["explained_variance_ratio"] == [0.9, 0.05]


def test_normalize_accepts_mindspore_records_and_rejects_broken_ones():
    ms = {"landscape": {"x": [-1.0, 0.0, 1.0], "y": [-1.0, 0.0, 1.0], "z": [[1, 2, 3], [4, 5, 6], [7, 8, 9]]},
          "loss_path": None, "convergence_point": {"x": [0.0], "y": [0.0], "z": [5.0]},
          "metadata": {"decomposition": "Random", "unit": "epoch", "step_per_epoch": 2}}
    back = normalize_record(ms)
    assert back["source"] == "mindspore" and back["method"] == "random" and back["unit"] == "epoch"
    assert back["center"]["z"] == 5.0 and back["path"] is None
    mesh = dict(ms, landscape={"x": [[-1, 0, 1]] * 3, "y": [[-1] * 3, [0] * 3, [1] * 3], "z": ms["landscape"]["z"]})
    assert list(normalize_record(mesh)["y"]) == [-1, 0, 1]
    with pytest.raises(ValueError):
        normalize_record({"landscape": {"x": [1, 2], "y": [1, 2], "z": [1, 2, 3]}})
    with pytest.raises(ValueError):
        normalize_record({"landscape": None})
