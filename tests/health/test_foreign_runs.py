"""Runs other writers made, judged with what they say about themselves: a finished ``*_MS`` run (MindSpore makes its
files read-only when it closes them) and a finished mindformers run (its last checkpoint, ``meta.json``, at the last
recorded step) are not called stalled an hour later; the same runs still open are (the control)."""

import json
import os
import sys

from tb_plugin_mindspore.health import engine, sources

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "contract"))
import logdirs  # noqa: E402

HOUR = 3600.0


def _rules(logdir, now):
    for folder, _, names in os.walk(logdir):   # files last written when their last point was
        for name in names:
            os.utime(os.path.join(folder, name), (logdirs.T0 + 30, logdirs.T0 + 30))
    report = engine.report(sources.runs_from_logdir(str(logdir), now=now))
    return {r["run"]: {f["rule"] for f in r["findings"]} for r in report["runs"]}


def test_a_closed_ms_run_is_finished_an_open_one_may_be_stalled(tmp_path):
    for run in ("closed", "open"):
        path = logdirs.write_ms(tmp_path / run, 1_700_000_000, range(1, 31))
        if run == "closed":
            os.chmod(path, 0o400)          # what MindSpore leaves when SummaryRecord closes the file
    found = _rules(tmp_path, now=logdirs.T0 + 30 + HOUR)
    assert "run_stalled" not in found["closed"]
    assert "run_stalled" in found["open"]


def test_a_mindformers_run_with_its_last_checkpoint_at_the_end_is_finished(tmp_path):
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    for run in ("finished", "running"):
        out = tmp_path / run / "output"
        with SummaryWriter(out / "tensorboard" / "rank_0") as w:
            for s in range(1, 31):
                w.scalar("loss", 2.0 - 0.01 * s, s, wall_time=logdirs.T0 + s)
        (out / "checkpoint" / "rank_0").mkdir(parents=True)
        (out / "checkpoint" / "rank_0" / "meta.json").write_text(json.dumps(
            {"last_epoch": 1, "last_step": 30 if run == "finished" else 20, "last_ckpt_file": "m-1_30.ckpt"}))
    found = _rules(tmp_path, now=logdirs.T0 + 30 + HOUR)
    assert "run_stalled" not in found["finished/output/tensorboard/rank_0"]
    assert "run_stalled" in found["running/output/tensorboard/rank_0"]
