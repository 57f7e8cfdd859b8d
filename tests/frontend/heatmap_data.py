"""Event data of the heatmap and distribution browser tests: two runs with per-layer series and histograms, written with
the plugin's SummaryWriter. The values are functions of (layer, step) so a test can check what a cell shows."""

import math
import os

import numpy as np

HOSTILE_LAYER = '<img src=x onerror="window.__pwned=1">.weight'
BLOCKS = 3
STEPS = 60
T0 = 1_700_000_000.0


def layer_names(blocks=BLOCKS):
    names = ["embedding.weight"]
    for b in range(blocks):
        for part in ("attn.q.weight", "attn.k.weight", "attn.v.weight", "ffn.w1.weight", "ffn.w2.weight"):
            names.append("encoder.layers.%d.%s" % (b, part))
    names += ["head.weight", HOSTILE_LAYER]
    return names


def ratio(run_index, layer, step, names):
    """Update ratio of layer ``layer`` at ``step``: ~1e-3, except: the head is too fast (0.3), ffn.w2 of block 0 is
    not learning (3e-6), the hostile-named layer is frozen (0); run 1 is 2x faster; NaN at (layer 2, step 30)."""
    name = names[layer]
    if name == HOSTILE_LAYER:
        return 0.0
    if name == "head.weight":
        return 0.3
    if name == "encoder.layers.0.ffn.w2.weight":
        return 3e-6
    if layer == 2 and step == 30:
        return math.nan
    return 1e-3 * (1 + 0.5 * math.sin(layer + step / 10.0)) * (2 if run_index else 1)


def write_heatmap_runs(root, steps=STEPS):
    """run_a and run_b (run_b lacks the hostile layer) under ``root``; returns {run: layer names}."""
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    out = {}
    for r, run in enumerate(("run_a", "run_b")):
        names = layer_names()
        if r == 1:
            names = names[:-1]
        out[run] = names
        with SummaryWriter(os.path.join(str(root), run), flush_secs=0.5, max_queue=steps * 10) as w:
            for step in range(1, steps + 1):
                wall = T0 + r * 3 + step
                w.scalar("core/loss", 2.0 * math.exp(-step / 30.0) + 0.1 * r, step, wall_time=wall)
                w.layers("debug/update_ratio", names, [ratio(r, i, step, names) for i in range(len(names))], step,
                         wall_time=wall)
                w.layers("diagnostic/layer_weight_norm", names, [5.0 + i + 0.01 * step for i in range(len(names))],
                         step, wall_time=wall)
                if step % 5 == 0:
                    rng = np.random.default_rng(step + 100 * r)
                    w.histogram("debug/activation/encoder.layers.0", rng.normal(0.1 * step, 1.0 + r, 2000), step,
                                wall_time=wall)
                    w.scalar("debug/data_wait_ms", 1.0 + r, step, wall_time=wall)
    return out
