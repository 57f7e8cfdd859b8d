"""A folder made once per test run and shared by every pytest-xdist worker of the run: the first worker to ask makes
it (under a lock), the others wait for it and read it. What a session fixture makes at some cost (a MindSpore child,
a training) is then made once instead of once per worker. The folder's user must only read it."""

import fcntl
import os
import shutil


def made_once(tmp_path_factory, name, make):
    """The folder ``<name>`` filled by ``make(folder)``; made in this process when it runs without workers."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = tmp_path_factory.mktemp(name)
        make(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent / "made_once"     # the run's base temp folder, one per run
    shared.mkdir(exist_ok=True)
    folder, done = shared / name, shared / (name + ".done")
    with open(str(shared / (name + ".lock")), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if folder.exists():         # a worker that failed to make it left a part: start again
                shutil.rmtree(str(folder), ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder
