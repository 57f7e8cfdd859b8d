import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def recorded_logdir(tmp_path_factory):
    """Two runs recorded by the real TrainMonitor from real MindSpore training (GRAPH_MODE, 32 steps each)."""
    from ms_training import MONITORED_HPARAMS, train_tiny

    root = tmp_path_factory.mktemp("recorded")
    train_tiny(root / "run_a", lr=0.05)
    train_tiny(root / "run_b", lr=0.01, seed=1)
    return root


@pytest.fixture(scope="session")
def monitored_run(tmp_path_factory):
    """A run folder recorded by the real TrainMonitor with ``hparams=ms_training.MONITORED_HPARAMS`` (GRAPH_MODE,
    16 steps), trained in a subprocess (MindSpore stays out of the test process); copy it into a test's logdir."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("mindspore") is None:
        pytest.skip("mindspore is not installed")
    root = tmp_path_factory.mktemp("monitored")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from ms_training import MONITORED_HPARAMS, train_tiny; "
            "train_tiny(sys.argv[2], epochs=2, lr=0.05, collect_freq=4, hparams=dict(MONITORED_HPARAMS))")
    proc = subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)),
                           str(root / "monitored")], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, GLOG_v="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "monitored"
