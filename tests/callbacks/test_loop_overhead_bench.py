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


@pytest.mark.serial   # a spinning thread must get CPU time within 0.4 s
def test_thread_cpu_counts_a_busy_thread_by_its_name():
    """``bench/thread_cpu.py``'s accounting: CPU time per thread name, from ``/proc/self/task``."""
    import threading
    import time

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        from thread_cpu import cpu_by_name, thread_cpu
    finally:
        sys.path.pop(0)

    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass

    worker = threading.Thread(target=spin, name="tbms-busy")
    before = thread_cpu()
    worker.start()
    time.sleep(0.4)
    used = cpu_by_name(before, thread_cpu())
    stop.set()
    worker.join()
    assert used["tbms-busy"] >= 0.1, used
