import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def recorded_logdir(tmp_path_factory):
    """Two runs recorded by the real TrainMonitor from real MindSpore training (GRAPH_MODE, 32 steps each)."""
    from ms_training import train_tiny

    root = tmp_path_factory.mktemp("recorded")
    train_tiny(root / "run_a", lr=0.05)
    train_tiny(root / "run_b", lr=0.01, seed=1)
    return root
