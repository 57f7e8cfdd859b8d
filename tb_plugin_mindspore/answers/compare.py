"""The ``compare`` route's answer: :func:`~tb_plugin_mindspore.compare.engine.compare` of two runs the server has loaded, plus what the
Compare view draws: each scalar quantity's two curves with their relative difference and tolerance, the first
parted layers' curves, and a table of every mapped layer (README "Check a port from PyTorch")."""

import numpy as np
from tensorboard import errors

from ..compare import engine
from ..compare.names import MappingError, parse_mapping
from ..compare.tracks import LAYER_QUANTITIES
from ..health import sources as health_sources
from ..metadata import ContentError, loads_json

__all__ = ["CompareReader", "DEFAULT_MAX_POINTS", "curve_indices"]

DEFAULT_MAX_POINTS = 1000
MAX_LAYER_CURVES = 6
MAX_MAPPING_CHARS = 200000      # the view's edits of a large model's mapping fit many times over


def curve_indices(n, max_points, keep=()):
    """Evenly spaced row indices (first and last included) and the rows in ``keep``, sorted, at most
    ``max_points + len(keep)``."""
    if n <= max_points:
        return np.arange(n)
    idx = np.unique(np.round(np.linspace(0, n - 1, max_points)).astype(np.int64))
    extra = np.asarray([k for k in keep if 0 <= k < n], dtype=np.int64)
    return np.unique(np.concatenate([idx, extra]))


def _floats(values):
    return [engine._json_float(v) for v in values]


def _curve(parting, col, max_points):
    track = parting.track
    keep = [int(parting.first_rows[col])] if parting.first_rows[col] >= 0 else []
    idx = curve_indices(len(track), max_points, keep)
    return {"column": track.columns[col], "steps": track.steps[idx].tolist(),
            "run": _floats(track.run[idx, col]), "reference": _floats(track.reference[idx, col]),
            "difference": _floats(parting.diff[idx, col]), "tolerance": _floats(parting.tol[idx, col]),
            "first_step": int(track.steps[parting.first_rows[col]]) if parting.first_rows[col] >= 0 else None}


def layer_table(partings):
    """Every mapped layer with, per layer quantity, its first parting step and largest difference."""
    rows = {}
    for q in LAYER_QUANTITIES:
        p = partings.get(q)
        if p is None:
            continue
        with np.errstate(invalid="ignore"):
            diff = np.where(np.isfinite(p.diff), p.diff, np.nan)
            biggest = np.nanmax(diff, axis=0) if diff.size else np.zeros(len(p.track.columns))
        for j, col in enumerate(p.track.columns):
            entry = rows.setdefault(col, {"layer": col, "run_layers": list(p.track.pairs[j].run), "quantities": {}})
            first = int(p.first_rows[j])
            entry["quantities"][q] = {"first_step": int(p.track.steps[first]) if first >= 0 else None,
                                      "max_difference": engine._json_float(np.nan_to_num(biggest[j]))}
    return list(rows.values())


class CompareReader:
    """Answers ``compare`` through the logdir's door (``sources.logdir.Sources``, bound to the request), reading the
    two runs as the health rules and ``check`` do."""

    def _read(self, sources, names):
        listing = health_sources.ProviderListing(sources, runs=names)
        found = {r.run: r for r in health_sources.read_runs(sources, listing, names)}
        for name in names:
            if name not in found:
                raise errors.NotFoundError("no run named %r with scalar series" % name)
        return found

    def answer(self, sources, run, reference, noise=None, mapping_text=None, offset=None,
               max_points=DEFAULT_MAX_POINTS):
        mapping = None
        if mapping_text:
            if len(mapping_text) > MAX_MAPPING_CHARS:
                raise errors.InvalidArgumentError("the mapping is longer than %d characters" % MAX_MAPPING_CHARS)
            try:
                mapping = parse_mapping(loads_json(mapping_text, "the mapping"), source="the mapping", exact=True)
            except (MappingError, ContentError) as e:
                raise errors.InvalidArgumentError(str(e))
        if run == reference:
            raise errors.InvalidArgumentError("pick two different runs (run and reference are both %r)" % run)
        names = [n for n in (run, reference, noise) if n]
        found = self._read(sources, names)
        result, partings = engine.compare(found[run], found[reference], mapping_file=mapping,
                                          noise=found.get(noise) if noise else None, offset=offset,
                                          names=(run, reference, noise), with_partings=True)
        result["curves"] = {q: _curve(p, 0, max_points) for q, p in partings.items() if q not in LAYER_QUANTITIES}
        first = result["first"]
        layer_curves = []
        if first is not None and first["quantity"] in LAYER_QUANTITIES:
            p = partings[first["quantity"]]
            for name in first["layers"][:MAX_LAYER_CURVES]:
                layer_curves.append(dict(_curve(p, p.track.columns.index(name), max_points),
                                         quantity=first["quantity"]))
        result["layer_curves"] = layer_curves
        result["layer_table"] = layer_table(partings)
        return result
