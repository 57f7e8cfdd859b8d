"""``tb-mindspore check`` reads a logdir exactly as the tab does: the same run names (``*_MS`` runs, several files,
subfolders, a folder holding both kinds of files), and the same answer from one process or a pool."""

import json
import os
import sys
import time

import pytest

import logdirs
from tb_harness import PREFIX, fetch_json, tensorboard_process
from tb_plugin_mindspore.commands import logdir_check
import warm


def _check_json(logdir):
    proc = warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "check", str(logdir), "--format",
                     "json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _tab_runs(base, expected, timeout=60):
    deadline = time.time() + timeout
    runs = None
    while time.time() < deadline:      # *_MS files are read in the background: wait until the list is stable
        runs = fetch_json(base + PREFIX + "/runs")["runs"]
        if len(runs) >= expected:
            return runs
        time.sleep(0.5)
    return runs


@pytest.mark.slow
def test_check_names_runs_as_the_tabs_runs_route(tmp_path):
    logdir = logdirs.mixed_logdir(tmp_path / "logs")
    checked = _check_json(logdir)
    names = [r["run"] for r in checked["runs"]]
    assert names == sorted(names)
    assert "both" in names and not any("(_MS)" in n for n in names)
    assert {"collector", "nested/ms_run", "nested/deep/run", "events_only", "."} <= set(names)
    with tensorboard_process(logdir) as base:
        tab = _tab_runs(base, len(names))
    assert sorted(tab) == names


def test_the_merged_run_keeps_both_files_series(tmp_path):
    """A folder with event files and *_MS files is one run, judged on both (the tab draws both)."""
    from tb_plugin_mindspore.health import sources

    logdir = logdirs.mixed_logdir(tmp_path / "logs")
    runs = {r.run: r for r in sources.runs_from_logdir(str(logdir))}
    assert {"core/loss"} <= set(runs["both"].scalars)
    assert runs["collector"].scalars["loss/auto"].steps.tolist() == list(range(1, 16))   # the resume supersedes


@pytest.mark.slow
def test_a_pool_of_processes_gives_the_same_report(tmp_path, monkeypatch):
    logdir = str(logdirs.mixed_logdir(tmp_path / "logs"))
    for i in range(6):
        logdirs.write_events(os.path.join(logdir, "many", "r%02d" % i), steps=5 + i)
    now = time.time()
    serial = logdir_check.report(logdir, now=now, jobs=1)
    monkeypatch.setattr(logdir_check, "MIN_PARALLEL_RUNS", 2)
    pooled = logdir_check.report(logdir, now=now, jobs=2)
    assert json.dumps(pooled, sort_keys=True) == json.dumps(serial, sort_keys=True)
    assert len(serial["runs"]) == 12
