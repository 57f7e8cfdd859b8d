"""Incremental, corruption-tolerant reading of MindSpore's summary files (``*_MS``) and lineage files (``*_lineage``).

``SummaryRecord`` and ``SummaryCollector`` write ``<prefix>.out.events.summary.<time>.<device>.<host><suffix>``
(default prefix ``events``, suffix ``_MS``) and a ``..._lineage`` twin. Both use TFRecord framing
(``u64 length | masked crc32c(length) | payload | masked crc32c(payload)``); the payload is MindSpore's ``Event``
(summary files) or ``LineageEvent`` (lineage files), see ``ms_proto``. Nothing here imports MindSpore. The
records are split by the one record reader, ``io/records.scan``; this module adds files: pieces, refusals, replacement.

:class:`MsFile` reads one file from where it stopped last time:

* A record cut off at the end (the writer has not finished it) is left for the next call, never reported.
* A record whose payload checksum is wrong, or whose payload does not decode, is skipped and reported as a
  problem ``(offset, reason)``; reading goes on with the next record.
* A record whose length checksum is wrong loses the framing: the reader reports it once, then searches forward for
  the next position that holds a valid record and resumes there (the bytes in between are reported as skipped).
* Reading never raises on file contents; an unreadable file (permissions, vanished) is reported once and retried.
* Only regular files are opened (without blocking): a FIFO, socket or device named like a summary file is reported
  once and never read; a symbolic link loop is reported as unreadable.
* A file replaced in place (another inode, shorter than what was read, or other first bytes) is read again from
  the start: ``restarts`` counts it, so the caller can drop what it kept from the old file. A vanished file sets
  ``gone``.

The decoding helpers (:func:`histogram_buckets`, :func:`tensor_array`, :func:`landscape_dict`,
:func:`lineage_update`) turn the messages into plain Python / numpy values; ``ms_logdir.MsLogdir`` and
``convert`` build on them.
"""

import errno
import json
import os
import stat
import struct

import google_crc32c
import numpy as np
from google.protobuf.message import DecodeError

from ..io import fs, ms_proto
from ..io.records import FOOTER_BYTES, HEADER_BYTES, masked, scan

SUMMARY_MARK = ".out.events.summary."
LINEAGE_SUFFIX = "_lineage"
# Problems kept per file; later ones are only counted.
MAX_PROBLEMS_PER_FILE = 50
# A record larger than this is checked in chunks of this size before its payload is read (a hostile length then
# costs no memory), and is read once into its own buffer.
LARGE_RECORD_BYTES = 8 << 20
# A local file is read in pieces of this size (see MsFile.read_payloads).
READ_PIECE = 1 << 20
_U32 = struct.Struct("<I").unpack_from
# First bytes of a file remembered to notice that it was replaced in place (its version record holds a wall time).
HEAD_BYTES = 64



def file_kind(name):
    """``"summary"``, ``"lineage"`` or ``None`` for a file name (not a path)."""
    if SUMMARY_MARK not in name:
        return None
    if name.endswith(LINEAGE_SUFFIX):
        return "lineage"
    return "summary"


