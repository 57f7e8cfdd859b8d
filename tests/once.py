"""A folder made once per test run and shared by every pytest-xdist worker of the run: the first worker to ask makes
it (under a lock), the others wait for it and read it. What a session fixture makes at some cost (a MindSpore child,
a training) is then made once instead of once per worker; a module fixture likewise, where the scheduler spreads the
module's tests over workers. The folder's user must only read it."""

import fcntl
import os
import shutil


def made_once(tmp_path_factory, name, make):
    """The folder ``<name>`` filled by ``make(folder)``. ``name`` may be a path (``runs/healthy``): runs made one by
    one into one shared folder, each under its own lock, so that several workers make different ones at once."""
    base = tmp_path_factory.getbasetemp()
    # The run's base temp folder: a worker's is a folder of it; without workers it is the process's own.
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "made_once"
    folder = shared / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    marker = shared / name.replace("/", "--")
    done = marker.with_name(marker.name + ".done")
    with open(str(marker.with_name(marker.name + ".lock")), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if folder.exists():         # a worker that failed to make it left a part: start again
                shutil.rmtree(str(folder), ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder
