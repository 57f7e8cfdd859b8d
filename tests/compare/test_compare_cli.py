"""`tb-mindspore compare` on event files written by the plugin's own writer (our tags, or Hugging Face's plain
``train/loss`` / ``train/learning_rate`` / ``train/grad_norm`` / ``eval/loss``): exit status, bad input, step
offsets, the tolerance helpers."""

import contextlib
import io
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tb_plugin_mindspore.cli import main as cli_main
from tb_plugin_mindspore.compare import tolerance
from tb_plugin_mindspore.writing.writer import SummaryWriter
import warm

OURS = {"loss": "core/loss", "lr": "core/learning_rate", "grad": "core/grad_norm", "eval": "diagnostic/eval_loss"}
HF = {"loss": "train/loss", "lr": "train/learning_rate", "grad": "train/grad_norm", "eval": "eval/loss"}


def write_run(folder, steps=60, tags=OURS, lr_shift=0, step_offset=0, loss_scale=1.0, noise=0.0):
    rng = np.random.default_rng(0)
    jitter = np.random.default_rng(1)
    with SummaryWriter(str(folder)) as w:
        for s in range(1, steps + 1):
            loss = (2.0 * math.exp(-s / 30) + 0.1 * rng.random()) * loss_scale * (1 + noise * jitter.standard_normal())
            w.scalar(tags["loss"], loss, s + step_offset)
            w.scalar(tags["lr"], 1e-3 * min(1.0, (s + lr_shift) / 10), s + step_offset)
            w.scalar(tags["grad"], 1.0 + 0.2 * rng.random(), s + step_offset)
            if s % 10 == 0:
                w.scalar(tags["eval"], loss * 1.1, s + step_offset)
    return folder


