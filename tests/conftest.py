import os
import sys

import pytest
import warm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


# Browser fixtures shared by tests/frontend and tests/reliability: Playwright's sync API allows one instance per
# thread, so two session-scoped browsers (one per folder) would collide when both folders run in one session.
@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "frontend"))
    from browser_helpers import CHROMIUM_ARGS, chromium_path

    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh browser context and page; ``page.network_log`` records every request, ``page.console_errors``
    every console error and uncaught exception."""
    from browser_helpers import NetworkLog

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    net = NetworkLog(context)
    page = context.new_page()
    page.network_log = net
    page.console_errors = []
    # With the resource's URL: "Failed to load resource: ... 404" alone does not say which request failed.
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(
        m.text + (" (%s)" % m.location["url"] if (m.location or {}).get("url") else "")))
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    yield page
    context.close()


@pytest.fixture(scope="session")
def ms_fixtures(tmp_path_factory):
    """Real MindSpore 2.10 summary files (``ms_fixture_lib``: made by a child process, once per session)."""
    import ms_fixture_lib

    pytest.importorskip("mindspore")
    return ms_fixture_lib.ms_fixtures(tmp_path_factory)


@pytest.fixture(scope="session")
def ms_logdir(ms_fixtures):
    import ms_fixture_lib

    return ms_fixture_lib.ms_logdir(ms_fixtures)


@pytest.fixture(scope="session")
def ms_layouts(tmp_path_factory):
    import ms_fixture_lib

    return ms_fixture_lib.ms_layouts(tmp_path_factory)


@pytest.fixture(scope="session")
def recorded_logdir(tmp_path_factory):
    """Two runs recorded by the real TrainMonitor from real MindSpore training (GRAPH_MODE, 32 steps each)."""
    from once import made_once

    def make(root):
        from ms_training import train_tiny

        train_tiny(root / "run_a", lr=0.05)
        train_tiny(root / "run_b", lr=0.01, seed=1)

    return made_once(tmp_path_factory, "recorded", make)


@pytest.fixture(scope="session")
def monitored_run(tmp_path_factory):
    """A run folder recorded by the real TrainMonitor with ``hparams=ms_training.MONITORED_HPARAMS`` (GRAPH_MODE,
    16 steps), trained in a subprocess (MindSpore stays out of the test process); copy it into a test's logdir."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("mindspore") is None:
        pytest.skip("mindspore is not installed")
    from once import made_once

    def make(root):
        code = ("import sys; sys.path.insert(0, sys.argv[1]); from ms_training import MONITORED_HPARAMS, "
                "train_tiny; train_tiny(sys.argv[2], epochs=2, lr=0.05, collect_freq=4, "
                "hparams=dict(MONITORED_HPARAMS))")
        proc = warm.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)),
                         str(root / "monitored")], capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, GLOG_v="3"))
        assert proc.returncode == 0, proc.stderr[-3000:]

    return made_once(tmp_path_factory, "monitored", make) / "monitored"


@pytest.fixture(scope="session")
def ms_graph_runs(tmp_path_factory):
    """``answers/ms_graph_child.py``'s real MindSpore files (a recorded graph, a size-rotated run, two files in one
    folder; ``expected.json``), made once per test run for every worker: read it, or copy it to add runs."""
    import subprocess

    pytest.importorskip("mindspore")
    from once import made_once

    def make(root):
        child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "answers", "ms_graph_child.py")
        proc = warm.run([sys.executable, child, str(root)], capture_output=True, text=True, timeout=600,
                        env=dict(os.environ, GLOG_v="3", OMP_NUM_THREADS="1"))
        assert proc.returncode == 0, proc.stderr[-3000:]

    return made_once(tmp_path_factory, "ms_graph", make)


DEMO_TEST_STEPS = 200


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """``(logdir, output lines)`` of ``tb-mindspore demo --steps 200 --port <a free port>`` (about a minute on an
    idle 2-core machine: three compiled graphs, a landscape, a SummaryCollector child), stopped by Ctrl-C two seconds
    after its TensorBoard says it is up, as a user stops it; it must exit with status 0. Made once per test run
    (``once.made_once``): tests/demo reads its output and its tab, tests/health its problem run (100 steps)."""
    import importlib.util

    if importlib.util.find_spec("mindspore") is None:
        pytest.skip("mindspore is not installed")
    from once import made_once

    def make(folder):
        out = _run_demo(folder / "summary_log")
        (folder / "output.txt").write_text(out)

    folder = made_once(tmp_path_factory, "demo", make)
    return folder / "summary_log", (folder / "output.txt").read_text().splitlines()


