"""The resynchronising search of the record reader: its small-window path (offset by offset) finds exactly what the
array path finds, on random, hostile and real record bytes."""
import random

import numpy as np

from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.io.records import HEADER_BYTES


def _array_path(buf, start, stop):
    saved = records._SMALL_WINDOW
    records._SMALL_WINDOW = 0
    try:
        return list(records._header_candidates(buf, start, stop))
    finally:
        records._SMALL_WINDOW = saved


def _small_path(buf, start, stop):
    return records._header_candidates_small(bytes(buf[start:stop + HEADER_BYTES - 1]), start, stop - start)


def _buffers():
    rng = random.Random(7)
    good = records.frame(b"payload")
    empty = records.frame(b"")
    yield good * 3
    yield empty * 5
    yield b"\x00" * 40 + good + b"\x00" * 40      # zeros around a record: candidates everywhere, one valid
    yield bytes(11) + good[:-2]
    for _ in range(300):
        parts = []
        for _ in range(rng.randrange(1, 8)):
            kind = rng.randrange(4)
            if kind == 0:
                parts.append(records.frame(bytes(rng.randrange(256) for _ in range(rng.randrange(20)))))
            elif kind == 1:
                parts.append(bytes(rng.randrange(256) for _ in range(rng.randrange(40))))
            elif kind == 2:
                parts.append(bytes(rng.randrange(12)))
            else:
                parts.append(np.arange(rng.randrange(1, 30), dtype=np.uint64).tobytes())   # small numbers
        yield b"".join(parts)


def test_small_window_finds_what_the_array_search_finds():
    checked = 0
    for buf in _buffers():
        for start in range(0, max(1, len(buf) - HEADER_BYTES + 1), 5):
            stop = len(buf) - HEADER_BYTES + 1
            if stop <= start:
                continue
            assert _small_path(buf, start, stop) == _array_path(buf, start, stop), (buf, start)
            checked += 1
    assert checked > 1000


def test_many_candidates_go_to_the_array_search_with_the_same_answer():
    buf = np.arange(400, dtype=np.uint64).tobytes() + records.frame(b"x")   # hundreds of zero high halves
    stop = len(buf) - HEADER_BYTES + 1
    assert records._header_candidates(buf, 0, stop) == _array_path(buf, 0, stop)
    assert len(buf) - HEADER_BYTES in records._header_candidates(buf, 0, stop) or \
        any(records.scan(buf).offsets)


def test_scan_resyncs_to_the_same_records_through_either_path():
    rng = random.Random(3)
    for _ in range(100):
        recs = [bytes(rng.randrange(256) for _ in range(rng.randrange(30))) for _ in range(5)]
        buf = bytearray(b"".join(records.frame(r) for r in recs))
        for _ in range(3):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        small = records.scan(bytes(buf))
        saved = records._SMALL_WINDOW
        records._SMALL_WINDOW = 0
        try:
            big = records.scan(bytes(buf))
        finally:
            records._SMALL_WINDOW = saved
        assert (small.payloads, small.offsets, small.problems, small.consumed) == \
            (big.payloads, big.offsets, big.problems, big.consumed)
