"""``compare``: a run against its reference, step by step: which quantity parts first, at which step, in which
layers, and the likely class of the difference (``classes.py``). The answer is the JSON that ``tb-mindspore
compare --format json`` prints and the ``compare`` route returns (README "Check a port from PyTorch").

Pure numpy over two :class:`~tb_plugin_mindspore.health.series.RunSeries` (and an optional noise pair).
"""

from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from . import classes, tolerance
from .tracks import LAYER_QUANTITIES, QUANTITIES, build_tracks

__all__ = ["compare", "Parting", "VERSION", "MAX_LAYERS_LISTED"]

VERSION = 1
MAX_LAYERS_LISTED = 10
# Classes whose difference starts in particular layers (the others act on the whole run: the schedule, the data).
LAYER_CLASSES = ("init", "forward", "backward", "weight_decay", "adam_epsilon", "optimizer", "unknown")


@dataclass
class Parting:
    """One quantity's comparison: the track, its relative differences and tolerances, and per column the row where
    it parts (-1: never)."""

    track: object
    diff: np.ndarray
    tol: np.ndarray
    first_rows: np.ndarray
    noise_source: str

    @property
    def quantity(self):
        return self.track.quantity

    @property
    def parted(self):
        return bool(np.any(self.first_rows >= 0))

    @property
    def first_step(self):
        rows = self.first_rows[self.first_rows >= 0]
        return int(self.track.steps[rows.min()]) if rows.size else None

    def first_columns(self, limit=MAX_LAYERS_LISTED):
        """Columns that part at the quantity's first parting step, the furthest beyond tolerance first."""
        rows = self.first_rows
        if not np.any(rows >= 0):
            return []
        first = rows[rows >= 0].min()
        cols = np.flatnonzero(rows == first)
        excess = self.diff[first, cols] / self.tol[first, cols]
        return [int(c) for c in cols[np.argsort(-np.nan_to_num(excess, posinf=1e300), kind="stable")]][:limit]

    def parted_columns_by_step(self):
        """``[(step, column)]`` of every parted column, earliest first (then furthest beyond tolerance)."""
        cols = np.flatnonzero(self.first_rows >= 0)
        rows = self.first_rows[cols]
        excess = self.diff[rows, cols] / self.tol[rows, cols]
        order = np.lexsort((-np.nan_to_num(excess, posinf=1e300), rows))
        return [(int(self.track.steps[rows[i]]), int(cols[i])) for i in order]

    def at(self, step):
        """Row index of ``step`` (None when not recorded by both)."""
        i = int(np.searchsorted(self.track.steps, step))
        return i if i < self.track.steps.size and self.track.steps[i] == step else None


def _noise_matrices(reference, noise, mapping_file):
    """``{quantity: (steps, columns, diff)}`` of the reference against its noise pair (same framework: same names)."""
    if noise is None:
        return {}
    tracks, _, _ = build_tracks(reference, noise, mapping_file=None, offset=0)
    return {t.quantity: (t.steps, t.columns, tolerance.relative_difference(t.reference, t.run)) for t in tracks}


NO_GRADIENT = 1e-5      # a layer whose gradient is this far below the median layer's gets none (rounding only)


def no_gradient_layers(tracks):
    """Columns (reference layer names) whose gradient norm stays below :data:`NO_GRADIENT` of the median layer's over
    the first common steps in both runs: their true gradient is zero (a key bias before a softmax, a layer after
    a normalisation that cancels it) and what moves them is rounding noise, which Adam blows up to full-size
    updates of random sign. Their gradient norms, update ratios and weight norms are not compared."""
    lg = next((t for t in tracks if t.quantity == "layer_grad_norm"), None)
    if lg is None or len(lg.columns) < 3:
        return []
    head = slice(0, min(10, len(lg)))
    with np.errstate(invalid="ignore"):
        size = np.nanmax(np.abs(np.concatenate([lg.run[head], lg.reference[head]])), axis=0)
    typical = np.nanmedian(size)
    if not typical > 0:
        return []
    return [c for c, v in zip(lg.columns, size) if v < NO_GRADIENT * typical]


def _parting(track, noise_matrices, skip=()):
    diff = tolerance.relative_difference(track.run, track.reference)
    noise = None
    source = "first steps"
    found = noise_matrices.get(track.quantity)
    if found is not None:
        steps, columns, ndiff = found
        index = {c: i for i, c in enumerate(columns)}
        pick = [index.get(c) for c in track.columns]
        if all(p is not None for p in pick):
            noise = tolerance.noise_from_pair(track.steps, steps, ndiff[:, pick])
            source = "noise pair"
    tol, _ = tolerance.tolerances(track.quantity, track.run, track.reference, diff, noise)
    if skip and track.quantity in LAYER_QUANTITIES:
        cols = [j for j, c in enumerate(track.columns) if c in skip]
        tol[:, cols] = np.inf
    return Parting(track, diff, tol, tolerance.first_parting(diff, tol), source)


def _json_float(x):
    x = float(x)
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float("%.6g" % x)


def _column_entry(p, col, row):
    track = p.track
    entry = {"layer": track.columns[col], "step": int(track.steps[row]),
             "difference": _json_float(p.diff[row, col]), "tolerance": _json_float(p.tol[row, col])}
    if track.pairs is not None:
        entry["run_layers"] = list(track.pairs[col].run)
    return entry


