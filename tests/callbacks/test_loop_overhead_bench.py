"""``bench/overhead.py --quick`` runs every mode and entry point and ends with its JSON (no timing asserted)."""

import json
import os
import sys

import pytest
import warm

pytest.importorskip("mindspore")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_overhead_bench_quick_produces_ratios_per_mode_and_entry(tmp_path):
    proc = warm.run([sys.executable, os.path.join(ROOT, "bench", "overhead.py"), "--quick",
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


def _bench(name):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        return __import__(name)
    finally:
        sys.path.pop(0)


def test_paired_median_interval_is_distribution_free_and_narrows_with_rounds():
    """``bench/paired.py``'s 95% interval of the median ratio: order statistics of the rounds (binomial), so it holds
    the median, is None below 6 rounds, and is met (within +-target) only once enough rounds agree."""
    paired = _bench("paired")
    assert paired.median_ci([1.0] * 5) is None
    # n = 10: the binomial interval is the 2nd and 9th order statistics (P(B <= 1) = 0.011 <= 0.025 < P(B <= 2)).
    values = [1.0 + 0.001 * i for i in range(10)]
    assert paired.median_ci(values) == (values[1], values[8])
    wide = [1.0, 1.02, 0.98, 1.03, 0.97, 1.01, 0.99, 1.04, 0.96, 1.0]
    assert not paired.ci_met(wide, 0.005)
    narrow = [1.01 + 0.0001 * ((i * 7) % 11) for i in range(60)]
    low, high = paired.median_ci(narrow)
    assert low <= 1.0105 <= high
    assert paired.ci_met(narrow, 0.005)


def test_cost_table_rejects_unknown_sizes_modes_and_round_counts():
    cost_table = _bench("cost_table")
    with pytest.raises(SystemExit):
        cost_table.parse_args(["--sizes", "5m"])
    with pytest.raises(SystemExit):
        cost_table.parse_args(["--modes", "sink"])
    with pytest.raises(SystemExit):
        cost_table.parse_args(["--rounds", "9", "--max-rounds", "3"])
    args = cost_table.parse_args(["--quick"])
    assert args.size_list == ["0.1m"] and args.rounds == 3


@pytest.mark.slow
def test_cost_table_quick_gives_a_row_per_entry_point(tmp_path):
    """``bench/cost_table.py --quick`` (GRAPH_MODE here): one row per entry point, with its command, ending in JSON."""
    proc = warm.run([sys.executable, os.path.join(ROOT, "bench", "cost_table.py"), "--quick", "--modes", "graph"],
                    capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])["rows"]
    assert [(r["mode"], r["entry"]) for r in rows] == [("graph", "model"), ("graph", "loop")]
    for r in rows:
        assert r["errors"] == 0 and r["bare_ms_per_step"] > 0 and r["rounds"] == 3
        assert r["command"].startswith("python bench/paired.py --size 0.1m --modes graph")


@pytest.mark.slow
def test_grad_norms_bench_times_every_plan_with_exact_sums(tmp_path):
    """``bench/grad_norms.py``: the current plan (small parameters by L2Loss, the large ones by rows where they lie),
    the one before it and the all-packed one give every parameter's sum of squares within 1e-5 of float64 on the
    1M MLP, each timed, ending in JSON (no timing asserted)."""
    proc = warm.run([sys.executable, os.path.join(ROOT, "bench", "grad_norms.py"), "--sizes", "1m",
                     "--calls", "1", "--rounds", "2"], capture_output=True, text=True, timeout=300,
                    cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    model = result["models"]["1m"]
    assert model["parameters"] > 900000
    for plan in ("current", "rows", "packed"):
        assert model[plan]["max_relative_error"] < 1e-5 and model[plan]["median_ms"] > 0, plan
    assert set(result["kernels_1300x1300"]) == {"full_reduce", "by_rows"}


@pytest.mark.slow
def test_compile_cost_bench_times_compiles_and_calls(tmp_path):
    """``bench/compile_cost.py --quick``: its tables end in JSON; a second network of the same shapes compiles
    nothing with the shared weight-norm graph (a call, about a millisecond, against a compile of a few hundred)."""
    proc = warm.run([sys.executable, os.path.join(ROOT, "bench", "compile_cost.py"), "--builds", "2", "--calls", "5",
                     "--quick"],
                    capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [r["network"] for r in result["train"]] == ["mlp"]
    assert all(r["monitored_ms"] > 0 and r["plain_ms"] > 0 for r in result["train"])
    small = {r["graph"]: r for r in result["reductions"] if r["tensors"] == 4}
    assert small["shared"]["later_ms"] * 10 < small["own"]["later_ms"], small
    assert [r["tensors"] for r in result["per_call"]] == [4, 8]
    bad = warm.run([sys.executable, os.path.join(ROOT, "bench", "compile_cost.py"), "--builds", "1"],
                   capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert bad.returncode == 2 and "--builds must be at least 2" in bad.stderr


@pytest.mark.slow
def test_graph_time_bench_names_the_loops_graphs_from_mindspores_log(tmp_path):
    """``bench/graph_time.py``: MindSpore's runtime log times every execution of the loop's four graphs (the gradient,
    the optimizer, the optimizer with the statistics, the statistics alone), each found by name, ending in JSON
    (no timing asserted); a bad count is refused in one line."""
    script = os.path.join(ROOT, "bench", "graph_time.py")
    proc = warm.run([sys.executable, script, "--size", "0.1m", "--calls", "10", "--warmup", "2"],
                    capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(result["graphs"]) == {"grad", "optimizer", "update", "statistics"}
    for name in ("optimizer", "statistics"):
        assert result["graphs"][name]["executions"] == 11, result["graphs"][name]
    assert all(g["median_ms"] > 0 for g in result["graphs"].values())
    assert result["added_ms"] == pytest.approx(result["graphs"]["update"]["median_ms"]
                                               - result["graphs"]["optimizer"]["median_ms"], abs=1e-3)
    bad = warm.run([sys.executable, script, "--calls", "0"], capture_output=True, text=True, timeout=60,
                   cwd=str(tmp_path))
    assert bad.returncode != 0 and "--calls must be at least 1" in bad.stderr
