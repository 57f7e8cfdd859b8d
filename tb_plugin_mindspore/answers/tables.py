"""Layer x head and layer x expert tables at a step (the ``table`` route): mindformers' ``max_attention_logit`` and
``expert_load``, written with ``add_scalars`` as one folder per head / expert and folded back into their run
(``run_fold.py``) as ``<prefix><row>/<head_h | ep_e>`` scalar tags (``contract/mindformers.py``).

A table is addressed as ``<prefix>*`` (``max_attention_logit/*``). Its cells' series are read once into a
rows x columns x steps block, kept while no cell has a newer point (the freshness token is every cell's last
point, one cheap listing), so moving through the steps answers from memory.
"""

import re

import numpy as np
from tensorboard import errors
from tensorboard.data import provider as tb_provider

from ..contract import mindformers
from ..sources import series_cache
from . import encode

SCALARS_PLUGIN = "scalars"
_READ_ALL = 10 ** 9
_DIGITS = re.compile(r"(\d+)")


def natural_key(name):
    """``layers.10`` after ``layers.9``: digits compared as numbers."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))


def table_prefix(tag):
    """The prefix of a table tag (``max_attention_logit/*`` -> ``max_attention_logit/``), or None."""
    if tag.endswith("/*") and tag[:-1] in mindformers.TABLES:
        return tag[:-1]
    return None


class TableReader:
    def __init__(self, data_provider, cache):
        self._provider = data_provider
        self._cache = cache
        self._listings = series_cache.listings_for(data_provider)
        self._blocks = encode.ResponseCache(max_bytes=256 << 20, max_entries=64)

    def _cells(self, ctx, eid, run, prefix):
        last = self._listings.run_last_scalars(ctx, eid, run)
        if not last:
            raise errors.NotFoundError("no run named %r" % run)
        cells = {}
        for tag, datum in last.items():
            cell = mindformers.table_of(tag)
            if cell is not None and cell[0] == prefix:
                cells[tag] = (cell[1], cell[3], datum)
        if not cells:
            raise errors.NotFoundError("run %r has no table %r" % (run, prefix + "*"))
        return cells

    def _block(self, ctx, eid, run, prefix, cells, token):
        key = ("table-block", run, prefix)
        block = self._blocks.get(key, token)
        if block is not None:
            return block
        rows = sorted({r for r, _, _ in cells.values()}, key=natural_key)
        cols = sorted({c for _, c, _ in cells.values()})
        data = self._provider.read_scalars(
            ctx, experiment_id=eid, plugin_name=SCALARS_PLUGIN, downsample=_READ_ALL,
            run_tag_filter=tb_provider.RunTagFilter(runs=[run], tags=sorted(cells))).get(run, {})
        per = {}
        for tag, points in data.items():
            if tag in cells and points:
                per[tag] = (np.fromiter((p.step for p in points), np.int64, len(points)),
                            np.fromiter((p.value for p in points), np.float64, len(points)))
        steps = np.unique(np.concatenate([s for s, _ in per.values()])) if per else np.zeros(0, np.int64)
        values = np.full((len(rows), len(cols), steps.size), np.nan, dtype=np.float32)
        present = np.zeros(values.shape, dtype=bool)
        row_of = {r: i for i, r in enumerate(rows)}
        col_of = {c: j for j, c in enumerate(cols)}
        for tag, (s, v) in per.items():
            r, c, _ = cells[tag]
            at = np.searchsorted(steps, s)
            values[row_of[r], col_of[c], at] = v      # a step written twice: the later write wins
            present[row_of[r], col_of[c], at] = True
        block = (rows, cols, steps, values, present)
        return self._blocks.put(key, token, block, size=values.nbytes + present.nbytes + steps.nbytes)

    def table(self, ctx, eid, run, tag, step=None):
        """``{"run", "tag", "display_name", "column", "rows", "columns", "steps", "step", "values": [[v | null]],
        "summary": {"finite_min", "finite_max", "nonfinite", "missing"}}`` at ``step`` (default: the last)."""
        prefix = table_prefix(tag)
        if prefix is None:
            raise errors.InvalidArgumentError("tag must be one of %s, got %r"
                                              % (", ".join(p + "*" for p in mindformers.TABLES), tag))
        cells = self._cells(ctx, eid, run, prefix)
        token = tuple(sorted((t, d.step, d.wall_time) for t, (_, _, d) in cells.items()))
        key = ("table", run, prefix, step)
        text = self._cache.get(key, token)
        if text is not None:
            return text
        rows, cols, steps, values, present = self._block(ctx, eid, run, prefix, cells, token)
        if not steps.size:
            raise errors.NotFoundError("run %r has no points in table %r" % (run, tag))
        if step is None:
            at = steps.size - 1
        else:
            at = int(np.searchsorted(steps, step, side="right")) - 1   # the last recorded step at or before it
            if at < 0:
                raise errors.NotFoundError("table %r of run %r starts at step %d" % (tag, run, int(steps[0])))
        column = values[:, :, at]
        here = present[:, :, at]
        finite = column[np.isfinite(column) & here]
        word = mindformers.TABLES[prefix][2]
        body = {
            "run": run, "tag": tag, "display_name": mindformers.TABLES[prefix][1], "column": word,
            "rows": rows, "columns": ["%s %d" % (word, c) for c in cols], "column_index": cols,
            "steps": steps.tolist(), "step": int(steps[at]),
            "values": [[encode.json_float(v) if ok else None for v, ok in zip(vals.tolist(), oks.tolist())]
                       for vals, oks in zip(column, here)],
            "summary": {
                "finite_min": encode.json_float(finite.min()) if finite.size else None,
                "finite_max": encode.json_float(finite.max()) if finite.size else None,
                "nonfinite": int(here.sum() - finite.size),
                "missing": int(here.size - here.sum()),
            },
        }
        return self._cache.put(key, token, encode.Gzipped(encode.dumps(body)))