class MsFile:
    """Incremental reader of one ``_MS`` or ``_lineage`` file.

    Attributes: ``path``, ``kind`` (``"summary"`` / ``"lineage"``), ``offset`` (bytes done with), ``records`` (good
    records read), ``skipped`` (records or regions skipped), ``problems`` (first ``MAX_PROBLEMS_PER_FILE`` of
    ``(offset, reason)``), ``problem_count`` (all of them), ``pending`` (bytes of an incomplete record at the end),
    ``size`` (file size at the last look).
    """

    def __init__(self, path, kind=None):
        self.path = path
        self.kind = kind or file_kind(os.path.basename(path)) or "summary"
        self.offset = 0
        self.records = 0
        self.skipped = 0
        self.problems = []
        self.problem_count = 0
        self.pending = 0
        self.size = 0
        self.restarts = 0        # times the file was found replaced and read again from the start
        self.gone = False        # the path no longer exists
        self._resyncing = False
        self._io_error = None
        self._identity = None    # (st_dev, st_ino) of the file read so far
        self._head = b""         # its first HEAD_BYTES bytes
        self._mtime = None
        self._irregular = None

    def problem(self, offset, reason):
        self.problem_count += 1
        if not reason.startswith("resynchronized"):
            self.skipped += 1
        if len(self.problems) < MAX_PROBLEMS_PER_FILE:
            self.problems.append((offset, reason))

    def _stat(self):
        """``os.stat`` of the file, or None (reported once) when it is missing, unreadable or not a regular file."""
        try:
            st = fs.stat(self.path)
        except OSError as e:
            self.gone = isinstance(e, FileNotFoundError) and not fs.islink(self.path)
            self._report_io(e)
            return None
        self.gone = False
        if not stat.S_ISREG(st.st_mode):
            what = _file_type(st.st_mode)
            if self._irregular != what:
                self._irregular = what
                self.problem(0, "not a regular file (%s); never read" % what)
                self.skipped -= 1
            return None
        self._irregular = None
        return st

    def stat_size(self):
        """The file's current size (also kept in ``size``); a failure is reported once, like a read failure. A file
        found replaced (see the module doc) is restarted here already, so that its new bytes count as unread."""
        st = self._stat()
        if st is not None:
            if self._identity is not None and self.offset > 0:
                changed = st.st_mtime_ns != self._mtime and st.st_size <= self.offset
                if (st.st_dev, st.st_ino) != self._identity or st.st_size < self.offset or changed:
                    try:
                        with _open_regular(self.path) as f:
                            self._check_identity(fs.fstat(f), f)
                    except OSError as e:
                        self._report_io(e)
            self.size = st.st_size
        return self.size

    def _restart(self, why):
        """The file was replaced: forget the old one and read the new one from the start."""
        self.problem(self.offset, "file replaced (%s); read again from the start" % why)
        self.skipped -= 1
        self.restarts += 1
        self.offset = 0
        self.pending = 0
        self._resyncing = False
        self._identity = None
        self._head = b""

    def _check_identity(self, st, f):
        """Notices a replaced file: another inode, shorter than what was read, or other first bytes."""
        identity = (st.st_dev, st.st_ino)
        if self._identity is not None and self.offset > 0:
            if identity != self._identity:
                self._restart("new inode")
            elif st.st_size < self.offset:
                self._restart("shrank from %d to %d bytes" % (self.offset, st.st_size))
            elif self._head:
                f.seek(0)
                if f.read(len(self._head)) != self._head:
                    self._restart("its first bytes changed")
        self._identity = identity
        self._mtime = st.st_mtime_ns
        if len(self._head) < HEAD_BYTES and st.st_size > len(self._head):
            f.seek(0)
            self._head = f.read(HEAD_BYTES)

    def has_unread(self):
        """Whether complete records (or bytes still to search, after damage) may wait past ``offset``."""
        if self.pending:
            return self.size - self.offset > self.pending
        slack = HEADER_BYTES - 1 if self._resyncing else 0
        return self.size - self.offset > slack

    def read_payloads(self, max_bytes):
        """Reads up to about ``max_bytes`` new bytes; returns ``(payloads, offsets, bytes_read)``.

        A local file is read in pieces of at most ``READ_PIECE`` bytes (what a read holds in memory at once, so a
        huge or hostile file costs a piece, never its size, and no large buffer lingers in the allocator's heap);
        a remote one in one byte range. A single record larger than a piece is still read whole. Problems are
        recorded on the object.
        """
        if self._stat() is None:
            return [], [], 0
        payloads, offsets, nread = [], [], 0
        budget = max(int(max_bytes), HEADER_BYTES)
        piece = budget if fs.is_remote(self.path) else min(budget, READ_PIECE)
        try:
            with _open_regular(self.path) as f:
                st = fs.fstat(f)
                if not stat.S_ISREG(st.st_mode):    # swapped for something else since the stat
                    return [], [], 0
                self._check_identity(st, f)
                size = self.size = st.st_size
                while self.offset < size and nread < budget:
                    want = min(size - self.offset, piece, max(budget - nread, HEADER_BYTES))
                    f.seek(self.offset)
                    buf = f.read(want)
                    res = scan(buf, self.offset, self._resyncing)
                    if res.consumed == 0 and res.need > len(buf) and self.offset + res.need <= size:
                        # One record larger than the piece, and the file holds all of it.
                        if payloads:
                            break                    # the next call reads it
                        if res.need > LARGE_RECORD_BYTES and not self._resyncing:
                            return self._read_large(f, res.need, size)
                        f.seek(self.offset)
                        buf = f.read(res.need)
                        res = scan(buf, self.offset, self._resyncing)
                    nread += len(buf)
                    self._take(res, size, reached_end=self.offset + len(buf) >= size)
                    payloads += res.payloads
                    offsets += res.offsets
                    if res.consumed == 0 or self.pending:
                        break
        except OSError as e:
            self._report_io(e)
            return payloads, offsets, nread
        self._io_error = None
        return payloads, offsets, nread

    def _take(self, res, size, reached_end):
        """Moves past what a scan consumed, recording its problems."""
        for offset, reason in res.problems:
            self.problem(offset, reason)
        self._resyncing = res.resyncing
        self.offset += res.consumed
        # An incomplete record counts as pending only when it is the file's last one (not the end of a piece).
        self.pending = size - self.offset if res.need and reached_end else 0
        self.records += len(res.payloads)

    def _read_large(self, f, total, size):
        """One record of ``total`` bytes (header and footer included) at ``offset``, its length checksum good: the
        payload checksum is computed chunk by chunk first, so a hostile length costs no memory; only a good payload
        is then read, into one buffer."""
        n = total - HEADER_BYTES - FOOTER_BYTES
        start = self.offset + HEADER_BYTES
        f.seek(start)
        crc, left = 0, n
        while left > 0:
            chunk = f.read(min(left, LARGE_RECORD_BYTES))
            if not chunk:
                return [], [], 0
            crc = google_crc32c.extend(crc, chunk)
            left -= len(chunk)
        footer = f.read(FOOTER_BYTES)
        self._io_error = None
        payloads, offsets = [], []
        if len(footer) == FOOTER_BYTES and masked(crc) == _U32(footer, 0)[0]:
            f.seek(start)
            payloads, offsets = [f.read(n)], [self.offset]
            self.records += 1
        else:
            self.problem(self.offset, "bad payload checksum; record skipped")
        self.offset += total
        self.pending = 0
        return payloads, offsets, total

    def _report_io(self, error):
        text = "%s: %s" % (type(error).__name__, error.strerror or error)
        if self._io_error != text:
            self._io_error = text
            if getattr(error, "errno", None) == errno.ELOOP:
                self.problem(self.offset, "symbolic link loop; never read")
            else:
                self.problem(self.offset, "cannot read file (%s); will retry" % text)
            self.skipped -= 1  # nothing was skipped, only delayed

    def read_events(self, max_bytes):
        """Like :meth:`read_payloads` but decoded: returns ``(events, bytes_read)``, events as ``(offset, message)``.

        Payloads that do not decode are recorded as problems and left out.
        """
        payloads, offsets, nread = self.read_payloads(max_bytes)
        cls = ms_proto.LineageEvent if self.kind == "lineage" else ms_proto.Event
        parse = cls.FromString
        events = []
        for offset, data in zip(offsets, payloads):
            try:
                events.append((offset, parse(data)))
            except (DecodeError, RuntimeError, ValueError) as e:
                self.problem(offset, "undecodable payload (%s); record skipped" % _short(e))
        return events, nread


