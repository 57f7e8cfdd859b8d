"""The ranks of one cluster read from disk and aligned: per-rank readers (rank files, rank folders of event files)
and :class:`ClusterData`, whose ranks x steps matrices are built per field on first use.

Every file is read incrementally (from the byte where the previous read stopped; a replaced or shortened file is
read again from its start), so a live 1,024-rank job costs one ``stat`` per file when nothing changed. Matrices are
aligned on the union of the ranks' recorded steps; a rank with no row at a step has a *missing* cell there (a hung
or dead rank's row simply ends). FIFOs and other non-regular files are never opened.
"""

import itertools
import os
import stat
import threading
import time
from collections.abc import Mapping

import numpy as np

from .. import metadata
from ..contract import rank_file
from ..io.records import RecordFile

SOURCE_RANK_FILES = "rank_files"
SOURCE_RANK_FOLDERS = "rank_folders"
_READ_CHUNK = 1 << 20          # bytes of a rank file read at once
_READ_BUDGET = 64 << 20        # bytes of a rank file read per reload
MAX_KEPT_STEPS = 100_000       # rows kept per rank (the newest): 5x what the view's widest matrix shows
_FIELDS = frozenset(metadata.RANK_FIELDS)

# Scalar tags of rank folders that carry each field (ours first, then mindformers' and plain names).
FOLDER_TAGS = {
    "loss": (metadata.LOSS, "loss", "train/loss", "local_loss"),
    "grad_norm": (metadata.GRAD_NORM, "grad-norm", "grad_norm", "global_norm", "train/grad_norm"),
    "step_time_ms": (metadata.STEP_TIME_MS, "step_time_ms", "step-time", "step_time", "train/step_time_ms",
                     "iteration-time"),
    "data_wait_ms": (metadata.DATA_WAIT_MS, "data_wait_ms", "data/wait_ms"),
    "host_memory_mb": (metadata.HOST_MEMORY_MB,),
    "device_memory_mb": (metadata.DEVICE_MEMORY_MB,),
    # mindformers' per-device values (TrainingStateMonitor): this device's own loss and gradient norm.
    "local_loss": ("local_lm_loss", "device_accum_local_lm_loss"),
    "local_grad_norm": ("device_local_norm",),
}
_TAG_FIELD = {tag: field for field, tags in FOLDER_TAGS.items() for tag in tags}
_IDS = itertools.count(1)


# ---------------------------------------------------------------------------------------------------------------
# One rank
class _Rank:
    """Rows of one rank as read so far: ``steps``, ``walls``, ``values[field]`` (float32), plus its header."""

    def __init__(self, rank, path):
        self.rank = rank
        self.path = path
        self.header = {}
        self.host = ""
        self.local_rank = None
        self.error = None
        self.refused = None    # why the file cannot be read at all (its header), or None
        self.rejected = {"all_zero": 0, "bad_step": 0, "bad_wall_time": 0}   # records left out, by reason
        self.dropped = 0       # older rows let go to keep at most MAX_KEPT_STEPS
        self.bytes_read = 0    # bytes read from disk so far, all reads together (what a reload costs)
        self._read_once = False
        self._chunks = []
        self._arrays = None
        self._stamp = None

    def stamp(self):
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            self.error = "not a regular file"
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def pending(self):
        """Whether the last read stopped before the end of what is there (``reload`` goes on from there)."""
        return self._stamp is None and self.refused is None and self.error is None and self._read_once

    def progress(self):
        """Bytes read so far (to tell a read that went on from one that could not)."""
        return 0

    def problems(self):
        """``[reason]``: why the rank is not shown whole (refused, records left out, rows let go, unreadable)."""
        out = []
        if self.refused:
            out.append("refused: %s" % self.refused)
        what = {"all_zero": "all zero bytes", "bad_step": "an impossible step (negative or above 2^53)",
                "bad_wall_time": "an impossible wall time (not finite, or not after 1970)"}
        for reason, n in self.rejected.items():
            if n:
                out.append("%d record%s left out: %s" % (n, "" if n == 1 else "s", what[reason]))
        if self.dropped:
            out.append("%d older rows let go (at most %d are kept per rank)" % (self.dropped, MAX_KEPT_STEPS))
        if self.error:
            out.append("cannot be read: %s" % self.error)
        return out

    def nonfinite(self, field):
        """How many values of ``field`` in :meth:`arrays` are NaN or infinite, or None when not known without
        looking at every one."""
        return None

    def state(self):
        """This rank as it is now (:class:`RankState`), unchanged by later reloads."""
        return RankState(self, self.arrays(), self.nonfinite)

    def arrays(self):
        """``(steps int64, walls float64, {field: float32})`` sorted by step; a step written twice keeps its last
        row (a re-run into the same run folder)."""
        if self._arrays is None:
            self._arrays = self._build()
        return self._arrays

    def _set(self, steps, walls, columns):
        steps = np.asarray(steps, dtype=np.int64)
        if steps.size and not (steps.size < 2 or bool(np.all(steps[1:] > steps[:-1]))):
            # last occurrence of each step wins
            rev = steps[::-1]
            _, first_rev = np.unique(rev, return_index=True)
            keep = steps.size - 1 - first_rev
            steps = steps[keep]
            walls = np.asarray(walls, dtype=np.float64)[keep]
            columns = {k: np.asarray(v, dtype=np.float32)[keep] for k, v in columns.items()}
        return steps, np.asarray(walls, dtype=np.float64), columns


