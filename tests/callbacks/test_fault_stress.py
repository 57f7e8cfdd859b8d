"""Faults in a real training process, on both entry points (``Model.train`` + ``TrainMonitor`` and a hand-written
loop + ``LoopMonitor``), GRAPH_MODE, every tier on (``fault_child.py``):

* a full disk never stalls training: disk-full trials on a small real tmpfs, each filling up at another moment,
  watched for a stall (no step for ``STALL_S`` seconds): on a stall every thread's stack is dumped
  (``faulthandler``) into the failure message. Short form: one trial per entry point; the long form
  (``-m long``): ``LONG_TRIALS`` per entry point under extra CPU load;
* one warning per fault: a full disk and a read-only folder each give one ``tb-mindspore`` warning line, however
  many writers (event file, rank statistics, registry) they stop;
* a signal the process ignores (SIGINT of a job started in the background) never ends the run's record: no
  "interrupted" end marker, the marker says "finished" at the last step.

The tmpfs mounts need root (skipped elsewhere).
"""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import warm

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "fault_child.py")
STALL_S = 120          # no new step for this long once training runs: a stall (a step takes well under a second)
STARTUP_S = 900        # before step WARM: MindSpore compiles the step, and the monitoring graphs at the first debug
WARM = 6               # point (step 5): minutes on two cores at load 40+, never a monitoring stall
LONG_TRIALS = 20
ENTRIES = ("model", "loop")

pytest.importorskip("mindspore")


class Watched:
    """A child process whose stdout lines are timestamped as they come; ``wait`` dumps every thread's stack
    (SIGUSR1 -> faulthandler) and kills it when no step came for ``stall_s`` seconds once ``WARM`` steps were
    recorded (``STARTUP_S`` before: compiling the graphs is not a stall)."""

    def __init__(self, cmd, cwd):
        self.proc = warm.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines, self.last = [], time.monotonic()
        self.err = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines, True), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err, False), daemon=True).start()

    def _pump(self, stream, out, progress):
        for line in stream:
            out.append(line)
            if progress:
                self.last = time.monotonic()

    def wait(self, stall_s=STALL_S, timeout=1800):
        """``(returncode, stdout, stderr, stalled)``."""
        start = time.monotonic()
        stalled = False
        while self.proc.poll() is None:
            now = time.monotonic()
            limit = stall_s if len(self.lines) >= WARM else STARTUP_S
            if now - self.last > limit or now - start > timeout:
                stalled = True
                self.proc.send_signal(signal.SIGUSR1)      # every thread's stack to stderr
                time.sleep(3)
                self.proc.kill()
                break
            time.sleep(0.5)
        self.proc.wait()
        time.sleep(0.2)                                    # the pumps read the last lines
        return self.proc.returncode, "".join(self.lines), "".join(self.err), stalled


def run_child(entry, scenario, run_dir, steps):
    return Watched([sys.executable, CHILD, entry, scenario, str(run_dir), str(steps)], cwd=os.path.dirname(
        str(run_dir))).wait()


def recorded(stdout):
    return [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("RECORDED")]


def our_warnings(stderr):
    """The monitoring's warning lines (not MindSpore's own log lines)."""
    return [line for line in stderr.splitlines() if line.startswith("WARNING:") and "tb-mindspore" in line]


def run_end_markers(run_dir):
    from tensorboard import context

    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.sources import event_provider

    data = event_provider.load(str(run_dir)).read_tensors(context.RequestContext(), experiment_id="",
                                                          plugin_name=metadata.PLUGIN_NAME, downsample=10 ** 6)
    return [metadata.decode_run_end(d.numpy.reshape(-1)[0]) for d in (data.get(".") or {}).get(metadata.RUN_END, [])]