def _open_regular(path):
    """Opens ``path`` for reading without blocking on a FIFO (the caller checks ``fstat`` before reading); a URL
    through ``fs`` (each read one byte range)."""
    return fs.open_regular(path)


def _file_type(mode):
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "unknown file type"


def _short(error):
    text = str(error) or type(error).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def decode_tag(raw):
    return raw.decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------------------------
# Value decoding (messages -> plain values)

def histogram_buckets(histogram):
    """TensorBoard's bucket list ``[[left, right, count], ...]`` (floats) of a MindSpore ``Summary.Histogram``."""
    return [[b.left, b.left + b.width, float(b.count)] for b in histogram.buckets]


def histogram_stats(histogram):
    """What TensorBoard's format has no place for: non-finite counts and exact min / max / sum / count."""
    return {
        "count": histogram.count, "min": histogram.min, "max": histogram.max, "sum": histogram.sum,
        "nan_count": histogram.nan_count, "pos_inf_count": histogram.pos_inf_count,
        "neg_inf_count": histogram.neg_inf_count,
    }


# MindSpore DataType code -> numpy dtype (for raw_data and for the result's dtype).
_NP_TYPES = {
    1: np.bool_, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint8, 7: np.uint16, 8: np.uint32,
    9: np.uint64, 10: np.float16, 11: np.float32, 12: np.float64, 43: np.complex64, 44: np.complex128,
}


