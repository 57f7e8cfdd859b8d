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
    """``(logdir, output lines)`` of ``tb-mindspore demo --steps 200 --port <a free port>`` (about a minute on an
    idle 2-core machine: three compiled graphs, a landscape, a SummaryCollector child), stopped by Ctrl-C two seconds
    after its TensorBoard says it is up, as a user stops it; it must exit with status 0."""
    import signal
    import threading
    import time

    from tb_harness import free_port

    if importlib.util.find_spec("mindspore") is None:
        pytest.skip("mindspore is not installed")
    root = tmp_path_factory.mktemp("demo") / "summary_log"
    p = subprocess.Popen([BIN, "demo", "--steps", str(DEMO_TEST_STEPS), "--port", str(free_port()), "--logdir",
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
    return root, out.splitlines()
