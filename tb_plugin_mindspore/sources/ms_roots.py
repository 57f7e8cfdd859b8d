"""The ``*_MS`` files of every ``--logdir_spec`` entry as one :class:`~.ms_logdir.MsLogdir`: :class:`MsRoots`.

One ``MsLogdir`` per entry; run names are TensorBoard's for that entry (``logdir_spec.Roots.run_name``:
``exp1/.``, ``exp1/sub``), so a folder holding event files and ``*_MS`` files stays one run. Every accessor of
``MsLogdir`` that takes a run is answered by the entry's reader with the run's folder relative to the entry; file
paths in ``warnings`` and ``files`` are given relative to the entry, prefixed by its name.
"""

import threading

from .ms_logdir import DEFAULT_RELOAD_BYTES, MsLogdir, ReloadResult

_PER_RUN = ("version", "tags", "scalar_arrays", "restarts_of", "scalars", "steps", "histograms", "histogram_stats",
            "tensors", "images", "landscapes", "lineage", "stats", "_scalar_copies", "graphs", "graph")


class MsRoots:
    """See the module doc. ``roots``: a ``logdir_spec.Roots``."""

    def __init__(self, roots):
        self.roots = roots
        self.logdir = roots.spec or ""
        self.readers = [(root, MsLogdir(root.path)) for root in roots]
        self._thread = None
        self._stopping = threading.Event()

    # -- loading -----------------------------------------------------------------------------------------------
    def reload(self, max_bytes=DEFAULT_RELOAD_BYTES):
        share = max(1, int(max_bytes) // max(1, len(self.readers)))
        total = [0, 0, 0, False, []]
        for root, ms in self.readers:
            r = ms.reload(share)
            total[0] += r.bytes_read
            total[1] += r.records
            total[2] += r.problems
            total[3] = total[3] or r.pending
            total[4] += [self.roots.run_name(root, run) for run in r.new_runs]
        return ReloadResult(*total)

    def start(self, interval=5.0, max_bytes=DEFAULT_RELOAD_BYTES):
        if self._thread is not None and self._thread.is_alive():
            return
        self._stopping.clear()

        def loop():
            while not self._stopping.is_set():
                try:
                    pending = self.reload(max_bytes).pending
                except Exception:   # an environment failure: logged by the entry's reader next time; keep going
                    pending = False
                if not pending:
                    self._stopping.wait(interval)

        self._thread = threading.Thread(target=loop, name="tb-mindspore-ms-reader", daemon=True)
        self._thread.start()

    def stop(self, timeout=10.0):
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    # -- runs --------------------------------------------------------------------------------------------------
    def _reader(self, run):
        found = self.roots.locate(run)
        if found is not None:
            root, rel = found
            for r, ms in self.readers:
                if r is root and ms.has_run(rel):
                    return r, ms, rel
        raise KeyError("no MindSpore summary run %r" % (run,))

    def runs(self):
        return sorted(self.roots.run_name(root, run) for root, ms in self.readers for run in ms.runs())

    def has_run(self, run):
        try:
            self._reader(run)
        except KeyError:
            return False
        return True

    def warnings(self, run):
        root, ms, rel = self._reader(run)
        return [dict(w, file=self._path(root, w.get("file"))) for w in ms.warnings(rel)]

    def files(self, run):
        root, ms, rel = self._reader(run)
        out = []
        for f in ms.files(rel):
            f = dict(f, file=self._path(root, f.get("file")))
            if f.get("superseded"):
                f["superseded"] = [dict(s, by=self._path(root, s.get("by"))) if isinstance(s, dict) and "by" in s
                                   else s for s in f["superseded"]]
            out.append(f)
        return out

    @staticmethod
    def _path(root, path):
        if not path or not root.name:
            return path
        return root.name + "/" + path

    def __getattr__(self, name):
        if name not in _PER_RUN:
            raise AttributeError(name)

        def call(run, *args, **kwargs):
            _, ms, rel = self._reader(run)
            return getattr(ms, name)(rel, *args, **kwargs)

        return call


def ms_reader(roots):
    """An ``MsLogdir`` for ``--logdir`` (as before), an :class:`MsRoots` for ``--logdir_spec``; None for none."""
    if not roots:
        return None
    if not roots.is_spec:
        return MsLogdir(roots.logdir)
    return MsRoots(roots)
