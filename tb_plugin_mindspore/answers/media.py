"""Images and tensors of a run (the ``media``, ``images``, ``image`` and ``tensors`` routes).

Sources:

* images: MindSpore's ``ImageSummary`` / ``SummaryRecord`` image values, read straight from ``*_MS`` files (the
  bytes exactly as MindSpore encoded them, PNG). Images in TensorBoard's own format (from any writer, or
  ``tb-mindspore convert``) are left to TensorBoard's Images tab.
* tensors: MindSpore's ``TensorSummary`` / ``SummaryRecord`` tensor values from ``*_MS`` files, and our plugin's
  tensors of kind ``tensor`` in event files (what ``tb-mindspore convert`` writes for them), read through the data
  provider with either loader. When both hold the same run and tag, the event files win (as in the merged provider).

Each step of a tag is listed once; when a step was written twice (MindSpore does that at an epoch end), the last
value wins. Answers are bounded: a tensor sends at most ``max_values`` values per step (first ones of the
row-major flattening, with a ``truncated`` flag) and at most ``MAX_TOTAL_VALUES`` values in all; statistics
(min / max / mean over the finite values, NaN and infinity counts) always cover the whole tensor.
"""

import threading
from collections import OrderedDict

import numpy as np
from tensorboard import errors
from tensorboard.data import provider as tb_provider

from .. import metadata
from ..contract import content
from . import encode
from ..sources import ms_provider

DEFAULT_MAX_VALUES = 256
MAX_VALUES_LIMIT = 10000
DEFAULT_MAX_STEPS = 200
MAX_STEPS_LIMIT = 2000
MAX_TOTAL_VALUES = 200000
_READ_ALL = 10 ** 9
_COUNT_CACHE = 512

SOURCE_MS = "mindspore"          # read from a *_MS file
SOURCE_EVENTS = "event_file"     # our plugin's tensor in an event file (e.g. converted)


def _unique_last(items, key=lambda item: item[0]):
    """Items with one entry per step (the last one of each step), ordered by step."""
    by_step = {}
    for item in items:
        by_step[int(key(item))] = item
    return [by_step[s] for s in sorted(by_step)]


def _thin(items, limit):
    """At most ``limit`` items, evenly spaced, the first and the last kept."""
    if len(items) <= limit:
        return items
    if limit <= 1:
        return items[-1:]
    idx = np.unique(np.linspace(0, len(items) - 1, limit).round().astype(int))
    return [items[i] for i in idx]


def _number(x):
    """One JSON number (non-finite as its string name)."""
    x = float(x)
    return x if np.isfinite(x) else encode.json_numbers(np.array([x]))[0]


def tensor_stats(array):
    """``{"shape", "dtype", "size", "min", "max", "mean", "nan", "pos_inf", "neg_inf"}`` of a numpy array.

    min / max / mean are over the finite values (None when there is none, or for non-numeric dtypes); integers stay
    integers.
    """
    a = np.asarray(array)
    out = {"shape": [int(n) for n in a.shape], "dtype": str(a.dtype), "size": int(a.size),
           "min": None, "max": None, "mean": None, "nan": 0, "pos_inf": 0, "neg_inf": 0}
    kind = a.dtype.kind
    if a.size == 0 or kind not in "fiub":
        return out
    flat = a.reshape(-1)
    if kind == "f":
        f = flat.astype(np.float64)
        nan = np.isnan(f)
        out["nan"] = int(nan.sum())
        out["pos_inf"] = int(np.isposinf(f).sum())
        out["neg_inf"] = int(np.isneginf(f).sum())
        finite = f[np.isfinite(f)]
        if finite.size:
            out["min"] = float(finite.min())
            out["max"] = float(finite.max())
            out["mean"] = _number(finite.mean())
        return out
    ints = flat.astype(np.int64) if kind == "b" else flat
    out["min"] = int(ints.min())
    out["max"] = int(ints.max())
    out["mean"] = _number(ints.astype(np.float64).mean())
    return out


