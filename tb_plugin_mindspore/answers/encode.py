"""Compact JSON of the answers, and the answers kept while their data is unchanged.

* :func:`json_numbers` turns a numpy array into plain Python lists for ``json.dumps`` with NaN and infinities as the
  strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (the same convention as TensorBoard's ``json_util.Cleanse``,
  without its per-element Python walk over the whole structure).
* :func:`interval_rows`: an interval band as the routes' rows ``[step, min, mean, max, count, nonfinite]``.
* :func:`dumps` is ``json.dumps`` for data already made JSON-safe: the routes that send large answers build their
  JSON text once and cache it, so TensorBoard's ``Respond`` gets a string and only compresses it.
* :class:`Gzipped`: JSON text compressed once, for answers sent many times unchanged (compressing is otherwise the
  largest cost of a busy server's cached answers); the plugin sends it as it is to clients that accept gzip.
* :func:`bf16_planes_b64` packs a float matrix into 2 bytes per value (bfloat16, see below), base64.
* :class:`ResponseCache`: computed answers (their JSON text, or a :class:`Gzipped`), each kept with the *freshness
  token* of the data it was computed from (``Sources.tokens``, ``sources.series_cache.Listings``: cheap to ask for,
  changed by any new data): a later request with the same token gets the kept answer back, new data changes the
  token and the answer is computed again. Bounded by total size (least recently used goes first). Thread-safe:
  TensorBoard serves requests from several threads.

The bfloat16 block (``"encoding": "bf16-planes"``)
-------------------------------------------------
Each value is a float32 rounded to its top 16 bits (round to nearest, ties to even): sign, the full 8-bit
exponent and 7 explicit mantissa bits (8 significant bits: relative error <= 2^-8, about 0.4 %, i.e. 2-3
significant digits) over the whole float32 range; NaN, +Inf, -Inf and 0 stay what they are. The matrix is flattened row-major and sent as two *planes*: first the high byte of every
value, then the low byte of every value, the whole base64-encoded. Splitting the bytes puts the slowly changing
sign/exponent bytes next to each other, which gzip compresses far better than interleaved 16-bit words. A reader
rebuilds value ``i`` of ``n`` as the float32 whose bits are ``(hi[i] << 24) | (lo[i] << 16)``. A route may reserve
one NaN bit pattern that rounding never produces (``0x7FFF``) for "no value here".
"""

import base64
import collections
import json
import threading

import numpy as np

_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _name(x):
    if x != x:
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def json_numbers(array):
    """A numpy array (any shape) as nested lists of Python numbers, non-finite values as their string names."""
    array = np.asarray(array)
    out = array.tolist()
    if array.dtype.kind != "f" or array.size == 0:
        return out
    bad = np.argwhere(~np.isfinite(array))
    if bad.size:
        if array.ndim == 1:
            for (i,) in bad:
                out[i] = _name(out[i])
        else:
            for idx in bad:
                row = out
                for k in idx[:-1]:
                    row = row[k]
                row[idx[-1]] = _name(row[idx[-1]])
    return out


def interval_rows(band):
    """The JSON rows ``[step, min, mean, max, count, nonfinite]`` (``contract.interval.ROW_FIELDS``) of an interval
    band (a ``contract.interval.IntervalTable``), non-finite numbers as their names."""
    cols = [np.asarray(band.steps).astype(np.int64).tolist()]
    cols += [json_numbers(np.asarray(c, dtype=np.float64)) for c in (band.min, band.mean, band.max)]
    cols += [np.asarray(c).astype(np.int64).tolist() for c in (band.count, band.nonfinite)]
    return [list(r) for r in zip(*cols)]


def json_significant(array, digits=7):
    """A 1-D float array as a list of floats rounded to ``digits`` significant digits (short JSON text); non-finite
    values as their string names."""
    fmt = "%%.%dg" % digits
    return [float(fmt % x) if x - x == 0 else _name(x) for x in np.asarray(array, dtype=np.float64).tolist()]