def tensor_array(tensor):
    """A numpy array for a MindSpore ``TensorProto`` (shape from ``dims`` when the element count agrees).

    MindSpore stores every summary tensor's values in ``float_data`` whatever its ``data_type``; other value fields
    are used when present. The dtype follows ``data_type`` where it is numeric, else float32.
    """
    dtype = _NP_TYPES.get(tensor.data_type)
    if tensor.raw_data and dtype is not None:
        size = np.dtype(dtype).itemsize
        raw = tensor.raw_data[:len(tensor.raw_data) // size * size]
        values = np.frombuffer(raw, dtype=dtype).copy()
    elif len(tensor.float_data):
        values = np.array(tensor.float_data, dtype=np.float32)
    elif len(tensor.double_data):
        values = np.array(tensor.double_data, dtype=np.float64)
    elif len(tensor.int64_data):
        values = np.array(tensor.int64_data, dtype=np.int64)
    elif len(tensor.int32_data):
        values = np.array(tensor.int32_data, dtype=np.int32)
    elif len(tensor.uint64_data):
        values = np.array(tensor.uint64_data, dtype=np.uint64)
    else:
        values = np.zeros(0, dtype=np.float32)
    if dtype is not None and values.dtype != dtype:
        # NaN / Inf cannot become integers: such a tensor keeps its float values.
        if not (values.dtype.kind == "f" and np.dtype(dtype).kind in "iub" and not np.all(np.isfinite(values))):
            values = values.astype(dtype)
    dims = [int(d) for d in tensor.dims]
    if dims and all(d >= 0 for d in dims) and int(np.prod(dims, dtype=np.int64)) == values.size:
        values = values.reshape(dims)
    elif not dims and values.size == 1:
        values = values.reshape(())
    return values


def _point(point):
    if point is None:
        return None
    return {axis: tensor_array(getattr(point, axis)).tolist() for axis in ("x", "y", "z")}


def landscape_dict(msg):
    """A ``LossLandscape`` message as plain Python values (the format ``summary.landscape`` writes too)::

        {"landscape": {"x": [...], "y": [...], "z": [[...], ...]},        # z: len(y) rows of len(x) losses
         "loss_path": {"intervals": [...], "x": [...], "y": [...], "z": [...]} or None,
         "convergence_point": {"x": [...], "y": [...], "z": [...]} or None,
         "metadata": {"decomposition": "PCA", "unit": "step", "step_per_epoch": 1}}
    """
    out = {
        "landscape": _point(msg.landscape) if msg.HasField("landscape") else None,
        "loss_path": None,
        "convergence_point": _point(msg.convergence_point) if msg.HasField("convergence_point") else None,
        "metadata": {
            "decomposition": decode_tag(msg.metadata.decomposition),
            "unit": decode_tag(msg.metadata.unit),
            "step_per_epoch": int(msg.metadata.step_per_epoch),
        },
    }
    if msg.HasField("loss_path"):
        path = _point(msg.loss_path.points) if msg.loss_path.HasField("points") else {"x": [], "y": [], "z": []}
        path["intervals"] = [int(i) for i in msg.loss_path.intervals]
        out["loss_path"] = path
    return out


# ---------------------------------------------------------------------------------------------------------------
# Lineage

def _text(value):
    """A proto2 string field holding invalid UTF-8 comes back as bytes; make it text."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _user_info(info, out):
    for key, value in info.map_str.items():
        out[key] = value
    for key, value in info.map_int32.items():
        out[key] = int(value)
    for key, value in info.map_double.items():
        out[key] = float(value)
    for key, value in info.map_dict.items():
        nested = {}
        _user_info(value, nested)
        out[key] = nested
    for child in info.user_info:
        _user_info(child, out)


def lineage_update(lineage, event):
    """Merges one ``LineageEvent`` into ``lineage`` (a dict, changed in place). May raise on damaged data.

    Keys: ``hparams`` (flat name -> value: optimizer, learning_rate, loss_function, epoch, batch_size,
    parallel_mode, device_num, train_dataset_size, train_dataset_path, network, loss, model_path, model_size,
    eval metrics as ``metric/<name>``, valid_dataset_*, plus every user-defined key), ``user`` (the user-defined
    data as given), ``wall_time`` (last update). The dataset pipeline is decoded by ``ms_lineage.lineage_update``.
    """
    which = event.WhichOneof("what")
    hp = lineage.setdefault("hparams", {})
    lineage["wall_time"] = event.wall_time
    if which == "train_lineage":
        t = event.train_lineage
        if t.HasField("hyper_parameters"):
            h = t.hyper_parameters
            for name in ("optimizer", "loss_function", "parallel_mode"):
                if h.HasField(name):
                    hp[name] = _text(getattr(h, name))
            for name in ("learning_rate",):
                if h.HasField(name):
                    hp[name] = float(getattr(h, name))
            for name in ("epoch", "device_num", "batch_size"):
                if h.HasField(name):
                    hp[name] = int(getattr(h, name))
        if t.HasField("train_dataset"):
            if t.train_dataset.HasField("train_dataset_path"):
                hp["train_dataset_path"] = _text(t.train_dataset.train_dataset_path)
            if t.train_dataset.HasField("train_dataset_size"):
                hp["train_dataset_size"] = int(t.train_dataset.train_dataset_size)
        if t.HasField("algorithm"):
            if t.algorithm.HasField("network"):
                hp["network"] = _text(t.algorithm.network)
            if t.algorithm.HasField("loss"):
                hp["loss"] = float(t.algorithm.loss)
        if t.HasField("model"):
            if t.model.HasField("path"):
                hp["model_path"] = _text(t.model.path)
            if t.model.HasField("size"):
                hp["model_size"] = int(t.model.size)
    elif which == "evaluation_lineage":
        e = event.evaluation_lineage
        if e.HasField("metric"):
            try:
                metrics = json.loads(_text(e.metric))
            except ValueError:
                metrics = None
            if isinstance(metrics, dict):
                for key, value in metrics.items():
                    hp["metric/%s" % key] = value
            else:
                hp["metric"] = _text(e.metric)
        if e.HasField("valid_dataset"):
            if e.valid_dataset.HasField("valid_dataset_path"):
                hp["valid_dataset_path"] = _text(e.valid_dataset.valid_dataset_path)
            if e.valid_dataset.HasField("valid_dataset_size"):
                hp["valid_dataset_size"] = int(e.valid_dataset.valid_dataset_size)
    elif which == "user_defined_info":
        user = lineage.setdefault("user", {})
        _user_info(event.user_defined_info, user)
        for key, value in user.items():
            if not isinstance(value, dict):
                hp[key] = value
    return lineage
