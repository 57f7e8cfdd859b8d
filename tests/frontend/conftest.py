"""Fixtures of the browser tests: event data, a real ``tensorboard`` process, headless Chromium (Debian's)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.dirname(HERE)):  # browser_helpers, and tests/tb_harness
    if path not in sys.path:
        sys.path.insert(0, path)

from browser_helpers import CHROMIUM_ARGS, NetworkLog, chromium_path, write_dashboard_runs  # noqa: E402
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


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh browser context and page; ``page.network_log`` records every request, ``page.console_errors``
    every console error and uncaught exception."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    net = NetworkLog(context)
    page = context.new_page()
    page.network_log = net
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    yield page
    context.close()