def tensor_values(array, limit):
    """The first ``limit`` values of the row-major flattening, JSON-safe, and whether some were left out."""
    a = np.asarray(array)
    flat = a.reshape(-1)
    head = flat[:max(0, int(limit))]
    if a.dtype.kind == "c":
        values = [str(v) for v in head.tolist()]
    elif a.dtype.kind in "fiub":
        values = encode.json_numbers(head.astype(np.int64) if a.dtype.kind == "b" else head)
    else:
        values = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in head.tolist()]
    return values, bool(flat.size > head.size)


class MediaReader:
    """Images from ``ms_logdir`` (an ``MsLogdir`` or None), tensors from it and from ``data_provider``."""

    def __init__(self, data_provider, ms_logdir=None):
        self._provider = data_provider
        self._ms = ms_logdir if ms_logdir is not None else ms_provider.ms_logdir_of(data_provider)   # second door
        self._lock = threading.Lock()
        self._counts = OrderedDict()     # (run, tag, max_step, max_wall_time) -> number of distinct steps

    # -- sources -------------------------------------------------------------------------------------------------
    def _known_runs(self, ctx, eid):
        return {r.run_name for r in self._provider.list_runs(ctx, experiment_id=eid)}

    def _ms_runs(self, run=None):
        if self._ms is None:
            return []
        if run is not None:
            return [run] if self._ms.has_run(run) else []
        return self._ms.runs()

    def _event_tensor_tags(self, ctx, eid, run=None):
        """{run: {tag: TensorTimeSeries}} of our plugin's ``tensor`` series in event files.

        The merged provider also lists ``*_MS`` series of our plugin (landscapes); those are not tensors. Listed
        from the provider TensorBoard built (the merged provider's ``primary``) when there is one.
        """
        source = getattr(self._provider, "primary", self._provider)
        rtf = tb_provider.RunTagFilter(runs=[run]) if run is not None else None
        listing = source.list_tensors(ctx, experiment_id=eid, plugin_name=metadata.PLUGIN_NAME, run_tag_filter=rtf)
        return {name: {tag: series for tag, (_, series) in tags.items()}
                for name, tags in content.of_kind(listing, metadata.KIND_TENSOR).items()}

    def _read_event_tensor(self, ctx, eid, run, tag):
        source = getattr(self._provider, "primary", self._provider)
        data = source.read_tensors(ctx, experiment_id=eid, plugin_name=metadata.PLUGIN_NAME, downsample=_READ_ALL,
                                   run_tag_filter=tb_provider.RunTagFilter(runs=[run], tags=[tag]))
        points = (data.get(run) or {}).get(tag) or []
        return _unique_last([(int(d.step), float(d.wall_time), np.asarray(d.numpy)) for d in points])

    def _event_count(self, ctx, eid, run, tag, series):
        key = (run, tag, int(series.max_step), float(series.max_wall_time))
        with self._lock:
            if key in self._counts:
                self._counts.move_to_end(key)
                return self._counts[key]
        n = len(self._read_event_tensor(ctx, eid, run, tag))
        with self._lock:
            self._counts[key] = n
            while len(self._counts) > _COUNT_CACHE:
                self._counts.popitem(last=False)
        return n

    def _ms_images(self, run, tag):
        if run not in self._ms_runs(run):
            return []
        items = self._ms.images(run, tags=[tag]).get(tag) or []
        return _unique_last(items)

    # -- routes --------------------------------------------------------------------------------------------------
    def listing(self, ctx, eid, run=None):
        """``{"runs": {run: {"images": [entry], "tensors": [entry]}}}``, entries ``{"tag", "display_name",
        "count", "max_step", "source"}`` sorted by tag; runs with neither are left out (with ``run``: that run
        only, 404 if the run does not exist)."""
        if run is not None and run not in self._known_runs(ctx, eid):
            raise errors.NotFoundError("no run named %r" % run)
        out = {}
        events = self._event_tensor_tags(ctx, eid, run)
        for name, tags in events.items():
            entry = out.setdefault(name, {"images": [], "tensors": []})
            for tag, series in tags.items():
                entry["tensors"].append({
                    "tag": tag, "display_name": metadata.display_name(tag),
                    "count": self._event_count(ctx, eid, name, tag, series),
                    "max_step": int(series.max_step), "source": SOURCE_EVENTS,
                })
        for name in self._ms_runs(run):
            images = self._ms.steps(name, "images")
            tensors = self._ms.steps(name, "tensors")
            if not images and not tensors:
                continue
            entry = out.setdefault(name, {"images": [], "tensors": []})
            taken = {e["tag"] for e in entry["tensors"]}
            for kind, found in (("images", images), ("tensors", tensors)):
                for tag, steps in found.items():
                    if not steps or tag in taken:
                        continue
                    distinct = {int(s) for s, _ in steps}
                    entry[kind].append({"tag": tag, "display_name": metadata.display_name(tag), "count": len(distinct),
                                        "max_step": max(distinct), "source": SOURCE_MS})
        for entry in out.values():
            for kind in ("images", "tensors"):
                entry[kind].sort(key=lambda e: e["tag"])
        return {"runs": {name: out[name] for name in sorted(out) if out[name]["images"] or out[name]["tensors"]}}

    def images(self, ctx, eid, run, tag):
        """``{"run", "tag", "display_name", "source", "steps": [{"step", "wall_time", "width", "height", "mime",
        "colorspace", "bytes"}]}``."""
        items = self._ms_images(run, tag)
        if not items:
            self._not_found(ctx, eid, run, "image", tag)
        return {
            "run": run, "tag": tag, "display_name": metadata.display_name(tag), "source": SOURCE_MS,
            "steps": [{"step": int(step), "wall_time": float(wall), "width": int(im["width"]),
                       "height": int(im["height"]), "colorspace": int(im["colorspace"]), "mime": im["mime"],
                       "bytes": len(im["encoded"])} for step, wall, im in items],
        }

    def image(self, ctx, eid, run, tag, step):
        """``(encoded bytes, mime type)`` of the image of ``tag`` at ``step``."""
        items = self._ms_images(run, tag)
        if not items:
            self._not_found(ctx, eid, run, "image", tag)
        for s, _, im in items:
            if int(s) == step:
                return im["encoded"], im["mime"]
        raise errors.NotFoundError("image %r of run %r has no step %d (steps: %s)"
                                   % (tag, run, step, _list_steps(s for s, _, _ in items)))

    def tensors(self, ctx, eid, run, tag, max_values=DEFAULT_MAX_VALUES, max_steps=DEFAULT_MAX_STEPS):
        """``{"run", "tag", "display_name", "source", "total_steps", "downsampled", "max_values", "steps": [{"step",
        "wall_time", "shape", "dtype", "size", "min", "max", "mean", "nan", "pos_inf", "neg_inf", "values",
        "truncated"}]}``; with more steps than ``max_steps``, evenly spaced ones (first and last kept)."""
        source = SOURCE_EVENTS
        items = []
        if tag in self._event_tensor_tags(ctx, eid, run).get(run, {}):
            items = self._read_event_tensor(ctx, eid, run, tag)
        if not items and run in self._ms_runs(run):
            source = SOURCE_MS
            items = _unique_last(self._ms.tensors(run, tags=[tag]).get(tag) or [])
        if not items:
            self._not_found(ctx, eid, run, "tensor", tag)
        total = len(items)
        items = _thin(items, max_steps)
        per_step = max(1, min(max_values, MAX_TOTAL_VALUES // len(items)))
        steps = []
        for step, wall, array in items:
            entry = {"step": int(step), "wall_time": float(wall)}
            entry.update(tensor_stats(array))
            entry["values"], entry["truncated"] = tensor_values(array, per_step)
            steps.append(entry)
        return {"run": run, "tag": tag, "display_name": metadata.display_name(tag), "source": source,
                "total_steps": total, "downsampled": len(items) < total, "max_values": per_step, "steps": steps}

    def _not_found(self, ctx, eid, run, what, tag):
        if run not in self._known_runs(ctx, eid):
            raise errors.NotFoundError("no run named %r" % run)
        raise errors.NotFoundError("run %r has no %s %r" % (run, what, tag))


def _list_steps(steps, limit=20):
    steps = [str(int(s)) for s in steps]
    more = " ..." if len(steps) > limit else ""
    return ", ".join(steps[:limit]) + more
