"""The compact series store: the min/max pyramid and M4 windows (exact against a brute-force scan), the one rule for
restarted series (``series_store.cut_steps``), and the store's columns (segments, final timeline, memory per point)."""

import time

import numpy as np
import pytest

from tb_plugin_mindspore.sources import series_store
from tb_plugin_mindspore.sources.logdir import band_of_rows
from tb_plugin_mindspore.answers import scalars as scalar_answer


def _series(n, seed=0, spikes=(), nans=()):
    rng = np.random.default_rng(seed)
    values = (np.cumsum(rng.normal(size=n)) * 0.01 + 5).astype(np.float32)
    for i in spikes:
        values[i] = 1e6
    for i in nans:
        values[i] = np.nan if i % 2 else np.inf
    steps = np.arange(n, dtype=np.int64) * 3 + 7
    return steps, values


def _brute(steps, values, lo, hi, width):
    """Per pixel column (same edges as the query): its first and last position, finite min and max, first NaN/Inf."""
    i0, i1 = np.searchsorted(steps, lo, "left"), np.searchsorted(steps, hi, "right")
    edges = lo + (hi - lo) * np.arange(1, width) / width
    cuts = np.r_[i0, np.searchsorted(steps, edges, "left"), i1]
    out = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        if a == b:
            continue
        v = values[a:b].astype(np.float64)
        fin = np.isfinite(v)
        out.append((a, b - 1, v[fin].min() if fin.any() else None, v[fin].max() if fin.any() else None,
                    a + int(np.argmax(~fin)) if (~fin).any() else None, a, b))
    return out


def _check_m4(steps, values, pyr, lo, hi, width):
    keep = series_store.m4_indices(steps, values, pyr, lo, hi, width)
    kept = set(keep.tolist())
    assert len(keep) <= 5 * width + 2
    for first, last, vmin, vmax, bad, a, b in _brute(steps, values, lo, hi, width):
        assert first in kept and last in kept
        mine = [i for i in keep if a <= i < b]
        finite = [float(values[i]) for i in mine if np.isfinite(values[i])]
        if vmin is not None:
            assert min(finite) == vmin and max(finite) == vmax
        if bad is not None:
            assert bad in kept
    return keep


