"""What is compared: two runs' series of each quantity brought onto the steps both recorded, layer by mapped layer.

A :class:`Track` holds one quantity of both runs as ``steps x columns`` matrices: one column for the loss, the
gradient norm, the global weight norm and the eval loss; one per learning-rate group; one per mapped layer pair for
the per-layer gradient norms, update ratios and weight norms (a fused weight compared with the norm of its parts).
Steps are aligned (the steps both runs recorded, after a whole-run offset of -1 / +1 when the loss says one run
counts from 0), duplicates keep their last value (a resumed run's final timeline). Pure numpy.
"""

from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from .names import map_layers

__all__ = ["Track", "QUANTITIES", "LAYER_QUANTITIES", "SCALAR_QUANTITIES", "build_tracks", "layer_names",
           "layer_shapes", "step_offset"]

# In the order a parting is reported when two quantities part at the same step.
QUANTITIES = ("learning_rate", "loss", "grad_norm", "layer_grad_norm", "update_ratio", "weight_norm",
              "layer_weight_norm", "eval_loss")
SCALAR_QUANTITIES = ("loss", "grad_norm", "weight_norm", "eval_loss")
LAYER_QUANTITIES = ("layer_grad_norm", "update_ratio", "layer_weight_norm")


@dataclass
class Track:
    """One quantity of both runs on their common steps. ``run`` / ``reference``: ``(steps, columns)`` float64;
    ``columns``: labels (the reference's layer names for a layer pair, ``"loss"`` for a scalar, ``group<i>``);
    ``pairs``: the mapping pair of each column (layer quantities), ``tags``: (run tag, reference tag)."""

    quantity: str
    columns: List[str]
    steps: np.ndarray
    run: np.ndarray
    reference: np.ndarray
    tags: tuple = ("", "")
    pairs: Optional[list] = None
    notes: List[str] = field(default_factory=list)

    def __len__(self):
        return int(self.steps.size)


def _last_per_step(steps, values):
    """Sorted unique steps and the value last recorded at each (rows of ``values``)."""
    steps = np.asarray(steps, dtype=np.int64)
    order = np.argsort(steps, kind="stable")
    steps, values = steps[order], np.asarray(values, dtype=np.float64)[order]
    if steps.size and np.any(steps[1:] == steps[:-1]):
        keep = np.r_[steps[1:] != steps[:-1], True]
        steps, values = steps[keep], values[keep]
    return steps, values


def _align(steps_a, values_a, steps_b, values_b, offset=0):
    """Rows of both on the steps they share (``steps_a + offset`` against ``steps_b``)."""
    sa, va = _last_per_step(np.asarray(steps_a, dtype=np.int64) + offset, values_a)
    sb, vb = _last_per_step(steps_b, values_b)
    common, ia, ib = np.intersect1d(sa, sb, assume_unique=True, return_indices=True)
    return common, va[ia], vb[ib]


def step_offset(run, reference):
    """-1, 0 or +1: the whole-run step offset that makes the two losses agree best (a run counting its steps from 0
    against one counting from 1), 0 unless another offset is clearly better (10x smaller median difference)."""
    a, b = run.get("loss"), reference.get("loss")
    if a is None or b is None:
        return 0
    scores = {}
    for k in (0, -1, 1):
        _, va, vb = _align(a.steps, a.values, b.steps, b.values, k)
        ok = np.isfinite(va) & np.isfinite(vb)
        if ok.sum() < 3:
            continue
        scores[k] = float(np.median(np.abs(va[ok] - vb[ok]) / np.maximum(np.abs(vb[ok]), 1e-12)))
    if 0 not in scores:
        return min(scores, key=scores.get) if scores else 0
    best = min(scores, key=scores.get)
    return best if best != 0 and scores[best] * 10 < scores[0] else 0


def layer_names(run):
    """The run's layer names (the union of its per-layer series, in recorded order)."""
    out = []
    for quantity in LAYER_QUANTITIES:
        series = run.layer_series(quantity)
        if series is not None:
            out.extend(n for n in series.layers if n not in out)
    return out


def layer_shapes(run):
    """``{layer: shape}`` from the run information (``layer_shapes``), where the recorder wrote them."""
    shapes = (run.info or {}).get("layer_shapes")
    if not isinstance(shapes, dict):
        return {}
    out = {}
    for name, shape in shapes.items():
        if isinstance(shape, (list, tuple)) and all(isinstance(n, int) for n in shape):
            out[str(name)] = tuple(shape)
    return out


def _scalar_track(quantity, run, reference, offset):
    a, b = run.get(quantity), reference.get(quantity)
    if a is None or b is None:
        return None
    steps, va, vb = _align(a.steps, a.values, b.steps, b.values, offset)
    if not steps.size:
        return None
    return Track(quantity, [quantity], steps, va[:, None], vb[:, None], (a.tag, b.tag))


