"""Trains the port-check pairs for the tests: the PyTorch side in the torch environment and the MindSpore side in
this one, at the same time (two processes, each training its jobs in turn), from spec files made here."""

import json
import os
import sys
import threading
from pathlib import Path

import port_spec as spec
import warm

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def job(model, root, run_dir, inject="", **settings):
    return {"model": model, "spec": str(Path(root) / ("%s.npz" % model)), "run_dir": str(run_dir),
            "inject": inject, "settings": settings}


def write_specs(root, steps, models=spec.MODELS):
    for model in models:
        spec.write(str(Path(root) / ("%s.npz" % model)), model, steps)


def train(root, ms_jobs, torch_jobs, timeout=900):
    """Runs both sides' jobs (lists of :func:`job`); raises AssertionError with the failing side's log tail."""
    from extras import run_in_env

    root = Path(root)
    (root / "ms_jobs.json").write_text(json.dumps(ms_jobs))
    (root / "torch_jobs.json").write_text(json.dumps(torch_jobs))
    result = {}

    def torch_side():
        result["torch"] = run_in_env("torch", [HERE / "port_train_torch.py", root / "torch_jobs.json"],
                                     timeout=timeout, env={"PYTHONPATH": str(HERE)})

    thread = threading.Thread(target=torch_side) if torch_jobs else None
    if thread is not None:
        thread.start()
    env = dict(os.environ, GLOG_v="3", PYTHONPATH=os.pathsep.join([str(HERE), str(REPO / "tests")]))
    ms = warm.run([sys.executable, str(HERE / "port_train_ms.py"), str(root / "ms_jobs.json")],
                  capture_output=True, text=True, timeout=timeout, env=env, cwd=str(REPO))
    if thread is not None:
        thread.join()
    assert ms.returncode == 0, "MindSpore side failed:\n" + ms.stderr[-3000:]
    if thread is not None:
        t = result["torch"]
        assert t.returncode == 0, "PyTorch side failed:\n" + t.stderr[-3000:]
