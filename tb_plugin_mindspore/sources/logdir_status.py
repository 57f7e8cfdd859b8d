"""Why is there nothing to show? Looks at the server's own logdir (never a path from a request) and explains.

The reasons, in the order they are checked: the logdir does not exist; it holds only per-rank statistics files;
it holds no event files at all; it holds only MindSpore ``*_MS`` summary files; event files exist but hold nothing yet (waiting for the first flush); event
files hold no scalars. A relative ``--logdir`` is reported with the folder it was resolved from, because starting
TensorBoard from another folder is the most common reason for an empty board.
"""

import errno
import os
import stat

from .. import metadata
from ..io import event_headers, fs
from . import series_cache
from .ms_logdir import file_kind

MS_SUFFIX = "_MS"
_MAX_ENTRIES = 20000     # stop walking a huge tree; counts are then lower bounds
# A scan is reused for 5 s; a slow one (thousands of folders: seconds) for 4x its cost, and then answered while the
# next scan runs in the background (series_cache.TtlMemo(adaptive=True)), so one status answer never walks twice.
_CACHE_SECS = 5.0
_EMPTY_FILE_BYTES = 128  # an event file holding only its file_version record


def is_ms_summary_file(name):
    """A MindSpore summary or lineage file (MindSpore's names and the ones MindInsight accepted)."""
    return file_kind(name) is not None


def is_tf_event_file(name):
    return "tfevents" in name


def is_data_file(name):
    """Named like a file some reader opens: an event file, a MindSpore summary or lineage file."""
    return is_tf_event_file(name) or ".out.events.summary." in name or is_ms_summary_file(name)


def entry_problem(path):
    """Why a file named like an event / summary file cannot be read safely (a reason string), or None.

    A FIFO, socket or device would block or confuse a reader that opens it (TensorBoard's Python loader blocks on
    a FIFO forever); a symbolic link loop or a dangling link cannot be opened at all. Objects listed in a remote
    store are plain files.
    """
    if fs.is_remote(path):
        return None
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "symbolic link loop; skipped"
        if os.path.islink(path):
            return "dangling symbolic link; skipped"
        return "cannot be read (%s); skipped" % (e.strerror or e)
    if stat.S_ISREG(st.st_mode):
        return None
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(st.st_mode):
            return "not a regular file (%s); skipped: readers that open it would block or fail" % what
    return "not a regular file; skipped"


def scan(logdir):
    """Counts event files under ``logdir``: {"event_files", "event_bytes", "ms_files", "rank_files" (per-rank
    statistics files in ``cluster/`` folders), "entries", "truncated",
    "event_paths": [regular event files], "hostile": [(path, reason)] for data files that are not regular files}."""
    counts = {"event_files": 0, "event_bytes": 0, "ms_files": 0, "rank_files": 0, "entries": 0, "truncated": False,
              "event_paths": [], "hostile": []}
    for root, dirs, files in fs.walk(logdir):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if is_data_file(d)]):
            counts["entries"] += 1
            if not is_data_file(name):
                if name.endswith(metadata.RANK_FILE_SUFFIX) and fs.basename(root) == metadata.CLUSTER_DIR:
                    counts["rank_files"] += 1
                continue
            path = fs.join(root, name)
            problem = entry_problem(path)
            if problem is not None:
                counts["hostile"].append((path, problem))
                continue
            if is_ms_summary_file(name):
                counts["ms_files"] += 1
            elif is_tf_event_file(name):
                counts["event_files"] += 1
                counts["event_paths"].append(path)
                try:
                    counts["event_bytes"] = max(counts["event_bytes"], fs.getsize(path))
                except OSError:
                    pass
        if counts["entries"] > _MAX_ENTRIES:
            counts["truncated"] = True
            break
    return counts


class LogdirStatus:
    def __init__(self, logdir, cwd=None):
        self._logdir = logdir or ""
        self._cwd = cwd or os.getcwd()
        self._scans = series_cache.TtlMemo(ttl=_CACHE_SECS, max_entries=1, adaptive=True)
        self._headers = event_headers.HeaderScanner(self._abs() if self._logdir else "")

    def _local(self):
        return bool(self._logdir) and "://" not in self._logdir

    def _counts(self):
        return self._scans.get("scan", self._scan)

    def _rel(self, path):
        return fs.relpath(path, self._abs())

    def file_warnings(self):
        """``[{"run", "file", "offset", "reason"}]`` for files under the logdir that readers must not or cannot
        read: FIFOs and other non-regular files, symbolic link loops, event files whose record framing breaks
        TensorBoard's loaders (found from the record headers alone; see ``event_headers``)."""
        if not self._logdir:
            return []
        counts = self._counts()
        out = []
        for path, reason in counts["hostile"]:
            out.append({"run": os.path.dirname(self._rel(path)) or ".", "file": self._rel(path), "offset": None,
                        "reason": reason})
        for f in self._headers.findings(counts["event_paths"]):
            out.append({"run": os.path.dirname(self._rel(f["file"])) or ".", "file": self._rel(f["file"]),
                        "offset": f["offset"], "reason": f["reason"]})
        return out

    def describe(self, run_count, has_scalars):
        """The ``status`` route's body. ``run_count`` / ``has_scalars`` come from the data provider."""
        counts = self._counts()
        logdir = self._logdir
        reason, message = None, ""
        if has_scalars:
            pass
        elif not logdir:
            reason = "no_logdir"
            message = "TensorBoard was started without --logdir, so there is nothing to read."
        elif "://" in logdir:
            reason = "no_scalars" if run_count else "no_event_files"
            message = "No MindSpore data found under %s yet." % logdir
        elif not os.path.isdir(self._abs()):
            reason = "no_logdir"
            message = "The logdir %s does not exist.%s" % (self._abs(), self._relative_hint())
        elif counts["event_files"] == 0 and counts["ms_files"] == 0 and counts.get("rank_files"):
            reason = "only_rank_files"
            message = ("Found %d per-rank statistics file(s) (cluster/rank<k>%s, written by the callbacks on every "
                       "rank) but no event files: the Cluster section shows the ranks; the charts need event "
                       "files, which TrainMonitor writes on rank 0 (on every rank with all_ranks=True)."
                       % (counts["rank_files"], metadata.RANK_FILE_SUFFIX))
        elif counts["event_files"] == 0 and counts["ms_files"] == 0:
            reason = "no_event_files"
            message = ("No event files under %s. Record a run with the tb_mindspore_callbacks.TrainMonitor "
                       "callback (or run `tb-mindspore demo`).%s" % (self._abs(), self._relative_hint()))
        elif counts["event_files"] == 0:
            reason = "only_ms_files"
            message = ("Found %d MindSpore summary file(s) (*_MS, *_lineage: SummaryCollector / SummaryRecord) "
                       "but no curves in them yet. An evaluation-only run (SummaryCollector in Model.eval) "
                       "writes only a lineage file: its metrics are under Run info. For TensorBoard's own tabs, "
                       "`tb-mindspore convert %s` writes event files." % (counts["ms_files"], logdir))
        elif counts["event_bytes"] <= _EMPTY_FILE_BYTES or run_count == 0:
            reason = "waiting_for_flush"
            message = ("Event files exist but hold no data yet. Training writes them every few seconds; "
                       "TensorBoard reloads every 5 s by default (--reload_interval).")
        else:
            reason = "no_scalars"
            message = ("Event files were found, but none holds scalars. Record training with "
                       "tb_mindspore_callbacks.TrainMonitor to see loss, learning rate and gradient norm.")
        blocking = [path for path, why in counts.get("hostile", ()) if is_tf_event_file(os.path.basename(path))
                    and "regular" in why]
        if reason is not None and blocking:
            # TensorBoard's own Python loader blocks on such a file, and the runs after it never load.
            message += (" %s is named like an event file but is not a regular file: TensorBoard's loader (with "
                        "--load_fast=false) waits on it forever, so runs after it may never appear; move it out "
                        "of the logdir." % self._rel(blocking[0]))
        return {
            "logdir": logdir,
            "started_with": ("--logdir " + logdir) if logdir else "",
            "logdir_abs": self._abs() if logdir and "://" not in logdir else logdir,
            "server_cwd": self._cwd,
            "has_data": bool(has_scalars),
            "reason": reason,
            "message": message,
            "counts": {
                "event_files": counts["event_files"],
                "ms_files": counts["ms_files"],
                "rank_files": counts.get("rank_files", 0),
                "runs": int(run_count),
            },
        }

    def _abs(self):
        if fs.is_remote(self._logdir):
            return fs.normalize(self._logdir)
        return os.path.abspath(os.path.join(self._cwd, os.path.expanduser(self._logdir)))

    def _relative_hint(self):
        if self._logdir and not os.path.isabs(os.path.expanduser(self._logdir)):
            return (" The --logdir %r is relative: TensorBoard resolved it from the folder it was started in (%s)."
                    % (self._logdir, self._cwd))
        return ""

    def _scan(self):
        if not self._logdir or (self._local() and not os.path.isdir(self._abs())):
            return {"event_files": 0, "event_bytes": 0, "ms_files": 0, "rank_files": 0, "entries": 0,
                    "truncated": False, "event_paths": [], "hostile": []}
        return scan(self._abs())


