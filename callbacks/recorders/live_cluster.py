"""The cluster rules while training: stragglers, diverging ranks and stopped ranks, judged on the writing rank.

Every rank appends its own rows to ``<run>/cluster/rank<k>.tbmsrank`` (:mod:`.rank_stats`). On rank 0 (one reader,
whatever ``all_ranks`` says), :class:`LiveClusterWatch` reads those files in a background thread every
``CHECK_SECS`` seconds and runs the same rules as ``tb-mindspore check`` and the Health panel (``slow_rank``,
``rank_diverging``, ``rank_stopped`` with their registry thresholds). A new finding is logged as one line and
recorded as a live health event, once per rule and rank (never "stopped" for the rank doing the judging: it runs).

No collective and no message between ranks: a rank that hangs or dies only stops adding rows, which is what
``rank_stopped`` looks for; reading the files never waits for another rank. It sees the ranks whose files are in the
run folder it can read: all of them on one machine or on shared storage (the usual ``logdir`` of a cluster job),
only this node's ranks when each node writes to its own local disk.
"""

import re
import threading
import types

from ..common.util import logger

__all__ = ["LiveClusterWatch", "CHECK_SECS", "RULES"]

CHECK_SECS = 30.0
RULES = ("slow_rank", "rank_diverging", "rank_stopped")
_RANK = re.compile(r"\brank (\d+)", re.IGNORECASE)
_SEVERITY = {"warn": "warning", "error": "error", "info": "warning"}


def _rules():
    """``[(fn, defaults)]`` of :data:`RULES` from the offline registry (None when the viewer side is missing)."""
    try:
        # lazy: the offline rules load when live health starts, and a broken viewer side never stops training
        import tb_plugin_mindspore.health.rules  # noqa: F401  (registers every rule)
        from tb_plugin_mindspore.health.rules import base
    except Exception:
        return None
    by_id = {r.id: r for r in base.RULES}
    return [(by_id[i].fn, dict(by_id[i].defaults)) for i in RULES if i in by_id]


class LiveClusterWatch:
    """Judges the run folder's rank files now and then; ``emit(rule, severity, step, first_step, message)`` is
    called once per new (rule, rank) finding. :meth:`check` runs one pass (the thread calls it)."""

    def __init__(self, run_dir, emit, every_s=None, own_rank=None):
        self.run = types.SimpleNamespace(state=types.SimpleNamespace(directory=str(run_dir)), info={})
        self.emit = emit
        self.every_s = float(CHECK_SECS if every_s is None else every_s)
        self.own_rank = None if own_rank is None else str(int(own_rank))
        self.reported = set()
        self.errors = 0
        self._rules = _rules()
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        if self._rules:
            self._thread = threading.Thread(target=self._run, name="tb-mindspore-cluster-watch", daemon=True)
            self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.every_s):
            self.check()

    def check(self):
        """One pass over the rules; returns the new findings (also passed to ``emit``)."""
        new = []
        for fn, cfg in self._rules or ():
            try:
                findings = fn(self.run, cfg)
            except Exception:           # a half-written file, a rank folder removed: judged again next time
                self.errors += 1
                continue
            for f in findings:
                m = _RANK.search(f.message)
                key = (f.rule, m.group(1) if m else f.message)
                if f.rule == "rank_stopped" and m and m.group(1) == self.own_rank:
                    continue            # this process is the rank, and it is running: behind, not stopped
                if key in self.reported:
                    continue
                self.reported.add(key)
                new.append(f)
                try:
                    self.emit(f.rule, _SEVERITY.get(f.level, "warning"), int(f.steps[1]), int(f.steps[0]),
                              f.message)
                except Exception:
                    self.errors += 1
                    logger.warning("tb-mindspore: could not record the cluster finding %s", f.rule, exc_info=True)
        return new

    def stop(self, timeout=5.0):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
