"""The short form of bench/health_scale.py (64 ranks x 2,000 steps, then 200 more appended): the health route,
served by a real ``tensorboard`` and in process, names the slow and the stopped rank, its answer after the append
judges the new steps (rank files and event file), the rank files' reader then read only the appended bytes, a
warm answer is within the 300 ms budget, and an answer asked after a reload finds the rank files read and the
cluster rules judged by the plugin's reader (figures for 1,024 x 100,000 in BENCHMARKS.md)."""

import json
import os
import sys

import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import rank_file
import warm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_bench_health_scale_short_form(tmp_path):
    proc = warm.run([sys.executable, os.path.join(ROOT, "bench", "health_scale.py"), "--ranks", "64",
                     "--steps", "2000", "--append", "200", "--repeat", "2", "--dir", str(tmp_path)],
                    capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    served, here = figures["served"], figures["in_process"]
    for findings in (served["findings"], served["findings_after"], here["findings_after"]):
        assert any(f.startswith("slow_rank warn Rank 7 (node node0) is 12% slower") for f in findings), findings
        assert any(f.startswith("rank_stopped error Rank 63 (node node7) stopped writing at step 1000") for f in
                   findings), findings
    # the first answer after the append judged steps 2001-2200 of every rank still written and of the event file
    # (the bench waits for it: "went on to step 2200", "steps 1-2200"); in process every point was judged (2,400
    # after the second append)
    assert set(here["series_points"].values()) == {2400}, here["series_points"]
    assert served["every_point"], served     # and the served answer came to judge every point too
    # after the first read, the rank files' reader read what was appended and nothing else
    row = rank_file.record_dtype(metadata.RANK_FIELDS).itemsize
    assert here["rank_bytes_after_append"] == here["rank_bytes_appended"] == 63 * 200 * row, here
    assert here["rank_bytes_after_reload"] == here["rank_bytes_appended_both"] == 63 * 400 * row, here
    assert served["warm_ms"] < 300 and here["warm"]["wall"] < 300, (served, here["warm"])
    # asked after the reload that appended the next 200 steps: the answer judges them, the rank files were read by
    # the plugin's reader before the request, and the cluster rules judged that state ahead of it (what keeps the
    # answer after a reload within 1 s at 1,024 ranks x 100,000 steps: BENCHMARKS.md)
    assert served["after_reload_fresh"] and here["after_reload_fresh"], (served, here)
    for findings in (served["findings_after_reload"], here["findings_after_reload"]):
        assert any(f.startswith("slow_rank warn Rank 7 (node node0) is 12% slower") for f in findings), findings
    assert here["after_reload"]["judged_in_request"] == 0, here["after_reload"]
    assert here["after_reload"].get("read_runs", 0.0) < 100, here["after_reload"]
    assert not os.listdir(str(tmp_path)), "the bench left its data behind"
