"""TFRecord framing, shared by TensorBoard event files and MindSpore ``*_MS`` summary files: the one record reader.

A record is ``u64 length | u32 masked_crc32c(length) | data | u32 masked_crc32c(data)`` (little endian). Both
formats use it; only the payload proto differs. CRC32C comes from the C-backed ``google-crc32c`` package.

Writing: :func:`frame`. Reading: :func:`scan` splits bytes into record payloads, whatever they hold, and never
raises on them: a record cut off at the end is left for the next call (``need``), a record whose payload checksum
is wrong is skipped and named, a record whose length checksum is wrong loses the framing and the search for the next
valid record (:func:`find_resync`) tests every offset of a window at once. :class:`RecordFile` reads one file
through it from where it stopped (without blocking, in pieces, damaged records skipped and named, replaced or
vanished files noticed). Every reader of records in the plugin (the tab's event store, the commands' event reader,
``*_MS`` and lineage files through ``sources/ms_files.MsFile``, rank files, ``convert``) reads through
:class:`RecordFile`; :func:`read_records` is :func:`scan` over one buffer.
"""

import errno
import stat
import struct

import google_crc32c
import numpy as np

from . import fs

HEADER_BYTES = 12   # length (8) + its crc (4)
FOOTER_BYTES = 4
# A length above this is treated as corruption even if its checksum matches (no real event is this large).
MAX_RECORD_BYTES = 256 << 20
# Problems kept per file (RecordFile); later ones are only counted.
MAX_PROBLEMS_PER_FILE = 50
# A record larger than this is checked in chunks of this size before its payload is read (a hostile length then
# costs no memory), and is read once into its own buffer.
LARGE_RECORD_BYTES = 8 << 20
# A local file is read in pieces of this size (see RecordFile.read_payloads).
READ_PIECE = 1 << 20
# First bytes of a file remembered to notice that it was replaced in place (an event file's first record holds a
# wall time).
HEAD_BYTES = 64

_HEADER = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_U64 = _HEADER.unpack_from
_U32 = _CRC.unpack_from
_crc = google_crc32c.value


def masked_crc32c(data):
    return masked(google_crc32c.value(bytes(data)))


def frame(data):
    """The bytes of one record holding ``data``."""
    header = _HEADER.pack(len(data))
    return b"".join((header, _CRC.pack(masked_crc32c(header)), data, _CRC.pack(masked_crc32c(data))))


def read_records(buf, offset=0):
    """Yields ``(offset, next_offset, data)`` for each complete record of ``buf`` from ``offset`` whose checksums
    are good (:func:`scan`: damaged records and stretches are skipped, an incomplete record at the end ends it)."""
    res = scan(bytes(buf[offset:]) if offset else buf, offset)
    for off, data in zip(res.offsets, res.payloads):
        yield off, off + HEADER_BYTES + len(data) + FOOTER_BYTES, bytes(data)


