"""Property-based fuzzing of the ``_MS`` reader: truncated tails, flipped bytes, random garbage, damaged payloads
behind good checksums, arbitrary append boundaries. The reader must never raise, and must lose only what is
damaged."""

import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.io import ms_proto
from tb_plugin_mindspore.sources.ms_logdir import MsLogdir

# The short form run by the suite; the long runs of the same readers are bench/fuzz.py's (millions of inputs per
# reader, coverage-guided) and this file with TB_MINDSPORE_LONG_FUZZ=1 (about four times as many examples).
LONG = os.environ.get("TB_MINDSPORE_LONG_FUZZ") == "1"
FUZZ = settings(max_examples=2000 if LONG else 500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_FILES = settings(max_examples=300 if LONG else 80, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

NAME = "events.out.events.summary.1700000000.0.host_MS"


def real_file(ms_fixtures, run="record"):
    with open(ms_fixtures.path(ms_fixtures.files(run)[0]), "rb") as f:
        return f.read()


def framed_payloads(buf):
    res = records.scan(buf)
    assert not res.problems and res.consumed == len(buf)
    return res.payloads


def scan_all(buf, step=None):
    """Scans ``buf`` in pieces of at most ``step`` bytes, as a tailing reader would; returns payloads, problems."""
    payloads, problems = [], []
    offset, resyncing = 0, False
    while offset < len(buf):
        end = len(buf) if step is None else min(len(buf), offset + step)
        res = records.scan(buf[offset:end], offset, resyncing)
        if res.consumed == 0:
            if end == len(buf):
                break
            if step is not None and res.need:
                res = records.scan(buf[offset:offset + res.need], offset, resyncing)
                if res.consumed == 0:
                    break
            else:
                break
        payloads.extend(res.payloads)
        problems.extend(res.problems)
        offset += res.consumed
        resyncing = res.resyncing
    return payloads, problems


def check_scan(res, buf, base=0):
    assert 0 <= res.consumed <= len(buf)
    assert res.offsets == sorted(set(res.offsets))
    assert len(res.offsets) == len(res.payloads)
    for offset, payload in zip(res.offsets, res.payloads):
        local = offset - base
        assert buf[local + 12:local + 12 + len(payload)] == payload


def exercise(logdir):
    """Calls every accessor of every run."""
    for run in logdir.runs():
        logdir.tags(run)
        logdir.scalars(run)
        for tag in logdir.tags(run)["scalars"]:
            logdir.scalar_arrays(run, tag)
        logdir.histograms(run, stats=True)
        logdir.tensors(run)
        logdir.images(run)
        logdir.landscapes(run)
        logdir.lineage(run)
        logdir.warnings(run)
        logdir.stats(run)
        logdir.version(run)


@FUZZ
@given(st.binary(max_size=3000), st.booleans())
def test_random_bytes_never_raise(buf, resyncing):
    res = records.scan(buf, 100, resyncing)
    check_scan(res, buf, 100)


@FUZZ
@given(st.data())
def test_truncated_tail_gives_a_prefix_and_no_warning(ms_fixtures, data):
    buf = real_file(ms_fixtures, data.draw(st.sampled_from(["record", "ops", "collector"])))
    full = framed_payloads(buf)
    cut = data.draw(st.integers(0, len(buf)))
    res = records.scan(buf[:cut])
    check_scan(res, buf[:cut])
    assert res.problems == []
    assert res.payloads == full[:len(res.payloads)]
    # Everything that is complete was read; the rest is a waited-for record.
    assert len(buf[:cut]) - res.consumed < (res.need or 1) or res.consumed == cut


@FUZZ
@given(st.data())
@pytest.mark.slow
def test_flipped_bytes_lose_only_damaged_records(ms_fixtures, data):
    buf = bytearray(real_file(ms_fixtures, data.draw(st.sampled_from(["record", "ops", "collector"]))))
    original = records.scan(bytes(buf))
    full = original.payloads
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(buf) - 1), st.integers(1, 255)), min_size=1,
                               max_size=6))
    for position, mask in flips:
        buf[position] ^= mask
    step = data.draw(st.none() | st.integers(12, 4096))
    payloads, problems = scan_all(bytes(buf), step)
    assert all(p in full for p in payloads)
    # Every record without a flipped byte is still found (a flip in a length checksum alone loses nothing).
    for start, payload in zip(original.offsets, full):
        stop = start + 16 + len(payload)
        if not any(start <= position < stop for position, _ in flips):
            assert payload in payloads
    if not problems:
        assert payloads == full


