"""The ``tb-mindspore`` entry point: one-line errors on bad input, hints that work as printed."""

import os
import shlex
import subprocess
import sys

import pytest
import warm

BIN = os.path.join(os.path.dirname(sys.executable), "tb-mindspore")


@pytest.mark.parametrize("steps", ["1", "0", "-3", "many"])
def test_demo_rejects_bad_steps_with_one_line(steps):
    p = warm.run([BIN, "demo", "--steps", steps, "--no-serve"], capture_output=True, text=True, timeout=60)
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


# The Ctrl-C tests stop the demo's own command (the CLI's main, the demo's stages, their messages) with the demo's
# model made smaller: they test the interrupt path, not the model's size, and compile a few seconds less each. The
# full-size demo, started by the installed command and stopped by Ctrl-C, is tests/demo's (conftest.py demo_run).
# The demo's sequence length stays: the 11 x 11 landscape, which the second test interrupts, still takes seconds.
TINY_DEMO = {"hidden": 32, "batch": 8, "layers": 1, "heads": 2, "ffn": 64}
_TINY_DEMO_CHILD = ("import sys; from tb_mindspore_callbacks import demo; demo.DEMO_SMALL.update(%r); "
                    "from tb_plugin_mindspore.cli import main; sys.exit(main(sys.argv[1:]))" % (TINY_DEMO,))


def _demo(logdir, steps, **kw):
    return warm.Popen([sys.executable, "-c", _TINY_DEMO_CHILD, "demo", "--steps", str(steps), "--no-serve",
                       "--logdir", str(logdir)],
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


@pytest.mark.slow
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
