"""``tb-mindspore check``: exit codes, the stable JSON shape, text / markdown output, bad input. Runs are event files
written with our own SummaryWriter (fast, no MindSpore)."""

import argparse
import json
import os
import sys

import numpy as np
import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.commands import check as check_cli
from tb_plugin_mindspore.health import engine

from health_helpers import healthy_arrays, write_event_run
import warm


def _parser():
    parser = argparse.ArgumentParser(prog="tb-mindspore")
    sub = parser.add_subparsers(dest="command")
    sub.required = True
    check_cli.add_check_parser(sub)
    return parser


def run_check(argv, capsys):
    args = _parser().parse_args(["check"] + list(argv))
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def _healthy_scalars(n=120, seed=0):
    loss, grad, lr, step, _ = healthy_arrays(n, seed)
    steps = np.arange(1, n + 1)
    return {metadata.LOSS: (steps, loss), metadata.GRAD_NORM: (steps, grad), metadata.LEARNING_RATE: (steps, lr),
            metadata.STEP_TIME_MS: (steps, step)}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("check_cli")
    info = {"epochs": 1, "steps_per_epoch": 120}
    write_event_run(root / "good", _healthy_scalars(), info=info)
    nan = _healthy_scalars()
    nan[metadata.LOSS][1][70:] = np.nan
    write_event_run(root / "exp" / "nan", nan, info=info)
    const = _healthy_scalars()
    const[metadata.LEARNING_RATE] = (const[metadata.LEARNING_RATE][0], np.full(120, 3e-4))
    write_event_run(root / "exp" / "const_lr", const, info=info)
    return root


OPTIONAL_FIELDS = {"layers", "source", "action", "checkpoint", "caused_by", "follow_ons", "causes"}


def test_json_shape_and_statuses(logdir, capsys):
    code, out, err = run_check([str(logdir), "--format", "json"], capsys)
    assert code == 0 and err == ""
    report = json.loads(out)
    assert list(report) == ["runs"]
    assert [r["run"] for r in report["runs"]] == ["exp/const_lr", "exp/nan", "good"]
    assert {r["run"]: r["status"] for r in report["runs"]} == {"exp/const_lr": "warn", "exp/nan": "error",
                                                               "good": "ok"}
    for r in report["runs"]:
        assert list(r) == ["run", "status", "findings"]
        for f in r["findings"]:
            # The stable five first; then only the documented additions, each only when set.
            assert list(f)[:5] == ["rule", "level", "message", "tag", "steps"]
            assert set(list(f)[5:]) <= OPTIONAL_FIELDS, list(f)
            assert isinstance(f["steps"], list) and len(f["steps"]) == 2
            for c in f.get("causes", []):
                assert list(c) == ["cause", "likely", "evidence"] and isinstance(c["likely"], bool)
    nan = next(r for r in report["runs"] if r["run"] == "exp/nan")
    first = nan["findings"][0]
    assert first == {**first, "rule": "nonfinite", "level": "error", "tag": metadata.LOSS, "steps": [71, 120]}


@pytest.mark.parametrize("fail_on,expected", [(None, 0), ("error", 1), ("warn", 1)])
def test_fail_on_exit_codes(logdir, capsys, fail_on, expected):
    argv = [str(logdir)] + (["--fail-on", fail_on] if fail_on else [])
    code, _, _ = run_check(argv, capsys)
    assert code == expected


def test_fail_on_levels_per_run(logdir, capsys):
    assert run_check([str(logdir / "good"), "--fail-on", "warn"], capsys)[0] == 0
    assert run_check([str(logdir / "exp" / "const_lr"), "--fail-on", "error"], capsys)[0] == 0
    assert run_check([str(logdir / "exp" / "const_lr"), "--fail-on", "warn"], capsys)[0] == 1


def test_text_and_markdown(logdir, capsys):
    code, out, _ = run_check([str(logdir)], capsys)
    assert code == 0
    assert "exp/nan  [error]" in out and "ERROR nonfinite" in out and "steps 71-120 of core/loss" in out
    assert out.strip().endswith("3 run(s): 1 error, 1 warn, 1 ok")
    code, out, _ = run_check([str(logdir), "--format", "md"], capsys)
    assert out.startswith("# Training health")
    assert "| exp/nan | error | 1 | 0 |" in out and "| error | nonfinite | core/loss | 71-120 |" in out


def test_set_and_disable(logdir, capsys):
    code, out, _ = run_check([str(logdir / "exp" / "const_lr"), "--format", "json", "--disable", "lr_constant",
                              "--fail-on", "warn"], capsys)
    assert code == 0 and json.loads(out)["runs"][0]["status"] == "ok"
    code, out, _ = run_check([str(logdir / "good"), "--format", "json", "--set", "log_size.max_bytes=100"], capsys)
    (f,) = json.loads(out)["runs"][0]["findings"]
    assert f["rule"] == "log_size"
    code, out, _ = run_check([str(logdir / "exp" / "const_lr"), "--set", "lr_constant.level=error",
                              "--fail-on", "error"], capsys)
    assert code == 1


