"""Cheap checks of TensorBoard event files' record framing, to name a file that breaks TensorBoard's own loaders.

TensorBoard's fast loader (its Rust data server) allocates whatever length a record header claims: a header
claiming 2^60 bytes aborts the data server, and every later provider call fails. Its Python loader survives but
never reads past such a record. Neither says which file it was; :class:`HeaderScanner` finds it by walking the
record headers only (12 bytes each; payloads are skipped, never read), incrementally: each file is scanned once
up to its last complete record and later only from there.

A finding is ``{"file": path, "offset": int, "reason": str}``. Reported: a length checksum that does not match
(the framing is lost from there on), a length that runs past the end of the file by more than
``TAIL_SLACK_BYTES`` or claims more than ``MAX_PLAUSIBLE_BYTES`` (a record still being written is only a little
longer than what is on disk), and a record with good checksums whose payload is no ``Event`` (invalid UTF-8 in a
string field; the records read whole in the same pass are decoded).

Files are read through ``fs``: on a remote logdir each chunk is one byte range, so a scan fetches only new bytes.
"""

import stat
import struct
import threading
import time

from . import records
from . import fs

# Longer than any record a writer produces; TensorBoard's own writers stay far below it.
MAX_PLAUSIBLE_BYTES = 1 << 30
# A record at the end of a file may be incomplete by this much and still be a record being written.
TAIL_SLACK_BYTES = 64 << 20
_CHUNK = 1 << 20
_U64 = struct.Struct("<Q").unpack_from
_U32 = struct.Struct("<I").unpack_from


def is_event_file(name):
    return "tfevents" in name


def scan_headers(path, start=0, budget_s=1.0, undecodable=None):
    """Walks the record headers of ``path`` from ``start`` (a record boundary).

    Returns ``(next_offset, finding)``: the offset after the last complete record, and the first problem found or
    None. Stops at a problem, at the end of the data, or when ``budget_s`` seconds are spent (``next_offset`` then
    says where to go on). Raises OSError when the file cannot be read. With an ``undecodable`` list, each record
    read whole in the same pass (every record up to 1 MB) is also decoded as an ``Event``, and the ones that do
    not decode (invalid UTF-8 in a string field behind good checksums) are appended to it as findings: TensorBoard's
    Python loader stopped reloading on such a record, its fast loader skips it; both are named in ``status``.
    """
    deadline = time.monotonic() + budget_s
    with fs.open_regular(path) as f:     # never blocks on a FIFO
        st = fs.fstat(f)
        if not stat.S_ISREG(st.st_mode):
            return start, None
        size = st.st_size
        off = start
        buf, buf_start = b"", start
        while off + records.HEADER_BYTES <= size:
            rel = off - buf_start
            if rel < 0 or rel + records.HEADER_BYTES > len(buf):
                f.seek(off)
                buf, buf_start, rel = f.read(_CHUNK), off, 0
                if len(buf) < records.HEADER_BYTES:
                    break
            header = buf[rel:rel + 8]
            if records.masked_crc32c(header) != _U32(buf, rel + 8)[0]:
                return off, {"file": path, "offset": off,
                             "reason": "bad record length checksum: the records from here on cannot be read"}
            (n,) = _U64(header, 0)
            stop = off + records.HEADER_BYTES + n + records.FOOTER_BYTES
            if n > MAX_PLAUSIBLE_BYTES or stop > size + TAIL_SLACK_BYTES:
                return off, {"file": path, "offset": off,
                             "reason": "a record claims %d bytes (%s) but the file has %d bytes after it; "
                                       "TensorBoard's loaders cannot read past it (its fast loader aborts)"
                                       % (n, _size(n), size - off - records.HEADER_BYTES)}
            if stop > size:
                break                    # the last record, still being written
            if undecodable is not None and rel + records.HEADER_BYTES + n + records.FOOTER_BYTES <= len(buf):
                problem = _decode_problem(buf[rel + records.HEADER_BYTES:rel + records.HEADER_BYTES + n])
                if problem is not None:
                    undecodable.append({"file": path, "offset": off, "reason": problem})
            off = stop
            if time.monotonic() > deadline:
                break
    return off, None


def _decode_problem(payload):
    """Why a record's payload (good checksums) is no ``Event``, or None when it decodes."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto import event_pb2

    try:
        event_pb2.Event.FromString(payload)
    except (DecodeError, RuntimeError, ValueError) as e:
        text = str(e) or type(e).__name__
        return ("undecodable record (%s); skipped (TensorBoard's fast loader stops reading the file there: its own "
                "tabs show nothing after it)" % (text if len(text) <= 120 else text[:117] + "..."))
    return None


def _size(n):
    for unit, scale in (("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


class HeaderScanner:
    """Scans the event files under ``logdir`` incrementally; :meth:`findings` lists the bad ones and every record
    that does not decode (at most ``MAX_UNDECODABLE_PER_FILE`` per file named, then counted).

    Each file's state is ``((device, inode), mtime, next offset, finding, [undecodable findings], count)``; a file
    is scanned again only from where it stopped, and from the start when it was replaced, cut, or changed after a
    finding. At most ``budget_s`` seconds are spent per call.
    """

    MAX_UNDECODABLE_PER_FILE = 20

    def __init__(self, logdir, budget_s=1.0):
        self.logdir = logdir
        self.budget_s = budget_s
        self._state = {}
        self._lock = threading.Lock()

    def findings(self, paths):
        """Problems in ``paths`` (event files), scanning what is new in them first."""
        out = []
        deadline = time.monotonic() + self.budget_s
        with self._lock:
            for path in paths:
                try:
                    st = fs.stat(path)
                except OSError:
                    self._state.pop(path, None)
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                ident = (st.st_dev, st.st_ino)
                old_ident, mtime, offset, finding, bad, count = self._state.get(
                    path, (ident, st.st_mtime_ns, 0, None, [], 0))
                if old_ident != ident or st.st_size < offset or (finding is not None and mtime != st.st_mtime_ns):
                    offset, finding, bad, count = 0, None, [], 0     # replaced, cut or rewritten: from the start
                left = deadline - time.monotonic()
                if finding is None and offset < st.st_size and left > 0:
                    found = []
                    try:
                        offset, finding = scan_headers(path, offset, left, undecodable=found)
                    except OSError:
                        continue
                    count += len(found)
                    bad = bad + found[:max(0, self.MAX_UNDECODABLE_PER_FILE - len(bad))]
                self._state[path] = (ident, st.st_mtime_ns, offset, finding, bad, count)
                out += bad
                if count > len(bad):
                    out.append({"file": path, "offset": None,
                                "reason": "%d more undecodable records in this file; skipped" % (count - len(bad))})
                if finding is not None:
                    out.append(finding)
            for gone in set(self._state) - set(paths):
                del self._state[gone]
        return out
