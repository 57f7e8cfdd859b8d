"""The short form of bench/cluster.py (64 ranks x 500 steps, with the browser): it runs, names the slow and the
stopped rank, answers warm within the 300 ms budget and draws within the 1 s budget (figures for 1,024 x 10,000 in
BENCHMARKS.md)."""

import json
import os
import sys

import pytest
import warm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_bench_cluster_short_form():
    proc = warm.run([sys.executable, os.path.join(ROOT, "bench", "cluster.py"), "--ranks", "64", "--steps",
                     "500", "--repeat", "2", "--browser"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["rules"]["slow_rank"]["findings"][0].startswith("Rank 7 (node node0) is 12% slower")
    assert figures["rules"]["rank_stopped"]["findings"][0].startswith("Rank 63 (node node7) stopped writing at step 250")
    for metric in ("step_time_ms", "data_wait_ms", "grad_norm", "host_memory_mb"):
        assert figures["routes"][metric]["warm_ms"] < 300, figures["routes"]
    assert figures["browser"]["ranks_drawn"] == 64 and figures["browser"]["cols_drawn"] == 500
    assert figures["browser"]["render_ms"] < 1000, figures["browser"]
