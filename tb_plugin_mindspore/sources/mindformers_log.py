"""mindformers' training log read as series: what its PyNative trainer and monitors write only to the log.

Records read (each line may carry the logger's prefix, ``[INFO] <time> [file:line] func: `` or
``<time> - name[file:line] - INFO - ``; other lines are skipped):

* norm blocks of ``TrainStateMonitor``: a header ``{ "step": 10, "micro_step": 1 }`` then lines
  ``{ "local_norm": <param>:   0.123456 }`` / ``{ "device_norm": <param>: 1.5 }`` -> ``local_norm/<param>``,
  ``device_norm/<param>`` at that step (the last micro step's value);
* JSON records ``{"step": 10, "micro_step": 1, "local_loss": 2.3}``, ``{"step": 10, "device_loss": 2.1}`` ->
  ``local_loss`` / ``device_loss`` (mean over the step's micro steps);
* tokens per expert of ``MoeMonitor``: ``{"iter", "step", "micro_step", "block", "layer", "tpe": [[n, ...]]}`` ->
  ``expert_load/<block>.<layer>/ep_<e>`` (summed over the step's micro steps; a layer x expert table);
* ``step:[   10/  100] <tag>: <value or [v, ...]>`` (``MaxLogitsMonitor``, ``TrainingStateMonitor``'s log
  output): a number -> ``<tag>``; a list under ``max_attention_logit/<param>`` -> ``.../head_<h>``.

Wall times are the logger's time stamps (the newest one before the record), 0 where the log has none.

:class:`LogSeries` reads a file incrementally (complete lines only), at most ``MAX_BYTES`` in all and
``MAX_LINE`` per line; a longer file or line is cut there and said in ``problems``.
"""

import json
import os
import re
import time

MAX_BYTES = 1 << 30
MAX_LINE = 1 << 20
CHUNK = 8 << 20
_PREFIX = re.compile(r"^.*?(?= - INFO - |\] [A-Za-z_0-9<>]+: |\{|step:\[)")
_HEADER = re.compile(r'^\{\s*"step":\s*(-?\d+)(?:,\s*"micro_step":\s*(\d+))?\s*\}$')
_NORM = re.compile(r'^\{\s*"(local_norm|device_norm)":\s*(.+?):\s*(\S+)\s*\}$')
_STEP_LINE = re.compile(r"step:\[\s*(\d+)/\s*\d+\]\s+([^:\s][^:]*?):\s+(.+)$")
_TIME = re.compile(rb"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[,.](\d{1,6}))?")


def _time_of(raw):
    """The logger's time stamp of a line (seconds since the epoch, local time), or None."""
    m = _TIME.search(raw, 0, 64)
    if m is None:
        return None
    try:
        parts = [int(g) for g in m.groups()[:6]]
        frac = m.group(7)
        return time.mktime((parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], 0, 0, -1)) + (
            int(frac) / 10 ** len(frac) if frac else 0.0)
    except (OverflowError, ValueError):
        return None


def _strip(line):
    """The message part of a log line."""
    for sep in (" - INFO - ", " - WARNING - "):
        at = line.find(sep)
        if at >= 0:
            return line[at + len(sep):].strip()
    m = re.match(r"^\[[A-Z]+\] .*?\] [A-Za-z_0-9<>]+: (.*)$", line)
    if m:
        return m.group(1).strip()
    return line.strip()


def _number(text):
    try:
        return float(text)
    except ValueError:
        return None


