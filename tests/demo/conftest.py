"""The real ``tb-mindspore demo`` run once for the tests of what a newcomer sees first: its output, the tab over its
logdir and the report of it."""

import importlib.util
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.join(os.path.dirname(HERE), "frontend")):
    if path not in sys.path:
        sys.path.insert(0, path)

BIN = os.path.join(os.path.dirname(sys.executable), "tb-mindspore")
DEMO_TEST_STEPS = 200


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """``(logdir, output lines)`` of ``tb-mindspore demo --steps 200 --no-serve`` (about a minute on an idle 2-core
    machine: three compiled graphs, a landscape, a SummaryCollector child)."""
    if importlib.util.find_spec("mindspore") is None:
        pytest.skip("mindspore is not installed")
    root = tmp_path_factory.mktemp("demo") / "summary_log"
    p = subprocess.run([BIN, "demo", "--steps", str(DEMO_TEST_STEPS), "--no-serve", "--logdir", str(root)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1500)
    assert p.returncode == 0, p.stdout[-4000:]
    return root, p.stdout.splitlines()
