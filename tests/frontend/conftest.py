"""Fixtures of the browser tests: event data, a real ``tensorboard`` process, headless Chromium (Debian's)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.dirname(HERE)):  # browser_helpers, and tests/tb_harness
    if path not in sys.path:
        sys.path.insert(0, path)

from browser_helpers import write_dashboard_runs  # noqa: E402
from tb_harness import tensorboard_process  # noqa: E402


@pytest.fixture(scope="session")
def dashboard_logdir(tmp_path_factory):
    """(logdir, {run: {tag: [(step, wall_time, value)]}}) of the data the dashboard tests look at."""
    root = tmp_path_factory.mktemp("dashboard") / "logs"
    root.mkdir()
    return root, write_dashboard_runs(root)


@pytest.fixture(scope="session")
def dashboard_server(dashboard_logdir):
    root, written = dashboard_logdir
    with tensorboard_process(root) as base:
        yield base, written


@pytest.fixture(scope="session")
def empty_logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("empty") / "logs"
    root.mkdir()
    return root


# The browser and page fixtures are in tests/conftest.py (one Playwright instance for the whole session).
