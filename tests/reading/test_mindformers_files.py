"""mindformers' files beside its TensorBoard output (``abnormal_global_norm.json``, ``health_ckpts.json``,
``meta.json``) and its log records: read onto the run's step axis, and hostile ones (malformed, huge, not a regular
file, the wrong shape) left out with a reason in the status route while the run still shows."""

import json
import os

import pytest

from tb_harness import App
from tb_plugin_mindspore.sources import mindformers_files as mff
from tb_plugin_mindspore.sources.mindformers_log import LogSeries


def _output(tmp_path, steps=20):
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    out = tmp_path / "output"
    with SummaryWriter(out / "tensorboard" / "rank_0") as w:
        for s in range(1, steps + 1):
            w.scalar("loss", 2.0 - 0.01 * s, s)
            w.scalar("grad-norm", 1.0, s)
    return out


def test_files_are_read_onto_the_step_axis(tmp_path):
    out = _output(tmp_path)
    (out / mff.ABNORMAL).write_text(json.dumps({"18": [51.5, 60.25], "19": [70.0]}))
    (out / mff.HEALTH).write_text(json.dumps([{"is_health": 0, "ckpt_name": "m_rank_0-1_5.ckpt"},
                                              {"is_health": 1, "ckpt_name": "m_rank_0-1_10.ckpt"},
                                              {"is_health": 0, "ckpt_name": "m_rank_0-2_5.ckpt"}]))
    (out / "checkpoint" / "rank_0").mkdir(parents=True)
    (out / "checkpoint" / "rank_0" / mff.META).write_text(json.dumps(
        {"last_epoch": 1, "last_step": 10, "last_ckpt_file": "m_rank_0-1_10.ckpt"}))
    files = mff.read_run(out / "tensorboard" / "rank_0")
    assert files.abnormal == {18: [51.5, 60.25], 19: [70.0]} and not files.problems
    # is_health 0 is healthy (mindformers' resume_ckpt reads it so); the epoch-2 checkpoint has no known step
    assert [(c["step"], c["healthy"]) for c in files.checkpoints] == [(5, True), (10, False), (None, True)]
    assert files.last_healthy_before(12)["ckpt"] == "m_rank_0-1_5.ckpt"
    assert files.last_checkpoint["step"] == 10
    assert mff.checkpoint_step("x-3_4.ckpt", steps_per_epoch=100) == 204
    # rank 1's run does not take rank 0's training-wide files
    assert not mff.read_run(out / "tensorboard" / "rank_1").abnormal


@pytest.mark.parametrize("name,content,reason", [
    (mff.ABNORMAL, b"{not json", "not valid JSON"),
    (mff.ABNORMAL, b'["a list"]', "expected an object"),
    (mff.ABNORMAL, b'{"x": [1.0]}', "is not a number"),
    (mff.ABNORMAL, b'{"3": "big"}', "not a list of numbers"),
    (mff.HEALTH, b'[{"is_health": 0}]', "without a ckpt_name"),
    (mff.HEALTH, b"\xff\xfe\x00\x01", "not valid JSON"),
    (mff.ABNORMAL, b"[" * 200000, "not valid JSON"),
])
def test_hostile_files_are_left_out_with_a_reason(tmp_path, name, content, reason):
    out = _output(tmp_path, steps=3)
    (out / name).write_bytes(content)
    files = mff.read_run(out / "tensorboard" / "rank_0")
    assert not files.abnormal and not files.checkpoints
    assert len(files.problems) == 1 and reason in files.problems[0]["reason"], files.problems


def test_huge_and_non_regular_files_are_never_read(tmp_path, monkeypatch):
    out = _output(tmp_path, steps=3)
    monkeypatch.setattr(mff, "MAX_FILE_BYTES", 1000)
    (out / mff.ABNORMAL).write_bytes(b"{" + b" " * 5000 + b"}")
    os.mkfifo(out / mff.HEALTH)       # a reader that opened it would block forever
    files = mff.read_run(out / "tensorboard" / "rank_0")
    reasons = sorted(p["reason"] for p in files.problems)
    assert "more than the 1000 read" in reasons[0] and "not a regular file" in reasons[1]


def test_the_status_route_lists_them_and_the_run_still_shows(tmp_path):
    out = _output(tmp_path)
    (out / mff.ABNORMAL).write_text("{broken")
    app = App(out / "tensorboard")
    try:
        app.wait_for_runs(["rank_0"])
        report = app.plugin("/health", run="rank_0")
        assert [r["run"] for r in report["runs"]] == ["rank_0"]
        warnings = app.plugin("/status")["warnings"]
        assert any(w["file"] == str(out / mff.ABNORMAL) and "not valid JSON" in w["reason"] for w in warnings)
    finally:
        app.close()


def test_log_records_survive_garbage_and_long_lines(tmp_path, monkeypatch):
    import tb_plugin_mindspore.sources.mindformers_log as mfl

    monkeypatch.setattr(mfl, "MAX_LINE", 200)
    log = tmp_path / "run.log"
    log.write_bytes(b"\x00\xff garbage {\"step\": \n" + b"x" * 500 + b"\n"
                    + b'2026-01-01 00:00:00,000 - mf[a.py:1] - INFO - {"step": 3, "micro_step": 1, "local_loss": 1.5}\n'
                    + b'{ "step": 4 }\n{ "local_norm": w: nan }\n{ "local_norm": v:   2.5 }\n'
                    + b'step:[    4/   10] max_attention_logit/l0: [1, "x", 3]\n'
                    + b'{"step": 4, "layer": 0, "tpe": "not a list"}\n' + b"partial line without end")
    s = LogSeries(str(log))
    while s.read():
        pass
    assert s.points("local_loss")[0][0] == 3 and s.points("local_loss")[0][2] == 1.5
    assert s.points("local_norm/v") == [(4, s.points("local_norm/v")[0][1], 2.5)]
    assert str(s.points("local_norm/w")[0][2]) == "nan"
    assert [p[2] for p in s.points("max_attention_logit/l0/head_0")] == [1.0]
    assert not any(t.startswith("expert_load") for t in s.series)
    with open(log, "ab") as f:                     # the line is completed: read on the next call
        f.write(b'\n{"step": 5, "micro_step": 1, "local_loss": 0.5}\n')
    assert s.read() and s.points("local_loss")[-1][0] == 5
