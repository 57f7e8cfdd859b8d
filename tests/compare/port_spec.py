"""The same small models for MindSpore and PyTorch, for the port-check tests: their layer shapes under PyTorch's
names, initial weights and batches made here with numpy (written to one ``.npz`` file that both frameworks load),
and the differences a test injects into one side. Imports only numpy.

Models: ``mlp`` (3 Dense layers), ``cnn`` (2 convolutions with BatchNorm, a Dense head), ``transformer`` (an
embedding, 2 pre-norm encoder layers with single-projection attention, a Dense head)."""

import json

import numpy as np

MODELS = ("mlp", "cnn", "transformer")
BATCH = 16
CLASSES = 4
IMAGE = 8          # cnn input: 1 x 8 x 8
VOCAB, SEQ, DIM, HEADS, FF = 20, 8, 16, 2, 32

# What a test may inject into one side (the MindSpore run unless said otherwise) and the class `compare` must name.
INJECTIONS = {
    "init": "init",                       # one layer's initial weights scaled (fc2 / conv2 / layers.1.ff1)
    "backward": "backward",               # one layer's gradient halved before the update
    "weight_decay_bias": "weight_decay",  # weight decay applied to biases and norm weights too
    "bias_correction": "bias_correction", # Adam without bias correction (MindSpore's AdamWeightDecay)
    "adam_eps": "adam_epsilon",           # Adam's epsilon inside the square root
    "lr_off_by_one": "lr_schedule",       # the warm-up one step ahead
    "data_order": "data",                 # the batches in another order
    "bn_momentum": "batchnorm_momentum",  # BatchNorm momentum=0.1 given to MindSpore as PyTorch means it
    "dropout": "dropout",                 # dropout left on in training
}
# The layer an injection touches first, per model (PyTorch names).
TARGET = {"mlp": "fc2.weight", "cnn": "conv2.weight", "transformer": "layers.1.ff1.weight"}


def shapes(model):
    """``{name: shape}`` in PyTorch's names and layouts, in the order of ``named_parameters()``."""
    if model == "mlp":
        return {"fc1.weight": (32, 10), "fc1.bias": (32,), "fc2.weight": (32, 32), "fc2.bias": (32,),
                "fc3.weight": (CLASSES, 32), "fc3.bias": (CLASSES,)}
    if model == "cnn":
        return {"conv1.weight": (8, 1, 3, 3), "bn1.weight": (8,), "bn1.bias": (8,), "conv2.weight": (8, 8, 3, 3),
                "bn2.weight": (8,), "bn2.bias": (8,), "fc.weight": (CLASSES, 8), "fc.bias": (CLASSES,)}
    if model == "transformer":
        out = {"emb.weight": (VOCAB, DIM), "pos": (SEQ, DIM)}
        for i in range(2):
            p = "layers.%d." % i
            out.update({p + "ln1.weight": (DIM,), p + "ln1.bias": (DIM,)})
            for proj in ("q", "k", "v", "o"):
                out.update({p + proj + ".weight": (DIM, DIM), p + proj + ".bias": (DIM,)})
            out.update({p + "ln2.weight": (DIM,), p + "ln2.bias": (DIM,), p + "ff1.weight": (FF, DIM),
                        p + "ff1.bias": (FF,), p + "ff2.weight": (DIM, FF), p + "ff2.bias": (DIM,)})
        out.update({"ln.weight": (DIM,), "ln.bias": (DIM,), "head.weight": (CLASSES, DIM), "head.bias": (CLASSES,)})
        return out
    raise ValueError("unknown model %r" % model)


def init_weights(model, seed=0):
    """Initial weights (float32): Kaiming-uniform-like matrices, small biases, norm scales 1 and shifts 0."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes(model).items():
        module = name.rsplit(".", 1)[0].rsplit(".", 1)[-1] if "." in name else ""
        if module.startswith(("bn", "ln")):
            value = np.ones(shape) if name.endswith("weight") else np.zeros(shape)
        elif len(shape) == 1:
            value = rng.uniform(-0.1, 0.1, size=shape)
        else:
            fan_in = int(np.prod(shape[1:])) if name != "emb.weight" and name != "pos" else shape[1]
            bound = np.sqrt(3.0 / fan_in)
            value = rng.uniform(-bound, bound, size=shape)
        out[name] = value.astype(np.float32)
    return out


def batches(model, steps, seed=1):
    """``(x, y)`` of every step: ``x[step]`` one batch, ``y[step]`` its labels (int32)."""
    rng = np.random.default_rng(seed)
    if model == "mlp":
        x = rng.normal(size=(steps, BATCH, 10)).astype(np.float32)
        w = rng.normal(size=(10, CLASSES))
        y = np.argmax(np.einsum("sbf,fc->sbc", x, w), axis=-1)
    elif model == "cnn":
        y = rng.integers(0, CLASSES, size=(steps, BATCH))
        x = rng.normal(size=(steps, BATCH, 1, IMAGE, IMAGE)) * 0.5
        x[..., :, :IMAGE // 2] += (y % 2)[..., None, None, None]      # class-dependent patterns
        x[..., :IMAGE // 2, :] += (y // 2)[..., None, None, None]
        x = x.astype(np.float32)
    else:
        x = rng.integers(0, VOCAB, size=(steps, BATCH, SEQ))
        y = (x[..., 0] + x[..., 1]) % CLASSES
    return x, y.astype(np.int32)


def write(path, model, steps, seed=0):
    """One ``.npz`` with the initial weights (``w:<name>``) and the batches (``x``, ``y``)."""
    x, y = batches(model, steps)
    arrays = {"w:" + k: v for k, v in init_weights(model, seed).items()}
    np.savez(path, x=x, y=y, **arrays)
    return path


def load(path):
    """``(weights by name, x, y)`` of a file written by :func:`write`."""
    data = np.load(path)
    weights = {k[2:]: data[k] for k in data.files if k.startswith("w:")}
    return weights, data["x"], data["y"]


def jobs_of(argv):
    """The trainings a child runs, in order: ``[{"model", "spec", "run_dir", "inject", "settings"}]`` from a JSON
    file (``argv[1]``): one process trains them all (the framework is imported once)."""
    with open(argv[1]) as f:
        jobs = json.load(f)
    for job in jobs:
        if job.get("inject") and job["inject"] not in INJECTIONS:
            raise SystemExit("unknown injection %r" % job["inject"])
        job.setdefault("inject", "")
        job["settings"] = dict(DEFAULTS, **OPTIMIZER.get(job["model"], {}), **job.get("settings", {}))
    return jobs


# Training settings shared by both sides (the children read them, a test may override).
DEFAULTS = {"steps": 200, "lr": 3e-3, "warmup": 10, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01,
            "optimizer": "adam", "eval_every": 10, "dropout": 0.0}
# PyTorch's Adam and MindSpore's nn.Adam differ in where epsilon goes (MindSpore adds it before the bias correction:
# a larger effective epsilon early on), which shows after some tens of steps in a transformer's LayerNorm biases:
# the transformer pair trains with SGD and momentum, the same update in both.
OPTIMIZER = {"transformer": {"optimizer": "sgd", "lr": 0.05}}


def warmup_factor(step0, warmup):
    """The LR factor at the step with 0-based index ``step0``: linear warm-up to 1 over ``warmup`` steps."""
    return min(1.0, (step0 + 1) / warmup)
