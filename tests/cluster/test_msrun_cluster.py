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

from tb_plugin_mindspore.health import cli  # noqa: E402
from tb_plugin_mindspore.reading import cluster  # noqa: E402

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
        assert others == [], others                # nobody else
    else:
        # Four workers on two cores: a rank that the scheduler holds back for a while is a real, if small, compute
        # straggler here; it must never be blamed on data.
        assert all("goes to compute" in f["message"] for f in others), others
    return found


def test_msrun_four_workers_slow_and_killed_rank_are_named(tmp_path, capsys):
    check_job(tmp_path, capsys, steps=60, kill_step=30)


@pytest.mark.slow
def test_msrun_four_workers_longer_run_smaller_slowdown(tmp_path, capsys):
    check_job(tmp_path, capsys, steps=160, kill_step=80, env={"CLUSTER_SLOW_WAIT": "0.13"}, strict=False)