@FUZZ
@given(st.data())
@pytest.mark.slow
def test_garbage_between_records_is_skipped(ms_fixtures, data):
    buf = real_file(ms_fixtures)
    full = framed_payloads(buf)
    res0 = records.scan(buf)
    index = data.draw(st.integers(1, len(full) - 1))
    at = res0.offsets[index]
    garbage = data.draw(st.binary(min_size=1, max_size=600) | st.just(b"\x00" * 500))
    damaged = buf[:at] + garbage + buf[at:]
    payloads, problems = scan_all(damaged, data.draw(st.none() | st.integers(12, 2048)))
    # Every record is found again, and the garbage is reported where it starts.
    assert payloads == full
    assert problems and problems[0][0] == at


@FUZZ_FILES
@given(st.data())
def test_damaged_payloads_behind_good_checksums(ms_fixtures, data):
    """Mutated payloads framed with valid checksums reach the protobuf decoder and every accessor."""
    buf = real_file(ms_fixtures, data.draw(st.sampled_from(["record", "ops", "collector", "landscape"])))
    payloads = framed_payloads(buf)
    out = []
    for payload in payloads:
        payload = bytearray(payload)
        if payload and data.draw(st.booleans()):
            for _ in range(data.draw(st.integers(1, 4))):
                payload[data.draw(st.integers(0, len(payload) - 1))] = data.draw(st.integers(0, 255))
        if data.draw(st.integers(0, 9)) == 0:
            payload = payload[:data.draw(st.integers(0, len(payload)))]
        out.append(records.frame(bytes(payload)))
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, NAME), "wb") as f:
            f.write(b"".join(out))
        logdir = MsLogdir(root, samples={"histograms": 3, "tensors": 3, "images": 3})
        while logdir.reload(max_bytes=data.draw(st.integers(1, 5000))).pending:
            pass
        exercise(logdir)
        stats = logdir.stats(".")
        assert stats["records"] == len(payloads)


@FUZZ_FILES
@given(st.data())
@pytest.mark.slow
def test_any_file_content_never_raises(ms_fixtures, data):
    base = real_file(ms_fixtures, data.draw(st.sampled_from(["record", "ops", "collector"])))
    kind = data.draw(st.sampled_from(["garbage", "flips", "truncate", "splice"]))
    if kind == "garbage":
        content = data.draw(st.binary(max_size=4000))
    elif kind == "flips":
        content = bytearray(base)
        for _ in range(data.draw(st.integers(1, 20))):
            content[data.draw(st.integers(0, len(content) - 1))] ^= data.draw(st.integers(1, 255))
        content = bytes(content)
    elif kind == "truncate":
        content = base[:data.draw(st.integers(0, len(base)))]
    else:
        a, b = sorted([data.draw(st.integers(0, len(base))), data.draw(st.integers(0, len(base)))])
        content = base[:a] + data.draw(st.binary(max_size=200)) + base[b:]
    lineage = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, NAME), "wb") as f:
            f.write(content)
        if lineage:
            lin = ms_fixtures.files("collector", "_lineage")[0]
            with open(ms_fixtures.path(lin), "rb") as f:
                lbytes = bytearray(f.read())
            for _ in range(data.draw(st.integers(0, 5))):
                lbytes[data.draw(st.integers(0, len(lbytes) - 1))] ^= data.draw(st.integers(1, 255))
            with open(os.path.join(root, NAME[:-3] + "_lineage"), "wb") as f:
                f.write(bytes(lbytes))
        logdir = MsLogdir(root)
        budget = data.draw(st.integers(16, 6000))
        for _ in range(10000):
            if not logdir.reload(max_bytes=budget).pending:
                break
        exercise(logdir)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_appending_in_any_pieces_gives_the_same_data(ms_fixtures, data):
    run = data.draw(st.sampled_from(["record", "ops", "collector"]))
    buf = real_file(ms_fixtures, run)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(buf) - 1), max_size=8))))
    with tempfile.TemporaryDirectory() as root:
        one = os.path.join(root, "one")
        os.mkdir(one)
        with open(os.path.join(one, NAME), "wb") as f:
            f.write(buf)
        whole = MsLogdir(one)
        whole.reload()
        pieces = os.path.join(root, "pieces")
        os.mkdir(pieces)
        live = MsLogdir(pieces)
        start = 0
        for cut in cuts + [len(buf)]:
            with open(os.path.join(pieces, NAME), "ab") as f:
                f.write(buf[start:cut])
            start = cut
            live.reload(max_bytes=data.draw(st.integers(1, 3000)))
            assert live.warnings(".") == []
        while live.reload().pending:
            pass
        assert live.scalars(".") == whole.scalars(".")
        assert live.histograms(".", stats=True) == whole.histograms(".", stats=True)
        a, b = live.tensors("."), whole.tensors(".")
        assert a.keys() == b.keys()
        for tag in a:
            assert [(s, w) for s, w, _ in a[tag]] == [(s, w) for s, w, _ in b[tag]]
            for (_, _, x), (_, _, y) in zip(a[tag], b[tag]):
                np.testing.assert_array_equal(x, y)
        assert live.images(".") == whole.images(".")
        assert live.warnings(".") == [] and live.stats(".")["pending_bytes"] == 0