def masked(crc):
    """TFRecord's mask of a CRC32C value."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _header_ok(buf, off):
    return masked(_crc(buf[off:off + 8])) == _U32(buf, off + 8)[0]


def find_resync(buf, start):
    """First offset >= start that holds a plausible record header (and a valid payload if complete), else None.

    A header is plausible when the four high bytes of its length are zero (records are < 4 GiB) and its length
    checksum matches. Both are tested for every offset of a window at once with numpy (:func:`_header_candidates`),
    so damaged or hostile data is searched at memory speed whatever it holds (checking offset by offset in Python
    took about 7 us per offset whose high bytes are zero: hours for a large file of small numbers).
    """
    end = len(buf)
    pos = start
    while pos + HEADER_BYTES <= end:
        nonzero = _first_nonzero(buf, pos)       # a zeroed stretch (an all-zero header is never valid): skipped
        if nonzero is None:
            return None
        pos = max(pos, nonzero - (HEADER_BYTES - 1))
        stop = min(end - HEADER_BYTES + 1, pos + _RESYNC_WINDOW)
        for p in _header_candidates(buf, pos, stop):
            (n,) = _U64(buf, p)
            payload_end = p + HEADER_BYTES + n
            if n <= MAX_RECORD_BYTES:
                if payload_end + FOOTER_BYTES > end:
                    return p
                if masked(_crc(buf[p + HEADER_BYTES:payload_end])) == _U32(buf, payload_end)[0]:
                    return p
        pos = stop
    return None


_RESYNC_WINDOW = 1 << 20      # offsets tested at once (numpy arrays of a few times this size)


def _crc_tables():
    """``(crc of 8 zero bytes, 4 tables of 256)``: a CRC of a fixed length is affine in the message's bits, so the
    CRC32C of a little-endian u64 below 2^32 is ``c0 ^ T0[b0] ^ T1[b1] ^ T2[b2] ^ T3[b3]`` over its low bytes."""
    c0 = _crc(bytes(8))
    tables = np.zeros((4, 256), dtype=np.uint32)
    for k in range(4):
        for bit in range(8):
            lin = _crc((1 << (8 * k + bit)).to_bytes(8, "little")) ^ c0
            values = np.arange(256)
            tables[k, (values >> bit) & 1 == 1] ^= np.uint32(lin)
    return np.uint32(c0), tables


_CRC0, _CRC_TABLES = _crc_tables()


def _header_candidates(buf, start, stop):
    """Offsets ``p`` in ``[start, stop)`` (``stop + 11 <= len(buf)``) whose 12 bytes are a valid record header with
    a length below 2^32 and not all zero, in order."""
    if stop <= start:
        return ()
    if stop - start <= _SMALL_WINDOW:
        chunk = bytes(buf[start:stop + HEADER_BYTES - 1])
        if chunk.count(b"\0\0\0\0") <= _SMALL_CANDIDATES:
            return _header_candidates_small(chunk, start, stop - start)
    a = np.frombuffer(buf, dtype=np.uint8, count=stop - start + HEADER_BYTES - 1, offset=start)
    n = stop - start
    # Array tests as function calls, not ==: a fuzzer that traces comparisons (atheris) keeps the array operands of ==,
    # about 2 kB per search of a small input (1 GB after half a million executions).
    cand = np.flatnonzero(np.equal(a[4:4 + n] | a[5:5 + n] | a[6:6 + n] | a[7:7 + n], 0))
    if not cand.size:
        return ()
    b = [a[cand + k] for k in range(12)]
    stored = (b[8].astype(np.uint32) | (b[9].astype(np.uint32) << 8) | (b[10].astype(np.uint32) << 16)
              | (b[11].astype(np.uint32) << 24))
    crc = _CRC0 ^ _CRC_TABLES[0][b[0]] ^ _CRC_TABLES[1][b[1]] ^ _CRC_TABLES[2][b[2]] ^ _CRC_TABLES[3][b[3]]
    masked = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(0xA282EAD8)
    zero = np.equal(b[0] | b[1] | b[2] | b[3], 0) & np.equal(stored, 0)
    return (cand[np.equal(masked, stored) & ~zero] + start).tolist()


# Below these sizes the window is searched offset by offset in Python: numpy's three dozen array operations cost
# about 0.3 ms whatever the window holds, more than checking a few candidates one by one (a fuzzer's inputs of a few
# hundred bytes were searched 3x faster). Many candidates (a stretch of small numbers) go to numpy.
_SMALL_WINDOW = 4096
_SMALL_CANDIDATES = 32


def _header_candidates_small(chunk, start, n):
    """What :func:`_header_candidates` finds, for a window of ``n`` offsets whose bytes (and the 11 after) are
    ``chunk``: the offsets whose length's four high bytes are zero, found by ``bytes.find``, then checked one by one."""
    found = []
    i = chunk.find(b"\0\0\0\0", 4)
    while i != -1 and i < n + 4:
        p = i - 4
        head = chunk[p:p + 8]
        (stored,) = _U32(chunk, p + 8)
        if (stored or any(head[:4])) and masked(_crc(head)) == stored:
            found.append(start + p)
        i = chunk.find(b"\0\0\0\0", i + 1)
    return found


