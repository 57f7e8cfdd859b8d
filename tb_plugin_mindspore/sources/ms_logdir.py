"""All MindSpore summary files under a logdir, read live: :class:`MsLogdir`.

Usage (the plugin calls ``reload`` from one background thread and the accessors from request threads)::

    logdir = MsLogdir("/path/to/logdir")
    logdir.start(interval=5.0)       # a daemon thread: reload(), again at once while data is pending, else sleep
    ...                              # or drive it yourself:
    result = logdir.reload(max_bytes=16 << 20)   # bounded work; new files and runs are picked up
    result.pending                   # True: more complete records are waiting, call again soon
    logdir.stop()

    logdir.runs()                    # ["collector", "lenet/run1", "."]: folder relative to the logdir, "." = root
    logdir.version(run)              # str, changes whenever the run's data or warnings change (cache key / ETag)
    logdir.tags(run)                 # {"scalars": [...], "histograms": [...], "tensors": [...], "images": [...],
                                     #  "landscapes": [...]}
    logdir.scalars(run, tags=None)   # {tag: [(step, wall_time, value), ...]}        every point, file order
    logdir.scalar_arrays(run, tag)   # (steps int64, wall_times float64, values float32) numpy arrays, or None
    logdir.histograms(run, tags=None, stats=False)
                                     # {tag: [(step, wall_time, [[left, right, count], ...]), ...]}
                                     # stats=True adds a 4th item: {"count", "min", "max", "sum", "nan_count",
                                     #  "pos_inf_count", "neg_inf_count"} (TensorBoard's format has no place for them)
    logdir.histogram_stats(run, tag) # [(step, wall_time, {"count", "min", ..., "neg_inf_count"}), ...] (no buckets)
    logdir.tensors(run, tags=None)   # {tag: [(step, wall_time, numpy array), ...]}
    logdir.images(run, tags=None)    # {tag: [(step, wall_time, {"encoded": bytes, "mime": "image/png",
                                     #  "width", "height", "colorspace"}), ...]}
    logdir.landscapes(run, tags=None)
                                     # {tag: [(step, wall_time, landscape dict), ...]}, see ms_files.landscape_dict
    logdir.steps(run, kind, tags=None)
                                     # {tag: [(step, wall_time), ...]} of a kind but scalars, nothing decoded
    logdir.lineage(run)              # {"hparams": {...}, "user": {...}, "dataset_graph": {...}} or {}
    logdir.files(run)                # [{"file", "kind", "created", "records", "steps", "superseded"}], file order
    logdir.warnings(run)             # [{"file": path relative to the logdir, "offset": int, "reason": str}, ...]
    logdir.stats(run)                # {"files", "bytes_read", "records", "skipped", "pending_bytes", "graphs"}
    logdir.graph(run)                # the newest computational graph: {"step", "wall_time", "data", "size", "file"}

Unknown runs raise ``KeyError``. Tags are the ones MindSpore wrote (``loss/auto``, ``fc.weight/auto``,
``xsum[:Scalar]`` from older MindSpore): ``metadata.display_name`` / ``vocabulary.tier_of`` classify them.

* Scalars keep every point, in compact arrays (about 20 bytes a point). Histograms, tensors, images and landscapes
  keep at most ``samples[kind]`` items per tag and file, spread evenly over the steps, always with the latest one.
  Histograms and tensors are kept encoded and decoded when asked for.
* Files: MindSpore's names (``<prefix>.out.events.summary.<time>.<device>.<host>_MS`` / ``_lineage``) and the ones
  MindInsight accepted (any name with ``summary.<digits>``; ``_lineage`` at the end for lineage, ``_explain`` files
  left out), see :func:`file_kind`.
* Several summary files in one run (a script re-run into the same folder, a resume from a checkpoint) are ordered
  by creation: the time in the name, then the wall time of the file's first record, then the name. A later file
  supersedes the earlier ones from its first step on, per series: an earlier file's points of that series at or
  after that step are left out (what TensorBoard does for a restarted run). :meth:`files` says which steps each
  file lost and to which file. Within a file, points come in record order (MindSpore itself may write one step
  twice, e.g. at an epoch end).
* One name used for several kinds in a run (``ImageSummary('x')`` and ``TensorSummary('x')``): the kind seen first
  (in file order; within one record scalars, then histograms, tensors, images, landscapes) keeps the name, the
  others get MindSpore's kind suffix (``x[:Tensor]``, ``y[:Histogram]``, ``[:Landscape]``), so each series keeps
  its own name everywhere (``metadata.display_name`` shows them without it).
* Thread safety: one lock guards the data; ``reload`` decodes outside it and only merges under it, and accessors
  copy under it, so a request waits at most for one merge. Concurrent ``reload`` calls are serialized.
"""

import collections
import copy
import logging
import os
import re
import struct
import threading
from array import array

import numpy as np

from ..io import fs, ms_proto
from ..io.records import short_error
from . import ms_files, ms_lineage, series_store

logger = logging.getLogger(__name__)

DEFAULT_RELOAD_BYTES = 16 << 20
MAX_GRAPH_BYTES = 64 << 20   # a larger computational graph is noted (its size), not kept
DEFAULT_SAMPLES = {"histograms": 500, "tensors": 100, "images": 20, "landscapes": 100}
KINDS = ("scalars", "histograms", "tensors", "images", "landscapes")

KIND_RANK = {kind: i for i, kind in enumerate(KINDS)}
KIND_SUFFIX = {"scalars": "[:Scalar]", "histograms": "[:Histogram]", "tensors": "[:Tensor]", "images": "[:Image]",
               "landscapes": "[:Landscape]"}
