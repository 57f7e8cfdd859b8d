"""Per-layer series as a layers x steps matrix (the ``layers`` route), for the heatmaps.

Two sources give one value per layer and step:

* **vectors**: our plugin's tensors of kind ``layers`` (``summary.layers``): one float vector per step, the layer
  names in the plugin content (``"layers": [...]``); e.g. ``debug/update_ratio``, ``debug/layer_grad_norm``,
  ``diagnostic/layer_weight_norm``.
* **families** of per-parameter scalar tags sharing a prefix, as mindformers writes them (``local_norm/<param>``,
  ``adam_m_norm/<param>``, ``adam_v_norm/<param>``): the family is addressed as ``<prefix>/*`` and each member tag
  is one layer (named by the part after the prefix).

The matrix is sent as one bfloat16 block (see ``encode``: relative error <= 0.4 %, NaN/Inf kept, 2 bytes a
value before gzip); a cell without a recorded value (a family member not written at that step) has the bit
pattern ``0x7FFF`` (``MISSING_BITS``), distinct from a recorded NaN (``0x7FC0``). With more recorded steps than
``max_steps`` the columns are merged in buckets of consecutive steps: a bucket holds the mean of its finite
values, or its first non-finite value if it has one (so a NaN is never averaged away), and is labelled with its
last step.
"""

import functools

import numpy as np
from tensorboard import errors
from tensorboard.data import provider as tb_provider

from .. import metadata
from ..contract import vocabulary
from . import encode
from ..sources import series_cache

SCALARS_PLUGIN = "scalars"
_READ_ALL = 10 ** 9
FAMILY_PREFIXES = vocabulary.FAMILY_PREFIXES   # mindformers' per-parameter families (contract/vocabulary.py)
FAMILY_SUFFIX = "*"
DEFAULT_MAX_STEPS = 5000
MAX_STEPS_LIMIT = 20000
ENCODING = "bf16-planes"
MISSING_BITS = 0x7FFF

SOURCE_VECTOR = "vector"
SOURCE_FAMILY = "family"

# How the page colors a series: "ratio" (log10 on a diverging scale centred at 1e-3), "log" (log10, sequential)
# or "linear" (values that may be negative).
SCALE_RATIO = "ratio"
SCALE_LOG = "log"
SCALE_LINEAR = "linear"


@functools.lru_cache(maxsize=1 << 16)   # the same tags come back for every run and request
def family_of(tag):
    """The family tag (``local_norm/*``) a per-parameter scalar tag belongs to, else ``None``."""
    for prefix in FAMILY_PREFIXES:
        if tag.startswith(prefix) and len(tag) > len(prefix):
            return prefix + FAMILY_SUFFIX
    return None


def _family_prefix(family_tag):
    if not family_tag.endswith("/" + FAMILY_SUFFIX):
        return None
    prefix = family_tag[: -len(FAMILY_SUFFIX)]
    return prefix if prefix in FAMILY_PREFIXES else None


def is_ratio(tag):
    return tag == metadata.UPDATE_RATIO_LAYERS or "update_ratio" in tag


def display_name(tag):
    if _family_prefix(tag):
        return tag[: -len("/" + FAMILY_SUFFIX)]
    return metadata.display_name(tag)


def tier(tag):
    prefix = _family_prefix(tag)
    return vocabulary.tier_of(prefix + "x") if prefix else vocabulary.tier_of(tag)


def list_layer_series(ours, scalar_tags):
    """Tag entries of the layer series of one run.

    ``ours``: {tag: parsed plugin content} of the run's tensors of our plugin; ``scalar_tags``: its scalar tags.
    Returns [(tier, entry)] with entry ``{"tag", "display_name", "kind": "layers", "source", "layers": count}``.
    """
    out = []
    for tag, content in sorted(ours.items()):
        if content.get("kind") != metadata.KIND_LAYERS:
            continue
        names = content.get("layers") if isinstance(content.get("layers"), list) else []
        out.append((tier(tag), {
            "tag": tag, "display_name": display_name(tag), "kind": "layers", "source": SOURCE_VECTOR,
            "layers": len(names),
        }))
    families = {}
    for tag in scalar_tags:
        fam = family_of(tag)
        if fam:
            families[fam] = families.get(fam, 0) + 1
    for fam, count in sorted(families.items()):
        out.append((tier(fam), {
            "tag": fam, "display_name": display_name(fam), "kind": "layers", "source": SOURCE_FAMILY,
            "layers": count,
        }))
    return out


