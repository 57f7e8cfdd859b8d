"""The server under load, short form of ``bench/server_load.py``: a real ``tensorboard`` process on 127.0.0.1 (both
loaders), clients looping over a mix of the tab's routes while a run is being written. Promises: no request
fails, answers come from the caches (warm health far below cold), memory does not run away. The full form (50
clients x 60 s on 100,000 steps x 30 tags and 200 runs) is the benchmark; its figures are in BENCHMARKS.md."""

import os
import statistics
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "bench"))

import server_load  # noqa: E402

SHORT = ["--big-steps", "2000", "--big-tags", "10", "--small-runs", "10", "--clients", "10", "--seconds", "4",
         "--reps", "3", "--settle", "1", "--reload-interval", "1", "--route-cpu", "2"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("server_load"))
    args = server_load.parse_args(SHORT + ["--path", path])
    server_load.make_data(os.path.join(path, "data"), args.big_steps, args.big_tags, args.small_runs)
    return os.path.join(path, "data"), args


# Not serial: its bounds hold beside other work by a wide margin (four busy processes on the two cores: 1,118 and
# 1,167 requests where 100 are asked, p99 81 ms against 5,000, memory after / before 1.04).
@pytest.mark.parametrize("load_fast", ["false", "true"])
@pytest.mark.slow
def test_mixed_routes_under_load(data, load_fast):
    folder, args = data
    r = server_load.measure(folder, load_fast, args)
    assert r["errors"] == 0, r["error_samples"]
    assert r["requests"] >= 100 and all(v["n"] > 0 for v in r["routes"].values()), r["routes"]
    # served from the cache: a warm health answer costs a fraction of the first one
    assert statistics.median(r["health_big_warm_ms"]) < r["health_big_cold_ms"] / 2, r
    assert statistics.median(r["health_all_warm_ms"]) < r["health_all_cold_ms"] / 2, r
    assert "nonfinite" in r["health_big_findings"]      # the NaN only an interval row holds
    assert r["batch_big_total_points"] == args.big_steps
    assert r["p99_ms"] < 5000, r["routes"]
    assert r["rss_after_mb"] < 1.5 * r["rss_before_mb"], r
    # every route of the mix asked alone, its server CPU per request counted (from /proc: 10 ms ticks)
    assert set(r["route_cpu"]) == set(r["routes"]) and all(v["cpu_ms"] >= 0 for v in r["route_cpu"].values())
    assert r["load_cpu_s"] > 0


def test_bench_arguments_are_checked():
    with pytest.raises(SystemExit):
        server_load.parse_args(["--clients", "0"])
    with pytest.raises(SystemExit):
        server_load.parse_args(["--big-tags", "2"])