_SUMMARY_NAME = re.compile(r"summary\.(\d+)")
_NOT_SUMMARY = (".json", ".txt", ".csv", ".log", ".md", ".ckpt", ".pb", ".tmp", ".py", ".ir", ".dat")


def file_kind(name):
    """``"summary"``, ``"lineage"`` or ``None`` for a file name (not a path).

    MindSpore names its files ``<prefix>.out.events.summary.<time>.<device>.<host><suffix>`` (suffix ``_MS`` /
    ``_lineage`` by default, any suffix allowed); MindInsight read any file whose name holds ``summary.<digits>``
    (lineage: ending with ``_lineage``; ``_explain`` files were a separate tool's). TensorBoard's own event files
    and common other files (``.json``, ``.txt``, checkpoints, graphs) are not summary files.
    """
    if _SUMMARY_NAME.search(name) is None or "tfevents" in name or name.lower().endswith(_NOT_SUMMARY):
        return None
    if name.endswith("_lineage"):
        return "lineage"
    if name.endswith("_explain"):
        return None
    return "summary"


_PART = re.compile(r"^(?:(.*)/)?part_(\d+)$")


def part_of(folder):
    """``(run, part number)`` of a run folder (relative, ``"."`` for the logdir): a rotated part ``<run>/part_N``
    is part N of ``<run>`` (``sources/run_fold.py`` folds event-file parts the same way); any other folder is its
    own run, part -1."""
    m = _PART.match(folder.replace("\\", "/"))
    if m is None:
        return folder, -1
    return m.group(1) or ".", int(m.group(2))


def created_at(name):
    """The creation time MindSpore puts in a summary file's name (seconds), or None."""
    m = _SUMMARY_NAME.search(name)
    return int(m.group(1)) if m else None


def tag_names(kinds_by_tag):
    """Public names for ``{tag: [kind, ...]}`` (kinds in the order first seen): ``{(tag, kind): name}``.

    The first kind keeps the tag; each other kind gets its suffix (``KIND_SUFFIX``).
    """
    out = {}
    for tag, kinds in kinds_by_tag.items():
        for i, kind in enumerate(kinds):
            out[(tag, kind)] = tag if i == 0 else tag + KIND_SUFFIX[kind]
    return out


def exact_buckets(buckets, stats):
    """``buckets`` (``[[left, right, count], ...]`` in ascending order) cut to the exact finite ``min`` / ``max`` of
    ``stats``.

    MindSpore bins a tensor over a range wider than its values (a constant tensor of ones lands in a bucket
    ``[1, 1.045)``); with the outer edges cut to the recorded minimum and maximum, quantiles drawn from the buckets
    are exact at both ends and for constant tensors. Empty buckets wholly outside are dropped. Buckets that hold
    values outside ``[min, max]`` (statistics that disagree) are returned as they are.
    """
    lo, hi = stats.get("min"), stats.get("max")
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi or not buckets:
        return buckets
    first, last = 0, len(buckets) - 1
    while first <= last and buckets[first][1] < lo:       # wholly below the minimum
        if buckets[first][2] > 0:
            return buckets
        first += 1
    while last >= first and buckets[last][0] > hi:        # wholly above the maximum
        if buckets[last][2] > 0:
            return buckets
        last -= 1
    if first > last:
        return buckets
    out = buckets[first:last + 1]
    if not any(b[2] > 0 for b in out):
        return buckets
    out[0] = [max(out[0][0], lo), min(out[0][1], hi), out[0][2]]
    out[-1] = [max(out[-1][0], lo), min(out[-1][1], hi), out[-1][2]]
    # Empty buckets squeezed to nothing at the ends (a constant tensor) are left out.
    while len(out) > 1 and out[0][2] == 0 and out[0][0] >= out[0][1]:
        out.pop(0)
    while len(out) > 1 and out[-1][2] == 0 and out[-1][0] >= out[-1][1]:
        out.pop()
    return out


def histogram_of(h):
    """``(buckets, stats)`` of a MindSpore ``Summary.Histogram``: the buckets cut by ``exact_buckets`` when the
    message holds its minimum and maximum."""
    numbers = ms_files.histogram_stats(h)
    buckets = ms_files.histogram_buckets(h)
    if h.HasField("min") and h.HasField("max"):
        buckets = exact_buckets(buckets, numbers)
    return buckets, numbers


ReloadResult = collections.namedtuple("ReloadResult", "bytes_read records problems pending new_runs")
ReloadResult.__doc__ = """What one ``reload`` did. ``pending``: more complete records wait to be read (call again
soon). ``new_runs``: runs first seen in this call."""


class _Thinned:
    """At most ``cap`` items spread evenly over all items added (every ``stride``-th), plus the latest one."""

    __slots__ = ("cap", "stride", "items", "seen", "last")

    def __init__(self, cap):
        self.cap = max(1, int(cap))
        self.stride = 1
        self.items = []
        self.seen = 0
        self.last = None

    def add(self, item):
        index = self.seen
        self.seen += 1
        if index % self.stride == 0:
            self.items.append(item)
            self.last = None
            if len(self.items) > self.cap:
                self.items = self.items[::2]
                self.stride *= 2
        else:
            self.last = item

    def snapshot(self):
        if self.last is not None:
            return self.items + [self.last]
        return list(self.items)