class LayerReader:
    def __init__(self, data_provider, cache):
        self._provider = data_provider
        self._cache = cache
        self._listings = series_cache.listings_for(data_provider)

    # -- helpers ---------------------------------------------------------------------------------------------------
    def _vector_listing(self, ctx, eid, run, tag):
        listing = self._listings.tensors(ctx, eid, metadata.PLUGIN_NAME)
        series = listing.get(run, {}).get(tag)
        if series is None:
            return None, None
        try:
            content = metadata.parse_content(series.plugin_content)
        except metadata.ContentError as e:
            raise errors.NotFoundError("run %r tag %r is not readable: %s" % (run, tag, e))
        if content.get("kind") != metadata.KIND_LAYERS:
            raise errors.NotFoundError("run %r tag %r is not a per-layer series" % (run, tag))
        return series, content

    def _family_last(self, ctx, eid, run, prefix):
        """{member tag: last ScalarDatum} of a family (one cheap call)."""
        last = self._listings.run_last_scalars(ctx, eid, run)
        return {t: d for t, d in last.items() if t.startswith(prefix) and len(t) > len(prefix)}

    def _not_found(self, ctx, eid, run, tag):
        runs = set(self._listings.last_scalars(ctx, eid)) | set(self._listings.tensors(ctx, eid, metadata.PLUGIN_NAME))
        if run not in runs:
            return errors.NotFoundError("no run named %r" % run)
        return errors.NotFoundError("run %r has no per-layer series %r" % (run, tag))

    def _load(self, ctx, eid, run, tag):
        """(source, layer names, member tags or None, steps, walls, matrix layers x steps float32, token)."""
        prefix = _family_prefix(tag)
        if prefix:
            last = self._family_last(ctx, eid, run, prefix)
            if not last:
                raise self._not_found(ctx, eid, run, tag)
            members = sorted(last)
            token = tuple((t, last[t].step, last[t].wall_time) for t in members)
            return SOURCE_FAMILY, members, token, None
        series, content = self._vector_listing(ctx, eid, run, tag)
        if series is None:
            raise self._not_found(ctx, eid, run, tag)
        names = [str(n) for n in content.get("layers") or []]
        return SOURCE_VECTOR, names, (series.max_step, series.max_wall_time, len(names)), content

    def _read_matrix(self, ctx, eid, run, tag, source, names):
        """(steps int64, walls float64, matrix float32 [layers, steps], present bool [layers, steps]) with every
        recorded step; ``present`` is False where a layer has no value at a step."""
        if source == SOURCE_FAMILY:
            data = self._provider.read_scalars(
                ctx, experiment_id=eid, plugin_name=SCALARS_PLUGIN, downsample=_READ_ALL,
                run_tag_filter=tb_provider.RunTagFilter(runs=[run], tags=names),
            ).get(run, {})
            per = []
            all_steps = []
            for t in names:
                pts = data.get(t) or []
                s = np.fromiter((d.step for d in pts), dtype=np.int64, count=len(pts))
                w = np.fromiter((d.wall_time for d in pts), dtype=np.float64, count=len(pts))
                v = np.fromiter((d.value for d in pts), dtype=np.float64, count=len(pts))
                per.append((s, w, v))
                all_steps.append(s)
            steps = np.unique(np.concatenate(all_steps)) if all_steps else np.zeros(0, np.int64)
            matrix = np.full((len(names), steps.size), np.nan, dtype=np.float32)
            present = np.zeros(matrix.shape, dtype=bool)
            walls = np.full(steps.size, -np.inf)
            for i, (s, w, v) in enumerate(per):
                if not s.size:
                    continue
                order = np.lexsort((w, s))   # a step written twice: the later write wins
                s, w, v = s[order], w[order], v[order]
                cols = np.searchsorted(steps, s)
                matrix[i, cols] = v
                present[i, cols] = True
                np.maximum.at(walls, cols, w)
            walls[~np.isfinite(walls)] = np.nan
            return steps, walls, matrix, present
        data = self._provider.read_tensors(
            ctx, experiment_id=eid, plugin_name=metadata.PLUGIN_NAME, downsample=_READ_ALL,
            run_tag_filter=tb_provider.RunTagFilter(runs=[run], tags=[tag]),
        ).get(run, {}).get(tag) or []
        by_step = {}
        for d in sorted(data, key=lambda d: (d.step, d.wall_time)):
            by_step[d.step] = d   # a step written twice: the later write wins
        steps = np.array(sorted(by_step), dtype=np.int64)
        walls = np.array([by_step[s].wall_time for s in steps.tolist()], dtype=np.float64)
        n = len(names)
        matrix = np.full((steps.size, n), np.nan, dtype=np.float32)
        present = np.zeros((steps.size, n), dtype=bool)
        for j, s in enumerate(steps.tolist()):
            v = np.asarray(by_step[s].numpy, dtype=np.float32).reshape(-1)
            k = min(n, v.size)
            matrix[j, :k] = v[:k]
            present[j, :k] = True
        return steps, walls, np.ascontiguousarray(matrix.T), np.ascontiguousarray(present.T)

    # -- routes ----------------------------------------------------------------------------------------------------
    def matrix(self, ctx, eid, run, tag, max_steps=DEFAULT_MAX_STEPS):
        """JSON text of the ``layers`` route (see the README)."""
        source, names, token, _ = self._load(ctx, eid, run, tag)
        key = ("layers", run, tag, max_steps)
        text = self._cache.get(key, token)
        if text is not None:
            return text
        steps, walls, matrix, present = self._read_matrix(ctx, eid, run, tag, source, names)
        total = int(steps.size)
        steps, walls, matrix, present = merge_columns(steps, walls, matrix, present, max_steps)
        finite = matrix[np.isfinite(matrix) & present]
        if is_ratio(tag):
            scale = SCALE_RATIO
        elif finite.size == 0 or float(finite.min()) >= 0:
            scale = SCALE_LOG
        else:
            scale = SCALE_LINEAR
        prefix = _family_prefix(tag)
        body = {
            "run": run,
            "tag": tag,
            "tier": tier(tag),
            "display_name": display_name(tag),
            "source": source,
            "scale": scale,
            "layers": [t[len(prefix):] for t in names] if prefix else names,
            "members": names if prefix else None,
            "steps": steps.tolist(),
            "wall_times": encode.json_numbers(walls),
            "total_steps": total,
            "downsampled": bool(steps.size < total),
            "shape": [len(names), int(steps.size)],
            "encoding": ENCODING,
            "values": encode.bf16_planes_b64(matrix, missing=~present, missing_bits=MISSING_BITS),
            "summary": {
                "finite_min": encode.json_float(finite.min()) if finite.size else None,
                "finite_max": encode.json_float(finite.max()) if finite.size else None,
                "nonfinite": int(present.sum() - finite.size),
                "missing": int(present.size - present.sum()),
            },
        }
        return self._cache.put(key, token, encode.dumps(body))

    def layer(self, ctx, eid, run, tag, layer):
        """One layer's series at full precision: ``{"run", "tag", "layer", "points": [[step, wall, value]]}``."""
        source, names, _, _ = self._load(ctx, eid, run, tag)
        prefix = _family_prefix(tag)
        shown = [t[len(prefix):] for t in names] if prefix else names
        if layer not in shown:
            raise errors.NotFoundError("run %r tag %r has no layer %r" % (run, tag, layer))
        i = shown.index(layer)
        if source == SOURCE_FAMILY:
            steps, walls, matrix, present = self._read_matrix(ctx, eid, run, tag, source, [names[i]])
            row, keep = matrix[0], present[0]
        else:
            steps, walls, matrix, present = self._read_matrix(ctx, eid, run, tag, source, names)
            row, keep = matrix[i], present[i]
        points = [list(p) for p in zip(
            steps[keep].tolist(), walls[keep].tolist(), encode.json_numbers(row[keep].astype(np.float64)))]
        return {"run": run, "tag": tag, "layer": layer, "points": points}


