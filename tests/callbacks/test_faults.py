"""Faults injected into a real training process: nothing from monitoring may reach the user's training or script.

Each test runs this file as a child (``python test_faults.py SCENARIO RUN_DIR STEPS``): a tiny ``Model.train`` with
TrainMonitor and a fault (run folder removed at step 5, file system full, next part impossible to create, run
folder on a read-only file system, Ctrl-C during start-up); then the user's code after ``model.train`` prints
``AFTER TRAIN``. Small and read-only file systems are real tmpfs mounts (root only; skipped elsewhere).
"""

import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FAULT_STEP = 5


# ---------------------------------------------------------------------------------------------------------------
# The child: a user's training script.

def child(scenario, run_dir, steps):
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    sys.path.insert(0, HERE)
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Callback, Model

    from cb_helpers import classification_data, dense_net
    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    ms.set_context(mode=ms.GRAPH_MODE)

    class Fault(Callback):
        def on_train_begin(self, run_context):
            if scenario == "sigint_begin":
                os.kill(os.getpid(), signal.SIGINT)

        def on_train_step_end(self, run_context):
            step = run_context.original_args().cur_step_num
            print("RECORDED %d" % step, flush=True)
            if step == FAULT_STEP:
                if scenario == "request_exit":
                    os.kill(os.getpid(), signal.SIGTERM)
                elif scenario == "rm_dir":
                    subprocess.run(["rm", "-rf", run_dir], check=True)
            time.sleep(0.03)      # a few writer rounds per step

    kwargs = dict(collect_freq=1, registry=None, flush_secs=0.2)
    if scenario == "rotate_fail":
        kwargs["max_file_bytes"] = 2048
    if scenario == "disk_full":
        kwargs.update(debug="all", debug_freq=1)
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.05)
    model = Model(MonitoredTrainCell.wrap(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt))
    monitor = TrainMonitor(run_dir, hparams={"lr": 0.05}, **kwargs)
    if scenario == "sigint_compile":
        # Ctrl-C while the first step compiles (a timer, as a user's key press would come).
        import threading

        threading.Timer(float(os.environ.get("SIGINT_AFTER", "0.5")),
                        lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    callbacks = [monitor, Fault()]
    if scenario == "request_exit":
        # A graceful stop on SIGTERM, as cluster schedulers ask for it: the handler sets a flag, a callback ends
        # training at the next step end (installed before training, so TrainMonitor's handler chains to it).
        requested = []
        signal.signal(signal.SIGTERM, lambda signum, frame: requested.append(signum))

        class StopWhenAsked(Callback):
            def on_train_step_end(self, run_context):
                if requested:
                    run_context.request_stop()

        callbacks.append(StopWhenAsked())
    try:
        model.train(1, classification_data(steps), callbacks=callbacks, dataset_sink_mode=False)
    finally:
        print("TRAIN RETURNED", flush=True)
    print("AFTER TRAIN errors=%d" % monitor.errors, flush=True)


# ---------------------------------------------------------------------------------------------------------------
# The tests.

def run_child(scenario, run_dir, steps=20, env=None, timeout=120):
    import warm   # here, not at the top: this file is also the child's script, where tests/ is not on the path
    return warm.run([sys.executable, os.path.abspath(__file__), scenario, str(run_dir), str(steps)],
                    capture_output=True, text=True, timeout=timeout, cwd=str(os.path.dirname(str(run_dir))),
                    env=dict(os.environ, **(env or {})))


def recorded(stdout):
    return [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("RECORDED")]


def loss_steps(run_dir):
    from tb_plugin_mindspore import metadata
    from cb_helpers import read_run

    scalars, _ = read_run(run_dir)
    return [s for s, _ in scalars.get(metadata.LOSS, [])]


def assert_training_unharmed(proc, steps):
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "AFTER TRAIN errors=0" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert recorded(proc.stdout) == list(range(1, steps + 1))
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


@pytest.fixture
def mount_tmpfs(tmp_path):
    """``mount_tmpfs(size, inodes, read_only)``: a real tmpfs mounted under ``tmp_path`` (root only; skips elsewhere)."""
    mounted = []

    def mount(size="256k", inodes=64, read_only=False):
        mnt = tmp_path / ("fs%d" % len(mounted))
        mnt.mkdir()
        options = "size=%s,nr_inodes=%d%s" % (size, inodes, ",ro" if read_only else "")
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root): %s" % proc.stderr.strip())
        mounted.append(mnt)
        return mnt

    yield mount
    for mnt in mounted:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.slow
