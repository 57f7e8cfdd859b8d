"""The demo's problem run (its learning rate 1000x too high, no clipping; normalisation and residuals present):
``check`` names the learning rate as the most likely cause of what it finds, not "add normalisation layers"."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("mindspore")

CHILD = r"""
import sys
from tb_mindspore_callbacks import demo
steps = int(sys.argv[2])
demo.run_demo(sys.argv[1], steps, log=lambda *a: None, collect_freq=demo._collect_freq(steps),
              lr_factor=demo.PROBLEM_LR_FACTOR, config=demo.PROBLEM_CONFIG, name="problem",
              stream=open("/dev/null", "w"))
"""


@pytest.mark.slow
def test_the_demo_problem_run_names_the_learning_rate(tmp_path):
    # The problem run as `tb-mindspore demo` trains it (half the healthy run's 600 steps).
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), "300"], capture_output=True, text=True,
                          timeout=1800, env=dict(os.environ, GLOG_v="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    from tb_plugin_mindspore.health import check_logdir

    (run,) = check_logdir(str(tmp_path))["runs"]
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
