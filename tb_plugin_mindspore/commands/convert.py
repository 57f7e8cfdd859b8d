"""``tb-mindspore convert LOGDIR [--out DIR]``: MindSpore's ``_MS`` summary files as standard TensorBoard event files.

Every summary file under LOGDIR (``*.out.events.summary.*``, whatever its suffix, and the names MindInsight accepted,
see ``ms_logdir.file_kind``) becomes one tfevents file in the same relative folder under OUT, named by swapping
``.out.events.summary.`` for ``.out.tfevents.`` (other names get ``events.out.tfevents.`` in front):

* scalars -> ``simple_value`` (Scalars tab, ``EventAccumulator.Scalars``, ``tbparse``)
* histograms -> TensorBoard's classic histogram format (``HistogramProto``: Histograms and Distributions tabs,
  ``EventAccumulator.Histograms()``, ``tbparse``), the outer edges cut to the tensor's exact minimum and maximum. MindSpore's NaN / Inf counts
  have no place there and are left out (the MindSpore tab shows them when it reads the ``_MS`` files).
* images -> TensorBoard images (the PNG bytes as MindSpore encoded them)
* tensors -> tensors of this plugin (kind ``tensor``, the MindSpore dtype and shape kept)
* loss landscapes -> this plugin's landscape format (kind ``landscape``, a JSON string tensor)
* the lineage file (``*_lineage``) -> this plugin's run information (``_meta/run_info``) with a ``mindspore_lineage``
  entry: hyperparameters, user-defined data, dataset graph; and its hyperparameters (learning rate, batch size,
  epochs, optimizer, loss function, network, dataset sizes, user-defined values) as a TensorBoard HParams summary,
  so TensorBoard's HParams tab lists the run

* the computational graph (``SummaryCollector(collect_graph=True)``) -> TensorBoard's GraphDef (``Event.graph_def``),
  so TensorBoard's Graphs tab draws it: nodes named by their scope path, op types, inputs and output shapes kept

Rotated parts of one run (``<run>/part_0``, ``part_1``, ...) are written into ``OUT/<run>/``, in part order: one run
in TensorBoard, as in the MindSpore tab.

As in the MindSpore tab (``ms_logdir``): several summary files in one run folder (a re-run, a resume) are taken in
creation order and a later file supersedes the earlier ones from its first step on, per series (the earlier
files' points at or after it are not written; an earlier file already converted is converted again when a later
file changes that); and one name used for several kinds in a run (an image and a tensor both named ``x``) keeps
the name for the kind seen first and gets MindSpore's kind suffix for the others (``x[:Tensor]``), because
TensorBoard's loaders drop series, or whole runs, whose tag has several plugins.

OUT defaults to ``<LOGDIR>_tfevents`` next to LOGDIR, so that ``tensorboard --logdir LOGDIR`` does not show each
value twice (once from the ``_MS`` file through this plugin, once from the converted copy). Point TensorBoard at
OUT to see MindSpore's data in TensorBoard's own tabs.

Incremental and idempotent: ``OUT/.tb-mindspore-convert.json`` records, for each source file, how far it was
converted and how long the output was then. A second run converts only records added since (a file still being
written can be converted again later), and first cuts any output written after the last recorded state (an
interrupted run), so no record is ever converted twice. Sources are only opened for reading. A damaged record
is skipped and reported, as in the viewer.
"""

import argparse
import json
import os
import sys
import time

from .. import metadata
from ..io import records
from ..io.records import short_error
from ..io import fs
from ..sources import logdir_status, ms_files, ms_graph, ms_lineage, ms_logdir
from ..landscape import format as landscape_format
from ..writing import summary
from .convert_folds import fold_event_files

STATE_NAME = ".tb-mindspore-convert.json"
# 2: files ordered and superseded per run, tags named per kind; 3: histograms in the classic format
# (EventAccumulator.Histograms(), tbparse), the model graph, rotated parts into their run. Older outputs are
# converted again.
STATE_VERSION = 3
# MindSpore Summary.Value field -> the reader's kind names (ms_logdir.KINDS).
VALUE_KINDS = {"scalar_value": "scalars", "histogram": "histograms", "tensor": "tensors", "image": "images",
               "loss_landscape": "landscapes"}