class SpecStatus:
    """The status of ``--logdir_spec name1:DIR1,name2:DIR2``: each entry looked at as a ``--logdir`` would be, the
    answer saying what TensorBoard was started with (``roots``: a ``logdir_spec.Roots``)."""

    def __init__(self, roots, cwd=None):
        self._roots = roots
        self._entries = [(root, LogdirStatus(root.path, cwd=cwd)) for root in roots]

    def file_warnings(self):
        out = []
        for root, status in self._entries:
            for w in status.file_warnings():
                out.append(dict(w, run=self._roots.run_name(root, w["run"]),
                                file=(root.name + "/" + w["file"]) if root.name else w["file"]))
        return out

    def describe(self, run_count, has_scalars):
        started = self._roots.started_with()
        entries = []
        totals = {"event_files": 0, "ms_files": 0}
        for root, status in self._entries:
            counts = status._counts()
            exists = "://" in root.path or os.path.isdir(root.path)
            found = {k: counts[k] for k in totals}
            entries.append({"name": root.name, "path": root.path, "exists": exists, "counts": found})
            for k in totals:
                totals[k] += found[k]
        reason, message = None, ""
        if not has_scalars:
            if not self._entries:
                reason = "no_logdir"
                message = "TensorBoard was started with an empty --logdir_spec, so there is nothing to read."
            else:
                reason = ("no_logdir" if not any(e["exists"] for e in entries) else
                          "no_event_files" if not totals["event_files"] and not totals["ms_files"] else
                          "only_ms_files" if not totals["event_files"] else
                          "waiting_for_flush" if not run_count else "no_scalars")
                message = "TensorBoard was started with %s: %s." % (started, "; ".join(
                    "%s (%s): %s" % (e["name"] or "no name", e["path"], _entry_words(e)) for e in entries))
        return {
            "logdir": self._roots.spec,
            "started_with": started,
            "logdir_spec": [{"name": r.name, "path": r.path} for r in self._roots],
            "entries": entries,
            "logdir_abs": None,
            "server_cwd": os.getcwd(),
            "has_data": bool(has_scalars),
            "reason": reason,
            "message": message,
            "counts": dict(totals, runs=int(run_count)),
        }


def _entry_words(entry):
    if not entry["exists"]:
        return "the folder does not exist"
    counts = entry["counts"]
    if not counts["event_files"] and not counts["ms_files"]:
        return "no event files or MindSpore summary files yet"
    return "%d event files, %d MindSpore summary files" % (counts["event_files"], counts["ms_files"])


def for_roots(roots, logdir=""):
    """The status reader of the plugin: :class:`LogdirStatus` for ``--logdir``, :class:`SpecStatus` for
    ``--logdir_spec``."""
    if roots is not None and roots.is_spec:
        return SpecStatus(roots)
    return LogdirStatus(logdir or "")
