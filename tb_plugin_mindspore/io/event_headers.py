"""Cheap checks of TensorBoard event files' record framing, to name a file that breaks TensorBoard's own loaders.

TensorBoard's fast loader (its Rust data server) allocates whatever length a record header claims: a header
claiming 2^60 bytes aborts the data server, and every later provider call fails. Its Python loader survives but
never reads past such a record. Neither says which file it was; :class:`HeaderScanner` finds it by walking the
record headers only (12 bytes each; payloads are skipped, never read), incrementally: each file is scanned once
up to its last complete record and later only from there.

A finding is ``{"file": path, "offset": int, "reason": str}``. Reported: a length checksum that does not match
(the framing is lost from there on), and a length that runs past the end of the file by more than
``TAIL_SLACK_BYTES`` or claims more than ``MAX_PLAUSIBLE_BYTES`` (a record still being written is only a little
longer than what is on disk).

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


def scan_headers(path, start=0, budget_s=1.0):
    """Walks the record headers of ``path`` from ``start`` (a record boundary).

    Returns ``(next_offset, finding)``: the offset after the last complete record, and the first problem found or
    None. Stops at a problem, at the end of the data, or when ``budget_s`` seconds are spent (``next_offset`` then
    says where to go on). Raises OSError when the file cannot be read.
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
            off = stop
            if time.monotonic() > deadline:
                break
    return off, None


def _size(n):
    for unit, scale in (("EiB", 1 << 60), ("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


class HeaderScanner:
    """Scans the event files under ``logdir`` incrementally; :meth:`findings` lists the bad ones.

    Each file's state is ``((device, inode), mtime, next offset, finding)``; a file is scanned again only from
    where it stopped, and from the start when it was replaced, cut, or changed after a finding. At most ``budget_s`` seconds are spent per call.
    """

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
                old_ident, mtime, offset, finding = self._state.get(path, (ident, st.st_mtime_ns, 0, None))
                if old_ident != ident or st.st_size < offset or (finding is not None and mtime != st.st_mtime_ns):
                    offset, finding = 0, None          # replaced, cut or rewritten: from the start again
                left = deadline - time.monotonic()
                if finding is None and offset < st.st_size and left > 0:
                    try:
                        offset, finding = scan_headers(path, offset, left)
                    except OSError:
                        continue
                self._state[path] = (ident, st.st_mtime_ns, offset, finding)
                if finding is not None:
                    out.append(finding)
            for gone in set(self._state) - set(paths):
                del self._state[gone]
        return out
