"""TrainMonitor inside mindformers (MindSpore Transformers 2.1.0, installed --no-deps on MindSpore 2.10 in its own
environment): its own training cell (``MFTrainOneStepCell``) in ``Model.train``, its ``Trainer`` and its YAML
``callbacks:`` registry. What mindformers' cell computes is read from its outputs, never computed again: the values
recorded equal the cell's own outputs of those steps (read by a reference callback in the same run).

The child process (mindformers_child.py) runs every scenario once for the module; each test reads its runs here.
"""

import json
import math
import os
import time

import numpy as np
import pytest

from tb_plugin_mindspore import metadata

from cb_helpers import read_run, run_info
from extras import require_env, run_in_env

pytestmark = pytest.mark.slow

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mindformers_child.py")
SCENARIOS = ["import", "cell_graph", "cell_pynative_plain", "trainer", "yaml"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    require_env("mindformers")
    out = tmp_path_factory.mktemp("mindformers")
    r = run_in_env("mindformers", [CHILD, out] + SCENARIOS, timeout=900, cwd=str(out))
    done = [line.split()[1] for line in r.stdout.splitlines() if line.startswith("done ")]
    assert r.returncode == 0 and done == SCENARIOS, (r.stdout[-2000:], r.stderr[-4000:])
    return out, r.stderr


def load(out, name):
    scalars, tensors = read_run(out / name / "run")
    with open(out / name / "outputs.json") as f:
        ref = json.load(f)
    return scalars, tensors, ref, run_info(tensors)[1]


def at(rows, step, key):
    (row,) = [r for r in rows if r["step"] == step]
    return row[key]


def test_importing_the_callbacks_leaves_mindformers_unimported(runs):
    pass        # asserted inside the child ("import" ran first and passed); YAML below used the import hook


def test_mindformers_cell_outputs_are_recorded_as_they_are(runs):
    out, _ = runs
    scalars, tensors, ref, info = load(out, "cell_graph")
    steps = ref["steps"]
    assert ref["errors"] == 0 and len(steps) == 24
    loss = dict(scalars[metadata.LOSS])
    assert sorted(loss) == list(range(2, 25, 2))
    for step in (2, 10, 24):
        assert loss[step] == pytest.approx(at(steps, step, "loss"), rel=1e-6)
        assert dict(scalars[metadata.GRAD_NORM])[step] == pytest.approx(at(steps, step, "global_norm"), rel=1e-6)
        assert dict(scalars[metadata.LEARNING_RATE])[step] == pytest.approx(at(steps, step, "lr"), rel=1e-6)
        assert dict(scalars[metadata.LOSS_SCALE])[step] == at(steps, step, "loss_scale")
    # The interval statistics cover every step between two points (mindformers' norms of steps 9 and 10).
    (iv,) = [v for s, v in tensors[metadata.interval_tag(metadata.GRAD_NORM)] if s == 10]
    norms = [at(steps, s, "global_norm") for s in (9, 10)]
    assert iv[0] == pytest.approx(min(norms), rel=1e-6) and iv[2] == pytest.approx(max(norms), rel=1e-6)
    # Per-layer gradient norms are the square roots of mindformers' local norms (sums of squares).
    names = ref["names"]
    (layers,) = [v for s, v in tensors[metadata.GRAD_NORM_LAYERS] if s == 8]
    local = np.sqrt(np.asarray(at(steps, 8, "local_norm")))
    weights = [i for i, n in enumerate(names) if n.endswith("weight")]
    np.testing.assert_allclose(layers, local[weights], rtol=1e-5)
    assert info["step_source"] == "mindformers" and info["train_cell"] == "MFTrainOneStepCell"
    assert info["monitored_cell"] is False and info["optimizer"] == "AdamWeightDecay"
    assert info["not_recorded"] == {}
    assert {"grad_norm", "layer_grad_norm", "update_ratio", "flight_recorder", "live_health"} <= set(info["recorded"])


def test_live_health_and_the_flight_recorder_on_mindformers_norms(runs):
    out, log = runs
    scalars, tensors, ref, _ = load(out, "cell_graph")
    (event, *_) = ref["events"]
    assert event["step"] == 16 and event["first_step"] == 16
    assert event["layers"] == ["hidden.weight"]
    flight = dict(tensors[metadata.FLIGHT_GRAD_NORM_LAYERS])
    assert 16 in flight and 1 in flight          # the kept steps before the anomaly, at their real steps
    assert "live health" in log and "started in layer hidden.weight at step 16" in log


def test_what_mindformers_does_not_compute_is_said_not_left_empty(runs):
    out, log = runs
    scalars, tensors, ref, info = load(out, "cell_pynative_plain")
    assert metadata.GRAD_NORM not in scalars and metadata.GRAD_NORM_LAYERS not in tensors
    assert dict(scalars[metadata.LOSS])[12] == pytest.approx(at(ref["steps"], 12, "loss"), rel=1e-6)
    missing = info["not_recorded"]
    assert set(missing) == {"grad_norm", "layer_grad_norm", "flight_recorder"}
    assert "use_clip_grad: True" in missing["grad_norm"] and "local_norm: True" in missing["layer_grad_norm"]
    lines = [line for line in log.splitlines() if "TrainMonitor does not record core/grad_norm" in line]
    assert len(lines) == 1 and "local_norm: True" in lines[0]


def test_in_mindformers_trainer(runs):
    out, _ = runs
    scalars, tensors, ref, info = load(out, "trainer")
    steps = ref["steps"]
    assert ref["errors"] == 0 and info["step_source"] == "mindformers"
    for step in (4, 24):
        assert dict(scalars[metadata.LOSS])[step] == pytest.approx(at(steps, step, "loss"), rel=1e-6)
        assert dict(scalars[metadata.GRAD_NORM])[step] == pytest.approx(at(steps, step, "global_norm"), rel=1e-6)
        assert dict(scalars[metadata.LEARNING_RATE])[step] == pytest.approx(at(steps, step, "lr"), rel=1e-6)
    # mindformers' warm-up / cosine schedule reaches the chart as the cell applied it.
    lrs = [v for _, v in scalars[metadata.LEARNING_RATE]]
    assert lrs[-1] < lrs[0] and all(math.isfinite(v) for v in lrs)


def test_a_yaml_callbacks_entry_builds_it(runs):
    out, _ = runs
    scalars, tensors, ref, info = load(out, "yaml")
    assert info["step_source"] == "mindformers" and info["debug"]["items"] == ["layer_grad_norm"]
    assert dict(scalars[metadata.LOSS])[24] == pytest.approx(at(ref["steps"], 24, "loss"), rel=1e-6)
    assert metadata.GRAD_NORM_LAYERS in tensors and info["not_recorded"] == {}


def test_its_yaml_configuration_gives_the_runs_hyperparameters(runs):
    """mindformers' Trainer writes its configuration as text summaries; the run_info route shows its
    hyperparameters under their canonical names, each with the configuration key it came as."""
    import yaml
    from tb_harness import App

    out, _ = runs
    with open(out / "yaml" / "config.yaml") as f:
        cfg = yaml.safe_load(f)
    app = App(out / "yaml" / "mf_tensorboard", load_fast="false")
    deadline = time.time() + 120            # the loader reads the folder in the background
    while "rank_0" not in app.plugin("/run_info")["runs"] and time.time() < deadline:
        time.sleep(0.25)
    body = app.plugin("/run_info", run="rank_0")
    assert body["sources"] == ["mindformers_config"] and body["run_info"] is None
    hp, names = body["hparams"], body["hparam_names"]
    assert hp["learning_rate"] == cfg["lr_schedule"]["learning_rate"]
    assert names["learning_rate"] == ["lr_schedule.learning_rate"]
    assert hp["batch_size"] == cfg["runner_config"]["batch_size"]
    assert names["batch_size"] == ["runner_config.batch_size"]
    assert hp["optimizer"] == cfg["optimizer"]["type"] and hp["lr_schedule"] == cfg["lr_schedule"]["type"]
    assert hp["weight_decay"] == cfg["optimizer"]["weight_decay"] and hp["seed"] == cfg["seed"]
    assert hp["warmup"] == cfg["lr_schedule"]["warmup_steps"]
    assert set(body["hparam_sources"].values()) == {"mindformers_config"}
    # Paths, switches and parallel layouts of the configuration are not offered as hyperparameters.
    assert not {"output_dir", "load_checkpoint", "use_parallel", "data_parallel"} & set(hp)
    assert app.plugin("/run_info")["runs"]["rank_0"] == body


def test_registered_when_mindformers_was_imported_first(tmp_path):
    require_env("mindformers")
    script = tmp_path / "theirs_first.py"
    script.write_text(
        "from mindformers.core.callback.build_callback import build_callback\n"
        "import tb_mindspore_callbacks\n"
        "cb = build_callback([{'type': 'TrainMonitor', 'logdir': %r, 'collect_freq': 3}])[0]\n"
        "assert type(cb) is tb_mindspore_callbacks.TrainMonitor and cb.collect_freq == 3\n"
        "print('ok')\n" % str(tmp_path / "run"))
    r = run_in_env("mindformers", [script], timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def test_run_mindformer_register_path_and_auto_register(tmp_path):
    """run_mindformer.py imports nothing of ours: a one-line file in --register_path (REGISTER_PATH) and
    ``auto_register: tbms.TrainMonitor`` in the entry (mindformers' mechanism for outside classes) build it."""
    require_env("mindformers")
    folder = tmp_path / "register"
    folder.mkdir()
    (folder / "tbms.py").write_text("from tb_mindspore_callbacks import TrainMonitor\n")
    script = tmp_path / "auto_register.py"
    script.write_text(
        "import sys\n"
        "from mindformers.core.callback.build_callback import build_callback\n"
        "assert 'tb_mindspore_callbacks' not in sys.modules\n"
        "cb = build_callback([{'type': 'TrainMonitor', 'auto_register': 'tbms.TrainMonitor', 'logdir': %r}])[0]\n"
        "import tb_mindspore_callbacks\n"
        "assert type(cb) is tb_mindspore_callbacks.TrainMonitor\n"
        "print('ok')\n" % str(tmp_path / "run"))
    r = run_in_env("mindformers", [script], timeout=600, cwd=str(tmp_path),
                   env={"REGISTER_PATH": str(folder)})
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
