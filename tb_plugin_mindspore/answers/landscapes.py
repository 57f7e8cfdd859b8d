"""Loss landscapes (the ``landscapes`` and ``landscape`` routes).

Reads our plugin's tensors of kind ``landscape`` through the data provider: the ones written by
``tb_mindspore_callbacks`` (``LandscapeCallback`` / ``compute_landscape``), the ones ``tb-mindspore convert`` made
from MindSpore summaries, and MindSpore's own ``SummaryLandscape`` output read straight from ``*_MS`` files (the
merged provider serves them as the same kind). Each value is one JSON record (``landscape.format``); both sources
come out of :func:`tb_plugin_mindspore.landscape.format.normalize_record` in one shape.
"""

import logging
import threading
from collections import OrderedDict

import numpy as np
from tensorboard import errors
from tensorboard.data import provider as tb_provider

from .. import metadata
from ..sources import series_cache
from ..landscape import format as fmt
from . import encode

logger = logging.getLogger(__name__)

_READ_ALL = 10 ** 9
_CACHE_ENTRIES = 256


def _text(array):
    """The JSON text inside a landscape tensor (a 0-d string / bytes array, or a 1-element one)."""
    a = np.asarray(array)
    value = a.reshape(-1)[0] if a.size else b""
    if isinstance(value, (bytes, bytearray, np.bytes_)):
        return bytes(value).decode("utf-8")
    return str(value)


def _finite_or_none(v):
    return float(v) if v is not None and np.isfinite(v) else None


