"""Four real msrun CPU workers training with TrainMonitor, one slowed in its data pipeline and one killed mid-run:
every rank writes its own statistics (no collective), and ``tb-mindspore check`` names the slow rank (with "data
wait") and the dead rank within 20 steps, and no other rank. The longer form runs more steps with a smaller
slowdown (130 ms batches against steps of about 105 ms: the slow rank is about 25% slower). Every step spends 100 ms
asleep as its device time, so the four workers sharing two cores do not make the timings a matter of scheduling."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("mindspore")

from tb_plugin_mindspore.commands import check as cli  # noqa: E402
from tb_plugin_mindspore.answers import cluster  # noqa: E402

from tb_harness import free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "msrun_child.py")
BIN = os.path.dirname(sys.executable)


def run_msrun(tmp_path, steps, slow, kill, kill_step, env=None, timeout=240):
    logdir = tmp_path / "job"
    cmd = [os.path.join(BIN, "msrun"), "--worker_num=4", "--local_worker_num=4", "--master_port=%d" % free_port(),
           "--log_dir=%s" % (tmp_path / "msrun_log"), "--join=True", CHILD, str(logdir), str(steps), str(slow),
           str(kill), str(kill_step)]
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), GLOG_v="3", **(env or {}))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(tmp_path))
    logs = ""
    for name in sorted(os.listdir(tmp_path / "msrun_log")):
        with open(tmp_path / "msrun_log" / name, errors="replace") as f:
            logs += f.read()
    return proc, logs, logdir


def findings(logdir, capsys):
    """The job's slow_rank and rank_stopped findings."""
    cli.main(["check", str(logdir.parent), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    (job,) = [r for r in out["runs"] if r["run"] == "job"]
    return [f for f in job["findings"] if f["rule"] in ("slow_rank", "rank_stopped")]


def check_job(tmp_path, capsys, steps, kill_step, env=None, strict=True):
    proc, logs, logdir = run_msrun(tmp_path, steps, slow=2, kill=3, kill_step=kill_step, env=env)
    finished = sorted(json.loads(line.split("WORKER ", 1)[1])["rank"] for line in logs.splitlines()
                      if "WORKER {" in line)
    killed = [json.loads(line.split("KILLED ", 1)[1]) for line in logs.splitlines() if "KILLED {" in line]
    assert proc.returncode == 0 and finished == [0, 1, 2], logs[-3000:]
    assert killed == [{"rank": 3, "signal": 9}], logs[-3000:]
    files = sorted(os.listdir(logdir / "cluster"))
    assert files == ["rank0.tbmsrank", "rank1.tbmsrank", "rank2.tbmsrank", "rank3.tbmsrank"], files
    data = cluster.ClusterData("job", cluster.SOURCE_RANK_FILES,
                               [(r, str(logdir / "cluster" / f)) for r, f in enumerate(files)])
    data.reload()
    ranks, rank_steps, _, mats = data.aligned()
    last = {r.rank: r.arrays()[0][-1] for r in ranks}
    assert last[3] <= kill_step and last[0] == last[1] == steps, last
    found = findings(logdir, capsys)
    stopped = [f for f in found if f["rule"] == "rank_stopped"]
    slow = [f for f in found if f["rule"] == "slow_rank" and f["message"].startswith("Rank 2 ")]
    assert len(stopped) == 1 and stopped[0]["message"].startswith("Rank 3 "), found
    assert stopped[0]["steps"][0] >= kill_step - 2, stopped
    assert len(slow) == 1 and "waiting for data" in slow[0]["message"], found
    assert slow[0]["steps"][0] <= 20, slow          # named within 20 steps (rows every 2 steps from step 2)
    others = [f for f in found if f not in stopped + slow]
    if strict:
        # Nobody else warned about. Four workers on two cores beside the suite's other tests: a rank the scheduler
        # holds back for a while may be named at info level as a compute straggler of an oversubscribed node (the
        # rule's own reading of the load; seen once in CI: rank 0, 8% slower).
        assert all(f["level"] == "info" and "node was oversubscribed" in f["message"] for f in others), others
    else:
        # Four workers on two cores: a rank that the scheduler holds back for a while is a real, if small, compute
        # straggler here; it must never be blamed on data.
        assert all("goes to compute" in f["message"] for f in others), others
    return found


@pytest.mark.slow
def test_msrun_four_workers_slow_and_killed_rank_are_named(tmp_path, capsys):
    check_job(tmp_path, capsys, steps=60, kill_step=30)


@pytest.mark.slow
@pytest.mark.long
def test_msrun_four_workers_longer_run_smaller_slowdown(tmp_path, capsys):
    check_job(tmp_path, capsys, steps=160, kill_step=80, env={"CLUSTER_SLOW_WAIT": "0.13"}, strict=False)


@pytest.mark.slow
def test_msrun_data_parallel_ranks_record_their_own_gradient_norm(tmp_path):
    """Two msrun workers in real data parallel: the core tier's gradient norm is the all-reduced one (the same on
    every rank), the rank rows hold each rank's own norm from before the reducer: different per rank, and the
    norm of the mean gradient is at most the mean of the ranks' norms."""
    from tb_plugin_mindspore import metadata
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logdir, steps = tmp_path / "dp", 12
    cmd = [os.path.join(BIN, "msrun"), "--worker_num=2", "--local_worker_num=2", "--master_port=%d" % free_port(),
           "--log_dir=%s" % (tmp_path / "msrun_log"), "--join=True", os.path.join(HERE, "msrun_dp_child.py"),
           str(logdir), str(steps)]
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), GLOG_v="3")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env, cwd=str(tmp_path))
    logs = "".join(open(tmp_path / "msrun_log" / n, errors="replace").read()
                   for n in sorted(os.listdir(tmp_path / "msrun_log")))
    workers = sorted((json.loads(line.split("DP_WORKER ", 1)[1]) for line in logs.splitlines()
                      if "DP_WORKER {" in line), key=lambda w: w["rank"])
    assert proc.returncode == 0 and [w["rank"] for w in workers] == [0, 1], logs[-3000:]
    assert all(w["size"] == 2 and w["reducer"] and w["errors"] == 0 for w in workers), workers
    assert workers[0]["weights"] == pytest.approx(workers[1]["weights"], rel=1e-5)   # the ranks stayed in sync
    files = [(r, str(logdir / "cluster" / ("rank%d.tbmsrank" % r))) for r in (0, 1)]
    data = cluster.ClusterData("dp", cluster.SOURCE_RANK_FILES, files)
    data.reload()
    ranks, rank_steps, _, mats = data.aligned()
    local, present = mats["grad_norm"]
    assert rank_steps.tolist() == list(range(2, steps + 1, 2)) and present.all()
    ea = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    ea.Reload()
    reduced = {e.step: e.value for e in ea.Scalars(metadata.GRAD_NORM)}
    for col, step in enumerate(rank_steps.tolist()):
        l0, l1 = float(local[0, col]), float(local[1, col])
        assert abs(l0 - l1) > 1e-3 * max(l0, l1), (step, l0, l1)          # each rank's own shard
        assert reduced[step] <= 0.5 * (l0 + l1) * (1 + 1e-5), (step, reduced[step], l0, l1)
        assert abs(reduced[step] - l0) > 1e-4 * l0, (step, reduced[step], l0)