class _FileData:
    """What was read from one summary file."""

    __slots__ = ("scalars", "series", "graphs", "graph", "version", "templates", "first", "steps", "first_wall",
                 "restarts")

    def __init__(self, restarts=0):
        self.scalars = {}                                # tag -> (steps 'q', wall times 'd', values 'f')
        self.series = {kind: {} for kind in KINDS[1:]}   # kind -> tag -> _Thinned
        self.graphs = 0
        self.graph = None                                # the newest graph: (step, wall time, bytes or None, size)
        self.version = None
        self.templates = {}                              # summary length -> _Template or None (reader only)
        self.first = {}                                  # (tag, kind) -> (file offset, kind rank) first seen
        self.steps = {}                                  # (tag, kind) -> [min step, max step]
        self.first_wall = None                           # wall time of the file's first record
        self.restarts = restarts                         # MsFile.restarts this data belongs to


class _Stage:
    """Values decoded from one read, before they are merged (so decoding happens outside the lock).

    ``scalars``: raw tag -> list of parts ``(record indices, steps, wall times, values)`` (numpy arrays); the
    record index puts points of one tag that came through different paths back in file order.
    """

    __slots__ = ("scalars", "slow_scalars", "series", "graphs", "graph", "version", "first", "steps", "first_wall")

    def __init__(self):
        self.scalars = {}
        self.slow_scalars = {}                           # raw tag -> ([indices], [steps], [walls], [values])
        self.series = {kind: [] for kind in KINDS[1:]}   # kind -> [(record index, raw tag, step, wall, payload)]
        self.graphs = 0
        self.graph = None
        self.version = None
        self.first = {}                                  # (raw tag, kind) -> first record index
        self.steps = {}                                  # (raw tag, kind) -> [min step, max step]
        self.first_wall = None

    def _note(self, key, index, lo, hi):
        if key not in self.first or index < self.first[key]:
            self.first[key] = index
        span = self.steps.get(key)
        if span is None:
            self.steps[key] = [lo, hi]
        else:
            span[0], span[1] = min(span[0], lo), max(span[1], hi)

    def finish(self):
        for kind, items in self.series.items():
            if not items:
                continue
            items.sort(key=_first)
            spans = {}
            for index, tag, step, _, _ in items:
                span = spans.get(tag)
                if span is None:
                    spans[tag] = [index, step, step]
                elif step < span[1]:
                    span[1] = step
                elif step > span[2]:
                    span[2] = step
            for tag, (index, lo, hi) in spans.items():
                self._note((tag, kind), index, lo, hi)
            self.series[kind] = [item[1:] for item in items]
        for tag, (indices, steps, walls, values) in self.slow_scalars.items():
            self.scalars.setdefault(tag, []).append((
                np.array(indices, dtype=np.int64), np.array(steps, dtype=np.int64),
                np.array(walls, dtype=np.float64), np.array(values, dtype=np.float32)))
        self.slow_scalars = {}
        out = {}
        for tag, parts in self.scalars.items():
            if len(parts) == 1:
                indices, steps, walls, values = parts[0]
            else:
                indices, steps, walls, values = (np.concatenate([p[i] for p in parts]) for i in range(4))
            if indices.size > 1 and not np.all(indices[1:] >= indices[:-1]):
                order = np.argsort(indices, kind="stable")
                steps, walls, values = steps[order], walls[order], values[order]
            if steps.size:
                self._note((tag, "scalars"), int(indices.min()), int(steps.min()), int(steps.max()))
            out[tag] = (steps, walls, values)
        self.scalars = out


def _first(item):
    return item[0]


class _Template:
    """The byte layout of a summary made only of scalar values, as SummaryRecord repeats it every step.

    A record of the same length whose bytes outside the float slots equal the template's has exactly these tags;
    its values are read for a whole chunk of records at once with numpy.
    """

    __slots__ = ("length", "zeroed", "float_idx", "columns", "tags")


_FIXED32_FIELD3 = 0x1D      # Summary.Value.scalar_value: field 3, wire type 5
_LEN_FIELD1 = 0x0A          # Summary.value / Summary.Value.tag: field 1, wire type 2
_MAX_TEMPLATES = 256
_NO_TEMPLATE = object()
_unpack_f32 = struct.Struct("<f").unpack_from


def _make_template(sb):
    """A _Template for the summary bytes ``sb``, or None if they hold anything but short-tagged scalars."""
    length = len(sb)
    pos = 0
    tags, floats = [], []
    while pos < length:
        if pos + 2 > length or sb[pos] != _LEN_FIELD1 or sb[pos + 1] >= 0x80:
            return None
        start = pos + 2
        stop = start + sb[pos + 1]
        if stop > length or stop - start < 7 or sb[start] != _LEN_FIELD1 or sb[start + 1] >= 0x80:
            return None
        tag_stop = start + 2 + sb[start + 1]
        if tag_stop + 5 != stop or sb[tag_stop] != _FIXED32_FIELD3:
            return None
        tags.append(bytes(sb[start + 2:tag_stop]))
        floats.append(tag_stop + 1)
        pos = stop
    if not tags:
        return None
    t = _Template()
    t.length = length
    t.tags = tags
    t.float_idx = (np.array(floats, dtype=np.intp)[:, None] + np.arange(4, dtype=np.intp)).ravel()
    t.zeroed = np.frombuffer(sb, dtype=np.uint8).copy()
    t.zeroed[t.float_idx] = 0
    t.columns = np.dtype({"names": ["f%d" % i for i in range(len(floats))], "formats": ["<f4"] * len(floats),
                          "offsets": floats, "itemsize": length})
    return t