def _run_demo(root):
    import signal
    import subprocess
    import threading
    import time

    from tb_harness import free_port

    bin_ = os.path.join(os.path.dirname(sys.executable), "tb-mindspore")
    p = warm.Popen([bin_, "demo", "--steps", str(DEMO_TEST_STEPS), "--port", str(free_port()), "--logdir",
                    str(root)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watchdog = threading.Timer(1500, p.kill)       # a demo or a server that hangs fails the tests instead
    watchdog.start()
    try:
        seen = []
        for line in p.stdout:
            seen.append(line)
            if "Press CTRL+C" in line:                # TensorBoard's own line: the server is up
                break
        time.sleep(2)
        p.send_signal(signal.SIGINT)
        out = "".join(seen) + p.communicate(timeout=120)[0]
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, out[-4000:]
    return out


# CPU time per test and per fixture above function scope (this process and the children it waited for, warm ones
# included), written as JSON lines to the file named by TB_MINDSPORE_TEST_CPU: what planning the suite's parallel run
# needs, since wall times depend on the load. A plugin object, not conftest hooks: a conftest's hooks do not see
# session fixtures.
class _CpuLog:
    def __init__(self, path):
        self.path = path

    @staticmethod
    def _cpu():
        import resource

        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime + warm.children_cpu()

    def _write(self, row, wall, own, kids):
        import json
        import time

        own2, kids2 = self._cpu()
        row.update(wall=time.monotonic() - wall, cpu=own2 - own, children=kids2 - kids,
                   worker=os.environ.get("PYTEST_XDIST_WORKER"), end=time.time())
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        import time

        wall, (own, kids) = time.monotonic(), self._cpu()
        yield
        self._write({"test": item.nodeid}, wall, own, kids)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        import time

        if fixturedef.scope == "function":
            yield
            return
        wall, (own, kids) = time.monotonic(), self._cpu()
        yield
        self._write({"fixture": fixturedef.argname, "scope": fixturedef.scope, "by": request.node.nodeid},
                    wall, own, kids)


def pytest_configure(config):
    if os.environ.get("TB_MINDSPORE_TEST_CPU"):
        config.pluginmanager.register(_CpuLog(os.environ["TB_MINDSPORE_TEST_CPU"]), "tb_mindspore_cpu_log")


SERIAL_MARK = "pytest.mark.serial"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """scripts/test.sh's serial phase collects only the files whose text says ``pytest.mark.serial`` (collecting
    every file costs a pytest process about 12 s of CPU): a test marked serial any other way would run in neither
    phase, so it is refused here."""
    texts = {}
    for item in items:
        if item.get_closest_marker("serial"):
            path = str(item.path)
            if path not in texts:
                with open(path, encoding="utf-8") as f:
                    texts[path] = SERIAL_MARK in f.read()
            if not texts[path]:
                raise pytest.UsageError("%s is marked serial without %r in its file: scripts/test.sh's serial phase "
                                        "would not collect it" % (item.nodeid, SERIAL_MARK))


def pytest_collection_finish(session):
    """MindSpore collects garbage (a full ``gc.collect()``) before it compiles each graph, and a test process holds
    every collected test module, MindSpore, TensorBoard and the test tools: 0.12 s a compile, 15% of the CPU of a
    file of small trainings. What is alive once the tests are collected stays alive; frozen, collections skip it."""
    import gc

    gc.collect()
    gc.freeze()


_frozen_at = [0.0]


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """What outlives the tests run so far (modules MindSpore imports at its first compile, module fixtures, caches)
    is frozen too, at most every 2 s of tests: else every later compile's full collection walks it again (measured
    in a worker that ran the in-process trainings: 145,000 objects left unfrozen, 0.06 s a collection). The garbage
    made so far is collected first, so only what lives on is frozen."""
    import gc
    import time

    now = time.monotonic()
    if now - _frozen_at[0] >= 2.0:
        gc.collect()
        gc.freeze()
        _frozen_at[0] = time.monotonic()