class _RankFile(_Rank):
    """A ``rank<k>.tbmsrank`` file, read from where the previous read stopped, in chunks of ``_READ_CHUNK`` bytes
    (at most ``_READ_BUDGET`` per reload), so a huge file costs a chunk of memory, not its size. Records that cannot
    have been written are left out and counted (``rejected``); at most ``MAX_KEPT_STEPS`` rows are kept, the newest
    (``dropped`` counts the older ones let go). A header this version cannot read makes the file ``refused``.

    The rows are held in one buffer with room for ``MAX_KEPT_STEPS`` plus an eighth: new rows are copied in after
    the others, and :meth:`arrays` gives views of the newest ``MAX_KEPT_STEPS`` (rows before the end of a buffer are
    never written again, so a view stays what it was); only when the buffer is full are the newest rows moved into a
    new one. A reload that appended 1,000 rows thus costs those rows, not the 100,000 held."""

    def __init__(self, rank, path):
        super().__init__(rank, path)
        self._offset = 0
        self._dtype = None
        self._buf = None       # the rows held: self._buf[:self._n]
        self._n = 0
        self._let_go = 0       # rows let go when the buffer was full
        self._in_order = True  # steps strictly increasing over the rows held (no step written twice)
        self._bad = {}         # field -> NaN or infinite values among the rows held (counted as they come)
        self._hidden_bad = {}  # (field, rows held, _bad[field]) -> nonfinite(field), worked out once

    def _reset(self):
        self._offset, self._dtype, self.header, self._arrays = 0, None, {}, None
        self._buf, self._n, self._let_go, self._in_order, self._bad, self._hidden_bad = None, 0, 0, True, {}, {}
        self.refused = None
        self.rejected = dict.fromkeys(self.rejected, 0)
        self.dropped = 0

    def reload(self):
        stamp = self.stamp()
        if stamp is None or stamp == self._stamp:
            return False
        old = self._stamp
        reset = old is not None and (stamp[0] != old[0] or stamp[1] < old[1])
        if reset or self.refused is not None:
            self._reset()
        self._stamp = stamp
        self._read_once = True
        changed = reset
        try:
            with open(self.path, "rb") as f:
                if self._dtype is None:
                    head = f.read(rank_file.MAX_HEADER_BYTES + 64)
                    self.bytes_read += len(head)
                    try:
                        header, start = rank_file.parse_header(head)
                    except ValueError as e:        # RankFileError, or a header whose JSON is refused
                        self.refused = str(e)[:300]
                        return True
                    if header is None:
                        self._stamp = None
                        return changed
                    self.header = header
                    self.host = str(header.get("host") or "")
                    lr = header.get("local_rank")
                    self.local_rank = lr if isinstance(lr, int) and not isinstance(lr, bool) else None
                    self._dtype = rank_file.record_dtype(header["fields"])
                    self._offset = start
                f.seek(self._offset)
                size = max(0, stamp[1] - self._offset)
                size -= size % self._dtype.itemsize
                budget = min(size, _READ_BUDGET)
                self._reserve(self._n + budget // self._dtype.itemsize)
                chunk_bytes = max(self._dtype.itemsize, _READ_CHUNK - _READ_CHUNK % self._dtype.itemsize)
                done = 0
                while done < budget:
                    data = f.read(min(budget - done, chunk_bytes))
                    if not data:
                        break
                    self.bytes_read += len(data)
                    records, used = rank_file.parse_records(data, self._dtype, 0)
                    done += used
                    self._offset += used
                    if self._add(records):
                        changed = True
                    if used < len(data):
                        break
        except OSError as e:
            self.error = str(e)[:200]
            return changed
        self.error = None
        if done < size:
            self._stamp = None      # more to read next time
        return changed

    def progress(self):
        return self._offset

    def _capacity(self):
        return MAX_KEPT_STEPS + max(1, MAX_KEPT_STEPS // 8)

    def _reserve(self, rows):
        """Room for ``rows`` rows (at most the buffer's full size) without moving the rows held again soon."""
        rows = min(rows, self._capacity())
        if self._buf is not None and self._buf.size >= rows:
            return
        # an eighth more than asked for: the rows appended next fit without moving the others
        size = min(self._capacity(), max(rows + rows // 8, 1024, 0 if self._buf is None else 2 * self._buf.size))
        buf = np.empty(size, dtype=self._dtype)
        if self._n:
            buf[:self._n] = self._buf[:self._n]
        self._buf = buf

    def _add(self, records):
        """Keeps the ``records`` that can have been written, after the rows held (at most ``MAX_KEPT_STEPS`` of
        them are shown, the newest)."""
        good, counts = rank_file.check_records(records)
        for reason, n in counts.items():
            self.rejected[reason] += n
        if not good.size:
            return False
        steps = good["step"]
        if self._in_order and not ((self._n == 0 or int(steps[0]) > int(self._buf[self._n - 1]["step"]))
                                   and (steps.size < 2 or bool(np.all(steps[1:] > steps[:-1])))):
            self._in_order = False
        if self._n + good.size > self._capacity():      # full: the newest rows move into a new buffer
            held = self._buf[:self._n]
            drop = max(0, self._n + good.size - MAX_KEPT_STEPS)
            from_held = min(drop, self._n)
            self._let_go += drop
            held, good = held[from_held:], good[drop - from_held:]
            buf = np.empty(self._capacity(), dtype=self._dtype)
            buf[:held.size] = held
            self._buf, self._n = buf, held.size
            self._bad = _count_nonfinite(held)
        elif self._buf is None or self._n + good.size > self._buf.size:
            self._reserve(self._n + good.size)
        self._buf[self._n:self._n + good.size] = good
        self._n += good.size
        for f, n in _count_nonfinite(good).items():
            self._bad[f] = self._bad.get(f, 0) + n
        self._arrays, self._hidden_bad = None, {}
        return True

    def nonfinite(self, field):
        return _nonfinite(field, self._in_order, self._bad, self._n, self._buf, self._hidden_bad)

    def state(self):
        # rows [0, n) of the buffer are never written again: the state reads them as they are now
        in_order, bad, n, buf, hidden_bad = self._in_order, dict(self._bad), self._n, self._buf, self._hidden_bad
        return RankState(self, self.arrays(),
                         lambda field: _nonfinite(field, in_order, bad, n, buf, hidden_bad))

    def _build(self):
        self.dropped = self._let_go + max(0, self._n - MAX_KEPT_STEPS)
        if not self._n:
            return self._set([], [], {})
        rec = self._buf[max(0, self._n - MAX_KEPT_STEPS):self._n]       # views: no copy
        fields = [n for n in rec.dtype.names[2:] if n in _FIELDS]
        columns = {f: rec[f] for f in fields}
        if self._in_order:
            return rec["step"], rec["wall_time"], columns
        return self._set(rec["step"], rec["wall_time"], columns)


class _RankFolder(_Rank):
    """A folder of TensorBoard event files of one rank: the scalars of :data:`FOLDER_TAGS`, read incrementally with
    the plugin's record reader (``io/records.RecordFile``: damaged records skipped, at most ``_READ_BUDGET`` bytes per
    reload in chunks), at most ``MAX_KEPT_STEPS`` points per field kept (the newest)."""

    def __init__(self, rank, path):
        super().__init__(rank, path)
        self._files = {}       # name -> RecordFile
        self._points = {}      # field -> ([steps], [walls], [values])

    def stamp(self):
        out = []
        try:
            for entry in os.scandir(self.path):
                if "tfevents" in entry.name and entry.is_file():
                    st = entry.stat()
                    out.append((entry.name, st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            return None
        return tuple(sorted(out))

    def progress(self):
        return sum(mf.offset for mf in self._files.values())

    def reload(self):
        from tensorboard.compat.proto import event_pb2   # lazy: start-up cost (only rank folders need it)

        stamp = self.stamp()
        if stamp is None or stamp == self._stamp:
            return False
        self._stamp = stamp
        self._read_once = True
        changed = False
        names = [name for name, _, _, _ in stamp]
        if set(self._files) - set(names) or any(mf.restarts for mf in self._files.values()):
            # a file replaced, shortened or removed: read the folder again from the start
            self._files, self._points, self._arrays, changed = {}, {}, None, True
        budget = _READ_BUDGET
        for name in names:
            mf = self._files.get(name)
            if mf is None:
                mf = self._files[name] = RecordFile(os.path.join(self.path, name))
            while budget > 0 and mf.stat_size() > mf.offset and mf.has_unread():
                payloads, _, nread = mf.read_payloads(min(budget, _READ_CHUNK))
                budget -= max(nread, 1)
                self.bytes_read += nread
                if mf.restarts:
                    self._stamp = None
                    return changed
                for data in payloads:
                    try:
                        event = event_pb2.Event.FromString(data)
                    except Exception:
                        continue
                    if not event.HasField("summary"):
                        continue
                    for value in event.summary.value:
                        field = _TAG_FIELD.get(value.tag)
                        if field is None:
                            continue
                        number = _scalar_of(value)
                        if number is None:
                            continue
                        s, w, v = self._points.setdefault(field, ([], [], []))
                        s.append(event.step)
                        w.append(event.wall_time)
                        v.append(number)
                        changed = True
                        if len(s) > MAX_KEPT_STEPS + MAX_KEPT_STEPS // 4:
                            self.dropped += len(s) - MAX_KEPT_STEPS
                            del s[:-MAX_KEPT_STEPS], w[:-MAX_KEPT_STEPS], v[:-MAX_KEPT_STEPS]
                if not nread:
                    break
            if mf.has_unread():
                self._stamp = None      # more to read next time
        problems = [p for mf in self._files.values() for p in mf.problems]
        self.error = "; ".join("%s at byte %d" % (reason, off) for off, reason in problems[:3]) or None
        if changed:
            self._arrays = None
        return changed

    def _build(self):
        if not self._points:
            return self._set([], [], {})
        steps = np.unique(np.concatenate([np.asarray(s, dtype=np.int64) for s, _, _ in self._points.values()]))
        walls = np.full(steps.size, np.nan)
        columns = {}
        for field, (s, w, v) in self._points.items():
            s = np.asarray(s, dtype=np.int64)
            # last value written for a step wins
            rev = s[::-1]
            uniq, first_rev = np.unique(rev, return_index=True)
            keep = s.size - 1 - first_rev
            col = np.full(steps.size, np.nan, dtype=np.float32)
            idx = np.searchsorted(steps, uniq)
            col[idx] = np.asarray(v, dtype=np.float32)[keep]
            walls[idx] = np.fmax(walls[idx], np.asarray(w, dtype=np.float64)[keep])
            columns[field] = col
        return steps, walls, columns


def _nonfinite(field, in_order, bad, n, buf, cache):
    """:meth:`_RankFile.nonfinite` over the rows ``buf[:n]`` with ``bad`` NaN or infinite values of each field
    among them; ``cache``: where the count among the rows before the newest ``MAX_KEPT_STEPS`` is kept."""
    if not in_order or field not in bad:
        return None
    hidden = max(0, n - MAX_KEPT_STEPS)      # rows held before the newest MAX_KEPT_STEPS
    if not hidden:
        return bad[field]
    key = (field, n, bad[field])
    got = cache.get(key)
    if got is None:
        got = cache[key] = bad[field] - int(np.count_nonzero(~np.isfinite(buf[field][:hidden])))
    return got


class RankState:
    """One rank as a :class:`ClusterView` saw it: ``rank``, ``path``, ``host``, ``local_rank``, ``header``,
    :meth:`arrays` and :meth:`nonfinite` as the rank's were then (later reloads leave them as they are)."""

    __slots__ = ("rank", "path", "host", "local_rank", "header", "_arrays", "_nonfinite")

    def __init__(self, rank, arrays, nonfinite):
        self.rank, self.path, self.host = rank.rank, rank.path, rank.host
        self.local_rank, self.header = rank.local_rank, rank.header
        self._arrays, self._nonfinite = arrays, nonfinite

    def arrays(self):
        return self._arrays

    def nonfinite(self, field):
        return self._nonfinite(field)


def _count_nonfinite(records):
    """``{field: NaN or infinite values}`` of the value fields of ``records``."""
    return {f: int(np.count_nonzero(~np.isfinite(records[f]))) for f in records.dtype.names[2:] if f in _FIELDS}


def _scalar_of(value):
    if value.HasField("simple_value"):
        return float(value.simple_value)
    if value.HasField("tensor"):
        t = value.tensor
        if t.float_val:
            return float(t.float_val[0])
        if t.double_val:
            return float(t.double_val[0])
        if t.tensor_content and t.dtype in (1, 2):
            arr = np.frombuffer(t.tensor_content, dtype=np.float32 if t.dtype == 1 else np.float64)
            return float(arr[0]) if arr.size == 1 else None
    return None


# ---------------------------------------------------------------------------------------------------------------
# One cluster
class ClusterData:
    """The ranks of one cluster, aligned: ``steps`` (union), ``matrix(field)`` -> (ranks x steps float32, present).

    ``ranks``: the rank objects ordered by node then rank. Build with :meth:`reload` (incremental). Each reload that
    changed anything publishes a :class:`ClusterView` of the state it left (:meth:`view`): what the health rules
    judge, unchanged by the reloads that follow (another thread may reload meanwhile)."""

    def __init__(self, name, source, members):
        self.name = name
        self.source = source
        cls = _RankFile if source == SOURCE_RANK_FILES else _RankFolder
        self._ranks = {rank: cls(rank, path) for rank, path in members}
        self._lock = threading.Lock()
        self._aligned = None
        self._view = None
        self._stale = True     # the members changed since the last reload (a new version even without new rows)
        self.version = 0
        self.uid = next(_IDS)
        self.reloaded_at = None    # time.monotonic() when the last reload ended
        self.asked_at = None       # time.monotonic() when a health check last asked for it (clusters.py)

    @property
    def token(self):
        """Changes whenever the data changes, also across instances (a cache key part)."""
        return (self.uid, self.version)

    def set_members(self, members):
        ranks = self._ranks
        if len(ranks) == len(members) and all(
                getattr(ranks.get(rank), "path", None) == path for rank, path in members):
            return      # the usual case: nothing to change, and no wait for a reload in progress
        cls = _RankFile if self.source == SOURCE_RANK_FILES else _RankFolder
        with self._lock:
            for rank, path in members:
                if rank not in self._ranks or self._ranks[rank].path != path:
                    self._ranks[rank] = cls(rank, path)
                    self._aligned, self._stale = None, True
            for rank in set(self._ranks) - {r for r, _ in members}:
                del self._ranks[rank]
                self._aligned, self._stale = None, True

    def reload(self, complete=False):
        """Reads what is new (about 64 MB per rank file and call; with ``complete``, everything there is); returns
        the data version (changes whenever anything changed). A rank whose reading fails for any reason keeps
        what it had and says why (its ``error``); the other ranks are read."""
        with self._lock:
            changed = False
            for r in self._ranks.values():
                try:
                    changed = r.reload() or changed
                    while complete and r.pending():
                        before = r.progress()
                        changed = r.reload() or changed
                        if r.progress() == before:
                            break
                except Exception as e:   # nothing from one file may stop the others (or a reload thread)
                    r.error = ("%s: %s" % (type(e).__name__, e))[:200]
                    r._stamp = None      # tried again next time
                    changed = True
            if changed or self._stale:
                self._aligned, self._view, self._stale = None, None, False
                self.version += 1
            if self._view is None:      # (made again by view() if this raises)
                self._view = self._make_view()
            self.reloaded_at = time.monotonic()
            return self.version

    def pending(self):
        """Whether a rank's last read stopped before the end of its file (the next reload goes on)."""
        return any(r.pending() for r in list(self._ranks.values()))

    @property
    def ranks(self):
        return sorted(self._ranks.values(), key=lambda r: (r.host, r.rank))

    def view(self):
        """The :class:`ClusterView` of the state the last reload left (made now when there is none yet)."""
        view = self._view
        if view is not None:
            return view
        with self._lock:
            if self._view is None:
                self._view = self._make_view()
            return self._view

    def _make_view(self):
        return ClusterView(self.name, self.source, self.token, [r.state() for r in self.ranks])

    def aligned(self):
        """``(ranks, steps, walls, fields)`` aligned on the union of steps (cached until the data changes);
        ``fields`` maps a field name to ``(ranks x steps float32 matrix, present mask)``, each built on first use."""
        with self._lock:
            if self._aligned is not None:
                return self._aligned
            ranks = self.ranks
            per = [r.arrays() for r in ranks]
            steps = _union([p[0] for p in per])
            walls = np.full(steps.size, np.nan)
            places = []
            for s, w, _ in per:
                place = _place(steps, s)
                places.append(place)
                if s.size:
                    walls[place] = np.fmax(walls[place], w)
            self._aligned = (ranks, steps, walls, _Fields(per, places, steps.size))
            return self._aligned

    def tail(self, k):
        """:meth:`ClusterView.tail` of the current :meth:`view`."""
        return self.view().tail(k)

    @staticmethod
    def present(field, values):
        """Which of a rank's ``values`` of ``field`` count as recorded (see :meth:`ClusterView.rank_columns`)."""
        return _present(field, values)

    def rank_columns(self, field, present=True):
        """:meth:`ClusterView.rank_columns` of the current :meth:`view`."""
        return self.view().rank_columns(field, present)


class ClusterView:
    """One state of a :class:`ClusterData` (what one health check judges): ``name``, ``source``, ``token`` (the data
    version it shows), ``ranks`` (:class:`RankState` ordered by node then rank), and the rules' reads of it:
    :meth:`tail` and :meth:`rank_columns`. Later reloads leave it as it is; its arrays are views of the rows read
    (no copy)."""

    def __init__(self, name, source, token, ranks):
        self.name, self.source, self.token = name, source, token
        self._ranks = ranks
        self._tails = {}
        self._lock = threading.Lock()

    @property
    def ranks(self):
        return list(self._ranks)

    def tail(self, k):
        """The alignment of the newest ``k`` steps of the union, without aligning the others: ``(ranks, steps,
        walls, fields, behind)``, equal to aligning every step and keeping the last ``k`` columns (the newest ``k``
        steps of the union are among each rank's own newest ``k``); ``fields`` maps a field name to ``(ranks x
        steps float32 matrix, present mask)``, each built on first use; ``behind``: per rank how many steps of the
        union come after its last row (at most ``k``; -1 for a rank without rows). Cached: what the cluster rules
        read, at a cost that does not grow with the rows kept."""
        k = max(1, int(k))
        with self._lock:
            got = self._tails.get(k)
            if got is not None:
                return got
            ranks = self.ranks
            per = [r.arrays() for r in ranks]
            steps = _union([p[0][-k:] for p in per])[-k:]
            walls = np.full(steps.size, np.nan)
            cut, places, behind = [], [], []
            for s, w, cols in per:
                if not s.size:
                    cut.append((s, w, {}, cols, 0))
                    places.append(slice(0, 0))
                    behind.append(-1)
                    continue
                # steps[0] is at least the rank's k-th newest step (the union holds those k): look only there
                first = max(0, s.size - k)
                start = first + int(np.searchsorted(s[first:], steps[0])) if steps.size else s.size
                ts = s[start:]
                cut.append((ts, w[start:], {f: c[start:] for f, c in cols.items()}, cols, start))
                place = _place(steps, ts) if ts.size != steps.size or not np.array_equal(ts, steps) \
                    else slice(0, steps.size)
                places.append(place)
                if ts.size:
                    walls[place] = np.fmax(walls[place], w[start:])
                    behind.append(int(steps.size - 1 - np.searchsorted(steps, s[-1])))
                else:
                    behind.append(k)
            got = (ranks, steps, walls, _Fields([(c[0], c[1], c[2]) for c in cut], places, steps.size,
                                               heads=[(c[3], c[4]) for c in cut]), np.array(behind, dtype=np.int64))
            self._tails[k] = got
            return got

    @staticmethod
    def present(field, values):
        """Which of a rank's ``values`` of ``field`` count as recorded (see :meth:`rank_columns`)."""
        return _present(field, values)

    def rank_columns(self, field, present=True):
        """``[(steps, values, present) or None]`` per rank (in :attr:`ranks` order) of ``field`` on the rank's own
        rows, ``present`` as in :meth:`ClusterData.aligned` (what a row of its matrix holds where the rank has rows;
        with ``present=False``: instead the number of NaN or infinite values when known without looking, else
        None), or None when no rank has the field. Nothing is aligned: what the per-rank rules (memory) read."""
        ranks = self._ranks
        per = [r.arrays() for r in ranks]
        if not any(field in cols for _, _, cols in per):
            return None
        out = []
        for r, (s, _, cols) in zip(ranks, per):
            col = cols.get(field)
            if col is None or not col.size:
                out.append(None)
            else:
                out.append((s, col, _present(field, col) if present else r.nonfinite(field)))
        return out


def _present(field, col):
    """Which values of a rank's column count as recorded: NaN means "not measured" for timings and memory, and for
    a rank that never had the value (no MonitoredTrainCell: no gradient norm); otherwise it is a recorded NaN."""
    measured = ~np.isnan(col)
    return measured if field in _NAN_MEANS_MISSING or not measured.any() else np.ones(col.shape, dtype=bool)


def _place(steps, s):
    """Where the rows ``s`` of a rank go on the step axis: a slice when they are its first steps (the usual case:
    every rank writes at the same steps, a stopped one a prefix of them), else their indices."""
    n = s.size
    if n <= steps.size and (n == 0 or (s[0] == steps[0] and s[-1] == steps[n - 1] and np.array_equal(s, steps[:n]))):
        return slice(0, n)
    return np.searchsorted(steps, s)


class _Fields(Mapping):
    """``{field: (matrix, present)}`` of an aligned cluster, each field's matrix built when first asked for."""

    def __init__(self, per, places, n_steps, heads=None):
        self._per, self._places, self._n = per, places, n_steps
        self._heads = heads     # per rank (its whole columns, where the cut starts) when ``per`` holds a cut
        self._names = []
        for _, _, cols in per:
            self._names.extend(f for f in cols if f not in self._names)
        self._built = {}
        self._lock = threading.Lock()

    def __len__(self):
        return len(self._names)

    def __iter__(self):
        return iter(self._names)

    def __contains__(self, field):
        return field in self._names

    def __getitem__(self, field):
        if field not in self._names:
            raise KeyError(field)
        with self._lock:
            if field not in self._built:
                self._built[field] = self._build(field)
            return self._built[field]

    def _build(self, field):
        mat = np.full((len(self._per), self._n), np.nan, dtype=np.float32)
        present = np.zeros(mat.shape, dtype=bool)
        for i, ((_, _, cols), place) in enumerate(zip(self._per, self._places)):
            col = cols.get(field)
            if col is None or not col.size:
                continue
            mat[i, place] = col
            measured = ~np.isnan(col)
            # NaN means "not measured" for timings and memory, and for a rank that never had the value (no
            # MonitoredTrainCell: no gradient norm); otherwise it is a recorded NaN. For a cut, "never" looks at
            # the rows before it too (only when the cut has no value).
            ever = measured.any()
            if not ever and self._heads is not None:
                whole, start = self._heads[i]
                ever = bool((~np.isnan(whole[field][:start])).any())
            present[i, place] = measured if field in _NAN_MEANS_MISSING or not ever else True
        return mat, present


def _union(arrays):
    """The sorted union of sorted step arrays; ranks usually share one step axis, so equal arrays are merged once."""
    distinct = []
    for a in arrays:
        if not a.size:
            continue
        for d in distinct:
            if d.size == a.size and d[0] == a[0] and d[-1] == a[-1] and np.array_equal(d, a):
                break
        else:
            distinct.append(a)
    if not distinct:
        return np.zeros(0, np.int64)
    if len(distinct) == 1:
        return distinct[0]
    return np.unique(np.concatenate(distinct))


# A NaN in these fields means "not measured" (no data wait before the first step, no device memory on CPU).
_NAN_MEANS_MISSING = frozenset({"step_time_ms", "data_wait_ms", "host_memory_mb", "device_memory_mb",
                                "device_limit_mb", "host_load"})