_TAGS = ["loss", "lr", "acc", "los", "a" * 127, "b" * 128, "c" * 300, "w/auto", "é/ü"]


@FUZZ_FILES
@given(st.lists(st.lists(st.tuples(st.sampled_from(_TAGS), st.sampled_from(["scalar", "histogram", "tensor"]),
                                   st.floats(width=32, allow_nan=True, allow_infinity=True)),
                         max_size=6),
                min_size=1, max_size=60),
       st.integers(1, 4000))
def test_vectorized_and_value_by_value_paths_agree(records_spec, budget):
    """Whatever mix of layouts (repeated or not, long tags, repeated tags, other kinds, one tag with several kinds),
    MsLogdir's scalars and histograms equal a plain decoding of every record with the full message classes, in
    file order."""
    chunks = [records.frame(ms_proto.Event(wall_time=1.7e9, version=b"MindSpore.Event:1").SerializeToString())]
    for step, spec in enumerate(records_spec):
        ev = ms_proto.Event(wall_time=1.7e9 + step, step=step // 2)
        for tag, kind, number in spec:
            v = ev.summary.value.add(tag=tag.encode())
            if kind == "scalar":
                v.scalar_value = number
            elif kind == "histogram":
                v.histogram.buckets.add(left=0.0, width=1.0, count=step)
                v.histogram.count = step
            else:
                v.tensor.dims.append(1)
                v.tensor.float_data.append(number)
        chunks.append(records.frame(ev.SerializeToString()))
    buf = b"".join(chunks)
    want_scalars, want_hists = {}, {}
    mf_events = [ms_proto.Event.FromString(p) for p in records.scan(buf).payloads]
    # One name used for several kinds: the kind seen first keeps it (scalars first within a record), the others
    # get MindSpore's suffix.
    kinds = {}
    rank = {"scalar_value": 0, "histogram": 1, "tensor": 2}
    for ev in mf_events:
        for v in sorted(ev.summary.value, key=lambda v: rank[v.WhichOneof("value")]):
            known = kinds.setdefault(v.tag.decode(), [])
            if v.WhichOneof("value") not in known:
                known.append(v.WhichOneof("value"))

    def name(tag, which):
        return tag if kinds[tag][0] == which else tag + {"scalar_value": "[:Scalar]", "histogram": "[:Histogram]"}[which]

    for ev in mf_events:
        for v in ev.summary.value:
            tag = v.tag.decode()
            if v.WhichOneof("value") == "scalar_value":
                want_scalars.setdefault(name(tag, "scalar_value"), []).append((ev.step, ev.wall_time, v.scalar_value))
            elif v.WhichOneof("value") == "histogram":
                want_hists.setdefault(name(tag, "histogram"), []).append(
                    (ev.step, ev.wall_time, [[0.0, 1.0, float(v.histogram.count)]]))
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, NAME), "wb") as f:
            f.write(buf)
        logdir = MsLogdir(root, samples={"histograms": 1000})
        while logdir.reload(max_bytes=budget).pending:
            pass
        got = logdir.scalars(".")
        assert got.keys() == want_scalars.keys()
        for tag, points in want_scalars.items():
            np.testing.assert_array_equal(np.array(got[tag], dtype=np.float64), np.array(points, dtype=np.float64))
        assert logdir.histograms(".") == want_hists
        assert logdir.warnings(".") == []