class _Run:
    __slots__ = ("name", "files", "lineages", "lineage_restarts", "generation", "_memo")

    def __init__(self, name):
        self.name = name
        self.files = {}          # path -> (MsFile, _FileData or None for lineage files)
        self.lineages = {}       # path of a lineage file -> what it says (see ms_lineage.lineage_update)
        self.lineage_restarts = {}  # path of a lineage file -> its MsFile.restarts when last read
        self.generation = 0
        self._memo = {}          # (what, generation, file count) -> names / cutoffs

    def _memoized(self, what, compute):
        key = (what, self.generation, len(self.files))
        if key not in self._memo:
            if len(self._memo) > 16:
                self._memo.clear()
            self._memo[key] = compute()
        return self._memo[key]

    @property
    def lineage(self):
        """The lineage files merged in creation order: a later file's values override an earlier one's."""
        merged = {}
        for mf, data in self.ordered():
            one = self.lineages.get(mf.path) if data is None else None
            if not one:
                continue
            for key, value in one.items():
                if isinstance(value, dict) and key != "dataset_graph":
                    merged.setdefault(key, {}).update(value)
                else:
                    merged[key] = value
        return merged

    def ordered(self):
        """``[(MsFile, _FileData or None)]`` in creation order (see the module doc)."""
        return [self.files[p] for p in sorted(self.files, key=self._order_key)]

    def _order_key(self, path):
        mf, data = self.files[path]
        wall = data.first_wall if data is not None and data.first_wall is not None else float("inf")
        name = os.path.basename(path)
        created = created_at(name)
        part = part_of(os.path.basename(os.path.dirname(path)))[1]
        return (part, created if created is not None else wall, wall, name, path)

    def summaries(self):
        return [(mf, data) for mf, data in self.ordered() if data is not None]

    def names(self):
        """``{(raw tag, kind): public name}`` over the run's files (see ``tag_names``)."""
        return self._memoized("names", self._names)

    def _names(self):
        seen = {}
        for _, data in self.summaries():
            for (tag, kind), _ in sorted(data.first.items(), key=lambda item: item[1]):
                kinds = seen.setdefault(tag, [])
                if kind not in kinds:
                    kinds.append(kind)
        return tag_names(seen)

    def cutoffs(self, kind):
        """Per summary file in order: ``{raw tag: (first step of a later file, that file's MsFile)}``."""
        return self._memoized(("cutoffs", kind), lambda: self._cutoffs(kind))

    def _cutoffs(self, kind):
        # The rule event files follow too (``series_store.cuts``): a later file supersedes from its first step of the series.
        files = self.summaries()
        out = [{} for _ in files]
        for tag in {tag for _, data in files for (tag, k) in data.steps if k == kind}:
            starts = [data.steps[(tag, kind)][0] if (tag, kind) in data.steps else None for _, data in files]
            for i, cut in enumerate(series_store.cuts(starts)):
                if cut is not None:
                    out[i][tag] = (cut[0], files[cut[1]][0])
        return out