def round_list(array, decimals):
    """A 1-D float array rounded to ``decimals`` as a list (non-finite values as their string names)."""
    return json_numbers(np.round(np.asarray(array, dtype=np.float64), decimals))


def json_float(x):
    """One float as JSON-safe value (non-finite as its string name)."""
    x = float(x)
    return x if np.isfinite(x) else _name(x)


def dumps(obj):
    """JSON text of an already JSON-safe object (no NaN / Infinity tokens allowed)."""
    return json.dumps(obj, allow_nan=False, separators=(",", ":"))


def to_bf16_bits(values):
    """uint16 bfloat16 bit patterns of ``values`` (float32 rounded to nearest even; NaN stays a quiet NaN)."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        rounded[nan] = 0x7FC0
    return rounded


def from_bf16_bits(bits):
    """float32 values of uint16 bfloat16 bit patterns (the inverse of :func:`to_bf16_bits` up to rounding)."""
    u = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16
    return u.view(np.float32)


def bf16_planes(values, missing=None, missing_bits=0x7FFF):
    """Bytes of the two planes (all high bytes, then all low bytes) of ``values`` flattened row-major; cells where
    the boolean array ``missing`` is set get the bit pattern ``missing_bits`` instead (a NaN that no float32
    rounds to)."""
    bits = to_bf16_bits(np.asarray(values, dtype=np.float32).reshape(-1))
    if missing is not None:
        bits[np.asarray(missing, dtype=bool).reshape(-1)] = missing_bits
    hi = (bits >> 8).astype(np.uint8)
    lo = (bits & 0xFF).astype(np.uint8)
    return hi.tobytes() + lo.tobytes()


def bf16_planes_b64(values, missing=None, missing_bits=0x7FFF):
    return base64.b64encode(bf16_planes(values, missing, missing_bits)).decode("ascii")


def decode_bf16_planes_b64(text, shape, missing_bits=0x7FFF):
    """(float32 array of ``shape``, boolean mask of missing cells) from :func:`bf16_planes_b64` text (for tests and
    readers in Python)."""
    raw = np.frombuffer(base64.b64decode(text), dtype=np.uint8)
    n = raw.size // 2
    bits = (raw[:n].astype(np.uint16) << 8) | raw[n:].astype(np.uint16)
    return from_bf16_bits(bits).reshape(shape), (bits == missing_bits).reshape(shape)


class Gzipped:
    """JSON text compressed once (``data``: gzip bytes; ``text_bytes``: the size before compression)."""

    __slots__ = ("data", "text_bytes")

    def __init__(self, text, level=6):
        import gzip

        raw = text.encode("utf-8")
        self.text_bytes = len(raw)
        self.data = gzip.compress(raw, compresslevel=level, mtime=0)

    def __len__(self):
        return len(self.data)


# -- answers kept ------------------------------------------------------------------------------------------------
DEFAULT_MAX_BYTES = 96 * 1024 * 1024
DEFAULT_MAX_ENTRIES = 4096


class ResponseCache:
    """Answers kept per key with the freshness token they were computed under (see the module doc); ``hits`` and
    ``misses`` count the lookups."""

    def __init__(self, max_bytes=DEFAULT_MAX_BYTES, max_entries=DEFAULT_MAX_ENTRIES):
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._items = collections.OrderedDict()  # key -> (token, value, size)
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key, token):
        """The value stored under ``key`` with this ``token``, else ``None``."""
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0] != token:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item[1]

    def put(self, key, token, value, size=None):
        if size is None:
            size = len(value) if isinstance(value, (str, bytes)) else 1024
        if size > self.max_bytes:
            return value
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[2]
            self._items[key] = (token, value, size)
            self._bytes += size
            while self._items and (self._bytes > self.max_bytes or len(self._items) > self.max_entries):
                _, (_, _, s) = self._items.popitem(last=False)
                self._bytes -= s
        return value

    def clear(self):
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def __len__(self):
        return len(self._items)
