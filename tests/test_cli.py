"""The ``tb-mindspore`` entry point: one-line errors on bad input, hints that work as printed."""

import os
import shlex
import subprocess
import sys

import pytest

BIN = os.path.join(os.path.dirname(sys.executable), "tb-mindspore")
DEMO_TEST_STEPS = 200


@pytest.mark.parametrize("steps", ["1", "0", "-3", "many"])
def test_demo_rejects_bad_steps_with_one_line(steps):
    p = subprocess.run([BIN, "demo", "--steps", steps, "--no-serve"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith("tb-mindspore demo: error: argument --steps")


def test_tensorboard_hint_runs_as_printed(tmp_path, monkeypatch):
    from tb_mindspore_callbacks.demo import tensorboard_command

    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the virtual environment is not active
    cmd = shlex.split(tensorboard_command(str(tmp_path / "a log")))
    assert cmd[1:] == ["--logdir", str(tmp_path / "a log")]
    p = subprocess.run(cmd[:1] + ["--version"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_demo_ctrl_c_stops_tensorboard_quietly(tmp_path):
    import signal
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([BIN, "demo", "--steps", "2", "--port", str(port), "--logdir", str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = []
        for line in p.stdout:
            seen.append(line)
            if "Press CTRL+C" in line:
                break
        time.sleep(2)
        p.send_signal(signal.SIGINT)
        out = "".join(seen) + p.communicate(timeout=60)[0]
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, out
    assert "SIGTERM" not in out and "Traceback" not in out
    assert "view it with: " in out


def _demo(logdir, steps, **kw):
    return subprocess.Popen([BIN, "demo", "--steps", str(steps), "--no-serve", "--logdir", str(logdir)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def _check(logdir):
    import json

    p = subprocess.run([BIN, "check", str(logdir), "--format", "json"], capture_output=True, text=True, timeout=300)
    return {r["run"]: r["findings"] for r in json.loads(p.stdout)["runs"]}


@pytest.mark.slow   # ~60 s on an idle 2-core machine: three compiled graphs, a landscape, a SummaryCollector child
def test_short_demo_records_every_kind_of_run_and_check_names_the_problem(tmp_path):
    from tb_plugin_mindspore.sources.ms_logdir import file_kind

    p = _demo(tmp_path, DEMO_TEST_STEPS)
    out = p.communicate(timeout=900)[0]
    assert p.returncode == 0, out
    assert "Traceback" not in out
    lines = out.splitlines()
    # Compiling is said before the first step, and every stage has a progress bar with an ETA.
    first_step = next(i for i, l in enumerate(lines) if "[1/3] healthy run [" in l)
    assert any("compiling the training graph" in l for l in lines[:first_step])
    assert any("[2/3] LR 1000x too high, no clipping [" in l and "ETA" in l for l in lines)
    assert "view it with: " in lines[-1]
    runs = sorted(os.listdir(tmp_path))
    healthy = [r for r in runs if "_demo_lr0.001_" in r]
    problem = [r for r in runs if "_demo-lr-too-high_lr1_" in r]
    assert len(healthy) == 1 and len(problem) == 1, runs
    ms_files = os.listdir(tmp_path / "mindspore_summary_collector")
    assert any(file_kind(f) == "summary" for f in ms_files), ms_files
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    mux = EventMultiplexer(size_guidance={"tensors": 0})
    mux.AddRunsFromDirectory(str(tmp_path / healthy[0]))
    mux.Reload()
    tags = [t for run in mux.Runs().values() for t in run.get("tensors", [])]
    assert "landscape/random" in tags, tags
    findings = _check(tmp_path)
    assert [f for f in findings[healthy[0]] if f["level"] != "info"] == []
    # The loss turns Inf between two recorded points: the interval statistics catch it.
    assert any(f["rule"] == "nonfinite" and f["level"] == "error" and f["tag"] == "core/loss"
               for f in findings[problem[0]]), findings[problem[0]]


def test_demo_ctrl_c_during_training_says_what_was_recorded(tmp_path):
    import signal

    p = _demo(tmp_path, 5000)
    try:
        seen = []
        for line in p.stdout:
            seen.append(line)
            if "[1/3] healthy run [" in line:      # the first step is done: training is under way
                break
        p.send_signal(signal.SIGINT)
        out = "".join(seen) + p.communicate(timeout=300)[0]
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, out
    assert "Traceback" not in out and "SIGTERM" not in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("tb-mindspore demo: stopped by Ctrl-C during the healthy run; recorded so far: "), last
    run = [r for r in os.listdir(tmp_path) if "_demo_lr0.001_" in r]
    assert len(run) == 1 and run[0] in last
    assert any(f.startswith("events.out.tfevents") for f in os.listdir(tmp_path / run[0]))


@pytest.mark.slow
def test_demo_ctrl_c_during_the_landscape_keeps_the_run(tmp_path):
    import signal

    p = _demo(tmp_path, 20)
    try:
        seen = []
        for line in p.stdout:
            seen.append(line)
            if line.startswith("loss landscape (random): 11 x 11"):
                break
        p.send_signal(signal.SIGINT)
        out = "".join(seen) + p.communicate(timeout=120)[0]
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, out
    assert "Traceback" not in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("tb-mindspore demo: stopped by Ctrl-C during the healthy run's loss landscape; "
                           "recorded so far: healthy ("), last
    assert not any("lr-too-high" in r for r in os.listdir(tmp_path))
