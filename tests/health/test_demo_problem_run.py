"""The demo's problem run (its learning rate 1000x too high, no clipping; normalisation and residuals present):
``check`` names the learning rate as the most likely cause of what it finds, not "add normalisation layers"."""

import json

import pytest

pytest.importorskip("mindspore")


@pytest.mark.slow
def test_the_demo_problem_run_names_the_learning_rate(demo_run):
    # The problem run as `tb-mindspore demo` trains it, read from the session's demo (``demo_run``: --steps 200,
    # so 100 steps here; the default demo's is 300).
    logdir, _ = demo_run
    from tb_plugin_mindspore.health import check_logdir

    (run,) = [r for r in check_logdir(str(logdir))["runs"] if "_demo-lr-too-high_lr1_" in r["run"]]
    assert run["status"] == "error"
    weighed = [f for f in run["findings"] if f.get("causes")]
    assert weighed, json.dumps(run, indent=1)
    for f in weighed:
        top = f["causes"][0]
        assert top["cause"] == "learning_rate_too_high" and top["likely"], f
        assert "Most likely the learning rate is too high" in f["message"], f["message"]
        assert "times the usual 0.001 for AdamWeightDecay" in f["message"]
    (loss,) = [f for f in run["findings"] if f["rule"] == "nonfinite" and f["tag"] == "core/loss"]
    assert loss["causes"][0]["cause"] == "learning_rate_too_high"
    vanishing = [f for f in run["findings"] if f["rule"] == "vanishing_gradients"]
    for f in vanishing:         # when the saturated layers show, depth is not what the run is told to fix first
        assert f["message"].index("learning rate is too high") < f["message"].index("normalisation layers")
