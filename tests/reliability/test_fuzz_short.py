"""The short form of ``bench/fuzz.py`` (coverage-guided fuzzing of every record reader and JSON side-file parser with
atheris where it is installed, Hypothesis otherwise): a few thousand executions per target, 0 escapes. The long runs
(10^7 executions per target, off CI) and their figures are in RELIABILITY.md."""

import json
import os
import sys

import pytest
import warm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_every_reader_survives_fuzzing_short(tmp_path):
    proc = warm.run([sys.executable, os.path.join(ROOT, "bench", "fuzz.py"), "--runs", "2000",
                     "--max-seconds", "60"], capture_output=True, text=True, timeout=900, cwd=str(tmp_path))
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = {r["target"]: r for r in result["rows"]}
    assert set(rows) == {"records", "events", "ms_events", "lineage", "rank_file", "json"}
    for name, row in rows.items():
        assert row["escapes"] == 0, (name, proc.stderr[-4000:])
        assert row["executions"] >= 500, row          # at least that many in the time allowed, on a loaded machine
        assert row["peak_rss_mb"] is None or row["peak_rss_mb"] < 1024, row
    assert proc.returncode == 0
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith("crash-")]


def test_a_fuzzing_kept_over_several_runs_counts_them_all(tmp_path):
    """``bench/fuzz.py --keep DIR``: each run's row goes into DIR's ledger; ``--runs`` is then counted over all of
    them (a line cut by a crash is skipped)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import fuzz
    finally:
        sys.path.pop(0)
    keep = str(tmp_path)
    assert fuzz.ledger_total(keep, "records") == {"runs": 0, "executions": 0, "seconds": 0.0, "escapes": 0}
    fuzz.ledger_add(keep, {"target": "records", "executions": 4_000_000, "seconds": 1200.5, "escapes": 0,
                           "detail": "left out"})
    fuzz.ledger_add(keep, {"target": "json", "executions": 10, "seconds": 1.0, "escapes": 0})
    with open(os.path.join(keep, fuzz.LEDGER), "a") as f:
        f.write('{"target": "records", "execu')
    fuzz.ledger_add(keep, {"target": "records", "executions": 6_500_000, "seconds": 1800.0, "escapes": 0})
    assert fuzz.ledger_total(keep, "records") == {"runs": 2, "executions": 10_500_000, "seconds": 3000.5,
                                                  "escapes": 0}
    with open(os.path.join(keep, fuzz.LEDGER)) as f:
        assert "left out" not in f.read()


def test_a_timeout_the_input_does_not_reproduce_is_not_an_escape(tmp_path):
    """libFuzzer times an input by the wall clock: a fuzzing process paused (SIGSTOP) or starved for longer than its
    ``-timeout`` ends on a "timeout" though the reader never hung. The input is run again: through in time without
    an exception, it is no escape (and is named in the note); a missing input or another failure stays an escape."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import fuzz
    finally:
        sys.path.pop(0)
    _, seeds = fuzz.make_target("records")
    unit = tmp_path / "timeout-abc"
    unit.write_bytes(seeds[0])
    text = "==1== ERROR: libFuzzer: timeout after 11 seconds\nartifact_prefix='x/'; Test unit written to %s\n" % unit
    note = fuzz._timeout_not_reproduced("records", text)
    assert note and str(unit) in note and "no exception" in note
    assert fuzz._timeout_not_reproduced("records", text.replace(str(unit), str(tmp_path / "gone"))) is None
    assert fuzz._timeout_not_reproduced("records", "==1== ERROR: libFuzzer: deadly signal\n") is None
