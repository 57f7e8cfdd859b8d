"""Spike-preserving downsampling keeps every extreme and every non-finite point's bucket."""

import numpy as np
from hypothesis import given, settings, strategies as st

from tb_plugin_mindspore.answers import downsample


def test_short_series_is_untouched():
    assert downsample.keep_indices(np.arange(50.0), 2000).tolist() == list(range(50))


def test_two_single_step_spikes_in_100k_steps_survive():
    values = np.sin(np.arange(100_000) / 500.0)
    values[12_345] = 1000.0
    values[87_654] = -1000.0
    keep = downsample.keep_indices(values, 2000)
    assert keep.size <= 2000
    assert 12_345 in keep and 87_654 in keep
    assert keep[0] == 0 and keep[-1] == values.size - 1
    assert np.all(np.diff(keep) > 0)


def test_nan_and_inf_are_kept():
    values = np.linspace(0, 1, 50_000)
    values[100] = np.nan
    values[40_000] = np.inf
    keep = downsample.keep_indices(values, 500)
    assert 100 in keep and 40_000 in keep


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=3000),
       st.integers(min_value=10, max_value=400))
def test_bounded_sorted_and_extremes_kept(values, max_points):
    values = np.asarray(values, dtype=np.float64)
    keep = downsample.keep_indices(values, max_points)
    assert keep.size <= max_points
    assert np.all(np.diff(keep) > 0)
    finite = values[np.isfinite(values)]
    if finite.size:
        kept = values[keep]
        assert np.nanmax(np.where(np.isfinite(kept), kept, -np.inf)) == finite.max()
        assert np.nanmin(np.where(np.isfinite(kept), kept, np.inf)) == finite.min()
    if (~np.isfinite(values)).any():
        assert (~np.isfinite(values[keep])).any()


def test_bucket_intervals_keeps_extremes_and_counts():
    rows = [[s, 1.0, 2.0, 3.0, 10, 0] for s in range(10, 10_010, 10)]
    rows[500] = [5010, -7.0, 2.0, 99.0, 10, 2]
    merged = downsample.bucket_intervals(rows, 100)
    assert merged.shape[0] <= 100
    assert merged[:, 1].min() == -7.0 and merged[:, 3].max() == 99.0
    assert merged[:, 4].sum() == 10 * len(rows)
    assert merged[:, 5].sum() == 2
    assert merged[-1, 0] == rows[-1][0]
    assert np.allclose(merged[:, 2], 2.0)