def cli(*args):
    """The command's entry point in this process (its stdout, stderr and exit status)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(["compare", *map(str, args)])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_the_installed_command(tmp_path):
    a, b = write_run(tmp_path / "a"), write_run(tmp_path / "b", lr_shift=1)
    proc = warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "compare", str(a), str(b)],
                    capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and proc.stdout.startswith("PART"), proc.stderr


def test_same_runs_match_and_a_shifted_warmup_parts(tmp_path):
    a = write_run(tmp_path / "a")
    b = write_run(tmp_path / "b")
    c = write_run(tmp_path / "c", lr_shift=1)
    same = cli(a, b, "--format", "json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["verdict"] == "match"
    parted = cli(c, b)
    assert parted.returncode == 1, parted.stderr
    assert parted.stdout.startswith("PART") and "learning_rate parts first, at step 1" in parted.stdout
    assert "the schedule is one step ahead (a warm-up off by one)" in parted.stdout


def test_hugging_face_tags_are_compared_with_ours(tmp_path):
    ours = write_run(tmp_path / "ours")
    hf = write_run(tmp_path / "hf", tags=HF, loss_scale=1.05)
    result = json.loads(cli(ours, hf, "--format", "json").stdout)
    tags = {q["quantity"]: q["tags"] for q in result["quantities"]}
    assert tags == {"learning_rate": ["core/learning_rate", "train/learning_rate"], "loss": ["core/loss", "train/loss"],
                    "grad_norm": ["core/grad_norm", "train/grad_norm"], "eval_loss": ["diagnostic/eval_loss", "eval/loss"]}
    assert result["first"]["quantity"] == "loss" and result["first"]["step"] == 1


def test_a_run_counting_from_zero_is_aligned(tmp_path):
    a = write_run(tmp_path / "a", step_offset=-1)      # steps 0..59
    b = write_run(tmp_path / "b")
    result = json.loads(cli(a, b, "--format", "json").stdout)
    assert result["verdict"] == "match" and result["alignment"]["offset"] == 1


@pytest.mark.parametrize("make, message", [
    (lambda p: (p / "missing", p / "b"), "RUN {}/missing does not exist"),
    (lambda p: (write_run(p / "a"), p / "empty"), "REFERENCE {}/empty holds no series to compare"),
    (lambda p: (p, write_run(p / "b")), "holds 2 runs"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, make, message):
    (tmp_path / "empty").mkdir()
    write_run(tmp_path / "x")
    run, ref = make(tmp_path)
    proc = cli(run, ref)
    assert proc.returncode == 2
    assert proc.stderr.startswith("tb-mindspore compare: error: ") and proc.stderr.count("\n") == 1
    assert message.format(tmp_path) in proc.stderr


def test_bad_mapping_file_and_nothing_in_common(tmp_path):
    a = write_run(tmp_path / "a")
    b = write_run(tmp_path / "b")
    bad = tmp_path / "map.json"
    bad.write_text('{"pairs": {"x": 1}}')
    proc = cli(a, b, "--mapping", bad)
    assert proc.returncode == 2 and "pairs['x'] must be a reference layer name" in proc.stderr
    with SummaryWriter(str(tmp_path / "other")) as w:
        w.scalar("my/metric", 1.0, 1)
    proc = cli(a, tmp_path / "other")
    assert proc.returncode == 2 and "holds no series to compare" in proc.stderr
    with SummaryWriter(str(tmp_path / "loss_only")) as w:
        w.scalar("core/loss", 1.0, 1)
    with SummaryWriter(str(tmp_path / "lr_only")) as w:
        w.scalar("core/learning_rate", 1.0, 1)
    proc = cli(tmp_path / "loss_only", tmp_path / "lr_only")
    assert proc.returncode == 2 and "record no quantity in common" in proc.stderr


def test_noise_pair_sets_the_tolerance(tmp_path):
    """Runs 0.5 % apart part without a noise pair and match with one that is as far apart."""
    a = write_run(tmp_path / "a", noise=0.005)
    b = write_run(tmp_path / "b")
    n = write_run(tmp_path / "n", noise=0.006)
    assert cli(a, b).returncode == 1
    with_noise = json.loads(cli(a, b, "--noise", n, "--format", "json").stdout)
    assert with_noise["verdict"] == "match"
    loss = next(q for q in with_noise["quantities"] if q["quantity"] == "loss")
    assert loss["tolerance"]["noise"] == "noise pair"


# -- the tolerance helpers -------------------------------------------------------------------------------------------
def test_relative_difference_handles_zeros_and_nonfinite():
    a = np.array([[1.0, 0.0, np.nan, np.inf, 1.0]])
    b = np.array([[1.1, 0.0, np.nan, np.inf, np.nan]])
    d = tolerance.relative_difference(a, b)
    assert d[0, 0] == pytest.approx(0.1 / 1.1) and d[0, 1] == 0 and d[0, 2] == 0 and d[0, 3] == 0
    assert d[0, 4] == np.inf


def test_a_single_flip_does_not_part_a_lasting_jump_does():
    diff = np.full((20, 2), 1e-6)
    diff[5, 0] = 1e-2                     # one step out, then back
    diff[8:, 1] = 1e-2                    # out from step 8 on
    tol = np.full_like(diff, 1e-4)
    assert tolerance.first_parting(diff, tol).tolist() == [-1, 8]


def test_smooth_growth_is_not_a_parting():
    steps = np.arange(200)
    diff = (1e-7 * 1.1 ** steps)[:, None]           # 10x every ~24 steps, up to 2e1
    run = np.ones_like(diff)
    tol, _ = tolerance.tolerances("layer_grad_norm", run, run, diff)
    assert tolerance.first_parting(diff, tol).tolist() == [-1]
    assert tolerance.first_drift(diff).tolist() == [int(np.argmax(diff[:, 0] > 1e-2))]
    jump = diff.copy()
    jump[120:] *= 1000
    tol, _ = tolerance.tolerances("layer_grad_norm", run, run, jump)
    assert tolerance.first_parting(jump, tol).tolist() == [120]


def test_rounded_losses_get_half_a_digit():
    values = np.round(np.linspace(0.5, 0.7, 50), 4)[:, None]
    floors = tolerance.floors("loss", values, values)
    assert floors[0, 0] == pytest.approx(0.5e-4 / 0.5)
    lr = np.linspace(1e-4, 1e-3, 10)[:, None]         # round values of an LR are not rounding
    assert tolerance.floors("learning_rate", lr, lr).max() == tolerance.FLOORS["learning_rate"]