class LogSeries:
    """The series of one log file (see the module doc): ``series`` ``{tag: {step: value}}``."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.series = {}
        self.problems = []
        self.version = 0
        self._step = None            # the step of the current norm block
        self._loss = {}              # (tag, step) -> [values over micro steps]
        self._tpe = {}               # (row, step) -> summed counts
        self._inode = None
        self._wall = 0.0             # the time stamp of the newest line that had one

    def _put(self, tag, step, value):
        self.series.setdefault(tag, {})[int(step)] = (self._wall, float(value))

    def points(self, tag):
        """``[(step, wall_time, value)]`` of a series, by step."""
        return [(s, w, v) for s, (w, v) in sorted(self.series.get(tag, {}).items())]

    def read(self):
        """Reads what was appended since the last call; True when something new was read."""
        try:
            st = os.stat(self.path)
        except OSError as e:
            self._problem("cannot be read (%s)" % (e.strerror or e))
            return False
        if self._inode is not None and (st.st_ino != self._inode or st.st_size < self.offset):
            self.__init__(self.path)      # replaced or shortened: read again from the start
        self._inode = st.st_ino
        end = min(st.st_size, MAX_BYTES)
        if st.st_size > MAX_BYTES and not any("more than" in p["reason"] for p in self.problems):
            self._problem("%d bytes, more than the %d read; the rest is left out" % (st.st_size, MAX_BYTES))
        if end <= self.offset:
            return False
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(min(end - self.offset, CHUNK))
        except OSError as e:
            self._problem("cannot be read (%s)" % (e.strerror or e))
            return False
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) >= MAX_LINE:
                self._problem("a line of more than %d bytes at byte %d; skipped" % (MAX_LINE, self.offset),
                              self.offset)
                self.offset += len(data)
            return False
        for raw in data[:cut].split(b"\n"):
            self._line(raw)
        self.offset += cut + 1
        self.version += 1
        return True

    def _problem(self, reason, offset=None):
        self.problems.append({"file": self.path, "offset": offset, "reason": reason})
        del self.problems[:-20]

    def _line(self, raw):
        if len(raw) > MAX_LINE or not raw.strip():
            return
        wall = _time_of(raw)
        if wall is not None:
            self._wall = wall
        text = _strip(raw.decode("utf-8", "replace"))
        if text.startswith("{"):
            self._brace(text)
            return
        m = _STEP_LINE.search(text)
        if m:
            step, tag, value = int(m.group(1)), m.group(2).strip(), m.group(3).strip()
            self._tagged(step, tag, value)

    def _brace(self, text):
        m = _HEADER.match(text)
        if m:
            self._step = int(m.group(1))
            return
        m = _NORM.match(text)
        if m:
            if self._step is not None:
                value = _number(m.group(3))
                if value is not None:
                    self._put("%s/%s" % (m.group(1), m.group(2).strip()), self._step, value)
            return
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):
            return
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            return
        step = record["step"]
        self._step = step
        for key in ("local_loss", "device_loss"):
            value = record.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values = self._loss.setdefault((key, step), [])
                values.append(float(value))
                self._put(key, step, sum(values) / len(values))
        tpe = record.get("tpe")
        if isinstance(tpe, list) and "layer" in record:
            counts = _flat_numbers(tpe)
            if counts:
                block = str(record.get("block") or "layers")
                if record.get("mtp_idx") is not None:
                    block = "%s%s" % (block, record["mtp_idx"])
                row = "%s.%s" % (block, record["layer"])
                total = self._tpe.get((row, step))
                total = counts if total is None or len(total) != len(counts) else [a + b for a, b in zip(total, counts)]
                self._tpe[(row, step)] = total
                for e, n in enumerate(total):
                    self._put("expert_load/%s/ep_%d" % (row, e), step, n)

    def _tagged(self, step, tag, value):
        if value.startswith("["):
            numbers = _flat_numbers(_list_of(value))
            if numbers and tag.startswith("max_attention_logit/"):
                for h, v in enumerate(numbers):
                    self._put("%s/head_%d" % (tag, h), step, v)
            return
        number = _number(value.split()[0]) if value else None
        if number is not None:
            self._put(tag, step, number)


def _list_of(text):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _flat_numbers(value, limit=100000):
    out = []
    stack = [value]
    while stack and len(out) < limit:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(reversed(v))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
    return out