class MsLogdir:
    """The MindSpore summary data (``*_MS``, ``*_lineage``) of every run under ``logdir``; see the module doc.

    Args:
      logdir: the folder TensorBoard was started on. It need not exist yet.
      samples: per-kind cap on kept items per tag and file (``DEFAULT_SAMPLES`` for missing kinds).
    """

    def __init__(self, logdir, samples=None):
        self.logdir = fs.normalize(logdir)   # a local folder or a URL (s3://bucket/prefix; see fs)
        self.samples = dict(DEFAULT_SAMPLES)
        self.samples.update(samples or {})
        self._lock = threading.RLock()
        self._reload_lock = threading.Lock()
        self._runs = {}
        self._files = {}         # path -> run name
        self._cursor = 0
        self._thread = None
        self._stopping = threading.Event()

    # -- background loading ------------------------------------------------------------------------------------
    def start(self, interval=5.0, max_bytes=DEFAULT_RELOAD_BYTES):
        """Reloads in a daemon thread: at once again while data is pending, else every ``interval`` seconds.
        Calling it twice does nothing."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stopping.clear()

        def loop():
            while not self._stopping.is_set():
                try:
                    pending = self.reload(max_bytes).pending
                except Exception:  # an environment failure (not file contents): log it and keep going
                    logger.exception("reading MindSpore summary files under %s failed", self.logdir)
                    pending = False
                if not pending:
                    self._stopping.wait(interval)

        self._thread = threading.Thread(target=loop, name="tb-mindspore-ms-reader", daemon=True)
        self._thread.start()

    def stop(self, timeout=10.0):
        """Stops the thread of :meth:`start` (after the reload in progress)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    # -- loading ---------------------------------------------------------------------------------------------
    def reload(self, max_bytes=DEFAULT_RELOAD_BYTES):
        """Reads about ``max_bytes`` of new data at most (one record more if one is larger); never raises on file
        contents. Picks up new files and runs first. Returns a :class:`ReloadResult`."""
        with self._reload_lock:
            new_runs = self._discover()
            paths = sorted(self._files)
            budget = max(int(max_bytes), 1)
            total_read = total_records = total_problems = 0
            pending = False
            n = len(paths)
            start = self._cursor % n if n else 0
            for i in range(n):
                path = paths[(start + i) % n]
                run = self._runs[self._files[path]]
                mf, data = run.files[path]
                if mf.stat_size() <= mf.offset:
                    continue
                if budget <= 0:
                    pending = True
                    self._cursor = (start + i) % n
                    break
                before = mf.problem_count
                if data is None:
                    events, nread = mf.read_events(budget)
                    restarts = getattr(mf, "restarts", 0)
                    if run.lineage_restarts.get(path, 0) != restarts:   # replaced in place: read anew
                        with self._lock:
                            run.lineage_restarts[path] = restarts
                            run.lineages.pop(path, None)
                    self._merge_lineage(run, mf, events)
                    count = len(events)
                else:
                    payloads, offsets, nread = mf.read_payloads(budget)
                    if getattr(mf, "restarts", 0) != data.restarts:
                        # The file was replaced in place and read again from its start: forget the old content.
                        with self._lock:
                            data = _FileData(getattr(mf, "restarts", 0))
                            run.files[path] = (mf, data)
                            run.generation += 1
                    stage = self._decode(mf, payloads, offsets, data.templates)
                    self._merge(run, data, stage, changed=bool(payloads) or mf.problem_count != before)
                    count = len(payloads)
                if mf.problem_count != before and count == 0:
                    with self._lock:
                        run.generation += 1
                budget -= max(nread, 1)
                total_read += nread
                total_records += count
                total_problems += mf.problem_count - before
            if not pending:
                pending = any(mf.has_unread() for run in self._runs.values() for mf, _ in run.files.values())
            return ReloadResult(total_read, total_records, total_problems, pending, new_runs)

    def _discover(self):
        found = []
        present = set()
        if fs.is_remote(self.logdir) or os.path.isdir(self.logdir):
            for root, dirs, names in fs.walk(self.logdir):
                dirs.sort()
                for name in names:
                    kind = file_kind(name)
                    if kind is None:
                        continue
                    path = fs.join(root, name)
                    present.add(path)
                    if path not in self._files:
                        found.append((root, path, kind))
        gone = [path for path in self._files if path not in present and not fs.lexists(path)]
        if gone:
            self._forget(gone)
        new_runs = []
        if not found:
            return new_runs
        with self._lock:
            for root, path, kind in found:
                name, _ = part_of(fs.relpath(root, self.logdir))
                run = self._runs.get(name)
                if run is None:
                    run = self._runs[name] = _Run(name)
                    new_runs.append(name)
                run.files[path] = (ms_files.MsFile(path, kind), None if kind == "lineage" else _FileData())
                run.generation += 1
                self._files[path] = name
        return new_runs

    def _forget(self, paths):
        """Drops deleted files, and runs left without files."""
        with self._lock:
            for path in paths:
                name = self._files.pop(path)
                run = self._runs.get(name)
                if run is None:
                    continue
                run.files.pop(path, None)
                run.lineages.pop(path, None)
                run.generation += 1
                if not run.files:
                    del self._runs[name]

    @staticmethod
    def _decode(mf, payloads, offsets, templates):
        """Decodes a read's records into a _Stage. Records are grouped by the length of their summary; a group whose
        layout repeats (a _Template) has its scalars read with numpy for all its records at once; everything else
        goes value by value. A record that fails to decode is skipped whole and reported."""
        stage = _Stage()
        parse = ms_proto.EventView.FromString
        groups = {}
        for index, data in enumerate(payloads):
            try:
                event = parse(data)
                if stage.first_wall is None and offsets[index] == 0:
                    stage.first_wall = event.wall_time
                which = event.WhichOneof("what")
                if which == "summary":
                    sb = event.summary
                    group = groups.get(len(sb))
                    if group is None:
                        group = groups[len(sb)] = ([], [], [], [])
                    group[0].append(index)
                    group[1].append(sb)
                    group[2].append(event.step)
                    group[3].append(event.wall_time)
                elif which == "version":
                    stage.version = ms_files.decode_tag(event.version)
                elif which == "graph_def":
                    stage.graphs += 1
                    size = len(event.graph_def)
                    stage.graph = (event.step, event.wall_time, event.graph_def if size <= MAX_GRAPH_BYTES else None,
                                   size)
            except Exception as e:  # a damaged payload must never stop reading: skip and report it
                mf.problem(offsets[index], "undecodable payload (%s); record skipped" % short_error(e))
        for length, (indices, summaries, steps, walls) in groups.items():
            template = templates.get(length, _NO_TEMPLATE)
            if template is _NO_TEMPLATE:
                template = _make_template(summaries[0]) if len(templates) < _MAX_TEMPLATES else None
                templates[length] = template
            slow = range(len(indices))
            if template is not None and length:
                matrix = np.frombuffer(b"".join(summaries), dtype=np.uint8).reshape(len(summaries), length)
                # Rows equal to the template outside the float slots (compared whole, the slots then ignored).
                same = matrix == template.zeroed
                same[:, template.float_idx] = True
                ok = same.all(axis=1)
                del same
                # Each tag's values: a strided float32 view of the records (field j at float slot j).
                columns = np.frombuffer(matrix, dtype=template.columns)
                r_indices = np.asarray(indices, dtype=np.int64)
                r_steps = np.asarray(steps, dtype=np.int64)
                r_walls = np.asarray(walls, dtype=np.float64)
                if ok.all():
                    rows = None
                    slow = ()
                else:
                    rows = np.nonzero(ok)[0]
                    r_indices, r_steps, r_walls = r_indices[rows], r_steps[rows], r_walls[rows]
                    slow = np.nonzero(~ok)[0].tolist()
                if r_indices.size:
                    for column, tag in enumerate(template.tags):
                        values = columns["f%d" % column]
                        values = values.copy() if rows is None else values[rows]
                        stage.scalars.setdefault(tag, []).append((r_indices, r_steps, r_walls, values))
            for i in slow:
                MsLogdir._decode_values(stage, summaries[i], indices[i], steps[i], walls[i], mf,
                                        offsets[indices[i]])
        stage.finish()
        stage.first = {key: (offsets[i], KIND_RANK[key[1]]) for key, i in stage.first.items()}
        return stage

    @staticmethod
    def _decode_values(stage, sb, index, step, wall, mf, offset):
        """One summary, value by value; nothing of it is kept if any value fails to decode."""
        scalars, other = [], []
        try:
            for raw in ms_proto.SummaryView.FromString(sb).value:
                n = len(raw)
                if n > 7 and raw[0] == _LEN_FIELD1 and raw[1] == n - 7 and raw[1] < 0x80 \
                        and raw[n - 5] == _FIXED32_FIELD3:
                    scalars.append((raw[2:n - 5], _unpack_f32(raw, n - 4)[0]))
                    continue
                value = ms_proto.SummaryValue.FromString(raw)
                kind = value.WhichOneof("value")
                tag = value.tag
                if kind == "scalar_value":
                    scalars.append((tag, value.scalar_value))
                elif kind == "histogram":
                    other.append(("histograms", tag, raw))
                elif kind == "tensor":
                    other.append(("tensors", tag, raw))
                elif kind == "image":
                    im = value.image
                    other.append(("images", tag, (im.width, im.height, im.colorspace, im.encoded_image)))
                elif kind == "loss_landscape":
                    other.append(("landscapes", tag, ms_files.landscape_dict(value.loss_landscape)))
        except Exception as e:  # damaged content behind a good checksum: skip the record, report it
            mf.problem(offset, "undecodable payload (%s); record skipped" % short_error(e))
            return
        slow = stage.slow_scalars
        for tag, number in scalars:
            columns = slow.get(tag)
            if columns is None:
                columns = slow[tag] = ([], [], [], [])
            columns[0].append(index)
            columns[1].append(step)
            columns[2].append(wall)
            columns[3].append(number)
        for kind, tag, payload in other:
            stage.series[kind].append((index, tag, step, wall, payload))

    def _merge(self, run, data, stage, changed):
        decoded = {}

        def text(raw):
            t = decoded.get(raw)
            if t is None:
                t = decoded[raw] = ms_files.decode_tag(raw)
            return t

        with self._lock:
            for raw, (steps, walls, values) in stage.scalars.items():
                tag = text(raw)
                series = data.scalars.get(tag)
                if series is None:
                    series = data.scalars[tag] = (array("q"), array("d"), array("f"))
                series[0].frombytes(np.ascontiguousarray(steps, dtype="<i8").view(np.uint8))
                series[1].frombytes(np.ascontiguousarray(walls, dtype="<f8").view(np.uint8))
                series[2].frombytes(np.ascontiguousarray(values, dtype="<f4").view(np.uint8))
            for kind, items in stage.series.items():
                if not items:
                    continue
                by_tag = data.series[kind]
                cap = self.samples.get(kind, 100)
                for raw, step, wall, payload in items:
                    tag = text(raw)
                    thinned = by_tag.get(tag)
                    if thinned is None:
                        thinned = by_tag[tag] = _Thinned(cap)
                    thinned.add((step, wall, payload))
            for (raw, kind), first in stage.first.items():
                data.first.setdefault((text(raw), kind), first)
            for (raw, kind), (lo, hi) in stage.steps.items():
                span = data.steps.get((text(raw), kind))
                if span is None:
                    data.steps[(text(raw), kind)] = [lo, hi]
                else:
                    span[0], span[1] = min(span[0], lo), max(span[1], hi)
            if stage.first_wall is not None and data.first_wall is None:
                data.first_wall = stage.first_wall
            data.graphs += stage.graphs
            if stage.graph is not None:
                data.graph = stage.graph
            if stage.version is not None and data.version is None:
                data.version = stage.version
            if changed:
                run.generation += 1

    def _merge_lineage(self, run, mf, events):
        if not events:
            return
        with self._lock:
            for offset, event in events:
                try:
                    ms_lineage.lineage_update(run.lineages.setdefault(mf.path, {}), event)
                except Exception as e:  # damaged lineage data: skip the record, keep the rest
                    mf.problem(offset, "lineage record not understood (%s); skipped" % short_error(e))
            run.generation += 1

    # -- accessors -------------------------------------------------------------------------------------------
    def _run(self, run):
        try:
            return self._runs[run]
        except KeyError:
            raise KeyError("no MindSpore summary run %r" % (run,)) from None

    def runs(self):
        with self._lock:
            return sorted(self._runs)

    def has_run(self, run):
        with self._lock:
            return run in self._runs

    def version(self, run):
        with self._lock:
            r = self._run(run)
            return "%d.%d" % (len(r.files), r.generation)

    def _file_data(self, run):
        return [data for _, data in self._run(run).summaries()]

    @staticmethod
    def _wanted(tags):
        return None if tags is None else set([tags] if isinstance(tags, str) else tags)

    def tags(self, run):
        with self._lock:
            out = {kind: set() for kind in KINDS}
            for (_, kind), name in self._run(run).names().items():
                out[kind].add(name)
            return {kind: sorted(tags) for kind, tags in out.items()}

    def _scalar_copies(self, run, tags):
        """``{public tag: [(steps, walls, values, cutoff), ...]}`` per file in order (array copies)."""
        wanted = self._wanted(tags)
        copies = {}
        with self._lock:
            r = self._run(run)
            names = r.names()
            files = r.summaries()
            for (_, data), cut in zip(files, r.cutoffs("scalars")):
                for tag, (steps, walls, values) in data.scalars.items():
                    name = names.get((tag, "scalars"), tag)
                    if wanted is None or name in wanted:
                        cutoff = cut.get(tag)
                        copies.setdefault(name, []).append(
                            (steps[:], walls[:], values[:], None if cutoff is None else cutoff[0]))
        return copies

    @staticmethod
    def _join(parts):
        steps, walls, values = [], [], []
        for s, w, v, cutoff in parts:
            s = np.frombuffer(s, dtype=np.int64)
            w = np.frombuffer(w, dtype=np.float64)
            v = np.frombuffer(v, dtype=np.float32)
            if cutoff is not None:
                keep = s < cutoff
                s, w, v = s[keep], w[keep], v[keep]
            steps.append(s)
            walls.append(w)
            values.append(v)
        return np.concatenate(steps), np.concatenate(walls), np.concatenate(values)

    def scalar_arrays(self, run, tag):
        """``(steps, wall_times, values)`` numpy arrays (int64, float64, float32) of one scalar tag, or None."""
        parts = self._scalar_copies(run, [tag]).get(tag)
        if not parts:
            return None
        return self._join(parts)

    def restarts_of(self, run, tag):
        """``(restarts, superseded)`` of one scalar tag: ``[{"step", "superseded_points", "source"}]``, one per
        file that a later one cut, and a function returning ``[(source, steps, walls, values)]``, the points each
        cut left out of the final timeline (kept here, as every point is)."""
        parts = []
        for s, w, v, cutoff in self._scalar_copies(run, [tag]).get(tag, []):
            s = np.frombuffer(s, dtype=np.int64)
            lost = s >= cutoff if cutoff is not None else np.zeros(s.size, dtype=bool)
            if lost.any():
                parts.append((cutoff, s[lost], np.frombuffer(w, dtype=np.float64)[lost],
                              np.frombuffer(v, dtype=np.float32)[lost]))
        by = [lost["by"] for f in self.files(run) for lost in f.get("superseded") or [] if tag in lost.get("tags", ())]
        restarts = [{"step": int(cut), "superseded_points": int(lost_steps.size), "source": source}
                    for (cut, lost_steps, _, _), source in zip(parts, by + [None] * len(parts))]

        def superseded():
            return [(restart["source"], s, w, v) for (_, s, w, v), restart in zip(parts, restarts)]

        return restarts, superseded

    def scalars(self, run, tags=None):
        """``{tag: [(step, wall_time, value), ...]}``; ``tags`` limits the tags (a name or an iterable)."""
        out = {}
        for tag, parts in self._scalar_copies(run, tags).items():
            steps, walls, values = self._join(parts)
            out[tag] = list(zip(steps.tolist(), walls.tolist(), values.tolist()))
        return out

    def _series(self, run, kind, tags):
        wanted = self._wanted(tags)
        out = {}
        with self._lock:
            r = self._run(run)
            names = r.names()
            for (_, data), cut in zip(r.summaries(), r.cutoffs(kind)):
                for tag, thinned in data.series[kind].items():
                    name = names.get((tag, kind), tag)
                    if wanted is None or name in wanted:
                        items = thinned.snapshot()
                        cutoff = cut.get(tag)
                        if cutoff is not None:
                            items = [item for item in items if item[0] < cutoff[0]]
                        out.setdefault(name, []).extend(items)
        return out

    def steps(self, run, kind, tags=None):
        """``{tag: [(step, wall_time), ...]}`` of the kept items of ``kind`` (``"histograms"``, ``"tensors"``,
        ``"images"``, ``"landscapes"``), in the order the accessor of that kind returns them; nothing is decoded."""
        if kind not in KINDS[1:]:
            raise ValueError("unknown kind %r" % (kind,))
        return {tag: [(step, wall) for step, wall, _ in items] for tag, items in self._series(run, kind, tags).items()}

    def histograms(self, run, tags=None, stats=False):
        """``{tag: [(step, wall_time, [[left, right, count], ...]), ...]}`` (with ``stats``, a 4th item: a dict).

        The buckets' outer edges are cut to the tensor's exact minimum and maximum (``exact_buckets``)."""
        out = {}
        parse = ms_proto.SummaryValue.FromString
        for tag, items in self._series(run, "histograms", tags).items():
            series = out[tag] = []
            for step, wall, raw in items:
                try:
                    buckets, numbers = histogram_of(parse(raw).histogram)
                    series.append((step, wall, buckets, numbers) if stats else (step, wall, buckets))
                except Exception:  # damaged content behind a good checksum: leave the item out
                    continue
        return out

    def histogram_stats(self, run, tag):
        """``[(step, wall_time, stats)]`` of one histogram series (``histograms(stats=True)``'s 4th item), without
        decoding the buckets."""
        parse = ms_proto.SummaryValue.FromString
        out = []
        for step, wall, raw in self._series(run, "histograms", [tag]).get(tag, []):
            try:
                out.append((step, wall, ms_files.histogram_stats(parse(raw).histogram)))
            except Exception:  # damaged content behind a good checksum: leave the item out
                continue
        return out

    def tensors(self, run, tags=None):
        """``{tag: [(step, wall_time, numpy array), ...]}``."""
        out = {}
        parse = ms_proto.SummaryValue.FromString
        for tag, items in self._series(run, "tensors", tags).items():
            series = out[tag] = []
            for step, wall, raw in items:
                try:
                    series.append((step, wall, ms_files.tensor_array(parse(raw).tensor)))
                except Exception:  # damaged content behind a good checksum: leave the item out
                    continue
        return out

    def images(self, run, tags=None):
        """``{tag: [(step, wall_time, {"encoded", "mime", "width", "height", "colorspace"}), ...]}``."""
        out = {}
        for tag, items in self._series(run, "images", tags).items():
            out[tag] = [
                (step, wall, {"encoded": encoded, "mime": _mime(encoded), "width": width, "height": height,
                              "colorspace": colorspace})
                for step, wall, (width, height, colorspace, encoded) in items
            ]
        return out

    def landscapes(self, run, tags=None):
        """``{tag: [(step, wall_time, landscape dict), ...]}`` (see ``ms_files.landscape_dict``)."""
        return {
            tag: [(step, wall, copy.deepcopy(d)) for step, wall, d in items]
            for tag, items in self._series(run, "landscapes", tags).items()
        }

    def lineage(self, run):
        with self._lock:
            return copy.deepcopy(self._run(run).lineage)

    def warnings(self, run):
        """Every problem met in the run's files: ``[{"file", "offset", "reason"}, ...]``, in file order."""
        out = []
        with self._lock:
            for mf, _ in self._run(run).ordered():
                rel = fs.relpath(mf.path, self.logdir)
                out.extend({"file": rel, "offset": offset, "reason": reason} for offset, reason in mf.problems)
                hidden = mf.problem_count - len(mf.problems)
                if hidden > 0:
                    out.append({"file": rel, "offset": None, "reason": "%d more problems not listed" % hidden})
        return out

    def files(self, run):
        """The run's files in creation order: ``[{"file" (relative to the logdir), "kind" ("summary" | "lineage"),
        "created" (seconds: the time in the name, else the first record's wall time, else None), "records",
        "steps": [first, last] | None, "superseded": [{"by" (a later file), "from_step", "to_step", "points",
        "tags": [public tag, ...]}]}]``: what each file lost to a later file (a re-run or a resume)."""
        with self._lock:
            r = self._run(run)
            names = r.names()
            summaries = r.summaries()
            lost = {id(mf): {} for mf, _ in summaries}
            for kind in KINDS:
                for (mf, data), cut in zip(summaries, r.cutoffs(kind)):
                    for tag, (cutoff, by) in cut.items():
                        steps = self._kept_steps(data, kind, tag)
                        gone = steps[steps >= cutoff]
                        if not gone.size:
                            continue
                        lo, hi = int(gone.min()), int(gone.max())
                        entry = lost[id(mf)].setdefault(id(by), {"by": fs.relpath(by.path, self.logdir),
                                                                "from_step": lo, "to_step": hi,
                                                                "points": 0, "tags": []})
                        entry["from_step"] = min(entry["from_step"], lo)
                        entry["to_step"] = max(entry["to_step"], hi)
                        entry["points"] += int(gone.size)
                        entry["tags"].append(names.get((tag, kind), tag))
            out = []
            for mf, data in r.ordered():
                name = os.path.basename(mf.path)
                created = created_at(name)
                if created is None and data is not None:
                    created = data.first_wall
                spans = list(data.steps.values()) if data is not None else []
                out.append({
                    "file": fs.relpath(mf.path, self.logdir),
                    "kind": "summary" if data is not None else "lineage",
                    "created": created,
                    "records": mf.records,
                    "steps": [min(a for a, _ in spans), max(b for _, b in spans)] if spans else None,
                    "superseded": [dict(e, tags=sorted(set(e["tags"]))) for e in lost.get(id(mf), {}).values()],
                })
            return out

    @staticmethod
    def _kept_steps(data, kind, tag):
        """The steps of one series of a file, as an int64 array (a copy)."""
        if kind == "scalars":
            series = data.scalars.get(tag)
            return np.array(series[0], dtype=np.int64) if series else np.zeros(0, dtype=np.int64)
        thinned = data.series[kind].get(tag)
        return np.array([item[0] for item in thinned.snapshot()] if thinned else [], dtype=np.int64)

    def graph(self, run):
        """The run's newest computational graph (``SummaryCollector(collect_graph=True)``): ``{"step", "wall_time",
        "data": bytes of MindSpore's GraphProto or None when larger than MAX_GRAPH_BYTES, "size", "file"}``, or
        None."""
        with self._lock:
            found = None
            for mf, data in self._run(run).ordered():
                if data is not None and data.graph is not None:
                    found = (mf.path, data.graph)
        if found is None:
            return None
        path, (step, wall, raw, size) = found
        return {"step": int(step), "wall_time": float(wall), "data": raw, "size": int(size),
                "file": fs.relpath(path, self.logdir)}

    def stats(self, run):
        with self._lock:
            files = self._run(run).ordered()
            return {
                "files": len(files),
                "bytes_read": sum(mf.offset for mf, _ in files),
                "records": sum(mf.records for mf, _ in files),
                "skipped": sum(mf.skipped for mf, _ in files),
                "pending_bytes": sum(mf.pending for mf, _ in files),
                "graphs": sum(d.graphs for _, d in files if d is not None),
                "superseded_points": sum(e["points"] for f in self.files(run) for e in f["superseded"]),
            }


def _mime(encoded):
    if encoded[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if encoded[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if encoded[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    return "application/octet-stream"
