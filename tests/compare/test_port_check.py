"""`tb-mindspore compare` on real trainings in both frameworks: the same tiny MLP, CNN with BatchNorm and 2-layer
transformer built in PyTorch and in MindSpore, trained from the same initial weights and batches (one numpy file
both load), recorded by TorchMonitor and LoopMonitor. The unchanged pairs match over 200 steps; each difference
injected into the MindSpore side is named with its class, its first layer and its first step.

The PyTorch side runs in the torch environment (``bash scripts/extras.sh torch``); the tests skip without it."""

import json
import sys

import pytest

pytest.importorskip("mindspore")

import port_pairs  # noqa: E402
from extras import require_env  # noqa: E402
from tb_plugin_mindspore.commands.compare import read_run  # noqa: E402
from tb_plugin_mindspore.compare.engine import compare  # noqa: E402
import warm  # noqa: E402

MATCH_STEPS = 200
INJECT_STEPS = 40
DROPOUT_STEPS = 100

# (model, injection, settings for both sides, class, first layer (None: not a layer's), first step)
# The first step is the first where the difference can show in what is recorded: weight decay through Adam moves a
# bias like the reference does at step 1 (Adam's first step is lr * sign(g) either way) and apart from step 2 on;
# the MindSpore loop records its first update ratio at step 2 (LoopMonitor keeps the weights at the end of the step
# before), so an update that differs from step 1 is seen in the weight norms at step 1 when it is large (bias
# correction: 3x) and in the update ratios at step 2 when it is not (epsilon); the batches are swapped from step 2;
# the evaluations are at step 0 (before training: a different initialisation shows there) and every 10 steps (the
# BatchNorm statistics are used from step 10).
CASES = [
    ("mlp", "init", {}, "init", "fc2.weight", 0),
    ("mlp", "backward", {}, "backward", "fc2.weight", 1),
    ("mlp", "weight_decay_bias", {}, "weight_decay", "bias", 2),
    ("mlp", "bias_correction", {}, "bias_correction", None, 1),
    ("mlp", "adam_eps", {"eps": 1e-3}, "adam_epsilon", None, 2),
    ("mlp", "lr_off_by_one", {}, "lr_schedule", None, 1),
    ("mlp", "data_order", {}, "data", None, 2),
    ("cnn", "bn_momentum", {}, "batchnorm_momentum", None, 10),
    ("cnn", "init", {}, "init", "conv2.weight", 0),
    ("transformer", "dropout", {}, "dropout", None, 1),
]


def _case_id(case):
    return "%s-%s" % (case[0], case[1])


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """Every pair trained once: the references and unchanged MindSpore runs (200 steps), the injected runs (40)."""
    require_env("torch")
    root = tmp_path_factory.mktemp("port_pairs")
    port_pairs.write_specs(root, MATCH_STEPS)
    torch_jobs, ms_jobs = [], []
    for model in ("mlp", "cnn", "transformer"):
        torch_jobs.append(port_pairs.job(model, root, root / ("%s-torch" % model), steps=MATCH_STEPS))
        ms_jobs.append(port_pairs.job(model, root, root / ("%s-ms" % model), steps=MATCH_STEPS))
    torch_jobs.append(port_pairs.job("mlp", root, root / "mlp-torch-eps", steps=INJECT_STEPS, eps=1e-3))
    for model, inject, settings, *_ in CASES:
        steps = DROPOUT_STEPS if inject == "dropout" else INJECT_STEPS
        ms_jobs.append(port_pairs.job(model, root, root / ("%s-ms-%s" % (model, inject)), inject, steps=steps,
                                      **settings))
    port_pairs.train(root, ms_jobs, torch_jobs)
    return root


_READ = {}


def compare_paths(run, reference):
    """``compare`` of two run folders, each read once for the whole module (the references are compared often)."""
    for path in (run, reference):
        if path not in _READ:
            _READ[path] = read_run(path)
    return compare(_READ[run], _READ[reference], names=(run, reference, None))


def _reference(root, model, settings):
    return root / ("%s-torch-eps" % model if settings.get("eps") else "%s-torch" % model)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer"])
def test_unchanged_pair_matches(pairs, model):
    result = compare_paths(str(pairs / ("%s-ms" % model)), str(pairs / ("%s-torch" % model)))
    assert result["verdict"] == "match", json.dumps(result["order"][:3])
    assert result["alignment"]["first_step"] == 0 and result["alignment"]["last_step"] == MATCH_STEPS   # eval at 0
    compared = {q["quantity"] for q in result["quantities"]}
    assert compared == {"learning_rate", "loss", "grad_norm", "layer_grad_norm", "update_ratio", "weight_norm",
                        "layer_weight_norm", "eval_loss"}
    mapping = result["mapping"]
    assert mapping["unmapped_run"] == [] and mapping["unmapped_reference"] == [] and mapping["shape_mismatches"] == []
    renamed = {p["run"][0]: p["reference"][0] for p in mapping["pairs"] if p["rule"] == "built-in"}
    if model == "cnn":
        assert renamed == {"bn1.gamma": "bn1.weight", "bn1.beta": "bn1.bias", "bn2.gamma": "bn2.weight",
                           "bn2.beta": "bn2.bias"}
    if model == "transformer":
        assert renamed["emb.embedding_table"] == "emb.weight" and renamed["layers.1.ln2.gamma"] == "layers.1.ln2.weight"
        # A key projection's bias gets no gradient (a softmax ignores a shift shared by every key): left out.
        assert result["no_gradient_layers"] == ["layers.0.k.bias", "layers.1.k.bias"]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_injected_difference_is_named(pairs, case):
    model, inject, settings, cls, layer, step = case
    result = compare_paths(str(pairs / ("%s-ms-%s" % (model, inject))), str(_reference(pairs, model, settings)))
    assert result["verdict"] == "part"
    likely, first = result["likely"], result["first"]
    assert likely["class"] == cls, json.dumps(likely)
    assert first["step"] == step, json.dumps(result["order"][:4])
    assert likely["evidence"] and likely["advice"]
    if layer == "bias":
        assert first["layers"] and all(n.endswith(".bias") for n in first["layers"]), first
    elif layer is not None:
        assert first["layers"][0] == layer, first
    if inject == "lr_off_by_one":
        assert any("one step ahead" in e for e in likely["evidence"])
    if inject == "data_order":
        assert any("another order" in e for e in likely["evidence"])


@pytest.mark.slow
def test_command_exit_status_and_json(pairs):
    """The command as users run it: 0 on a match, 1 when the runs part, the JSON shape of the README."""
    def run(*args):
        return warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "compare", *map(str, args)],
                        capture_output=True, text=True, timeout=300)

    same = run(pairs / "mlp-ms", pairs / "mlp-torch")
    assert same.returncode == 0 and same.stdout.startswith("MATCH"), same.stderr
    parted = run(pairs / "mlp-ms-backward", pairs / "mlp-torch", "--format", "json")
    assert parted.returncode == 1, parted.stderr
    body = json.loads(parted.stdout)
    assert set(body) >= {"version", "run", "reference", "verdict", "first", "order", "likely", "quantities",
                         "alignment", "mapping", "missing", "drift", "no_gradient_layers"}
    assert body["first"] == dict(body["first"], quantity="grad_norm", step=1, layers=["fc2.weight"],
                                 **{"class": "backward"})
