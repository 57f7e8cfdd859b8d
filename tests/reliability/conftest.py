"""Fixtures of the reliability suite (see RELIABILITY.md): real MindSpore summary files, real event files."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
for path in (HERE, TESTS, os.path.join(TESTS, "frontend")):
    if path not in sys.path:
        sys.path.insert(0, path)

import ms_fixture_lib  # noqa: E402


@pytest.fixture(scope="session")
def ms_fixtures(tmp_path_factory):
    """Real MindSpore 2.10 summary files (made once per session, shared with tests/sources and tests/answers)."""
    pytest.importorskip("mindspore")
    return ms_fixture_lib.ms_fixtures(tmp_path_factory)


@pytest.fixture(scope="session")
def real_event_file(tmp_path_factory):
    """Bytes of a real small event file written by this project's SummaryWriter: scalars with interval
    statistics, a per-layer vector, run information and a landscape (about 10 kB)."""
    import numpy as np

    from tb_plugin_mindspore.writing import summary
    from tb_plugin_mindspore.landscape import landscape_record
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    root = tmp_path_factory.mktemp("real_event_file")
    with SummaryWriter(str(root), flush_secs=0.5) as w:
        w.run_info({"hparams": {"lr": 0.01}})
        for step in range(1, 31):
            w.scalar("core/loss", 1.0 / step, step, wall_time=1.7e9 + step)
            w.scalar("core/learning_rate", 0.01, step, wall_time=1.7e9 + step)
            if step % 5 == 0:
                w.interval("core/loss", 0.5 / step, 1.0 / step, 2.0 / step, 5, 0, step, wall_time=1.7e9 + step)
                w.layers("debug/update_ratio", ["a.weight", "b.weight"], [1e-3, 2e-3], step, wall_time=1.7e9 + step)
        x = np.linspace(-1, 1, 3)
        w.value(summary.landscape("landscape/random", landscape_record(x, x, np.add.outer(x, x), "random")), 30)
    (path,) = [p for p in root.iterdir() if "tfevents" in p.name]
    return path.read_bytes()


# The browser and page fixtures are in tests/conftest.py (one Playwright instance for the whole session).