class LandscapeReader:
    def __init__(self, data_provider):
        self._provider = data_provider
        self._lock = threading.Lock()
        self._parsed = OrderedDict()    # (run, tag, step, wall_time) -> normalized record or error text
        self._problems = {}             # (run, tag, max_step, max_wall_time) -> [problem] (see ``problems``)

    # -- reading -----------------------------------------------------------------------------------------------
    def _tags(self, ctx, eid, runs=None):
        """{run: {tag: plugin content}} of the landscape series."""
        rtf = tb_provider.RunTagFilter(runs=runs) if runs else None
        listing = self._provider.list_tensors(
            ctx, experiment_id=eid, plugin_name=metadata.PLUGIN_NAME, run_tag_filter=rtf
        )
        out = {}
        for run, tags in listing.items():
            for tag, series in tags.items():
                try:
                    content = metadata.parse_content(series.plugin_content)
                except metadata.ContentError:
                    continue
                if content.get("kind") == metadata.KIND_LANDSCAPE:
                    out.setdefault(run, {})[tag] = content
        return out

    def _data(self, ctx, eid, run, tags):
        rtf = tb_provider.RunTagFilter(runs=[run], tags=sorted(tags))
        data = self._provider.read_tensors(
            ctx, experiment_id=eid, plugin_name=metadata.PLUGIN_NAME, downsample=_READ_ALL, run_tag_filter=rtf
        )
        return data.get(run, {})

    def _parse(self, run, tag, datum, content):
        key = (run, tag, int(datum.step), float(datum.wall_time))
        with self._lock:
            if key in self._parsed:
                self._parsed.move_to_end(key)
                return self._parsed[key]
        try:
            rec = fmt.normalize_record(metadata.loads_json(_text(datum.numpy), "the landscape record"))
            if content.get("source") and rec["metadata"].get("source") is None:
                rec["source"] = str(content["source"])
            _entry(tag, datum, rec)            # every field the routes send must be computable
            _plain(rec["metadata"])
        except Exception as e:  # any damage in one record leaves that record out, reported in ``problems``
            rec = "malformed landscape left out: %s" % (str(e)[:300] or type(e).__name__)
            logger.warning("mindspore plugin: %s/%s step %d: %s", run, tag, datum.step, rec)
        with self._lock:
            self._parsed[key] = rec
            while len(self._parsed) > _CACHE_ENTRIES:
                self._parsed.popitem(last=False)
        return rec

    def problems(self, ctx, eid):
        """``[{"run", "file", "offset", "tag", "step", "reason"}]`` for every landscape record left out (malformed
        JSON, nesting, a grid that does not match its losses, unreadable plugin content). A tag is read again only
        when its listing changed."""
        listing = series_cache.listings_for(self._provider).tensors(ctx, eid, metadata.PLUGIN_NAME)
        out = []
        seen = set()
        for run, tags in sorted(listing.items()):
            for tag, series in sorted(tags.items()):
                try:
                    content = metadata.parse_content(series.plugin_content)
                except metadata.ContentError:
                    continue      # reported with the other unreadable plugin contents
                if content.get("kind") != metadata.KIND_LANDSCAPE:
                    continue
                key = (run, tag, int(series.max_step), float(series.max_wall_time))
                seen.add(key)
                with self._lock:
                    found = self._problems.get(key)
                if found is None:
                    found = []
                    for datum in self._data(ctx, eid, run, {tag}).get(tag, []):
                        rec = self._parse(run, tag, datum, content)
                        if not isinstance(rec, dict):
                            found.append({"run": run, "file": None, "offset": None, "tag": tag,
                                          "step": int(datum.step), "reason": "%s (tag %s, step %d)"
                                          % (rec, tag, int(datum.step))})
                    with self._lock:
                        self._problems[key] = found
                out.extend(found)
        with self._lock:
            for key in set(self._problems) - seen:
                del self._problems[key]
        return out

    def _records(self, ctx, eid, run, only_tag=None):
        """[(tag, datum, normalized record)] of one run (records that fail to parse are left out)."""
        tags = self._tags(ctx, eid, [run]).get(run, {})
        if only_tag is not None:
            tags = {t: c for t, c in tags.items() if t == only_tag}
        if not tags:
            return []
        out = []
        for tag, points in sorted(self._data(ctx, eid, run, tags).items()):
            for datum in sorted(points, key=lambda d: (d.step, d.wall_time)):
                rec = self._parse(run, tag, datum, tags.get(tag, {}))
                if isinstance(rec, dict):
                    out.append((tag, datum, rec))
        return out

    # -- routes ------------------------------------------------------------------------------------------------
    def listing(self, ctx, eid, run=None):
        """``{"runs": {run: [entry]}}``; each entry: tag, step, wall_time, source, method, dims, grid, complete,
        title. Runs without landscapes are left out; with ``run``, that run only (404 if it does not exist)."""
        if run is not None:
            known = {r.run_name for r in self._provider.list_runs(ctx, experiment_id=eid)}
            if run not in known:
                raise errors.NotFoundError("no run named %r" % run)
            runs = [run]
        else:
            runs = sorted(self._tags(ctx, eid))
        out = {}
        for name in runs:
            entries = []
            for tag, datum, rec in self._records(ctx, eid, name):
                entries.append(_entry(tag, datum, rec))
            if entries:
                out[name] = entries
        return {"runs": out}

    def landscape(self, ctx, eid, run, tag, step=None):
        """One landscape (the last step of ``tag`` when ``step`` is None), with the list of the tag's steps."""
        records = self._records(ctx, eid, run, only_tag=tag)
        if not records:
            known = {r.run_name for r in self._provider.list_runs(ctx, experiment_id=eid)}
            if run not in known:
                raise errors.NotFoundError("no run named %r" % run)
            raise errors.NotFoundError("run %r has no landscape %r" % (run, tag))
        steps = [int(d.step) for _, d, _ in records]
        if step is None:
            chosen = records[-1]
        else:
            hits = [r for r in records if int(r[1].step) == step]
            if not hits:
                raise errors.NotFoundError("landscape %r of run %r has no step %d (steps: %s)"
                                           % (tag, run, step, ", ".join(map(str, steps))))
            chosen = hits[-1]
        _, datum, rec = chosen
        body = _entry(tag, datum, rec)
        z = rec["z"]
        finite = z[np.isfinite(z)]
        path = rec["path"]
        body.update({
            "run": run,
            "steps": steps,
            "x": encode.json_numbers(rec["x"]),
            "y": encode.json_numbers(rec["y"]),
            "z": encode.json_numbers(z),
            "z_min": _finite_or_none(finite.min()) if finite.size else None,
            "z_max": _finite_or_none(finite.max()) if finite.size else None,
            "missing": int(z.size - finite.size),
            "path": None if path is None else {
                "x": encode.json_numbers(path["x"]), "y": encode.json_numbers(path["y"]),
                "z": encode.json_numbers(path["z"]), "steps": path["steps"],
            },
            "center": None if rec["center"] is None else {
                k: (v if np.isfinite(v) else None) for k, v in rec["center"].items()
            },
            "unit": rec["unit"],
            "step_per_epoch": rec["step_per_epoch"],
            "explained_variance_ratio": rec["explained_variance_ratio"],
            "axis_labels": [str(rec["metadata"].get("x_label") or _default_label(rec, 0)),
                            str(rec["metadata"].get("y_label") or _default_label(rec, 1))],
            "metadata": _plain(rec["metadata"]),
        })
        return body


def _default_label(rec, axis):
    method = rec["method"]
    if method == "pca":
        return "PC%d" % (axis + 1)
    if method == "interpolation":
        return "alpha" if axis == 0 else ""
    if method == "profile":
        return "distance from the current parameters (L2)" if axis == 0 else ""
    return "direction %d" % (axis + 1)


def _title(tag, rec):
    names = {"random": "random directions", "pca": "PCA of the trajectory", "interpolation": "linear interpolation",
             "profile": "sharpness profile"}
    what = names.get(rec["method"], rec["method"])
    return "%s (%s)" % (what, "MindSpore SummaryLandscape" if rec["source"] == "mindspore" else "tb-mindspore")


def _entry(tag, datum, rec):
    return {
        "tag": tag,
        "step": int(datum.step),
        "wall_time": float(datum.wall_time),
        "source": rec["source"],
        "method": rec["method"],
        "dims": rec["dims"],
        "grid": [int(rec["x"].size), int(rec["y"].size)],
        "complete": rec["complete"],
        "title": _title(tag, rec),
    }


def _plain(value):
    """Metadata with only JSON-safe plain values (non-finite numbers as None)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    return str(value)
