"""The per-rank statistics file: one small append-only file per rank, read without TensorBoard.

Layout (``metadata.CLUSTER_DIR`` inside the run folder, one file per rank, ``rank<k>`` + ``metadata.RANK_FILE_SUFFIX``)::

    b"TBMSRANK" | u32 header length (little endian) | header: UTF-8 JSON | zero padding to a multiple of 8
    then records, each: i8 step | f8 wall_time | f4 value per field (little endian)

The header says ``{"version", "rank", "rank_size", "host", "local_rank", "pid", "start_time", "collect_freq",
"fields": [...]}``. Fixed-size records make reading a rank one ``numpy.frombuffer`` and resuming at a byte offset;
a record cut short at the end (a process killed while writing) is left for the next read, so a dead rank shows up
as a row that stops, never as a damaged file. Records that cannot have been written (all zero bytes, impossible
steps or wall times) are left out by :func:`check_records`. The name does not contain ``tfevents``: TensorBoard
does not list these files as runs (a 1,024-rank job stays one run in the run list).
Standard library and numpy only.
"""

import json
import struct

import numpy as np

from .. import metadata

MAGIC = b"TBMSRANK"
_LEN = struct.Struct("<I")
MAX_HEADER_BYTES = 1 << 16
# The largest step a record may hold (beyond it steps lose integer precision as the float the view draws them with).
MAX_STEP = 1 << 53


class RankFileError(ValueError):
    """A file that is not a per-rank statistics file this version can read."""


def record_dtype(fields):
    """The numpy dtype of one record for ``fields`` (the value columns, in order)."""
    return np.dtype([("step", "<i8"), ("wall_time", "<f8")] + [(str(f), "<f4") for f in fields])


def header_bytes(header):
    """The bytes that start a file: magic, length, JSON header, padding to 8 bytes."""
    body = dict(header)
    body.setdefault("version", metadata.CONTENT_VERSION)
    body.setdefault("fields", list(metadata.RANK_FIELDS))
    text = json.dumps(body, sort_keys=True).encode("utf-8")
    raw = MAGIC + _LEN.pack(len(text)) + text
    return raw + b"\0" * (-len(raw) % 8)


def pack_record(dtype, step, wall_time, values):
    """Bytes of one record (``values``: one float per field, NaN where unknown)."""
    rec = np.zeros(1, dtype=dtype)
    rec["step"] = int(step)
    rec["wall_time"] = float(wall_time)
    for name, value in zip(dtype.names[2:], values):
        rec[name] = np.float32(value)
    return rec.tobytes()


def parse_header(buf):
    """``(header dict, offset of the first record)``; ``(None, 0)`` while the header is not complete yet.

    Raises :class:`RankFileError` for another kind of file or a header this version cannot read."""
    if len(buf) < len(MAGIC) + _LEN.size:
        if bytes(buf[:len(MAGIC)]) != MAGIC[:len(buf)]:
            raise RankFileError("not a per-rank statistics file (wrong magic bytes)")
        return None, 0
    if bytes(buf[:len(MAGIC)]) != MAGIC:
        raise RankFileError("not a per-rank statistics file (wrong magic bytes)")
    (length,) = _LEN.unpack(bytes(buf[len(MAGIC):len(MAGIC) + _LEN.size]))
    if length > MAX_HEADER_BYTES:
        raise RankFileError("header of %d bytes is larger than %d" % (length, MAX_HEADER_BYTES))
    start = len(MAGIC) + _LEN.size
    end = start + length
    if len(buf) < end:
        return None, 0
    header = metadata.loads_json(bytes(buf[start:end]), "the rank file header")
    if not isinstance(header, dict):
        raise RankFileError("the rank file header is not a JSON object")
    version = header.get("version")
    if not isinstance(version, int) or not 1 <= version <= metadata.CONTENT_VERSION:
        raise RankFileError("rank file version %r is not readable by this version" % (version,))
    fields = header.get("fields")
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) and f for f in fields) \
            or len(set(fields)) != len(fields) or len(fields) > 64:
        raise RankFileError("the rank file header has no valid field list")
    rank = header.get("rank")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise RankFileError("the rank file header has no valid rank: %r" % (rank,))
    return header, end + (-end % 8)


def check_records(records):
    """``(kept records, {"all_zero", "bad_step", "bad_wall_time": count})``: records that cannot have been written
    are left out: every byte zero (a preallocated or crash-zeroed stretch of the file), a step that is negative or
    above :data:`MAX_STEP`, a wall time that is not a finite positive number."""
    counts = {"all_zero": 0, "bad_step": 0, "bad_wall_time": 0}
    if not records.size:
        return records, counts
    raw = records.view(np.uint8).reshape(records.size, records.dtype.itemsize)
    if not raw.any():               # a zeroed stretch of the file: one pass over its bytes
        counts["all_zero"] = int(records.size)
        return records[:0], counts
    zero = ~raw.any(axis=1)
    steps, walls = records["step"], records["wall_time"]
    bad_step = ~zero & ((steps < 0) | (steps > MAX_STEP))
    bad_wall = ~zero & ~bad_step & ~(np.isfinite(walls) & (walls > 0))
    counts.update(all_zero=int(zero.sum()), bad_step=int(bad_step.sum()), bad_wall_time=int(bad_wall.sum()))
    if not (zero.any() or bad_step.any() or bad_wall.any()):
        return records, counts
    return records[~(zero | bad_step | bad_wall)], counts


def parse_records(buf, dtype, offset):
    """``(records array, next offset)``: the complete records of ``buf`` from ``offset`` (a partial one at the end
    is left for later)."""
    n = max(0, (len(buf) - offset) // dtype.itemsize)
    records = np.frombuffer(buf, dtype=dtype, count=n, offset=offset) if n else np.zeros(0, dtype=dtype)
    return records, offset + n * dtype.itemsize
