"""``bench/overhead.py --quick`` runs every mode and entry point and ends with its JSON (no timing asserted)."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("mindspore")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_overhead_bench_quick_produces_ratios_per_mode_and_entry(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "overhead.py"), "--quick",
                           "--out", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=900, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for mode in ("graph", "pynative"):
        for entry in ("model", "loop"):
            ratio = result["ratios"][mode][entry]["core_diag_debug"]
            assert ratio > 0, (mode, entry, ratio)
    assert "pynative/loop/core_diag_debug" in result["hook_share"]
    # The monitored runs wrote their points.
    assert any(name.startswith("pynative_loop_core_diag_debug") for name in os.listdir(str(tmp_path / "runs")))