def _lr_track(run, reference, offset):
    ga, gb = run.learning_rate_groups(), reference.learning_rate_groups()
    if len(ga) > 1 and len(ga) == len(gb):
        columns, steps, cols_a, cols_b = [], None, [], []
        for i, (a, b) in enumerate(zip(ga, gb)):
            s, va, vb = _align(a.steps, a.values, b.steps, b.values, offset)
            steps = s if steps is None else np.intersect1d(steps, s)
            columns.append("group%d" % i)
            cols_a.append((s, va))
            cols_b.append((s, vb))
        if steps is not None and steps.size:
            pick = [np.searchsorted(s, steps) for s, _ in cols_a]
            ma = np.stack([v[i] for (_, v), i in zip(cols_a, pick)], axis=1)
            mb = np.stack([v[i] for (_, v), i in zip(cols_b, pick)], axis=1)
            return Track("learning_rate", columns, steps, ma, mb, (ga[0].tag, gb[0].tag))
    return _scalar_track("learning_rate", run, reference, offset)


def _combine(values, columns, how, weights=None):
    """One column from several (a fused weight): norms add in squares; update ratios weighted by the weight norms
    (``weights``: the same columns of the layer weight norms, or None: plain root mean square)."""
    if len(columns) == 1:
        return values[:, columns[0]]
    part = values[:, columns]
    if how == "ratio":
        if weights is not None:
            num = np.sqrt(np.sum((part * weights) ** 2, axis=1))
            return num / np.sqrt(np.sum(weights ** 2, axis=1))
        return np.sqrt(np.mean(part ** 2, axis=1))
    return np.sqrt(np.sum(part ** 2, axis=1))


def _weights_at(run_series, steps, columns_by_name, names):
    """Layer weight norms of ``names`` at ``steps`` (the last recorded at or before each), or None."""
    w = run_series.layer_series("layer_weight_norm")
    if w is None or not all(n in w.layers for n in names):
        return None
    ws, wv = _last_per_step(w.steps, w.values)
    idx = np.clip(np.searchsorted(ws, steps, side="right") - 1, 0, len(ws) - 1)
    return wv[idx][:, [w.layers.index(n) for n in names]]


def _layer_track(quantity, run, reference, mapping, offset):
    a, b = run.layer_series(quantity), reference.layer_series(quantity)
    if a is None or b is None or not mapping.pairs:
        return None
    steps, va, vb = _align(a.steps, a.values, b.steps, b.values, offset)
    if not steps.size:
        return None
    how = "ratio" if quantity == "update_ratio" else "norm"
    cols_a, cols_b, columns, pairs, notes = [], [], [], [], []
    for pair in mapping.pairs:
        if not all(n in a.layers for n in pair.run) or not all(n in b.layers for n in pair.reference):
            continue
        ia = [a.layers.index(n) for n in pair.run]
        ib = [b.layers.index(n) for n in pair.reference]
        wa = _weights_at(run, steps - offset, None, pair.run) if how == "ratio" and len(ia) > 1 else None
        wb = _weights_at(reference, steps, None, pair.reference) if how == "ratio" and len(ib) > 1 else None
        cols_a.append(_combine(va, ia, how, wa))
        cols_b.append(_combine(vb, ib, how, wb))
        columns.append(" + ".join(pair.reference))
        pairs.append(pair)
        if how == "ratio" and (len(ia) > 1 or len(ib) > 1):
            notes.append("%s: the fused weight's update ratio is rebuilt from its parts' ratios and weight norms"
                         % columns[-1])
    if not columns:
        return None
    return Track(quantity, columns, steps, np.stack(cols_a, axis=1), np.stack(cols_b, axis=1), (a.tag, b.tag),
                 pairs, notes)


def build_tracks(run, reference, mapping_file=None, offset=None):
    """``(tracks, mapping, offset)`` of two :class:`~tb_plugin_mindspore.health.series.RunSeries`: every quantity
    both recorded (in :data:`QUANTITIES` order), the layer :class:`~.names.Mapping` and the step offset used."""
    offset = step_offset(run, reference) if offset is None else int(offset)
    mapping = map_layers(layer_names(run), layer_names(reference), mapping_file, layer_shapes(run),
                         layer_shapes(reference))
    tracks = []
    for quantity in QUANTITIES:
        if quantity == "learning_rate":
            track = _lr_track(run, reference, offset)
        elif quantity in LAYER_QUANTITIES:
            track = _layer_track(quantity, run, reference, mapping, offset)
        else:
            track = _scalar_track(quantity, run, reference, offset)
        if track is not None:
            tracks.append(track)
    return tracks, mapping, offset
