"""TensorBoard's ``--mindspore_health_set RULE.PARAM=VALUE`` moves a threshold for the Health panel and the
heatmap marks together (the ``health`` and ``contract`` routes), as ``check --set`` does; a bad one stops
TensorBoard with one line."""

import pytest

import logdirs
from tb_harness import PREFIX, fetch_json, tensorboard_bin, tensorboard_process
import warm


def _fast_findings(base):
    report = fetch_json(base + PREFIX + "/health")
    return [f for r in report["runs"] for f in r["findings"] if f["rule"] == "layer_too_fast"]


@pytest.mark.slow
def test_the_flag_moves_the_health_rule_and_the_heatmap_mark(tmp_path):
    logdir = tmp_path / "logs"
    logdirs.write_events(str(logdir / "run"), steps=30, update_ratio={"fc.weight": 0.01, "conv.weight": 0.002})
    with tensorboard_process(logdir) as base:
        assert fetch_json(base + PREFIX + "/contract")["update_ratio"]["fast"] == 0.1
        assert _fast_findings(base) == []
    with tensorboard_process(logdir, "--mindspore_health_set", "layer_too_fast.high=0.005",
                             "--mindspore_health_set", "layer_not_learning.low=1e-4") as base:
        marks = fetch_json(base + PREFIX + "/contract")["update_ratio"]
        assert (marks["fast"], marks["slow"]) == (0.005, 1e-4)
        (finding,) = _fast_findings(base)
        assert "fc.weight" in finding["message"] and "conv.weight" not in finding["message"]


def test_a_bad_setting_is_one_line(tmp_path):
    proc = warm.run([tensorboard_bin(), "--logdir", str(tmp_path), "--mindspore_health_set", "nope.x=1"],
                    capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    lines = [l for l in proc.stderr.splitlines() if "mindspore_health_set" in l]
    assert lines and "unknown health rule 'nope'" in lines[0], proc.stderr[-1500:]