@pytest.mark.parametrize("n", [1, 63, 64, 65, 5000, 300_001])
def test_m4_windows_are_exact(n):
    steps, values = _series(n, spikes=[n // 3, n - 1] if n > 3 else [], nans=[n // 2, n // 5] if n > 5 else [])
    pyr = series_store.Pyramid()
    pyr.extend(values)
    rng = np.random.default_rng(n)
    windows = [(steps[0], steps[-1], 400)]
    for _ in range(6):
        a, b = sorted(rng.integers(int(steps[0]) - 10, int(steps[-1]) + 10, size=2))
        windows.append((int(a), int(b), int(rng.integers(1, 900))))
    for lo, hi, width in windows:
        _check_m4(steps, values, pyr, lo, hi, width)


def test_every_spike_and_nan_of_the_window_is_kept():
    n = 1_000_000
    spikes, nans = [123_457, 654_321], [222_222, 777_777]
    steps, values = _series(n, spikes=spikes, nans=nans)
    values[999_000] = -1e6
    pyr = series_store.Pyramid()
    pyr.extend(values)
    keep = set(series_store.m4_indices(steps, values, pyr, int(steps[0]), int(steps[-1]), 400).tolist())
    assert set(spikes + nans + [999_000]) <= keep
    # Zoomed in around one spike: it is there, with the points next to it.
    lo, hi = int(steps[654_000]), int(steps[654_600])
    keep = series_store.m4_indices(steps, values, pyr, lo, hi, 800)
    assert 654_321 in set(keep.tolist()) and keep.size == 603   # every point of the window and one on each side


def test_pyramid_grows_block_by_block_like_one_built_at_once():
    steps, values = _series(200_000, nans=[70_000])
    grown = series_store.Pyramid()
    for stop in (100, 4_095, 4_096, 60_000, 131_071, 200_000):
        grown.extend(values[:stop])
    whole = series_store.Pyramid()
    whole.extend(values)
    assert len(grown.levels) == len(whole.levels) and grown.covered == whole.covered
    for a, b in zip(grown.levels, whole.levels):
        for name in ("lo", "lo_at", "hi", "hi_at", "bad_at"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


@pytest.mark.serial   # a wall-time bound: run alone (0.31 s beside other tests at load 7)
def test_window_of_a_million_points_under_100_ms():
    """CPU time, best of three (the machine is shared: wall time measures the other jobs too), with a band of a million
    rows."""
    steps, values = _series(1_000_000, spikes=[500_000], nans=[10])
    pyr = series_store.Pyramid()
    pyr.extend(values)
    series = scalar_answer.Timeline(steps.astype(np.int32), steps.astype(np.float64), values, pyr)
    band = band_of_rows(steps.astype(np.int32), np.ones((steps.size, 5), dtype=np.float32))
    timings = []
    for lo, hi in [(None, None), (int(steps[100_000]), int(steps[900_000])), (int(steps[499_000]), int(steps[501_000]))]:
        best = float("inf")
        for _ in range(3):   # the best of three: a page fault storm or a preemption on a shared box is not the answer's cost
            start = time.process_time()
            body = scalar_answer.body("r", "core/loss", series.with_band(band), 4002, scalar_answer.Window(lo, hi, 800))
            best = min(best, time.process_time() - start)
        timings.append(best)
        assert len(body["points"]) <= 4002 and len(body["interval"]) <= 4002
    assert max(timings) < 0.1, timings


def test_cut_steps_is_the_restart_rule():
    assert series_store.cut_steps([1, 6]) == [6, None]
    assert series_store.cut_steps([1, 11, 6]) == [6, 6, None]        # a resume at 6 supersedes both earlier pieces
    assert series_store.cut_steps([1, None, 3]) == [3, 3, None]
    assert series_store.cut_steps([]) == []
    np.testing.assert_array_equal(series_store.segment_starts(np.array([1, 2, 3, 2, 5, 5, 1])), [3, 6])
    np.testing.assert_array_equal(series_store.segment_starts(np.array([4, 5]), previous=9), [0])


def _final(series):
    return series.final()[0].tolist()


def test_series_final_timeline_of_a_resume_and_a_rerun():
    s = series_store.Series()
    s.append(np.arange(1, 41), np.arange(1, 41) + 1000.0, np.ones(40), source="a")
    assert s.restarts() == [] and _final(s) == list(range(1, 41))
    s.append(np.arange(21, 61), np.arange(21, 61) + 2000.0, np.full(40, 2.0), source="b")   # resumed at step 21
    steps, walls, values, _ = s.final()
    assert steps.tolist() == list(range(1, 61))
    assert values[:20].tolist() == [1.0] * 20 and values[20:].tolist() == [2.0] * 40
    [r] = s.restarts()
    assert (r.step, r.superseded, r.source) == (21, 20, "b")
    [(source, lost_steps, lost_walls, lost_values)] = s.superseded()
    assert source == "a" and lost_steps.tolist() == list(range(21, 41)) and lost_values.tolist() == [1.0] * 20
    # A re-run of everything from step 1 in the same file (the step goes back): only the re-run is left.
    s.append(np.arange(1, 11), np.arange(1, 11) + 3000.0, np.full(10, 3.0), source="b")
    assert _final(s) == list(range(1, 11)) and len(s.restarts()) == 2
    assert len(s) == 90
    # A new part that goes on from the last step is no restart.
    s.append(np.arange(11, 15), np.arange(11, 15) + 4000.0, np.zeros(4), source="c")
    assert _final(s) == list(range(1, 15)) and len(s.restarts()) == 2


def test_final_timeline_matches_the_cut_rule_on_random_segments():
    rng = np.random.default_rng(3)
    for trial in range(30):
        s = series_store.Series()
        pieces = []
        for k in range(rng.integers(1, 6)):
            first = int(rng.integers(0, 100))
            steps = first + np.sort(rng.integers(0, 50, size=rng.integers(1, 30)))
            pieces.append(steps)
            s.append(steps, steps.astype(np.float64), steps.astype(np.float32), source=k)
        cuts = series_store.cut_steps([int(p[0]) for p in pieces])
        expected = np.concatenate([p if c is None else p[p < c] for p, c in zip(pieces, cuts)])
        assert _final(s) == expected.tolist(), (trial, pieces)
        lost = sum(len(x[1]) for x in s.superseded())
        assert lost + len(expected) == sum(len(p) for p in pieces)


def test_store_memory_per_point():
    s = series_store.Series()
    chunk = 10_000
    for start in range(0, 1_000_000, chunk):
        steps = np.arange(start, start + chunk)
        s.append(steps, steps * 0.5, np.sin(steps), source="f")
    s.final()   # builds the pyramid
    assert s.nbytes / len(s) <= 16 * series_store.GROWTH + 1     # 16 bytes a point, room to grow, the pyramid
    s.shrink()
    assert s.nbytes / len(s) <= 16.6                              # and 0.3 for the pyramid
    rows = series_store.Series(width=5)
    rows.append(np.arange(1000), np.zeros(1000), np.ones((1000, 5)))
    steps, walls, values, pyr = rows.final()
    assert values.shape == (1000, 5) and walls is None and pyr is None
    rows.shrink()
    assert rows.nbytes == 1000 * 24                               # interval rows: a step and 5 float32
    # Steps past int32 turn the column into int64 without changing what was there.
    s = series_store.Series()
    s.append([1, 2], [0.0, 0.0], [1.0, 2.0])
    s.append([2 ** 40], [0.0], [3.0])
    assert s.final()[0].tolist() == [1, 2, 2 ** 40]
