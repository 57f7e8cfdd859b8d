"""A Hugging Face Trainer run's logdir, written once per session by transformers' own Trainer and TensorBoard callback
in the PyTorch environment (hf_trainer_child.py); tests that need it import the fixture."""

import os

import pytest

from extras import require_env, run_in_env

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_trainer_child.py")


@pytest.fixture(scope="session")
def hf_trainer_logs(tmp_path_factory):
    """The logdir (with the run ``hf``); skips when the PyTorch environment is not built."""
    require_env("torch")
    root = tmp_path_factory.mktemp("hf_trainer")
    logdir = root / "logs"
    r = run_in_env("torch", [CHILD, logdir], timeout=600, cwd=str(root))
    assert r.returncode == 0 and "done" in r.stdout, r.stderr[-3000:]
    return logdir