def _first_nonzero(buf, start):
    """The offset of the first non-zero byte of ``buf`` at or after ``start``, or None: numpy over growing blocks
    (a 2 GiB zeroed stretch is skipped at memory speed; a regular expression took 30 ms per MB)."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    i, step = start, 4096
    while i < arr.size:
        block = arr[i:i + step]
        if block.any():
            return i + int(np.flatnonzero(block)[0])
        i += step
        step = min(step * 4, 16 << 20)
    return None


class ScanResult:
    __slots__ = ("payloads", "offsets", "consumed", "problems", "need", "resyncing")

    def __init__(self):
        self.payloads = []
        self.offsets = []
        self.consumed = 0
        self.problems = []
        self.need = 0          # bytes (from ``consumed``) the next record needs, when it is incomplete
        self.resyncing = False


def scan(buf, base=0, resyncing=False):
    """Splits ``buf`` (the file's bytes from offset ``base``) into record payloads.

    Returns a :class:`ScanResult`: the payloads with good checksums and their file offsets, ``consumed`` (how many
    bytes of ``buf`` are done with; the next read starts at ``base + consumed``), problems as
    ``(file offset, reason)`` and, if the last record is incomplete, ``need`` = its full size. ``resyncing``: the
    previous call stopped inside a damaged region (no new problem is reported for it).
    """
    res = ScanResult()
    payloads, offsets, problems = res.payloads, res.offsets, res.problems
    app, oapp = payloads.append, offsets.append
    end = len(buf)
    off = 0
    if resyncing:
        nxt = find_resync(buf, 0)
        if nxt is None:
            res.consumed = max(0, end - (HEADER_BYTES - 1))
            res.resyncing = True
            return res
        problems.append((base + nxt, "resynchronized: next valid record"))
        off = nxt
    while off + HEADER_BYTES <= end:
        (n,) = _U64(buf, off)
        stop = off + HEADER_BYTES + n
        if stop + FOOTER_BYTES <= end:
            data = buf[off + HEADER_BYTES:stop]
            crc = _crc(data)
            if (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF == _U32(buf, stop)[0]:
                app(data)
                oapp(base + off)
                off = stop + FOOTER_BYTES
                continue
            # Payload checksum wrong: the payload is damaged if the length is right, else the framing is lost.
            if n <= MAX_RECORD_BYTES and _header_ok(buf, off):
                problems.append((base + off, "bad payload checksum; record skipped"))
                off = stop + FOOTER_BYTES
                continue
        elif n <= MAX_RECORD_BYTES and _header_ok(buf, off):
            res.need = stop + FOOTER_BYTES - off
            break                      # incomplete record: wait for the writer
        reason = "bad length checksum" if not _header_ok(buf, off) else "record length %d too large" % n
        nxt = find_resync(buf, off + 1)
        if nxt is None:
            problems.append((base + off, reason + "; skipping to the next valid record"))
            res.consumed = max(off + 1, end - (HEADER_BYTES - 1))
            res.resyncing = True
            return res
        problems.append((base + off, "%s; skipped %d bytes" % (reason, nxt - off)))
        off = nxt
    else:
        if off < end:
            res.need = HEADER_BYTES
    res.consumed = off
    return res


# ---------------------------------------------------------------------------------------------------------------
# Files

class RecordFile:
    """Incremental reader of one record file (an event file, a ``*_MS`` or lineage file, a rank file), read from
    where it stopped last time:

    * A record cut off at the end (the writer has not finished it) is left for the next call, never reported.
    * A record whose payload checksum is wrong is skipped and reported as a problem ``(offset, reason)``; reading
      goes on with the next record.
    * A record whose length checksum is wrong loses the framing: the reader reports it once, then searches forward
      for the next position that holds a valid record and resumes there (the bytes in between are reported as
      skipped).
    * Reading never raises on file contents; an unreadable file (permissions, vanished) is reported once and retried.
    * Only regular files are opened (without blocking): a FIFO, socket or device named like a data file is reported
      once and never read; a symbolic link loop is reported as unreadable.
    * A file replaced in place (another inode, shorter than what was read, or other first bytes) is read again from
      the start: ``restarts`` counts it, so the caller can drop what it kept from the old file. A vanished file sets
      ``gone``.

    Attributes: ``path``, ``offset`` (bytes done with), ``records`` (good records read), ``skipped`` (records or
    regions skipped), ``problems`` (first ``MAX_PROBLEMS_PER_FILE`` of ``(offset, reason)``), ``problem_count`` (all
    of them), ``pending`` (bytes of an incomplete record at the end), ``size`` (file size at the last look),
    ``restarts``, ``gone``.
    """

    def __init__(self, path):
        self.path = path
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


def short_error(error):
    """An exception as a problem's reason: its text, at most 120 characters."""
    text = str(error) or type(error).__name__
    return text if len(text) <= 120 else text[:117] + "..."
