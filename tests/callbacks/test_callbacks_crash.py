"""Crash safety in child processes: SIGINT, SIGTERM, kill -9, a disk that fills up, ranks under msrun."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("mindspore")

from tb_plugin_mindspore import metadata  # noqa: E402

from cb_helpers import event_files, read_run  # noqa: E402
import warm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHILD = os.path.join(HERE, "cb_child.py")


def run_child(scenario, logdir, steps=20, timeout=120):
    return warm.run([sys.executable, CHILD, scenario, str(logdir), str(steps)], capture_output=True,
                    text=True, timeout=timeout, cwd=str(logdir.parent))


def recorded_steps(stdout):
    return [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("RECORDED")]


def loss_steps(logdir):
    scalars, _ = read_run(logdir)
    return [s for s, _ in scalars.get(metadata.LOSS, [])]


@pytest.mark.parametrize("scenario", ["sigint", "sigterm"])
@pytest.mark.slow
def test_signal_loses_no_recorded_step(tmp_path, scenario):
    # flush_secs is 60 s in the child: without the close on the signal nothing would be on disk yet.
    logdir = tmp_path / "run"
    proc = run_child(scenario, logdir)
    assert proc.returncode != 0, "the child should have been stopped by the signal"
    assert "DONE" not in proc.stdout
    assert recorded_steps(proc.stdout)[-1] == 7
    assert loss_steps(logdir) == list(range(1, 8))


def test_signal_handlers_chain_to_previous_ones(tmp_path):
    """Our handlers close the writers first, then the handler that was there before still runs."""
    script = textwrap.dedent("""
        import os, signal, sys
        from tb_plugin_mindspore.writing.writer import SummaryWriter, install_signal_handlers

        def user_int(signum, frame):
            print("USER SIGINT HANDLER", flush=True)
            raise KeyboardInterrupt

        def user_term(signum, frame):
            print("USER SIGTERM HANDLER", flush=True)
            sys.exit(3)

        signal.signal(signal.SIGINT, user_int)
        signal.signal(signal.SIGTERM, user_term)
        w = SummaryWriter(sys.argv[1], flush_secs=60)
        install_signal_handlers()
        install_signal_handlers()          # twice: still one close, one user handler call
        w.scalar("core/loss", 1.0, 1)
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            print("KEYBOARD INTERRUPT", flush=True)
        w2 = SummaryWriter(sys.argv[1] + "_2", flush_secs=60)
        w2.scalar("core/loss", 2.0, 2)
        os.kill(os.getpid(), signal.SIGTERM)
        print("NOT REACHED", flush=True)
    """)
    proc = warm.run([sys.executable, "-c", script, str(tmp_path / "a")], capture_output=True, text=True,
                    timeout=60, cwd=ROOT)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.count("USER SIGINT HANDLER") == 1 and "KEYBOARD INTERRUPT" in proc.stdout
    assert "USER SIGTERM HANDLER" in proc.stdout and "NOT REACHED" not in proc.stdout
    assert loss_steps(tmp_path / "a") == [1]
    assert loss_steps(tmp_path / "a_2") == [2]


@pytest.mark.slow
def test_kill9_loses_at_most_the_flush_interval(tmp_path):
    logdir = tmp_path / "run"
    proc = warm.Popen([sys.executable, CHILD, "kill9", str(logdir), "2000"], stdout=subprocess.PIPE,
                      stderr=subprocess.DEVNULL, text=True, cwd=str(tmp_path))
    seen = []
    try:
        deadline = time.time() + 90
        for line in proc.stdout:
            if line.startswith("RECORDED"):
                _, step, wall = line.split()
                seen.append((int(step), float(wall)))
                if int(step) >= 30:
                    break
            if time.time() > deadline:
                break
        killed_at = time.time()
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert len(seen) >= 30
    on_disk = set(loss_steps(logdir))
    flush_secs, margin = 1.0, 1.0
    must_have = [step for step, wall in seen if wall < killed_at - flush_secs - margin]
    assert len(must_have) >= 5
    missing = [s for s in must_have if s not in on_disk]
    assert not missing, "recorded more than %.1f s before kill -9 but not on disk: %s" % (flush_secs + margin,
                                                                                          missing)


@pytest.mark.slow
def test_full_disk_stops_monitoring_not_training(tmp_path):
    """A real write failure (the child's file-size limit): the writer stops with a warning; training finishes."""
    logdir = tmp_path / "run"
    proc = run_child("disk_full", logdir, steps=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "DONE errors=0" in proc.stdout
    assert recorded_steps(proc.stdout)[-1] == 60
    assert "stopped writing" in proc.stderr
    steps = loss_steps(logdir)
    assert steps == list(range(1, len(steps) + 1)) and 0 < len(steps) < 60


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_msrun_only_rank0_writes_by_default(tmp_path):
    """Two real workers under msrun: by default only rank 0 writes; all_ranks=True gives rank 1 its own run."""
    msrun = os.path.join(os.path.dirname(sys.executable), "msrun")
    if not os.path.exists(msrun):
        pytest.skip("msrun not installed")
    logdir = tmp_path / "run"
    proc = subprocess.run(
        [msrun, "--worker_num=2", "--local_worker_num=2", "--master_port=%d" % _free_port(),
         "--log_dir=%s" % (tmp_path / "mslogs"), "--join=True", CHILD, "ranks", str(logdir), "8"],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
        # msrun starts its workers with the `python` on PATH: make it this interpreter.
        env=dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")))
    logs = ""
    for name in sorted(os.listdir(tmp_path / "mslogs")):
        with open(tmp_path / "mslogs" / name, errors="replace") as f:
            logs += f.read()
    assert proc.returncode == 0, logs[-3000:]
    assert logs.count("DONE errors=0") == 4                     # 2 ranks x 2 runs
    for run in ("default", "all"):
        assert len([f for f in os.listdir(logdir / run) if "tfevents" in f]) == 1   # one writer, one file
        assert loss_steps(logdir / run) == list(range(1, 9))
        _, tensors = read_run(logdir / run)
        raw = tensors[metadata.RUN_INFO][0][1]
        info = json.loads(raw.item() if raw.shape == () else raw.reshape(-1)[0])
        assert info["rank"] == 0 and info["rank_size"] == 2
    assert not os.path.exists(logdir / "default" / "rank1")
    assert len(event_files(logdir / "default")) == 1
    assert loss_steps(logdir / "all" / "rank1") == list(range(1, 9))
    _, tensors = read_run(logdir / "all" / "rank1")
    raw = tensors[metadata.RUN_INFO][0][1]
    assert json.loads(raw.item() if raw.shape == () else raw.reshape(-1)[0])["rank"] == 1
