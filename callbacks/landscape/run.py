"""Running a landscape: Ctrl-C / SIGTERM handling, the progress bar, the result object and writing the record.

Ctrl-C (or SIGTERM) stops after the point being evaluated; the finished points are written (``complete: false``)
and :class:`LandscapeInterrupted` (a ``KeyboardInterrupt``) is raised.
"""

import math
import signal
import sys
import threading
import time

from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.landscape import grid as gridlib
from tb_plugin_mindspore.writing.writer import SummaryWriter

__all__ = ["LandscapeInterrupted", "LandscapeResult", "Interrupts", "Progress", "write_record"]


class LandscapeInterrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM during a landscape; ``result`` holds the finished points (already written)."""

    def __init__(self, result):
        super().__init__("loss landscape interrupted after %d of %d points"
                         % (result.points_done, result.z.size) if result is not None else "loss landscape interrupted")
        self.result = result


class Interrupts:
    """SIGINT / SIGTERM -> KeyboardInterrupt while ``armed`` (during evaluation), remembered otherwise.

    MindSpore's runtime turns Ctrl-C during a graph call into SIGTERM for the whole process; catching SIGTERM here
    lets the landscape stop cleanly instead (the previous handlers are back afterwards).
    """

    def __init__(self):
        self.armed = False
        self.pending = False
        self._previous = {}

    def _handler(self, signum, frame):
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt("signal %d" % signum)
        self.pending = True

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    self._previous[sig] = signal.signal(sig, self._handler)
                except (ValueError, OSError):
                    pass
        return self

    def __exit__(self, *exc):
        self.armed = False
        for sig, previous in self._previous.items():
            try:
                signal.signal(sig, previous)
            except (ValueError, OSError, TypeError):
                pass
        return False


def time_left_text(left, elapsed, finished):
    """``"about 2 min 05 s left"``, ``"less than a second left"``, ``"done in 41 s"``; never a zero or negative time
    left (the estimate of the last points rounds to nothing), ``"time left unknown"`` before the first point."""
    if finished:
        return "done in %s" % gridlib.format_seconds(elapsed)
    if left is None or not math.isfinite(left):
        return "time left unknown"
    if left < 1.0:
        return "less than a second left"
    return "about %s left" % gridlib.format_seconds(left)


class Progress:
    """A one-line progress bar on a terminal; otherwise a line through ``log`` every 10 %."""

    def __init__(self, total, log, enabled=True, stream=None, label="landscape"):
        self.total = max(1, total)
        self.log = log
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(enabled and getattr(self.stream, "isatty", lambda: False)())
        self.label = label
        self.start = time.perf_counter()
        self.next_tenth = 1
        self.last = 0.0

    def update(self, done):
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        left = elapsed / done * (self.total - done) if done else float("nan")
        if self.tty:
            now = time.perf_counter()
            if now - self.last < 0.2 and done < self.total:
                return
            self.last = now
            filled = int(30 * done / self.total)
            self.stream.write("\r%s [%s%s] %d/%d points %3d%%  %s " % (
                self.label, "#" * filled, "." * (30 - filled), done, self.total, 100 * done // self.total,
                time_left_text(left, elapsed, done >= self.total)))
            self.stream.flush()
        elif done * 10 >= self.next_tenth * self.total:
            while done * 10 >= self.next_tenth * self.total:
                self.next_tenth += 1
            # Every 10 %, but not more than one line every 2 s (small grids finish without a wall of lines).
            if elapsed - self.last >= 2.0 or (done == self.total and self.last > 0):
                self.last = elapsed
                if done >= self.total:
                    self.log("%s: %d/%d points, done in %s" % (self.label, done, self.total,
                                                              gridlib.format_seconds(elapsed)))
                else:
                    self.log("%s: %d/%d points (%d%%), %s elapsed, %s" % (
                        self.label, done, self.total, 100 * done // self.total, gridlib.format_seconds(elapsed),
                        time_left_text(left, elapsed, False)))

    def close(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


class LandscapeResult:
    """One computed landscape. ``z[j, i]`` is the loss at ``(x[i], y[j])`` (NaN: not computed); ``record`` is the
    dict written to the summary (see ``tb_plugin_mindspore.landscape.format``); ``directions`` the two directions
    (lists of arrays in the order of ``names``), None for interpolation."""

    def __init__(self, method, x, y, z, record, directions, names, points_done, rows_done, complete, tag=None,
                 step=None, path=None, center_loss=None, seconds=None, seconds_per_point=None, extra=None):
        self.method = method
        self.x, self.y, self.z = x, y, z
        self.record = record
        self.directions = directions
        self.names = names
        self.points_done = points_done
        self.rows_done = rows_done
        self.complete = complete
        self.tag = tag
        self.step = step
        self.path = path
        self.center_loss = center_loss
        self.seconds = seconds
        self.seconds_per_point = seconds_per_point
        self.extra = extra or {}

    def __repr__(self):
        return "LandscapeResult(%s, %d x %d, %d points%s)" % (
            self.method, len(self.x), len(self.y), self.points_done, "" if self.complete else ", interrupted")


def write_record(writer, logdir, tag, step, record):
    """Writes one landscape record through ``writer``, or a writer of its own on ``logdir`` (nothing if neither)."""
    own = None
    if writer is None:
        if logdir is None:
            return
        writer = own = SummaryWriter(logdir)
    try:
        writer.value(summary.landscape(tag, record), int(step))
        writer.flush()
    finally:
        if own is not None:
            own.close()