@pytest.fixture
def mount_tmpfs(tmp_path):
    """``mount_tmpfs(size, read_only)``: a real tmpfs under ``tmp_path`` (root only; skips elsewhere)."""
    mounted = []

    def mount(size="256k", read_only=False):
        mnt = tmp_path / ("fs%d" % len(mounted))
        mnt.mkdir()
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,nr_inodes=256%s" % (
            size, ",ro" if read_only else ""), "tmpfs", str(mnt)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root): %s" % proc.stderr.strip())
        mounted.append(mnt)
        return mnt

    yield mount
    for mnt in mounted:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _disk_full_trial(mount_tmpfs, entry, trial, steps=120):
    """One trial: the tmpfs fills up at a moment that moves with ``trial``; training must finish every step with
    one warning, never stall."""
    size_kb = 40 + 12 * (trial % 8)
    run_dir = mount_tmpfs(size="%dk" % size_kb) / "run"
    code, out, err, stalled = run_child(entry, "plain", run_dir, steps)
    assert not stalled, "training stalled on a full disk (%s, trial %d, %d kB); every thread:\n%s" % (
        entry, trial, size_kb, err[-20000:])
    assert code == 0 and "AFTER TRAIN errors=0" in out, (code, out[-1000:], err[-4000:])
    assert recorded(out) == list(range(1, steps + 1))
    warnings = our_warnings(err)
    assert len(warnings) == 1 and "No space left" in warnings[0], warnings
    assert "Traceback" not in err, err[-4000:]


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES)
def test_a_full_disk_never_stalls_training(mount_tmpfs, entry):
    _disk_full_trial(mount_tmpfs, entry, trial=0)


class _Load:
    """CPU burners at low priority beside the trials (the machine is shared: two, niced)."""

    def __enter__(self):
        code = "import os, time\nos.nice(19)\nend = time.time() + 3600\nwhile time.time() < end: pass\n"
        self.procs = [warm.Popen([sys.executable, "-c", code]) for _ in range(2)]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()


@pytest.mark.long
def test_a_full_disk_never_stalls_training_long(tmp_path_factory):
    """``LONG_TRIALS`` disk-full trials per entry point under load, the entry points taking turns (so a run cut
    short still covers both), each trial on its own tmpfs; every trial's outcome is appended to the file named by
    ``TB_MINDSPORE_STRESS_LOG`` (when set) as one JSON line."""
    import json

    log = os.environ.get("TB_MINDSPORE_STRESS_LOG")
    with _Load():
        for trial in range(LONG_TRIALS):
            for entry in ENTRIES:
                mounted = []

                def mount(size="256k", read_only=False):
                    mnt = tmp_path_factory.mktemp("fs")
                    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,nr_inodes=256" % size, "tmpfs", str(mnt)],
                                   check=True, capture_output=True)
                    mounted.append(mnt)
                    return mnt

                start = time.time()
                outcome = "ok"
                try:
                    _disk_full_trial(mount, entry, trial)
                except AssertionError as e:
                    outcome = str(e)[:4000]
                    raise
                finally:
                    for mnt in mounted:
                        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
                    if log:
                        with open(log, "a") as f:
                            f.write(json.dumps({"entry": entry, "trial": trial, "outcome": outcome,
                                                "seconds": round(time.time() - start), "load": os.getloadavg()[0]})
                                    + "\n")


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES)
def test_a_read_only_folder_gives_one_warning(mount_tmpfs, entry):
    run_dir = mount_tmpfs(read_only=True) / "run"
    code, out, err, stalled = run_child(entry, "plain", run_dir, 20)
    assert not stalled and code == 0 and "AFTER TRAIN errors=0" in out, (code, err[-4000:])
    warnings = our_warnings(err)
    assert len(warnings) == 1 and "Read-only file system" in warnings[0], warnings


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES)
def test_an_ignored_sigint_never_ends_the_run_record(tmp_path, entry):
    """SIGINT ignored (a background job), sent once training began: training goes on; no "interrupted" marker
    (before: "interrupted at step 0" while thousands of steps followed)."""
    run_dir = tmp_path / "run"
    code, out, err, stalled = run_child(entry, "sigint_ignored", run_dir, 20)
    assert not stalled and code == 0 and "AFTER TRAIN errors=0" in out, (code, err[-4000:])
    assert recorded(out) == list(range(1, 21))
    markers = run_end_markers(run_dir)
    assert [(m["status"], m["step"]) for m in markers] == [("finished", 20)], markers
