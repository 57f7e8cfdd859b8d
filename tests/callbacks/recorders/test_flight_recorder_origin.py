"""The flight recorder's pure parts: ring order and where an anomaly started (numpy in, layer names out)."""

import numpy as np
import pytest

from tb_mindspore_callbacks.recorders.flight_origin import bad_layers, find_origin, ring_rows

NAMES = ["l1.weight", "l2.weight", "l3.weight", "l4.weight", "l5.weight"]


def healthy(steps=20, seed=0):
    rs = np.random.RandomState(seed)
    return (1.0 + 0.2 * rs.rand(steps, len(NAMES))) * np.array([0.5, 1.0, 2.0, 1.5, 0.8])


def test_ring_rows_before_and_after_wrapping():
    rows, back = ring_rows(3, 5)
    assert rows.tolist() == [0, 1, 2] and back.tolist() == [2, 1, 0]
    rows, back = ring_rows(12, 5)                 # writes 7..11 kept, the 8th..12th
    assert rows.tolist() == [2, 3, 4, 0, 1] and back.tolist() == [4, 3, 2, 1, 0]
    rows, back = ring_rows(12, 5, since=10)       # only this run's writes
    assert rows.tolist() == [0, 1] and back.tolist() == [1, 0]
    assert ring_rows(0, 5)[0].size == 0
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        ring_rows(3, 0)


def test_healthy_window_has_no_origin():
    assert find_origin(healthy(), NAMES) is None


def test_backward_nan_names_the_deepest_bad_layer():
    norms = healthy()
    norms[12, :3] = np.nan            # entered at l3 in the backward pass, spread to l1 and l2
    norms[13:, :] = np.nan            # then everything (weights NaN)
    o = find_origin(norms, NAMES)
    assert (o.first, o.layers, o.cause) == (12, ["l3.weight"], "nonfinite")
    assert o.bad == NAMES[:3] and o.ratio is None


def test_forward_overflow_names_the_shallowest_bad_layer():
    norms = healthy()
    norms[9, 2:] *= 1e4               # activation blew up at l3's input: l3 and every later layer
    o = find_origin(norms, NAMES)
    assert (o.first, o.layers, o.cause) == (9, ["l3.weight"], "spike")
    assert o.ratio > 1e3


def test_single_layer_spike_and_earliest_step_wins():
    norms = healthy()
    norms[7, 3] *= 50                 # l4 spikes first
    norms[10, 1] = np.inf             # later, l2 non-finite
    o = find_origin(norms, NAMES)
    assert (o.first, o.layers, o.cause) == (7, ["l4.weight"], "spike")
    o = find_origin(norms, NAMES, start=8)     # rows before 8 only as history
    assert (o.first, o.layers, o.cause) == (10, ["l2.weight"], "nonfinite")


def test_every_layer_at_once_falls_back_to_network_order():
    norms = healthy()
    norms[5, :] = np.nan
    assert find_origin(norms, NAMES).layers == ["l1.weight"]


def test_spikes_need_history_and_a_real_jump():
    norms = healthy()
    norms[1, 0] *= 100                # too early: fewer than 3 earlier steps
    norms[15, 0] *= 5                 # below 10x
    assert find_origin(norms, NAMES) is None
    nonfinite, spike, ratio = bad_layers(norms)
    assert not spike.any() and not nonfinite.any() and np.isnan(ratio[:3]).all()
    assert find_origin(norms, NAMES, spike_factor=4.0).layers == ["l1.weight"]


def test_loss_scale_overflow_steps_are_not_an_origin():
    norms = healthy()
    norms[6, :3] = np.inf             # an overflow step: skipped by the loss-scale cell, expected
    norms[12, 1] *= 40                # the real problem
    assert find_origin(norms, NAMES).first == 6
    o = find_origin(norms, NAMES, overflow_ok=True)
    assert (o.first, o.layers, o.cause) == (12, ["l2.weight"], "spike")


def test_bad_input_is_refused_with_one_line():
    with pytest.raises(ValueError, match="one column per name"):
        find_origin(np.ones((4, 3)), NAMES)
    with pytest.raises(ValueError, match="spike_factor must be a number > 1"):
        find_origin(healthy(), NAMES, spike_factor=1)
    with pytest.raises(ValueError, match="min_history must be an int >= 1"):
        bad_layers(healthy(), min_history=0)
