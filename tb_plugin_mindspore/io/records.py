"""TFRecord framing, shared by TensorBoard event files and MindSpore ``*_MS`` summary files: the one record reader.

A record is ``u64 length | u32 masked_crc32c(length) | data | u32 masked_crc32c(data)`` (little endian). Both
formats use it; only the payload proto differs. CRC32C comes from the C-backed ``google-crc32c`` package.

Writing: :func:`frame`. Reading: :func:`scan` splits bytes into record payloads, whatever they hold, and never
raises on them: a record cut off at the end is left for the next call (``need``), a record whose payload checksum
is wrong is skipped and named, a record whose length checksum is wrong loses the framing and the search for the next
valid record (:func:`find_resync`) tests every offset of a window at once. Every reader of records in the plugin
(the tab's event store, the commands' event reader, ``*_MS`` and lineage files, rank files, ``convert``) reads
through it, by way of ``sources/ms_files.MsFile`` (files, pieces, refusals); :func:`read_records` is the same over
one buffer.
"""

import struct

import google_crc32c
import numpy as np

HEADER_BYTES = 12   # length (8) + its crc (4)
FOOTER_BYTES = 4
# A length above this is treated as corruption even if its checksum matches (no real event is this large).
MAX_RECORD_BYTES = 256 << 20

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