def merge_columns(steps, walls, matrix, present, max_steps):
    """At most ``max_steps`` columns: buckets of consecutive steps holding the mean of their finite values, or their
    first non-finite value; a bucket where a layer has no value at all stays missing."""
    n = steps.size
    if n <= max_steps:
        return steps, walls, matrix, present
    size = -(-n // max_steps)
    starts = np.arange(0, n, size)
    stops = np.minimum(starts + size, n)
    finite = np.isfinite(matrix) & present
    bad = ~np.isfinite(matrix) & present
    sums = np.add.reduceat(np.where(finite, matrix, 0).astype(np.float64), starts, axis=1)
    counts = np.add.reduceat(finite.astype(np.int64), starts, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        merged = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).astype(np.float32)
    merged_present = np.add.reduceat(present.astype(np.int64), starts, axis=1) > 0
    if bad.any():
        # the first non-finite value of a bucket wins over its mean
        rows, buckets = np.nonzero(np.add.reduceat(bad.astype(np.int64), starts, axis=1) > 0)
        for r, b in zip(rows.tolist(), buckets.tolist()):
            seg = matrix[r, starts[b]:stops[b]][bad[r, starts[b]:stops[b]]]
            merged[r, b] = seg[0]
    return steps[stops - 1], walls[stops - 1], merged, merged_present