def _quantity_summary(p):
    track = p.track
    first_rows = p.first_rows
    with np.errstate(invalid="ignore"):
        finite = np.where(np.isfinite(p.diff), p.diff, np.nan)
        max_diff = float(np.nanmax(finite)) if np.isfinite(finite).any() else 0.0
    out = {"quantity": track.quantity, "tags": list(track.tags), "steps": len(track),
           "first_common_step": int(track.steps[0]), "last_common_step": int(track.steps[-1]),
           "columns": len(track.columns), "first_step": p.first_step,
           "parted_columns": int(np.sum(first_rows >= 0)), "max_difference": _json_float(max_diff),
           "tolerance": {"floor": _json_float(np.median(tolerance.floors(track.quantity, track.run[:1],
                                                                         track.reference[:1]))),
                         "median": _json_float(np.median(p.tol)), "noise": p.noise_source}}
    drift = tolerance.first_drift(p.diff)
    drift_rows = drift[(drift >= 0) & ((first_rows < 0) | (drift < first_rows))]
    out["drift_step"] = int(track.steps[drift_rows.min()]) if drift_rows.size else None
    if track.quantity in LAYER_QUANTITIES or track.quantity == "learning_rate":
        out["layers"] = [_column_entry(p, c, first_rows[c]) for _, c in p.parted_columns_by_step()[:MAX_LAYERS_LISTED]]
    if track.notes:
        out["notes"] = list(track.notes)
    return out


def compare(run, reference, mapping_file=None, noise=None, offset=None, names=None, with_partings=False):
    """The comparison of ``run`` against ``reference`` (``RunSeries``) as the documented JSON object.

    Args:
      mapping_file: a :class:`~.names.MappingFile` (layers the built-in rules miss), or None.
      noise: the reference trained again (a ``RunSeries``): its difference from the reference is the float noise.
      offset: force a step offset of the run (default: found from the loss).
      names: ``(run name, reference name, noise name)`` for the answer (default: the RunSeries' names).
      with_partings: return ``(answer, {quantity: Parting})`` (what the Compare view draws its curves from).
    """
    names = names or (run.run, reference.run, noise.run if noise is not None else None)
    tracks, mapping, offset = build_tracks(run, reference, mapping_file, offset)
    noise_matrices = _noise_matrices(reference, noise, mapping_file)
    skipped = no_gradient_layers(tracks)
    partings = {t.quantity: _parting(t, noise_matrices, skipped) for t in tracks}
    order = []
    for q in QUANTITIES:
        p = partings.get(q)
        if p is not None and p.parted:
            cols = p.first_columns()
            row = p.at(p.first_step)
            order.append({"quantity": q, "step": p.first_step,
                          "layers": [p.track.columns[c] for c in cols] if (q in LAYER_QUANTITIES or
                                                                           len(p.track.columns) > 1) else [],
                          "difference": _json_float(p.diff[row, cols[0]]),
                          "tolerance": _json_float(p.tol[row, cols[0]])})
    order.sort(key=lambda e: (e["step"], QUANTITIES.index(e["quantity"])))
    likely = classes.likely_class(partings, run, reference, order) if order else None
    missing = [q for q in QUANTITIES if q not in partings and _has(run, q) != _has(reference, q)]
    summaries = [_quantity_summary(partings[q]) for q in QUANTITIES if q in partings]
    drifts = [s for s in summaries if s["drift_step"] is not None]
    drift = min(drifts, key=lambda s: (s["drift_step"], QUANTITIES.index(s["quantity"]))) if drifts else None
    all_steps = [int(t.steps[0]) for t in tracks] + [int(t.steps[-1]) for t in tracks]
    out = {
        "version": VERSION,
        "run": names[0], "reference": names[1], "noise": names[2],
        "verdict": "part" if order else ("match" if tracks else "nothing_to_compare"),
        "first": dict(order[0]) if order else None,
        "order": order,
        "likely": likely,
        "quantities": summaries,
        # Float noise that grew smoothly past 1 % without a parting (not a porting difference).
        "drift": {"quantity": drift["quantity"], "step": drift["drift_step"],
                  "level": tolerance.DRIFT_LEVEL} if drift else None,
        "missing": [{"quantity": q, "only_in": "run" if _has(run, q) else "reference"} for q in missing],
        "alignment": {"offset": offset, "first_step": min(all_steps) if all_steps else None,
                      "last_step": max(all_steps) if all_steps else None,
                      "run_steps": _span(run), "reference_steps": _span(reference)},
        "mapping": mapping.to_json(),
        # Layers with no gradient (rounding noise only, which Adam turns into full-size random updates): left out.
        "no_gradient_layers": skipped,
    }
    if likely is not None and out["first"] is not None:
        out["first"]["class"] = likely["class"]
        if not out["first"]["layers"] and likely["class"] in LAYER_CLASSES:
            # Where it starts: the class's layers, else the first layer quantity that parts at the same step.
            t0 = out["first"]["step"]
            out["first"]["layers"] = list(likely["layers"]) or next(
                (list(e["layers"]) for e in order if e["step"] == t0 and e["layers"]
                 and e["quantity"] != "learning_rate"), [])
    return (out, partings) if with_partings else out


def _has(run, quantity):
    if quantity in LAYER_QUANTITIES:
        return run.layer_series(quantity) is not None
    return run.get(quantity) is not None


def _span(run):
    first, last = run.first_step(), run.last_step()
    return [first, last] if first is not None else None
