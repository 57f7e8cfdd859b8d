"""The health corpus's plan: which runs to train (reproducible from one seed) and the written catalogue of faults.

Pure Python (no MindSpore): ``bench/health_corpus.py`` shards and judges from it, ``bench/corpus_train.py`` trains
one :class:`Spec`.

Axes (issue 32): architecture (MLP, CNN with BatchNorm, small transformer), optimizer (SGD with momentum, Adam,
AdamWeightDecay), learning-rate schedule (constant, step, warm-up + cosine), mode (GRAPH, PYNATIVE), entry point
(``Model.train`` + ``TrainMonitor``, the hand-written loop + ``LoopMonitor``), dtype (float32; float16 with dynamic
loss scaling through ``MonitoredLossScaleCell``, ``Model.train`` only), batch size 4-256.

About half the runs are healthy, among them the hard cases (:data:`HEALTHY`); the other half carry one fault from
:data:`FAULTS`, each with the rules that should name it, the step it starts at and, where it has one, the layer or
the rank it is in. Runs started with ``msrun`` (4 CPU workers) are fewer (:data:`MSRUN_FAULTS`, ``msrun_healthy``).
"""

import json
import random
from dataclasses import asdict, dataclass, field
from typing import Optional, Tuple

ARCHS = ("mlp", "cnn_bn", "transformer")
OPTIMIZERS = ("momentum", "adam", "adamw")
SCHEDULES = ("constant", "step", "warmup_cosine")
MODES = ("graph", "pynative")
ENTRIES = ("model", "loop")
BATCHES = (4, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class Fault:
    """One entry of the catalogue: how it is injected (in words), the rules that must name it (each counts it as a
    trial in its RULES.md row), other rules that may name it instead (the fault counts as found in the catalogue's
    total when any of them does), what it needs of a run."""

    name: str
    injected: str
    rules: Tuple[str, ...]
    also: Tuple[str, ...] = ()
    layer: bool = False          # the fault is in one layer: the finding must name it
    rank: bool = False           # the fault is in one rank: the finding must name it
    needs: Tuple[str, ...] = ()  # "fp16", "model", "eval", "debug", "bn", "msrun"


FAULTS = {f.name: f for f in (
    Fault("nan_at_step", "the inputs of step S are multiplied by +Inf (NaN from there on)",
          ("nonfinite",)),
    Fault("grad_explosion", "from step S the backward pass multiplies every gradient by 1,000 for 3 steps (a "
          "gradient-scale knob on the loss)", ("grad_explosion",), also=("nonfinite", "loss_spike")),
    Fault("layer_explosion", "from step S one layer's weight gradient is multiplied by 1,000 for 3 steps (a "
          "gradient-scale knob on that weight only)", ("grad_explosion",), also=("nonfinite",), layer=True),
    Fault("dead_layer", "ops.stop_gradient on the first layer's output: its weights never get a gradient",
          ("layer_not_learning",), also=("vanishing_gradients",), layer=True, needs=("debug",)),
    Fault("frozen_layer", "the first layer's weight has requires_grad=False (left out of the optimizer)",
          ("layer_not_learning",), layer=True),
    Fault("vanishing_gradients", "the backward pass into the first layer multiplies its gradient by 1e-7 (what a "
          "deep stack of saturating activations does to the layers before it)",
          ("vanishing_gradients",), also=("layer_not_learning",), layer=True, needs=("debug",)),
    Fault("lr_not_applied", "hparams say lr_schedule=warmup_cosine but the optimizer is given a constant",
          ("lr_constant",)),
    Fault("warmup_never_ends", "a warm-up of 20x the run's steps: the learning rate rises to the end",
          ("lr_warmup_unfinished",)),
    Fault("overfitting", "64 training samples with 30% wrong labels, a wide network, 300 steps; eval on fresh "
          "samples", ("overfitting",), needs=("eval",)),
    Fault("broken_eval", "eval batches prepared differently (BatchNorm moving statistics never match: inputs "
          "shifted by 4 with BatchNorm momentum 0.999; other models: eval inputs not standardised, or another "
          "label map)", ("train_eval_gap",), needs=("eval",)),
    Fault("input_bound", "every batch waits twice the median step in the data pipeline (at least 100 ms)",
          ("input_bound",)),
    Fault("overflow_storm", "float16 with dynamic loss scaling; from step S the backward pass overflows in "
          "float16 at every step (every update skipped, the loss scale falls to its floor)",
          ("overflow_storm", "loss_scale_collapse"), needs=("fp16", "model")),
    Fault("memory_leak", "from step S the training script keeps 1 MB of host memory per step",
          ("memory_growth",)),
)}

MSRUN_FAULTS = {f.name: f for f in (
    Fault("straggler", "rank R's data pipeline takes 0.2 s a batch against 0.1 s steps", ("slow_rank",),
          rank=True, needs=("msrun",)),
    Fault("hung_rank", "rank R stops at step S (sleeps) while the others go on", ("rank_stopped",), rank=True,
          needs=("msrun",)),
    Fault("dead_rank", "rank R's process is killed with SIGKILL after step S", ("rank_stopped",), rank=True,
          needs=("msrun",)),
    Fault("corrupt_rank", "rank R's inputs are multiplied by 30 from step S (a corrupted shard)",
          ("rank_diverging",), rank=True, needs=("msrun",)),
)}

ALL_FAULTS = dict(FAULTS, **MSRUN_FAULTS)

# Healthy runs, the hard ones first: what each looks like (in words).
HEALTHY = {
    "plain": "an ordinary run of the sampled configuration",
    "small_batch": "batch 4 and a learning rate for batch 32: noisy single-batch losses with a falling trend",
    "early_growth": "the output layer initialised at 1e-3 of its usual scale: the gradient norm grows early",
    "occasional_overflow": "float16 with dynamic loss scaling starting at 2^24: overflow steps at the start and "
                           "now and then",
    "plateau": "trained twice as long: the loss plateaus at a good value",
    "early_stopping": "training stops early when the loss stops improving (EarlyStopping, or a loop's break)",
    "resumed": "trained half, then resumed into the same run folder (Model.train(initial_epoch=...))",
    "reduce_lr_on_plateau": "ReduceLROnPlateau on the training loss (a loop: the same by hand)",
    "declared_constant": "a constant learning rate declared as such (hparams lr_schedule=constant)",
}


@dataclass
class Spec:
    """One run of the corpus. ``expected``: the rules that should name its fault (empty when healthy)."""

    index: int
    seed: int
    kind: str                # "healthy" | "fault"
    case: str                # a key of HEALTHY or ALL_FAULTS
    arch: str = "mlp"
    optimizer: str = "momentum"
    schedule: str = "constant"
    mode: str = "graph"
    entry: str = "model"
    dtype: str = "fp32"
    batch: int = 32
    steps: int = 160
    collect_freq: int = 5
    debug: bool = False
    eval: bool = False
    msrun: bool = False
    fault_step: Optional[int] = None
    fault_layer: Optional[str] = None     # index into the model's layers ("first", "middle", "last")
    fault_rank: Optional[int] = None
    expected: Tuple[str, ...] = field(default_factory=tuple)

    @property
    def id(self):
        return "%04d-%s-%s-%s" % (self.index, self.kind, self.case, self.arch)

    def to_json(self):
        out = asdict(self)
        out["id"] = self.id
        out["expected"] = list(self.expected)
        return out

    @classmethod
    def from_json(cls, d):
        d = dict(d)
        d.pop("id", None)
        d["expected"] = tuple(d.get("expected") or ())
        return cls(**d)


def _fits(fault, spec):
    needs = fault.needs
    if "fp16" in needs and spec.dtype != "fp16":
        return False
    if "model" in needs and spec.entry != "model":
        return False
    return True


def _sample_axes(rng, spec):
    spec.arch = rng.choice(ARCHS)
    spec.optimizer = rng.choice(OPTIMIZERS)
    spec.schedule = rng.choice(SCHEDULES)
    spec.mode = rng.choice(MODES)
    spec.entry = rng.choice(ENTRIES)
    spec.batch = rng.choice(BATCHES)
    spec.collect_freq = rng.choice((2, 5, 10))
    spec.debug = rng.random() < 0.5
    spec.eval = rng.random() < 0.5
    spec.dtype = "fp16" if spec.entry == "model" and spec.arch != "cnn_bn" and rng.random() < 0.25 else "fp32"
    # The transformer in PYNATIVE_MODE is the slowest configuration: keep its runs short.
    spec.steps = 96 if (spec.arch == "transformer" and spec.mode == "pynative") else 120


def _healthy(rng, spec, case):
    if case == "small_batch":
        spec.batch = 4
    elif case == "occasional_overflow":
        spec.entry, spec.dtype = "model", "fp16"
        spec.arch = rng.choice(("mlp", "transformer"))
    elif case == "plateau":
        spec.steps *= 2
    elif case == "resumed":
        spec.entry = "model"
    elif case == "reduce_lr_on_plateau":
        spec.schedule = "constant"
    elif case == "declared_constant":
        spec.schedule = "constant"


# Faults present from the first step (the others start at a step drawn in the middle of the run).
FROM_START = frozenset({"dead_layer", "frozen_layer", "vanishing_gradients", "lr_not_applied", "warmup_never_ends",
                        "overfitting", "broken_eval", "input_bound"})


def _fault(rng, spec, fault):
    spec.expected = fault.rules + fault.also
    spec.fault_step = 1 if fault.name in FROM_START else int(rng.randint(int(spec.steps * 0.3),
                                                                           int(spec.steps * 0.6)))
    if fault.layer:
        spec.fault_layer = "first" if fault.name in ("dead_layer", "frozen_layer", "vanishing_gradients") else \
            rng.choice(("first", "middle", "last"))
    if "fp16" in fault.needs:
        spec.entry, spec.dtype = "model", "fp16"
        if spec.arch == "cnn_bn":
            spec.arch = rng.choice(("mlp", "transformer"))
    if "debug" in fault.needs:
        spec.debug = True
    if "eval" in fault.needs:
        spec.eval = True
    if fault.name == "overfitting":
        spec.arch = "mlp" if spec.arch == "transformer" else spec.arch
        spec.batch = min(spec.batch, 16)
        spec.steps = 300
    if fault.name == "warmup_never_ends":
        spec.schedule = "warmup_cosine"
    if fault.name == "lr_not_applied":
        spec.schedule = "constant"
    if fault.name in ("nan_at_step", "grad_explosion", "layer_explosion"):
        spec.dtype = "fp32"      # a float16 loss-scale cell skips non-finite steps: another case (overflow_storm)


def plan(seed=0, runs=320, msrun_runs=16):
    """The corpus's runs, reproducible from ``seed``: ``runs`` single-process runs (half healthy: the hard cases
    first, then plain ones; half with one fault each, the catalogue's faults taken in turn) and ``msrun_runs``
    four-worker jobs (a quarter healthy, the others the :data:`MSRUN_FAULTS` in turn)."""
    rng = random.Random(seed)
    specs = []
    healthy_cases = list(HEALTHY)
    fault_names = list(FAULTS)
    half = runs // 2
    for i in range(runs):
        spec = Spec(index=len(specs), seed=rng.randrange(1 << 30), kind="healthy" if i % 2 == 0 else "fault",
                    case="plain")
        _sample_axes(rng, spec)
        if spec.kind == "healthy":
            k = i // 2
            # Every hard case about 8 times; the rest plain.
            spec.case = healthy_cases[1 + k % (len(healthy_cases) - 1)] if k < 8 * (len(healthy_cases) - 1) \
                else "plain"
            _healthy(rng, spec, spec.case)
        else:
            fault = FAULTS[fault_names[(i // 2) % len(fault_names)]]
            spec.case = fault.name
            _fault(rng, spec, fault)
        specs.append(spec)
    del half
    ms_faults = list(MSRUN_FAULTS)
    for j in range(msrun_runs):
        spec = Spec(index=len(specs), seed=rng.randrange(1 << 30), kind="healthy" if j % 4 == 0 else "fault",
                    case="msrun_healthy", arch="mlp", mode="graph", entry="model", batch=16, steps=60,
                    collect_freq=2, msrun=True)
        if spec.kind == "fault":
            fault = MSRUN_FAULTS[ms_faults[(j - j // 4 - 1) % len(ms_faults)]]
            spec.case = fault.name
            spec.expected = fault.rules + fault.also
            spec.fault_rank = int(rng.randint(1, 3))
            spec.fault_step = 1 if fault.name == "straggler" else int(rng.randint(20, 30))
        specs.append(spec)
    return specs


def shard(specs, index, count):
    """The specs of shard ``index`` of ``count`` (round robin, so every shard mixes every case)."""
    return [s for s in specs if s.index % count == index]


def catalogue_markdown():
    """The written catalogue as a Markdown table (RULES.md)."""
    lines = ["| fault | how it is injected | rules that must name it | or instead | and name |",
             "| --- | --- | --- | --- | --- |"]
    for f in ALL_FAULTS.values():
        lines.append("| `%s` | %s | %s | %s | %s |" % (
            f.name, f.injected, ", ".join("`%s`" % r for r in f.rules), ", ".join("`%s`" % r for r in f.also),
            "the layer" if f.layer else "the rank" if f.rank else ""))
    return "\n".join(lines)


if __name__ == "__main__":
    for s in plan():
        print(json.dumps(s.to_json()))
