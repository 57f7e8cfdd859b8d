"""Damaged files: a real event file (this project's SummaryWriter) and real MindSpore ``*_MS`` files, truncated at
every byte and with flipped bytes / bits. What each reader promises:

* truncated: every complete record before the cut is read, exactly; the cut record is waited for (not reported:
  a file being written looks the same); nothing raises;
* flipped: nothing raises; every record read is one that was written (checksums); our ``_MS`` reader loses only
  the damaged record and reports it with its offset; TensorBoard's own loader (event files) stops at it.

The short forms run in CI, with the ``slow`` forms that flip every bit; truncating the event file at every byte is
the long form (``-m long``) of truncating it at every 4th byte.
"""

import os

import pytest

from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.io import event_headers
from tb_plugin_mindspore.sources.ms_logdir import MsLogdir


def _tb_raw_records(path):
    from tensorboard.backend.event_processing import event_file_loader

    return list(event_file_loader.RawEventFileLoader(str(path)).Load())


def _positions(size, stride):
    return range(0, size + 1, stride)


def _record_ends(buf):
    return [nxt for _, nxt, _ in records.read_records(buf)]


def _check_event_truncations(buf, path, stride):
    original = [data for _, _, data in records.read_records(buf)]
    ends = _record_ends(buf)
    for cut in _positions(len(buf), stride):
        path.write_bytes(buf[:cut])
        complete = sum(1 for e in ends if e <= cut)
        assert _tb_raw_records(path) == original[:complete], cut
        assert [d for _, _, d in records.read_records(buf[:cut])] == original[:complete], cut
        assert event_headers.scan_headers(str(path)) == (ends[complete - 1] if complete else 0, None), cut
    return len(range(0, len(buf) + 1, stride))


def _check_event_flips(buf, path, stride, masks):
    original = [data for _, _, data in records.read_records(buf)]
    kept = []
    trials = 0
    for pos in range(0, len(buf), stride):
        for mask in masks:
            damaged = bytearray(buf)
            damaged[pos] ^= mask
            path.write_bytes(bytes(damaged))
            got = _tb_raw_records(path)          # never raises
            assert got == original[:len(got)], pos
            kept.append(len(got) / len(original))
            event_headers.scan_headers(str(path))
            trials += 1
    return trials, sum(kept) / len(kept)


@pytest.mark.slow
def test_event_file_truncated_at_every_4th_byte(real_event_file, tmp_path):
    assert _check_event_truncations(real_event_file, tmp_path / "events.out.tfevents.1.x", 4) > 500


@pytest.mark.slow
@pytest.mark.long
def test_event_file_truncated_at_every_byte(real_event_file, tmp_path):
    _check_event_truncations(real_event_file, tmp_path / "events.out.tfevents.1.x", 1)


@pytest.mark.slow
def test_event_file_with_a_flipped_byte(real_event_file, tmp_path):
    trials, kept = _check_event_flips(real_event_file, tmp_path / "events.out.tfevents.1.x", 3, (0xFF,))
    assert trials > 300


@pytest.mark.slow
def test_event_file_with_each_bit_of_every_8th_byte_flipped(real_event_file, tmp_path):
    """All 8 bits of every 8th byte (every bit of every byte: 40,448 trials, 2 minutes, same result)."""
    _check_event_flips(real_event_file, tmp_path / "events.out.tfevents.1.x", 8, (1, 2, 4, 8, 16, 32, 64, 128))


def _ms_files(ms_fixtures):
    return [ms_fixtures.path(rel) for run in ("record", "collector", "ops", "landscape")
            for rel in ms_fixtures.files(run)]


def _ms_original(buf):
    res = records.scan(buf)
    assert not res.problems and res.consumed == len(buf)
    return res.payloads, [off for off in res.offsets] + [len(buf)]


def _check_ms_truncations(buf, stride):
    payloads, starts = _ms_original(buf)
    for cut in _positions(len(buf), stride):
        res = records.scan(buf[:cut])
        complete = sum(1 for end in starts[1:] if end <= cut)
        assert res.payloads == payloads[:complete] and not res.problems, cut
        assert res.consumed == starts[complete], cut


def _check_ms_flips(buf, stride, masks):
    payloads, starts = _ms_original(buf)
    index = {p: i for i, p in enumerate(payloads)}
    lost = []
    for pos in range(0, len(buf), stride):
        for mask in masks:
            damaged = bytearray(buf)
            damaged[pos] ^= mask
            res = records.scan(bytes(damaged))
            got = [index.get(p) for p in res.payloads]
            assert None not in got and got == sorted(got), pos       # only written records, in order
            lost.append(len(payloads) - len(got))
            assert len(payloads) - len(got) <= 1, (pos, res.problems)  # only the damaged record is lost
            if len(got) < len(payloads):
                assert res.problems, pos                                  # and it is reported
    return lost


def test_ms_files_truncated_at_every_byte(ms_fixtures):
    for path in _ms_files(ms_fixtures):
        with open(path, "rb") as f:
            _check_ms_truncations(f.read(), 1)


def test_ms_files_with_a_flipped_byte(ms_fixtures):
    for path in _ms_files(ms_fixtures):
        with open(path, "rb") as f:
            lost = _check_ms_flips(f.read(), 1, (0xFF,))
        assert sum(lost) > 0


@pytest.mark.slow
def test_ms_files_with_every_bit_flipped(ms_fixtures):
    for path in _ms_files(ms_fixtures):
        with open(path, "rb") as f:
            _check_ms_flips(f.read(), 1, (1, 2, 4, 8, 16, 32, 64, 128))


def test_ms_logdir_reads_a_truncated_file_as_it_grows(ms_fixtures, tmp_path):
    """The live reader on a real file cut at many points and then completed: the result equals a clean read."""
    src = _ms_files(ms_fixtures)[0]
    with open(src, "rb") as f:
        buf = f.read()
    clean_root = tmp_path / "clean"
    (clean_root / "run").mkdir(parents=True)
    (clean_root / "run" / os.path.basename(src)).write_bytes(buf)
    clean = MsLogdir(str(clean_root))
    clean.reload()
    expected = clean.scalars("run")
    for cut in range(0, len(buf), max(1, len(buf) // 40)):
        root = tmp_path / ("cut%d" % cut)
        (root / "run").mkdir(parents=True)
        target = root / "run" / os.path.basename(src)
        target.write_bytes(buf[:cut])
        live = MsLogdir(str(root))
        live.reload()
        with open(target, "ab") as f:
            f.write(buf[cut:])
        live.reload()
        assert live.scalars("run") == expected, cut
        assert live.warnings("run") == [], cut
