"""Event files for the tests of the dashboard routes (``layers``, ``histograms``, ``scalars_batch``), written with the
plugin's own SummaryWriter, and small helpers to poll a TensorBoard app until it has loaded them."""

import math
import os
import time

import numpy as np

HOSTILE = '<img src=x onerror="window.__pwned=1">\'"&amp; µ层'
RATIO_LAYERS = ["encoder.0.attn.weight", "encoder.0.ffn.weight", "encoder.1.attn.weight", HOSTILE]
STEPS = 40
T0 = 1_700_000_000.0


def ratio_value(layer, step):
    """The update ratio written for layer index ``layer`` at ``step`` (NaN, +Inf and an unchanged layer included)."""
    if layer == 0:
        return 1e-3 * (1 + 0.01 * step)
    if layer == 1:
        if step == 7:
            return math.nan
        if step == 9:
            return math.inf
        return 3e-5 * step
    if layer == 2:
        return 0.25 + step * 1e-3
    return 0.0   # the hostile-named layer never changes


def weight_norm_value(layer, step):
    return 10.0 + layer + 0.1 * step


def family_value(param, step):
    return (param + 1) * 0.5 + step * 0.01


FAMILY_PARAMS = ["model.layers.0.attention.wq.weight", "model.layers.0.feed_forward.w1.weight", "lm_head.weight"]


def write_layer_runs(root):
    """Two runs under ``root``; returns nothing (the values are the functions above).

    ``alpha``: ``debug/update_ratio`` (4 layers, NaN at step 7 and +Inf at step 9 of layer 1, layer 3 all zero),
    ``diagnostic/layer_weight_norm``, ``debug/centered`` (a vector with negative values), a mindformers family
    ``local_norm/<param>`` (param 2 not written at odd steps), ``core/loss`` and histograms
    ``debug/activation/encoder.0`` (normal, mean = step), ``debug/activation/empty`` (no finite value) and
    ``weights/stock`` (TensorBoard's own histogram summary of 0..99 + step), every 4 steps.
    ``beta``: ``debug/update_ratio`` with 2 layers.
    """
    from tensorboard.plugins.histogram import summary_v2 as histogram_summary

    from tb_plugin_mindspore.writing.writer import SummaryWriter

    with SummaryWriter(os.path.join(str(root), "alpha"), flush_secs=0.2) as w:
        for step in range(1, STEPS + 1):
            wall = T0 + step
            w.scalar("core/loss", 1.0 / step, step, wall_time=wall)
            w.layers("debug/update_ratio", RATIO_LAYERS, [ratio_value(i, step) for i in range(4)], step, wall_time=wall)
            w.layers("diagnostic/layer_weight_norm", RATIO_LAYERS[:3], [weight_norm_value(i, step) for i in range(3)],
                     step, wall_time=wall)
            w.layers("debug/centered", ["a", "b"], [-1.0 * step, 2.0], step, wall_time=wall)
            for p, name in enumerate(FAMILY_PARAMS):
                if p == 2 and step % 2:
                    continue
                w.scalar("local_norm/" + name, family_value(p, step), step, wall_time=wall)
            if step % 4 == 0:
                rng = np.random.default_rng(step)
                w.histogram("debug/activation/encoder.0", rng.normal(step, 1.0, 4000), step, wall_time=wall)
                w.histogram("debug/activation/empty", [math.nan, math.inf], step, wall_time=wall)
                # TensorBoard's own histogram summary (what any other writer produces)
                w.value(histogram_summary.histogram_pb("weights/stock", np.arange(100.0) + step, buckets=10).value[0],
                        step, wall_time=wall)
    with SummaryWriter(os.path.join(str(root), "beta"), flush_secs=0.2) as w:
        for step in range(1, 11):
            w.layers("debug/update_ratio", ["encoder.0.attn.weight", "head.weight"], [2e-3, 5e-2], step,
                     wall_time=T0 + step)


def wait_until(fn, timeout=60, what="data"):
    """Calls ``fn()`` until it returns something truthy (AssertionError counts as not yet)."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            got = fn()
            if got:
                return got
        except AssertionError as e:
            last = e
        time.sleep(0.25)
    raise AssertionError("timed out waiting for %s (%s)" % (what, last))