@pytest.mark.parametrize("argv,needle", [
    (["/no/such/logdir"], "no such logdir: /no/such/logdir"),
    (["relative/missing"], "relative to the current folder"),
    ([], "missing LOGDIR"),
    (["{logdir}", "--set", "nope"], "RULE.THRESHOLD=VALUE"),
    (["{logdir}", "--set", "no_rule.x=1"], "unknown health rule 'no_rule'"),
    (["{logdir}", "--set", "lr_constant.bogus=1"], "has no threshold 'bogus'"),
    (["{logdir}/good/{file}"], "not a folder"),
])
def test_bad_input_exits_2_with_one_line(logdir, capsys, argv, needle):
    event_file = os.listdir(logdir / "good")[0]
    argv = [a.format(logdir=logdir, file=event_file) for a in argv]
    code, out, err = run_check(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("tb-mindspore check: error: ") and needle in err


def test_empty_logdir_exits_2(tmp_path, capsys):
    code, _, err = run_check([str(tmp_path)], capsys)
    assert code == 2 and "no training runs" in err


def test_list_rules(capsys):
    code, out, _ = run_check(["--list-rules"], capsys)
    assert code == 0
    for r in engine.describe_rules():
        assert r["id"] in out
    assert "CS231n" in out and "Megatron" in out and "ZClip" in out


def test_mindformers_tags_in_event_files(tmp_path, capsys):
    loss, grad, _, _, _ = healthy_arrays(100)
    grad[60:63] = 80.0
    steps = np.arange(1, 101)
    write_event_run(tmp_path / "mf", {"loss": (steps, loss), "grad-norm": (steps, grad),
                                      "learning-rate": (steps, np.full(100, 1e-4)),
                                      "loss vs samples": (steps * 32, loss)})
    code, out, _ = run_check([str(tmp_path), "--format", "json"], capsys)
    found = {f["rule"]: f for f in json.loads(out)["runs"][0]["findings"]}
    assert found["lr_constant"]["tag"] == "learning-rate"
    assert found["grad_explosion"]["tag"] == "grad-norm" and found["grad_explosion"]["steps"] == [61, 63]


def test_layer_vectors_and_intervals_survive_the_round_trip(tmp_path, capsys):
    """Per-layer vectors and interval tensors written with SummaryWriter reach the rules through TensorBoard's
    loader (tags exactly as the callbacks write them)."""
    n = 60
    steps = np.arange(10, 10 * n + 1, 10)
    names = ["body.weight", "head.weight"]
    ratios = np.stack([np.full(n, 1e-3), np.full(n, 1e-6)], axis=1)
    rows = [(s, 0.5, 1.0, 500.0 if s == 400 else 1.5, 10, 0) for s in steps]
    loss = np.linspace(2, 1, n)
    write_event_run(tmp_path / "r", {metadata.LOSS: (steps, loss), metadata.GRAD_NORM: (steps, np.ones(n))},
                    layers={metadata.UPDATE_RATIO_LAYERS: (names, steps, ratios)},
                    intervals={metadata.GRAD_NORM: rows})
    code, out, _ = run_check([str(tmp_path), "--format", "json"], capsys)
    found = {f["rule"]: f for f in json.loads(out)["runs"][0]["findings"]}
    assert "head.weight" in found["layer_not_learning"]["message"]
    assert found["layer_not_learning"]["tag"] == metadata.UPDATE_RATIO_LAYERS
    assert found["grad_explosion"]["steps"] == [391, 400] and "interval max" in found["grad_explosion"]["message"]


@pytest.mark.slow
def test_standalone_command_exit_codes(logdir, tmp_path):
    cmd = [sys.executable, "-m", "tb_plugin_mindspore.commands.check", "check"]
    proc = warm.run(cmd + [str(logdir), "--fail-on", "error", "--format", "json"], capture_output=True,
                    text=True, timeout=120)
    assert proc.returncode == 1 and json.loads(proc.stdout)["runs"]
    proc = warm.run(cmd + [str(tmp_path / "missing")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_only_tags_a_rule_reads_are_loaded(tmp_path, capsys):
    from tb_plugin_mindspore.health import sources

    steps = np.arange(1, 21)
    write_event_run(tmp_path / "r", {metadata.LOSS: (steps, np.linspace(2, 1, 20)), "my/own_metric": (steps, steps),
                                     "local_norm/fc.weight": (steps, np.ones(20))})
    (run,) = sources.runs_from_logdir(tmp_path)
    assert set(run.scalars) == {metadata.LOSS, "local_norm/fc.weight"} and run.other_tags == ("my/own_metric",)
    write_event_run(tmp_path / "s", {"my/own_metric": (steps, steps)})
    code, out, _ = run_check([str(tmp_path / "s"), "--format", "json"], capsys)
    (f,) = json.loads(out)["runs"][0]["findings"]
    assert f["rule"] == "no_loss" and "my/own_metric" in f["message"]