CHUNK_BYTES = 16 << 20
MAX_LISTED_WARNINGS = 20


class ConvertError(Exception):
    """A conversion that cannot be done or did not fully succeed; the message is one line for the user."""

    def __init__(self, message, summary=None):
        super().__init__(message)
        self.summary = summary


def default_out(logdir):
    """``<logdir>_tfevents`` next to ``logdir`` (in the current folder for a remote logdir)."""
    if fs.is_remote(logdir):
        return os.path.abspath(fs.basename(fs.normalize(logdir)) + "_tfevents")
    path = os.path.abspath(os.path.expanduser(str(logdir))).rstrip(os.sep)
    return (path or os.sep) + "_tfevents"


def output_name(source_name):
    """The tfevents file name for a MindSpore summary file name."""
    if ms_files.SUMMARY_MARK in source_name:
        return source_name.replace(ms_files.SUMMARY_MARK, ".out.tfevents.", 1)
    return "events.out.tfevents." + source_name


def _find_sources(logdir, out):
    sources = []
    out_real = os.path.realpath(out)
    for root, dirs, names in fs.walk(logdir):
        dirs.sort()
        if os.path.realpath(root) == out_real and out_real != os.path.realpath(logdir):
            dirs[:] = []
            continue
        for name in sorted(names):
            kind = ms_logdir.file_kind(name)
            if kind is not None:
                sources.append((fs.relpath(fs.join(root, name), logdir), kind))
    return sources


