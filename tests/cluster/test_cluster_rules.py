"""The cluster rules through ``tb-mindspore check`` on synthetic clusters written in the real formats: a slow rank
named with its cause (data wait or compute), a rank whose loss departs, a rank that stopped, memory growth and the
device limit, mindformers' rank_<k> folders, and no finding on a healthy noisy cluster."""

import json
import re

import pytest

from tb_plugin_mindspore.commands import check as cli

from cluster_data import write_cluster, write_rank_folders

CLUSTER_RULES = {"slow_rank", "rank_diverging", "rank_stopped", "memory_growth", "device_memory_limit"}


def check(logdir, capsys, *extra):
    code = cli.main(["check", str(logdir), "--format", "json"] + list(extra))
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return {r["run"]: [f for f in r["findings"] if f["rule"] in CLUSTER_RULES] for r in json.loads(out)["runs"]}


def test_healthy_noisy_cluster_has_no_cluster_finding(tmp_path, capsys):
    write_cluster(tmp_path / "job", ranks=8, device_limit=32000)
    assert check(tmp_path, capsys) == {"job": []}


@pytest.mark.parametrize("cause", ["data wait", "compute"])
def test_slow_rank_is_named_with_where_its_time_goes(tmp_path, capsys, cause):
    write_cluster(tmp_path / "job", ranks=8, slow=(5, 60), slow_cause=cause)
    (f,) = check(tmp_path, capsys)["job"]
    assert f["rule"] == "slow_rank" and f["level"] == "warn"
    assert f["message"].startswith("Rank 5 (node node1) is 12% slower than the median rank")
    assert ("goes to waiting for data" if cause == "data wait" else "goes to compute") in f["message"]
    assert "Ascend's slow-rank threshold: 5%" in f["message"]
    assert 60 <= f["steps"][0] <= 60 + 20          # named within 20 steps of the slowdown


@pytest.mark.parametrize("load", [0.4, 6.5])
def test_a_slow_rank_on_an_oversubscribed_node_is_a_note_about_the_load(tmp_path, capsys, load):
    """Four msrun workers on a 2-core machine at load 13: rank 0, which also writes the run's event files, ran
    8-16% slower in 3 of 4 healthy jobs of the health corpus. When the node had more runnable threads than CPUs,
    the compute gap says more about the machine than about a device: a note. Data wait stays a warning."""
    write_cluster(tmp_path / "job", ranks=8, slow=(5, 60), slow_cause="compute", host_load=load)
    (f,) = check(tmp_path, capsys)["job"]
    assert f["rule"] == "slow_rank" and f["message"].startswith("Rank 5 (node node1) is 12% slower")
    if load > 1:
        assert f["level"] == "info" and "node was oversubscribed (load average 6.5 per CPU)" in f["message"]
    else:
        assert f["level"] == "warn" and "look at that device's health" in f["message"]
    write_cluster(tmp_path / "io", ranks=8, slow=(5, 60), slow_cause="data wait", host_load=6.5)
    (f,) = check(tmp_path, capsys)["io"]
    assert f["level"] == "warn" and "goes to waiting for data" in f["message"]


def test_rank_whose_loss_departs_is_named(tmp_path, capsys):
    write_cluster(tmp_path / "job", ranks=8, diverge=(2, 100))
    (f,) = check(tmp_path, capsys)["job"]
    assert f["rule"] == "rank_diverging" and "local loss of rank 2 (node node0)" in f["message"]
    assert 100 <= f["steps"][0] <= 120


def test_rank_that_stopped_writing_is_named(tmp_path, capsys):
    write_cluster(tmp_path / "job", ranks=4, stop=(3, 120))
    (f,) = check(tmp_path, capsys)["job"]
    assert f["rule"] == "rank_stopped" and f["level"] == "error"
    assert f["message"].startswith("Rank 3 (node node1) stopped writing at step 120 while the other ranks went on "
                                   "to step 200")


def test_memory_leak_and_device_limit(tmp_path, capsys):
    write_cluster(tmp_path / "job", ranks=4, leak=(1, 2.0), near_limit=2, device_limit=32000)
    found = {f["rule"]: f for f in check(tmp_path, capsys)["job"]}
    assert set(found) == {"memory_growth", "device_memory_limit"}
    assert re.match(r"Host memory \(RSS\) of rank 1 grows steadily: (19\d\d|20\d\d) MB per 1,000 steps \(rank 1 "
                    r"\(node node0\): from 21\d\d MB at step 62 to 23\d\d MB at step 200\)",
                    found["memory_growth"]["message"]), found["memory_growth"]["message"]
    assert "Device memory of rank 2 (node node1) reached 3.04e+04 MB of its 3.2e+04 MB limit (95%)" in \
        found["device_memory_limit"]["message"]


def test_mindformers_rank_folders_are_one_cluster_judged_once(tmp_path, capsys):
    write_rank_folders(tmp_path / "mf" / "tensorboard", ranks=4, stop=(2, 60))
    found = check(tmp_path, capsys)
    assert found["mf/tensorboard/rank_1"] == found["mf/tensorboard/rank_2"] == found["mf/tensorboard/rank_3"] == []
    (f,) = found["mf/tensorboard/rank_0"]
    assert f["rule"] == "rank_stopped" and f["message"].startswith("Rank 2 stopped writing at step 60")


def test_thresholds_are_configurable(tmp_path, capsys):
    write_cluster(tmp_path / "job", ranks=8, slow=(5, 60))
    assert check(tmp_path, capsys, "--set", "slow_rank.threshold=0.2")["job"] == []


def test_memory_growth_of_many_ranks_at_once_equals_one_rank_at_a_time():
    import numpy as np

    from tb_plugin_mindspore.health import cluster_signals as signals

    rs = np.random.RandomState(3)
    steps = np.arange(1, 5001, dtype=np.int64)
    columns = []
    for r in range(40):
        s = steps if r % 5 else np.sort(rs.choice(steps, 3000, replace=False))      # some ranks have other steps
        v = (2000 + rs.standard_normal(s.size) * (1 + r % 3)).astype(np.float32)
        if r % 4 == 1:
            v += (0.05 * r * (s - s[0])).astype(np.float32)                           # leaks of several sizes
        if r % 7 == 2:
            v[rs.choice(s.size, 50)] = np.nan                                          # not measured now and then
        if r % 9 == 4:
            v[:] = np.nan
        columns.append((s, v, int(np.count_nonzero(~np.isfinite(v))) if r % 2 else None))
    columns += [None, (steps[:5], np.ones(5, np.float32), 0)]
    for cfg in ({}, {"warmup": 0.5, "min_mb": 10.0, "rising": 0.55}):
        many = signals.memory_growth_many(columns, **cfg)
        one = [None if c is None else signals.memory_growth(c[0], c[1], **cfg) for c in columns]
        assert many == one
        assert sum(g is not None for g in one) >= 5