def test_run_folder_removed_mid_run_is_recreated(tmp_path):
    pytest.importorskip("mindspore")
    run_dir = tmp_path / "run"
    proc = run_child("rm_dir", run_dir)
    assert_training_unharmed(proc, 20)
    assert proc.stderr.count("was removed while the run was writing it") == 1
    steps = loss_steps(run_dir)
    # Steps written in the writer round in which the folder vanished may be lost; everything after is there.
    assert steps == list(range(steps[0], 21)) and steps[0] <= FAULT_STEP + 2
    from cb_helpers import read_run, run_info

    _, tensors = read_run(run_dir)
    assert run_info(tensors)[1]["collect_freq"] == 1               # run info written again into the new file
    assert "_hparams_/session_start_info" in tensors


@pytest.mark.slow
def test_rotation_that_cannot_create_the_next_part(mount_tmpfs):
    """The tmpfs runs out of inodes: the next part cannot be created; close() and on_train_end must not raise."""
    pytest.importorskip("mindspore")
    run_dir = mount_tmpfs(inodes=12) / "run"
    proc = run_child("rotate_fail", run_dir, steps=60)
    assert_training_unharmed(proc, 60)
    assert proc.stderr.count("stopped writing") == 1
    assert "flush of closed file" not in proc.stderr
    steps = loss_steps(run_dir)
    assert steps and steps == list(range(1, len(steps) + 1)) and len(steps) < 60


@pytest.mark.slow
def test_disk_full_mid_run(mount_tmpfs):
    pytest.importorskip("mindspore")
    run_dir = mount_tmpfs(size="48k") / "run"
    proc = run_child("disk_full", run_dir, steps=80)
    assert_training_unharmed(proc, 80)
    assert proc.stderr.count("stopped writing") == 1 and "No space left" in proc.stderr
    steps = loss_steps(run_dir)
    assert steps == list(range(1, len(steps) + 1)) and len(steps) < 80


@pytest.mark.slow
def test_run_folder_on_a_read_only_file_system(mount_tmpfs):
    """(A tmpfs cannot be remounted read-only while a file on it is open for writing: read-only from the start.)"""
    pytest.importorskip("mindspore")
    run_dir = mount_tmpfs(read_only=True) / "run"
    proc = run_child("readonly", run_dir)
    assert_training_unharmed(proc, 20)
    assert proc.stderr.count("stopped writing") == 1 and "Read-only file system" in proc.stderr
    assert not os.path.exists(run_dir)


@pytest.mark.parametrize("scenario,delay", [("sigint_begin", None), ("sigint_compile", "0.3"),
                                            ("sigint_compile", "1.5")])
@pytest.mark.slow
def test_ctrl_c_during_start_up_stops_training_or_keeps_recording(tmp_path, scenario, delay):
    """Ctrl-C at start-up: either training stops as Ctrl-C normally does, or every step it trains is recorded."""
    pytest.importorskip("mindspore")
    run_dir = tmp_path / "run"
    proc = run_child(scenario, run_dir, steps=15, env={"SIGINT_AFTER": delay} if delay else None)
    trained = recorded(proc.stdout)
    steps = loss_steps(run_dir) if os.path.exists(run_dir) else []
    if "AFTER TRAIN" in proc.stdout:          # the interrupt was swallowed: training went on, so must recording
        assert trained == list(range(1, 16))
        assert steps == trained, (steps, proc.stderr[-2000:])
    else:                                     # stopped, as Ctrl-C does: nothing it trained is missing
        assert proc.returncode != 0
        assert steps == trained, (steps, proc.stderr[-2000:])


@pytest.mark.slow
def test_sigterm_turned_into_a_graceful_stop_keeps_every_step(tmp_path):
    """The script's own SIGTERM handler turns it into a graceful stop: training ends early, the script goes on,
    and every step trained is recorded (the signal flushes our writer and leaves it to on_train_end to close)."""
    pytest.importorskip("mindspore")
    run_dir = tmp_path / "run"
    proc = run_child("request_exit", run_dir)
    assert proc.returncode == 0 and "AFTER TRAIN errors=0" in proc.stdout, proc.stderr[-3000:]
    trained = recorded(proc.stdout)
    assert FAULT_STEP <= len(trained) < 20
    assert loss_steps(run_dir) == trained


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