def _size(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


class _Progress:
    def __init__(self, enabled, total, files):
        self.enabled = enabled and total > 0
        self.total = total
        self.files = files
        self.done = 0
        self.file_index = 0
        self._last = time.monotonic()
        self._tty = sys.stderr.isatty()

    def update(self, nbytes=0, file_index=None, force=False):
        self.done += nbytes
        if file_index is not None:
            self.file_index = file_index
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < (0.2 if self._tty else 5.0):
            return
        self._last = now
        frac = min(1.0, self.done / self.total) if self.total else 1.0
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        line = "converting [%s] %3d%%  %s/%s  file %d/%d" % (
            bar, frac * 100, _size(self.done), _size(self.total), self.file_index, self.files)
        sys.stderr.write(("\r" + line) if self._tty else (line + "\n"))
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            self.update(force=True)
            if self._tty:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _load_state(path):
    """The conversion state in ``path`` (an empty one when there is none); raises :class:`ConvertError` with a
    one-line reason for a state that cannot be read or is not what this version writes (never a traceback)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(_MAX_STATE_BYTES + 1)
    except FileNotFoundError:
        return {"version": STATE_VERSION, "files": {}}
    except OSError as e:
        raise ConvertError("cannot read the conversion state %s (%s); delete it to convert from scratch"
                           % (path, e.strerror or e))
    try:
        if len(raw) > _MAX_STATE_BYTES:
            raise ValueError("larger than %d MB" % (_MAX_STATE_BYTES >> 20))
        state = metadata.loads_json(raw, "it")
        _check_state(state)
    except ValueError as e:     # ContentError too
        raise ConvertError("the conversion state %s is damaged (%s); delete it to convert from scratch"
                           % (path, str(e).splitlines()[0][:200]))
    return state


_MAX_STATE_BYTES = 256 << 20


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_step_table(value):
    """``{kind: {tag: step}}``."""
    return isinstance(value, dict) and all(
        isinstance(tags, dict) and all(isinstance(t, str) and isinstance(v, int) and not isinstance(v, bool)
                                       for t, v in tags.items()) for tags in value.values())


def _check_state(state):
    """Raises ValueError naming the first part of ``state`` that is not what :func:`_save_state` writes."""
    if not isinstance(state, dict):
        raise ValueError("not a JSON object")
    if not _is_count(state.get("version", 1)):
        raise ValueError("'version' is not a number")
    files = state.get("files")
    if not isinstance(files, dict):
        raise ValueError("no 'files' object")
    for rel, entry in files.items():
        if not isinstance(entry, dict):
            raise ValueError("the entry of %r is not an object" % rel)
        for key in ("offset", "output_size", "source_size", "scanned"):
            if key in entry and not _is_count(entry[key]):
                raise ValueError("%r of %r is not a byte count" % (key, rel))
        for key in ("first_steps", "cutoffs"):
            if key in entry and not _is_step_table(entry[key]):
                raise ValueError("%r of %r is not a table of steps" % (key, rel))
        if "output" in entry and not isinstance(entry["output"], str):
            raise ValueError("'output' of %r is not a path" % rel)
        if "lineage" in entry and not isinstance(entry["lineage"], dict):
            raise ValueError("'lineage' of %r is not an object" % rel)
    runs = state.get("runs", {})
    if not isinstance(runs, dict) or not all(
            isinstance(r, dict) and isinstance(r.get("kinds", {}), dict)
            and all(isinstance(k, list) and all(isinstance(x, str) for x in k) for k in r.get("kinds", {}).values())
            for r in runs.values()):
        raise ValueError("'runs' is not a table of runs")


def _save_state(path, state):
    """Writes the state atomically, and only when it changed (a run with nothing new leaves OUT as it was)."""
    text = json.dumps(state, indent=1, sort_keys=True)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _check_landscape(tag, record):
    """Raises ValueError when the MindSpore tab could not draw the landscape (so it is reported, not counted)."""
    try:
        landscape_format.normalize_record(record)
    except (ValueError, TypeError, KeyError, OverflowError) as e:
        raise ValueError("malformed loss landscape %r left out: %s" % (tag, e))


def _convert_value(value, counts, tag=None):
    """One MindSpore Summary.Value -> TensorBoard Summary.Value (None if it has no value), under ``tag`` (default:
    its own)."""
    from tensorboard.compat.proto import summary_pb2

    tag = ms_files.decode_tag(value.tag) if tag is None else tag
    kind = value.WhichOneof("value")
    if kind == "scalar_value":
        counts["scalars"] += 1
        return summary.scalar(tag, value.scalar_value)
    if kind == "histogram":
        counts["histograms"] += 1
        buckets, stats = ms_logdir.histogram_of(value.histogram)
        # The classic histogram format: TensorBoard's tabs, EventAccumulator.Histograms() and tbparse read it.
        return summary.histogram_proto(tag, buckets, {k: stats[k] for k in ("min", "max", "sum")
                                                      if stats.get(k) is not None})
    if kind == "image":
        counts["images"] += 1
        im = value.image
        return summary_pb2.Summary.Value(tag=tag, image=summary_pb2.Summary.Image(
            height=im.height, width=im.width, colorspace=im.colorspace, encoded_image_string=im.encoded_image))
    if kind == "tensor":
        counts["tensors"] += 1
        return summary.tensor(tag, ms_files.tensor_array(value.tensor))
    if kind == "loss_landscape":
        record = ms_files.landscape_dict(value.loss_landscape)
        _check_landscape(tag, record)
        counts["landscapes"] += 1
        return summary.landscape(tag, record)
    return None


def _convert_event(event, counts, kinds, cutoffs):
    """The TensorBoard values of one MindSpore summary event: values superseded by a later file (``cutoffs``:
    {kind: {tag: first step of a later file}}) left out, tags named per kind (``kinds``: {tag: [kind, ...]} in the
    order first seen, updated here; within one record scalars come first, as in ``ms_logdir``)."""
    step = event.step
    decoded = []
    for value in event.summary.value:
        kind = VALUE_KINDS.get(value.WhichOneof("value"))
        if kind is not None:
            decoded.append((ms_files.decode_tag(value.tag), kind, value))
    for tag, kind, _ in sorted(decoded, key=lambda item: ms_logdir.KIND_RANK[item[1]]):
        known = kinds.setdefault(tag, [])
        if kind not in known:
            known.append(kind)
    out = []
    for tag, kind, value in decoded:
        cut = cutoffs.get(kind, {}).get(tag)
        if cut is not None and step >= cut:
            continue
        name = tag if kinds[tag][0] == kind else tag + ms_logdir.KIND_SUFFIX[kind]
        converted = _convert_value(value, counts, name)
        if converted is not None:
            out.append(converted)
    return out


def _graph_frame(event, mf, offset):
    """The framed TensorBoard event holding MindSpore's graph (``graph_def``) as a GraphDef, so TensorBoard's Graphs
    tab draws it; None (and a problem noted) when it cannot be read."""
    from tensorboard.compat.proto import event_pb2

    try:
        _, nodes = ms_graph.from_anf(event.graph_def)
        graph = ms_graph.to_graphdef(nodes)
    except Exception as e:  # damaged graph bytes behind a good checksum
        mf.problem(offset, "model graph not convertible (%s); skipped" % short_error(e))
        return None
    return records.frame(event_pb2.Event(wall_time=event.wall_time, step=event.step,
                                         graph_def=graph.SerializeToString()).SerializeToString())


def _first_wall(path):
    """Wall time of a summary file's first record (None if unreadable)."""
    try:
        events, _ = ms_files.MsFile(path, "summary").read_events(1 << 16)
    except Exception:  # only an ordering hint
        return None
    return events[0][1].wall_time if events else None


def _run_of(rel):
    """The output run folder of a source file: its folder, or the run of a rotated part (``<run>/part_N``)."""
    folder = os.path.dirname(rel)
    run = ms_logdir.part_of(folder.replace(os.sep, "/"))[0]
    return "" if run == "." else run


def _part_suffix(rel):
    """``.part_00003`` for a file of a rotated part (its output shares the run's folder with the other parts; two
    parts' files may have the same name, and TensorBoard reads a folder's files in name order), else ""."""
    part = ms_logdir.part_of(os.path.basename(os.path.dirname(rel)))[1]
    return ".part_%05d" % part if part >= 0 else ""


def _creation_key(logdir, rel):
    name = os.path.basename(rel)
    created = ms_logdir.created_at(name)
    wall = _first_wall(os.path.join(logdir, rel))
    part = ms_logdir.part_of(os.path.basename(os.path.dirname(rel)))[1]
    return (part, created if created is not None else float("inf"), wall if wall is not None else float("inf"),
            name)


def _scan_first_steps(src, entry, chunk_bytes):
    """Updates ``entry["first_steps"]`` ({kind: {tag: first step}}) with the records added to ``src`` since the
    last scan (``entry["scanned"]``, a byte offset)."""
    mf = ms_files.MsFile(src, "summary")
    scanned = int(entry.get("scanned", 0))
    if mf.stat_size() < scanned:      # replaced by a shorter file: scan again
        scanned = 0
        entry["first_steps"] = {}
    mf.offset = scanned
    steps = entry.setdefault("first_steps", {})
    while True:
        before = mf.offset
        events, _ = mf.read_events(chunk_bytes)
        if mf.offset == before:
            break
        for _, event in events:
            if event.WhichOneof("what") != "summary":
                continue
            try:
                for value in event.summary.value:
                    kind = VALUE_KINDS.get(value.WhichOneof("value"))
                    if kind is None:
                        continue
                    tag = ms_files.decode_tag(value.tag)
                    by_tag = steps.setdefault(kind, {})
                    if tag not in by_tag or event.step < by_tag[tag]:
                        by_tag[tag] = event.step
            except Exception:  # damaged content: the conversion itself reports it
                continue
    entry["scanned"] = mf.offset


def _plan_run(logdir, items, chunk_bytes):
    """Orders one run folder's sources by creation and sets each summary file's ``cutoffs`` (the first step of
    each series in a later file). A file converted under other cutoffs is converted again from its start."""
    items.sort(key=lambda item: _creation_key(logdir, item[0]))
    summaries = [item for item in items if item[1] == "summary"]
    if len(summaries) > 1:
        for rel, _, entry in summaries:
            _scan_first_steps(fs.join(logdir, rel), entry, chunk_bytes)
    later = {}
    for rel, _, entry in reversed(summaries):
        cutoffs = {kind: dict(tags) for kind, tags in later.items() if tags}
        if cutoffs != entry.get("cutoffs", {}) and int(entry.get("offset", 0)) > 0:
            entry["offset"] = 0
            entry["output_size"] = 0
            entry["start_offset"] = 0
        entry["cutoffs"] = cutoffs
        for kind, tags in entry.get("first_steps", {}).items():
            mine = later.setdefault(kind, {})
            for tag, step in tags.items():
                if tag not in mine or step < mine[tag]:
                    mine[tag] = step
    return items


def _hparams_of(lineage):
    """The lineage's hyperparameters for an HParams summary: bool / number / str values (NaN and infinities, which
    the HParams tab cannot hold, as their names; anything else as JSON text)."""
    out = {}
    for key, value in sorted(lineage.get("hparams", {}).items()):
        if isinstance(value, float) and value != value:
            value = "NaN"
        elif isinstance(value, float) and value in (float("inf"), float("-inf")):
            value = "Infinity" if value > 0 else "-Infinity"
        elif value is None or not isinstance(value, (bool, int, float, str)):
            value = json.dumps(value, sort_keys=True, default=str)
        out[str(key)] = value
    return out


def _convert_file(src, dst, entry, kind, progress, totals, warnings, chunk_bytes, kinds=None):
    """Converts what is new in ``src``; updates ``entry`` (the file's state) after every committed chunk.
    ``kinds``: the run's {tag: [kind, ...]} (see ``_convert_event``)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    mf = ms_files.MsFile(src, kind)
    mf.offset = int(entry.get("offset", 0))
    out_size = int(entry.get("output_size", 0))
    exists = os.path.exists(dst)
    if exists and os.path.getsize(dst) < out_size or (not exists and mf.offset > 0):
        # The output was removed or cut: convert this source again from the start.
        mf.offset, out_size, exists = 0, 0, False
        entry.pop("lineage", None)
        if os.path.exists(dst):
            os.remove(dst)
    size = mf.stat_size()
    if size < mf.offset:
        warnings.append({"file": src, "offset": mf.offset,
                         "reason": "source is shorter than what was converted before; left as it is"})
        return
    if size == mf.offset:
        return
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    lineage = entry.get("lineage") if kind == "lineage" else None
    wrote = False
    with open(dst, "r+b" if exists else "wb") as out:
        out.truncate(out_size)
        out.seek(out_size)
        if out_size == 0:
            out.write(records.frame(
                event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString()))
        while True:
            before = mf.offset
            events, _ = mf.read_events(chunk_bytes)
            if mf.offset == before:
                break                  # nothing new, or only an unfinished record at the end
            totals["bytes_read"] += mf.offset - before
            frames = []
            if kind == "lineage":
                lineage = lineage or {}
                last_wall = None
                for offset, event in events:
                    try:
                        ms_lineage.lineage_update(lineage, event)
                        last_wall = event.wall_time
                    except Exception as e:  # damaged lineage data: skip the record
                        mf.problem(offset, "lineage record not understood (%s); skipped" % short_error(e))
                if last_wall is not None:
                    values = [summary.run_info({"source": "mindspore", "mindspore_lineage": lineage})]
                    # The hyperparameters again in TensorBoard's HParams format, for its HParams tab.
                    if lineage.get("hparams"):
                        try:
                            values += summary.hparams_values(_hparams_of(lineage), start_time=last_wall)
                        except Exception as e:  # the run information above still holds them
                            mf.problem(mf.offset, "lineage hyperparameters not writable as an HParams summary "
                                                  "(%s); left out" % short_error(e))
                    frames.append(records.frame(event_pb2.Event(
                        wall_time=last_wall, step=0, summary=summary_pb2.Summary(value=values)).SerializeToString()))
                    totals["events"] += 1
            else:
                for offset, event in events:
                    if event.WhichOneof("what") == "graph_def":   # the model graph, as TensorBoard's GraphDef
                        frame = _graph_frame(event, mf, offset)
                        if frame is not None:
                            frames.append(frame)
                            totals["values"]["graphs"] += 1
                            totals["events"] += 1
                        continue
                    if event.WhichOneof("what") != "summary":
                        continue
                    counts = dict.fromkeys(totals["values"], 0)
                    try:
                        values = _convert_event(event, counts, kinds if kinds is not None else {},
                                                entry.get("cutoffs", {}))
                    except Exception as e:  # damaged content in a record with a good checksum
                        mf.problem(offset, "record not convertible (%s); skipped" % short_error(e))
                        continue
                    if not values:
                        continue
                    for name, n in counts.items():
                        totals["values"][name] += n
                    tb = event_pb2.Event(wall_time=event.wall_time, step=event.step,
                                         summary=summary_pb2.Summary(value=values))
                    frames.append(records.frame(tb.SerializeToString()))
                    totals["events"] += 1
            out.write(b"".join(frames))
            out.flush()
            os.fsync(out.fileno())
            wrote = wrote or bool(frames)
            entry["offset"] = mf.offset
            entry["output_size"] = out.tell()
            entry["source_size"] = mf.size
            if lineage is not None:
                entry["lineage"] = lineage
            progress.update(mf.offset - before)
            yield  # let the caller save the state
    totals["skipped_records"] += mf.skipped
    totals["pending_bytes"] += mf.pending
    for offset, reason in mf.problems:
        warnings.append({"file": src, "offset": offset, "reason": reason})
    if mf.problem_count > len(mf.problems):
        warnings.append({"file": src, "offset": None,
                         "reason": "%d more problems not listed" % (mf.problem_count - len(mf.problems))})
    totals["converted_files"] += 1 if wrote else 0


def convert(logdir, out=None, progress=True, chunk_bytes=CHUNK_BYTES):
    """Converts the MindSpore summary files under ``logdir`` into tfevents files under ``out``; returns a summary.

    ``out`` defaults to :func:`default_out`. The summary is a dict: ``logdir``, ``out``, ``files`` (sources found),
    ``converted_files`` (sources with new records this time), ``events`` (events written), ``values``
    (per kind: scalars, histograms, images, tensors, landscapes), ``skipped_records``, ``pending_bytes`` (an
    incomplete record at the end of a file still being written; converted next time), ``bytes_read``, ``warnings``
    ([{"file", "offset", "reason"}]).

    Raises :class:`ConvertError` (one-line message) when ``logdir`` is missing or unreadable, when it holds no
    MindSpore summary file, when ``out`` cannot be written, or, after converting the rest, when some source files
    could not be read.
    """
    logdir = fs.normalize(logdir)   # a local folder or a URL read through reading/fs.py
    out = default_out(logdir) if out is None else os.path.abspath(os.path.expanduser(str(out)))
    if not fs.exists(logdir):
        raise ConvertError("%s does not exist" % logdir)
    if not fs.isdir(logdir):
        raise ConvertError("%s is not a directory" % logdir)
    if not fs.is_remote(logdir) and not os.access(logdir, os.R_OK | os.X_OK):
        raise ConvertError("%s cannot be read (permission denied)" % logdir)
    if os.path.exists(out) and not os.path.isdir(out):
        raise ConvertError("the output %s exists and is not a directory" % out)
    sources = _find_sources(logdir, out)
    if not sources:
        raise ConvertError("no MindSpore summary files (names with '.out.events.summary.') under %s" % logdir)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise ConvertError("cannot create the output directory %s: %s" % (out, e.strerror or e))
    if not os.access(out, os.W_OK | os.X_OK):
        raise ConvertError("cannot write to the output directory %s (permission denied)" % out)
    state_path = os.path.join(out, STATE_NAME)
    state = _load_state(state_path)
    files_state = state["files"]
    if state.get("version", 1) < STATE_VERSION:
        # Written before re-runs were superseded and kinds named apart: convert everything again.
        for entry in files_state.values():
            if isinstance(entry, dict):
                entry.update(offset=0, output_size=0)
                entry.pop("lineage", None)
        state["version"] = STATE_VERSION

    unreadable, skipped = [], []
    plan = []
    for rel, kind in sources:
        src = fs.join(logdir, rel)
        problem = logdir_status.entry_problem(src)
        if problem is not None:  # a FIFO would block the open below forever; a link loop cannot be opened
            skipped.append({"file": rel, "offset": None, "reason": problem})
            continue
        try:
            with fs.open_regular(src):
                pass
            size = fs.getsize(src)
        except OSError as e:
            unreadable.append("%s: %s" % (rel, e.strerror or e))
            continue
        entry = files_state.setdefault(rel, {})
        entry["start_offset"] = int(entry.get("offset", 0))
        entry["size_now"] = size
        plan.append((rel, kind, entry))
    by_run = {}
    for item in plan:   # the parts of a rotated run (<run>/part_N) are one run, as in the tab
        by_run.setdefault(_run_of(item[0]), []).append(item)
    plan = []
    for run in sorted(by_run):
        plan.extend(_plan_run(logdir, by_run[run], chunk_bytes))
    total = sum(max(0, entry.pop("size_now") - entry["start_offset"]) for _, _, entry in plan)
    runs_state = state.setdefault("runs", {})

    totals = {"events": 0, "converted_files": 0, "skipped_records": 0, "pending_bytes": 0, "bytes_read": 0,
              "values": {"scalars": 0, "histograms": 0, "images": 0, "tensors": 0, "landscapes": 0, "graphs": 0}}
    warnings = list(skipped)
    bar = _Progress(progress, total, len(plan))
    try:
        for index, (rel, kind, entry) in enumerate(plan, 1):
            src = fs.join(logdir, rel)
            dst_rel = os.path.join(_run_of(rel), output_name(os.path.basename(rel)) + _part_suffix(rel))
            old = entry.get("output")
            if old and old != dst_rel and os.path.isfile(os.path.join(out, old)):
                os.remove(os.path.join(out, old))    # written elsewhere by an older version (a part as its own run)
                entry.update(offset=0, output_size=0)
            entry["output"] = dst_rel
            bar.update(file_index=index)
            file_warnings = []
            try:
                kinds = runs_state.setdefault(_run_of(rel), {}).setdefault("kinds", {})
                for _ in _convert_file(src, os.path.join(out, dst_rel), entry, kind, bar, totals, file_warnings,
                                       chunk_bytes, kinds):
                    _save_state(state_path, _clean_state(state))
            except OSError as e:
                if e.filename and os.path.abspath(e.filename).startswith(out + os.sep):
                    raise ConvertError("cannot write %s: %s" % (e.filename, e.strerror or e))
                unreadable.append("%s: %s" % (rel, e.strerror or e))
            for w in file_warnings:
                w["file"] = fs.relpath(w["file"], logdir)
            warnings.extend(file_warnings)
        _save_state(state_path, _clean_state(state))
    except OSError as e:
        raise ConvertError("cannot write the conversion state in %s: %s" % (out, e.strerror or e))
    finally:
        bar.close()

    result = dict(totals, logdir=logdir, out=out, files=len(sources), warnings=warnings)
    if unreadable:
        more = " (and %d more)" % (len(unreadable) - 1) if len(unreadable) > 1 else ""
        raise ConvertError("could not read %d source file%s: %s%s" % (
            len(unreadable), "s" if len(unreadable) > 1 else "", unreadable[0], more), summary=result)
    return result


def _clean_state(state):
    out = {"version": STATE_VERSION, "files": {}, "runs": state.get("runs", {})}
    for rel, entry in state["files"].items():
        out["files"][rel] = {k: v for k, v in entry.items() if k != "start_offset"}
    return out


# -- command line -------------------------------------------------------------------------------------------------
def add_convert_parser(subparsers):
    """Registers the ``convert`` subcommand on an argparse ``subparsers`` object; its ``func`` returns the exit
    status (0 ok, 1 failure)."""
    p = subparsers.add_parser(
        "convert",
        help="convert MindSpore summary files (*_MS) into TensorBoard event files",
        description="Writes standard TensorBoard event files for every MindSpore summary file (*_MS, *_lineage) "
                    "under LOGDIR: scalars, histograms, images, tensors and loss landscapes, so that TensorBoard's "
                    "own tabs, EventAccumulator and tbparse read them. Re-running converts only what is new. The "
                    "source files are never changed.",
    )
    p.add_argument("logdir", metavar="LOGDIR", help="folder with MindSpore summary files (searched recursively)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output folder, same run folders as LOGDIR (default: LOGDIR_tfevents next to LOGDIR)")
    p.add_argument("--no-progress", action="store_true", help="do not draw the progress bar on stderr")
    p.add_argument("--fold-event-files", action="store_true",
                   help="also write event-file runs that are several folders (rotated part_N folders, add_scalars "
                        "key folders such as mindformers' max_attention_logit/<param>/head_<h>) as one run each, "
                        "for TensorBoard's own tabs")
    p.set_defaults(func=run_convert)
    return p


def run_convert(args):
    prog = getattr(args, "prog_name", "tb-mindspore convert")
    fold = getattr(args, "fold_event_files", False)
    status = 0
    try:
        result = convert(args.logdir, out=args.out, progress=not args.no_progress)
        _report(result, prog)
    except ConvertError as e:
        if not (fold and str(e).startswith("no MindSpore summary files")):
            print("%s: error: %s" % (prog, e), file=sys.stderr)
            if e.summary is not None:
                _report(e.summary, prog)
            return 1
    if fold:
        logdir = os.path.abspath(os.path.expanduser(args.logdir))
        out = default_out(logdir) if args.out is None else os.path.abspath(os.path.expanduser(args.out))
        if fs.is_remote(args.logdir) or not os.path.isdir(logdir):
            print("%s: error: --fold-event-files reads a local folder, not %s" % (prog, args.logdir), file=sys.stderr)
            return 1
        try:
            folded = fold_event_files(logdir, out)
        except OSError as e:
            print("%s: error: %s" % (prog, e), file=sys.stderr)
            return 1
        print("%s: %d run(s) of several folders written as one each (%d files, %d events) -> %s" % (
            prog, len(folded["runs"]), folded["files"], folded["events"], out))
        if folded["skipped_records"]:
            print("%s: warning: %d damaged records skipped" % (prog, folded["skipped_records"]), file=sys.stderr)
    return status


def _report(result, prog):
    values = result["values"]
    kinds = ", ".join("%d %s" % (n, k) for k, n in values.items() if n)
    print("%s: %d of %d files had new records: %d events (%s) -> %s" % (
        prog, result["converted_files"], result["files"], result["events"], kinds or "nothing new", result["out"]))
    for w in result["warnings"][:MAX_LISTED_WARNINGS]:
        where = "" if w["offset"] is None else " at byte %d" % w["offset"]
        print("%s: warning: %s%s: %s" % (prog, w["file"], where, w["reason"]), file=sys.stderr)
    if len(result["warnings"]) > MAX_LISTED_WARNINGS:
        print("%s: warning: %d more warnings" % (prog, len(result["warnings"]) - MAX_LISTED_WARNINGS),
              file=sys.stderr)
    if result["pending_bytes"]:
        print("%s: note: %d bytes at the end of a file are an unfinished record; run again later to convert them"
              % (prog, result["pending_bytes"]), file=sys.stderr)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tb-mindspore")
    add_convert_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
