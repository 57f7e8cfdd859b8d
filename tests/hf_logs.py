"""A Hugging Face Trainer run's logdir, written once per session by transformers' own Trainer and TensorBoard callback
in the PyTorch environment (hf_trainer_child.py); tests that need it import the fixture."""

import os

import pytest

from extras import require_env, run_in_env
from once import made_once

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_trainer_child.py")


@pytest.fixture(scope="session")
def hf_trainer_logs(tmp_path_factory):
    """The logdir (with the run ``hf``); skips when the PyTorch environment is not built."""
    require_env("torch")
    def make(root):
        r = run_in_env("torch", [CHILD, root / "logs"], timeout=600, cwd=str(root))
        assert r.returncode == 0 and "done" in r.stdout, r.stderr[-3000:]

    return made_once(tmp_path_factory, "hf_trainer", make) / "logs"
