"""The health corpus's precursor set: tiny real MindSpore trainings in which a precursor develops before the failure
it announces, and healthy controls that must stay quiet; the lead time of each precursor (steps and seconds from the
first "watch" to the failure).

Kept apart from the main corpus (its own plan file, ``precursors.json``, in its own folder): the main plan's cases and
faults are not touched. Training and judging reuse ``corpus_train`` (data, loss, live-event times) and
``corpus_judge`` (a run read as ``check`` reads it, cut at a step).

    nice -n 15 .venv/bin/python bench/health_corpus.py precursors --out PRECURSORS [--per-case 4] [--rules-md RULES.md]

Cases (:data:`CASES`), each a precursor and the failure it announces, or a control:

* ``attention_growth``: a one-layer ``nn.TransformerEncoderLayer`` classifier (no QK normalisation) under Adam
  warmed up from a working 1e-3 to a peak of 0.1 (100x) over the first half of the run: the query / key weights
  grow, the largest attention logit (the debug item ``attention_logits``) passes QK-Clip's 100, and the loss later
  rises to twice its best or spikes.
* ``adam_epsilon``: the same transformer under AdamWeightDecay (eps 1e-6, MindSpore's default); from step S the loss's
  gradient is scaled by 1e-6 (a loss divided by a huge normaliser): every gradient RMS falls below eps, Adam's update
  shrinks towards lr * m / eps and the model stops learning.
* ``lr_above_stability``: an MLP under SGD with momentum warmed up from a working 0.05 to 1.0 (20x) over the first
  half of the run: the step crosses the edge of stability (sharpness recorded every 4 steps by
  ``SharpnessCallback`` / ``SharpnessProbe``) and the loss then rises or overflows.
* ``control_transformer`` (Adam at 1e-3), ``control_adamw`` (AdamWeightDecay, no gradient scale), ``control_mlp``
  (the MLP at its working learning rate, sharpness recorded): healthy; no precursor may fire on them.

The failure step is the earliest of: the first recorded step at which one of the case's failure rules gives a warn or
error finding on the run cut there (bisected, as the main corpus's delay), and, for the diverging cases, the first
step whose loss is non-finite or above the run's initial loss (everything learnt lost). The precursor step is the
first recorded step at which the precursor rule fires on the run cut there. Lead time = failure - precursor (steps;
seconds from the wall times of the loss points).
"""

import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from corpus_files import write_between_markers, write_result  # noqa: E402

PLAN = "precursors.json"
PRECURSOR_RULES = ("attention_logit_growth", "adam_epsilon_dominated", "sharpness_above_stability")
ALARM = ("warn", "error")
DIVERGING = ("loss_spike", "nonfinite", "grad_explosion", "loss_not_decreasing", "loss_oscillation")


@dataclass(frozen=True)
class Case:
    """A precursor case (``rule``: the precursor; ``failure``: the warn / error rules of the failure it announces;
    ``diverges``: the loss is expected to rise above its start) or a control (``rule`` None)."""

    name: str
    arch: str
    optimizer: str
    lr: float
    injected: str
    rule: str = None
    failure: tuple = ()
    diverges: bool = False
    steps: int = 120
    peak: float = None      # a linear warm-up from lr to peak over the first half of the run (None: constant lr)


CASES = {c.name: c for c in (
    Case("attention_growth", "transformer", "adam", 1e-3,
         "Adam warmed up linearly from 1e-3 to 0.1 (100x) over the first half of 160 steps, then held, on a "
         "transformer without QK normalisation",
         "attention_logit_growth", DIVERGING, diverges=True, steps=160,
         peak=0.1),
    Case("adam_epsilon", "transformer", "adamw", 2e-3,
         "AdamWeightDecay (eps 1e-6); from step S the loss gradient is scaled by 1e-6",
         "adam_epsilon_dominated", ("loss_not_decreasing", "layer_not_learning")),
    Case("lr_above_stability", "mlp", "momentum", 0.05,
         "SGD with momentum warmed up linearly from 0.05 to 1.0 (20x) over the first half of 120 steps, then held",
         "sharpness_above_stability", DIVERGING, diverges=True, peak=1.0),
    Case("control_transformer", "transformer", "adam", 1e-3, "Adam at 1e-3 (healthy)"),
    Case("control_adamw", "transformer", "adamw", 2e-3, "AdamWeightDecay at 2e-3 (healthy)"),
    Case("control_mlp", "mlp", "momentum", 0.05, "SGD with momentum at 0.05, sharpness recorded (healthy)"),
)}

EPS_SCALE = 1e-6
SHARPNESS_EVERY = 4
COLLECT = 2


@dataclass
class PSpec:
    index: int
    case: str
    seed: int
    mode: str = "graph"
    entry: str = "model"
    steps: int = 120
    fault_step: int = None

    @property
    def id(self):
        return "%03d-%s-%s-%s" % (self.index, self.case, self.entry, self.mode)

    def to_json(self):
        return dict(asdict(self), id=self.id)

    @classmethod
    def from_json(cls, d):
        d = dict(d)
        d.pop("id", None)
        return cls(**d)


def plan(per_case=4, seed=0):
    """``per_case`` runs of every case, over (Model.train, loop) x (GRAPH, PYNATIVE) in turn; reproducible."""
    import random

    rng = random.Random(seed)
    combos = [("model", "graph"), ("loop", "graph"), ("model", "pynative"), ("loop", "pynative")]
    specs = []
    for k in range(per_case):
        for name, case in CASES.items():
            entry, mode = combos[k % len(combos)]
            s = PSpec(index=len(specs), case=name, seed=rng.randrange(1 << 30), mode=mode, entry=entry,
                      steps=case.steps)
            if name == "adam_epsilon":
                s.fault_step = int(rng.randint(30, 50))
            specs.append(s)
    return specs


def quick_specs(seed=0):
    """One run of each precursor and the transformer control, GRAPH_MODE, both entry points (for the tests)."""
    specs = []
    for i, (name, entry) in enumerate((("attention_growth", "model"), ("adam_epsilon", "loop"),
                                       ("lr_above_stability", "model"), ("control_transformer", "loop"))):
        specs.append(PSpec(index=i, case=name, seed=seed + i, mode="graph", entry=entry, steps=CASES[name].steps,
                           fault_step=40 if name == "adam_epsilon" else None))
    return specs


# -------------------------------------------------------------------------------------------------------------
# Training
def build(spec, rs):
    """``(net, grad_scale)``: the case's network and the Parameter that scales its logits' gradient."""
    import mindspore as ms
    from mindspore import Parameter, Tensor, nn, ops

    import corpus_train as ct

    class Body(nn.Cell):
        def __init__(self):
            super().__init__()
            self.grad_scale = Parameter(Tensor(np.array(1.0, np.float32)), name="grad_scale", requires_grad=False)

        def scaled(self, logits):
            """Identity forward; the backward pass multiplies the gradient by ``grad_scale``."""
            fixed = ops.stop_gradient(logits)
            return fixed + (logits - fixed) * self.grad_scale

    if CASES[spec.case].arch == "mlp":
        class Net(Body):
            def __init__(self):
                super().__init__()
                self.l0 = nn.Dense(ct.FEATURES, ct.HIDDEN)
                self.l1 = nn.Dense(ct.HIDDEN, ct.HIDDEN)
                self.l2 = nn.Dense(ct.HIDDEN, ct.CLASSES)
                # Smooth: finite-difference Hessian-vector products across ReLU kinks give isolated spurious
                # eigenvalues (on ReLU MLPs the controls' sharpness jumped 10x for single measurements).
                self.act = nn.Tanh()

            def construct(self, x):
                return self.scaled(self.l2(self.act(self.l1(self.act(self.l0(x))))))
    else:
        class Net(Body):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(ct.VOCAB, ct.HIDDEN, embedding_table=Tensor(
                    rs.normal(0, 1.0, (ct.VOCAB, ct.HIDDEN)).astype(np.float32)))
                self.layer = nn.TransformerEncoderLayer(ct.HIDDEN, 2, dim_feedforward=2 * ct.HIDDEN, dropout=0.0,
                                                        batch_first=True)
                self.head = nn.Dense(ct.HIDDEN, ct.CLASSES)

            def construct(self, tokens):
                return self.scaled(self.head(self.layer(self.embed(tokens)).mean(axis=1)))
    del ms
    return Net(), None


def learning_rate(spec, total):
    case = CASES[spec.case]
    if case.peak is not None:
        ramp = max(1, total // 2 - 1)
        return [float(case.lr + (case.peak - case.lr) * min(1.0, i / ramp)) for i in range(total)]
    return case.lr


def optimizer_of(spec, net, total):
    from mindspore import nn

    case, lr = CASES[spec.case], learning_rate(spec, total)
    params = net.trainable_params()
    if case.optimizer == "adam":
        return nn.Adam(params, learning_rate=lr)
    if case.optimizer == "adamw":
        return nn.AdamWeightDecay(params, learning_rate=lr, weight_decay=0.01)
    return nn.Momentum(params, learning_rate=lr, momentum=0.9)


def monitor_kwargs(spec, live):
    import corpus_train as ct

    debug = ["update_ratio", "layer_grad_norm"]
    if CASES[spec.case].arch == "transformer":
        debug.append("attention_logits")
    return dict(collect_freq=COLLECT, flush_secs=1.0, registry=None, recorders=[ct.LiveTimes.make(live)],
                debug=debug, debug_freq=COLLECT, diagnostic_freq=SHARPNESS_EVERY,
                hparams={"lr": CASES[spec.case].lr, "optimizer": CASES[spec.case].optimizer, "steps": spec.steps,
                         "lr_schedule": "warmup" if CASES[spec.case].peak else "constant"})


def wants_sharpness(spec):
    return CASES[spec.case].arch == "mlp"


def train_run(spec, out):
    """Trains ``spec`` into ``<out>/runs/<id>``; writes ``<out>/meta/<id>.json``."""
    import corpus_train as ct

    run_dir, meta_path, rs, cpu0 = ct.start_run(spec, out)
    net, _ = build(spec, rs)
    arch = CASES[spec.case].arch
    x, y = ct.task_arrays(arch, 32 * ct.STEPS_PER_EPOCH, spec.seed)
    live, injected = [], []
    meta = {"spec": spec.to_json(), "run_dir": os.path.relpath(run_dir, out), "started": time.time(), "live": live}

    def before(step):
        if spec.fault_step is not None and step == spec.fault_step:
            from mindspore import Tensor

            net.grad_scale.set_data(Tensor(np.array(EPS_SCALE, np.float32)))
            injected.append({"step": step, "time": time.time(), "what": "loss gradient x%g" % EPS_SCALE})

    try:
        (_train_model if spec.entry == "model" else _train_loop)(spec, net, run_dir, x, y, live, before)
        meta["status"] = "trained"
    except Exception as e:
        ct.record_error(meta, e)
    meta["injected"] = injected
    return ct.finish_run(meta, meta_path, cpu0)


def _sharpness_kwargs():
    return dict(iterations=6, trace_probes=0, profile_points=0, probe_samples=16)


def _train_model(spec, net, run_dir, x, y, live, before):
    import mindspore.dataset as ds
    from mindspore.train import Callback, Model

    import corpus_train as ct
    from tb_mindspore_callbacks import MonitoredTrainCell, SharpnessCallback, TrainMonitor

    per_epoch = len(x) // 32
    epochs = int(math.ceil(spec.steps / per_epoch))
    total = epochs * per_epoch
    opt = optimizer_of(spec, net, total)
    model = Model(MonitoredTrainCell.wrap(net, ct._loss_fn(), opt))

    class Inject(Callback):
        def on_train_step_begin(self, run_context):
            before(int(run_context.original_args().cur_step_num))

    cbs = [TrainMonitor(run_dir, **monitor_kwargs(spec, live)), Inject()]
    if wants_sharpness(spec):
        cbs.append(SharpnessCallback(run_dir, (x[:16], y[:16]), every=SHARPNESS_EVERY, **_sharpness_kwargs()))
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(32, drop_remainder=True)
    model.train(epochs, data, callbacks=cbs, dataset_sink_mode=False)


def _train_loop(spec, net, run_dir, x, y, live, before):
    import mindspore as ms
    from mindspore import Tensor, nn

    import corpus_train as ct
    from tb_mindspore_callbacks import LoopMonitor, SharpnessProbe
    from tb_mindspore_callbacks.landscape.sharpness import write_result as write_sharpness
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    total = spec.steps
    opt = optimizer_of(spec, net, total)
    loss_net = nn.WithLossCell(net, ct._loss_fn())
    grad_fn = ct.GradStep(loss_net, opt.parameters) if spec.mode == "graph" else \
        ms.value_and_grad(loss_net, None, opt.parameters)
    probe = writer = None
    if wants_sharpness(spec):
        probe = SharpnessProbe(loss_net, (x[:16], y[:16]), **_sharpness_kwargs())
    per_epoch = len(x) // 32
    try:
        with LoopMonitor(run_dir, opt, network=net, batch_size=32, **monitor_kwargs(spec, live)) as mon:
            for step in range(1, total + 1):
                i = (step - 1) % per_epoch
                a, b = Tensor(x[i * 32:(i + 1) * 32]), Tensor(y[i * 32:(i + 1) * 32])
                mon.begin_step()
                before(step)
                loss, grads = grad_fn(a, b)
                opt(grads)
                mon.step(loss, grads, inputs=(a, b))
                if probe is not None and step % SHARPNESS_EVERY == 0:
                    with mon.paused():
                        writer = writer or SummaryWriter(run_dir)
                        write_sharpness(writer, probe.measure(step, opt, loss_network=loss_net))
    finally:
        if writer is not None:
            writer.close()


# -------------------------------------------------------------------------------------------------------------
# Judging
def _fires(run, rules, levels):
    from tb_plugin_mindspore.health import engine

    out = []
    for f in engine.check_run(run):
        for g in [f] + list(f.follow_ons):
            if g.rule in rules and g.level in levels:
                out.append(g)
    return out


def first_firing(run, rules, levels, start=1):
    """The first recorded loss step ``s >= start`` at which ``rules`` fire (at ``levels``) on the run cut at ``s``
    (bisection, as the main corpus's delay), with its wall time; (None, None) when they never do."""
    import corpus_judge

    loss = run.get("loss")
    if loss is None:
        return None, None
    steps = np.unique(loss.steps[loss.steps >= start])
    wall = {int(s): float(w) for s, w in zip(loss.steps, loss.wall_times)}
    if not steps.size:
        return None, None

    def fires_at(s):
        return bool(_fires(corpus_judge.truncate(run, s, wall.get(s, 0.0) + 1.0), rules, levels))

    if not fires_at(int(steps[-1])):
        return None, None
    lo, hi = 0, steps.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if fires_at(int(steps[mid])):
            hi = mid
        else:
            lo = mid + 1
    return int(steps[lo]), wall.get(int(steps[lo]))


def divergence_step(run, window=5, factor=2.0):
    """The first recorded step at which the loss is non-finite, or its trailing median over ``window`` points is
    ``factor`` times the lowest such median so far after training had made progress (that lowest under 0.8x the
    first); with its wall time. (None, None) when it never happens."""
    loss = run.get("loss")
    if loss is None or len(loss) < 2 * window:
        return None, None
    v = loss.values.astype(np.float64)
    best = first = None
    for i in range(len(v)):
        if not np.isfinite(v[i]):
            return int(loss.steps[i]), float(loss.wall_times[i])
        if i + 1 < window:
            continue
        med = float(np.median(v[i + 1 - window:i + 1]))
        first = med if first is None else first
        if best is not None and best < 0.8 * first and med > factor * best:
            return int(loss.steps[i]), float(loss.wall_times[i])
        best = med if best is None else min(best, med)
    return None, None


def judge_run(out, spec):
    """``{"id", "case", "watch": {rule: [steps]}, "levels", "precursor_step", "failure_step", "lead_steps",
    "lead_s", "alarms"}``; written to ``<out>/results/<id>.json``."""
    import corpus_judge
    from tb_plugin_mindspore.health import engine

    with open(os.path.join(out, "meta", spec.id + ".json")) as f:
        meta = json.load(f)
    case = CASES[spec.case]
    result = {"id": spec.id, "case": spec.case, "precursor": case.rule, "mode": spec.mode, "entry": spec.entry,
              "status": meta.get("status"), "error": meta.get("error"), "cpu_s": meta.get("cpu_s"),
              "wall_s": meta.get("wall_s")}
    run_dir = os.path.join(out, meta["run_dir"])
    run = corpus_judge.load_run(run_dir, now=meta.get("finished", time.time()) + 60.0) \
        if os.path.isdir(run_dir) else None
    if run is None or meta.get("status") != "trained":
        result["status"] = "error"
        return write_result(out, result)
    findings = [f.to_json() for f in engine.check_run(run)]
    flat = [g for f in findings for g in [f] + list(f.get("follow_ons") or [])]
    result["findings"] = findings
    result["alarms"] = sorted({f["rule"] for f in flat if f["level"] in ALARM})
    result["watch"] = sorted({f["rule"] for f in flat if f["rule"] in PRECURSOR_RULES})
    result["precursor_levels"] = sorted({f["level"] for f in flat if f["rule"] in PRECURSOR_RULES})
    result["recorded"] = {t: t in run.scalars or t in run.layers for t in
                          ("debug/attention/max_logit", "diagnostic/sharpness/stability_ratio")}
    if case.rule is None:
        return write_result(out, result)
    start = spec.fault_step or 1
    p_step, p_wall = first_firing(run, {case.rule}, ("info", "warn", "error"), start)
    f_step, f_wall, by = None, None, None
    if case.failure:
        f_step, f_wall = first_firing(run, set(case.failure), ALARM, start)
        if f_step is not None:
            by = sorted({g.rule for g in _fires(corpus_judge.truncate(run, f_step, f_wall + 1.0),
                                                 set(case.failure), ALARM)})
    if case.diverges:
        d_step, d_wall = divergence_step(run)
        if d_step is not None and (f_step is None or d_step < f_step):
            f_step, f_wall, by = d_step, d_wall, ["loss at twice its best"]
    a_step, _ = first_firing(run, set(result["alarms"]) - {"monitoring_overhead"}, ALARM, start)
    result.update(precursor_step=p_step, failure_step=f_step, failure_by=by, first_alarm_step=a_step)
    if p_step is not None and f_step is not None:
        result["lead_steps"] = f_step - p_step
        result["lead_s"] = round(f_wall - p_wall, 2) if f_wall is not None and p_wall is not None else None
    return write_result(out, result)


# -------------------------------------------------------------------------------------------------------------
# Summary
def summarize(results):
    """One row per precursor rule: trials (its precursor runs), recall (watch given), the precursor runs whose
    failure came, lead times (median, range; only runs where the watch came first or with the failure count as
    lead >= 0), false watches on the controls, and the levels the rule used."""
    ok = [r for r in results if r.get("status") == "trained"]
    controls = [r for r in ok if r["precursor"] is None]
    rows = {}
    for rule in PRECURSOR_RULES:
        trials = [r for r in ok if r["precursor"] == rule]
        found = [r for r in trials if rule in r.get("watch", [])]
        failed = [r for r in trials if r.get("failure_step") is not None]
        leads = [r for r in trials if r.get("lead_steps") is not None]
        steps = [r["lead_steps"] for r in leads]
        secs = [r["lead_s"] for r in leads if r.get("lead_s") is not None]
        false = [r for r in controls if rule in r.get("watch", [])]
        levels = sorted({lv for r in trials + controls for lv in r.get("precursor_levels", [])
                         if rule in r.get("watch", [])})
        rows[rule] = {
            "trials": len(trials), "found": len(found), "recall": len(found) / len(trials) if trials else None,
            "failures": len(failed), "before_failure": sum(1 for s in steps if s > 0),
            "lead_steps_median": statistics.median(steps) if steps else None,
            "lead_steps_range": [min(steps), max(steps)] if steps else None,
            "lead_s_median": statistics.median(secs) if secs else None,
            "lead_s_range": [min(secs), max(secs)] if secs else None,
            "controls": len(controls), "false_watches": len(false), "false_watch_runs": [r["id"] for r in false],
            "levels": levels, "runs": sorted({"%s %s" % (r["entry"], r["mode"]) for r in trials}),
            "missed": [r["id"] for r in trials if rule not in r.get("watch", [])],
            "by_run": ["%s %s %s" % (r["entry"], r["mode"], r.get("lead_steps")) for r in trials],
        }
    alarm_rules = {}
    for r in controls:
        for a in r.get("alarms") or []:
            alarm_rules[a] = alarm_rules.get(a, 0) + 1
    return {"rules": rows, "controls": len(controls),
            "control_alarms": sorted(r["id"] for r in controls if r.get("alarms")),
            "control_alarm_rules": alarm_rules,
            "errors": sorted(r["id"] for r in results if r.get("status") != "trained")}


def table(summary, command):
    lines = ["| precursor | level | trials | recall (watch given) | failures that came | watch before the failure | "
             "lead time, median (range) | false watches on controls |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for rule, row in summary["rules"].items():
        lead = "-"
        if row["lead_steps_median"] is not None:
            lead = "%g steps (%g to %g)" % (row["lead_steps_median"], *row["lead_steps_range"])
            if row["lead_s_median"] is not None:
                lead += "; %.1f s (%.1f to %.1f)" % (row["lead_s_median"], *row["lead_s_range"])
        recall = "%.0f%% (%d of %d)" % (100.0 * row["recall"], row["found"], row["trials"]) if row["trials"] else "-"
        lines.append("| `%s` | %s | %d | %s | %d of %d | %d of %d | %s | %d of %d |" % (
            rule, "/".join(row["levels"]) or "info", row["trials"], recall, row["failures"], row["trials"],
            row["before_failure"], row["failures"], lead, row["false_watches"], row["controls"]))
    lines.append("")
    lines.append("Lead time by run (entry point, mode, steps): %s." % "; ".join(
        "`%s`: %s" % (rule, ", ".join(row["by_run"])) for rule, row in summary["rules"].items()))
    lines.append("")
    alarm_rules = summary.get("control_alarm_rules") or {}
    lines.append("Controls: %d healthy runs, %d with a warn or error finding%s. Command: `%s`." % (
        summary["controls"], len(summary["control_alarms"]),
        (" (%s)" % ", ".join("`%s` on %d" % kv for kv in sorted(alarm_rules.items()))) if alarm_rules else "",
        command))
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------------------------
def write_plan(out, specs, per_case, seed):
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, PLAN)
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        if (old["seed"], old["per_case"]) != (seed, per_case):
            raise SystemExit("%s holds another plan (seed %s, %s per case); use another --out" % (
                path, old["seed"], old["per_case"]))
        return [PSpec.from_json(d) for d in old["specs"]]
    with open(path + ".tmp", "w") as f:
        json.dump({"seed": seed, "per_case": per_case, "specs": [s.to_json() for s in specs]}, f, indent=1)
    os.replace(path + ".tmp", path)
    return specs


def train(out, specs, timeout=1800, log=print, batch=1):
    """Trains the specs without a meta file, ``batch`` runs per child process (one by default: a crash costs one
    run; the quick form trains its few runs in one child, importing MindSpore once; each run sets its own mode and
    seed). A run a batch left unrecorded is trained once more alone."""
    env = dict(os.environ, GLOG_v="3")
    pending = [s for s in specs if not os.path.exists(os.path.join(out, "meta", s.id + ".json"))]
    for i in range(0, len(pending), batch):
        chunk = pending[i:i + batch]
        started = time.time()
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), out] + [s.id for s in chunk],
                                  capture_output=True, text=True, timeout=timeout, env=env)
            if proc.returncode != 0:
                log("%s failed (%d): %s" % (",".join(s.id for s in chunk), proc.returncode,
                                            proc.stderr.strip()[-500:]))
        except subprocess.TimeoutExpired:
            log("%s timed out after %d s" % (",".join(s.id for s in chunk), timeout))
        for s in chunk:
            if not os.path.exists(os.path.join(out, "meta", s.id + ".json")):
                if len(chunk) > 1:
                    train(out, [s], timeout=timeout, log=log)       # once more, alone (a crash costs one run)
                    continue
                os.makedirs(os.path.join(out, "meta"), exist_ok=True)
                with open(os.path.join(out, "meta", s.id + ".json"), "w") as f:
                    json.dump({"spec": s.to_json(), "run_dir": os.path.join("runs", s.id), "status": "error",
                               "error": "the training process ended before the run was recorded"}, f)
        log("TRAINED %s %.0f s" % (",".join(s.id for s in chunk), time.time() - started))


def run_all(out, specs, command, rules_md="", timeout=1800, log=print, batch=1):
    train(out, specs, timeout=timeout, log=log, batch=batch)
    results = []
    for s in specs:
        r = judge_run(out, s)
        results.append(r)
        log("%s  %s  watch: %s  alarms: %s  precursor at %s, failure at %s (%s), lead %s steps / %s s" % (
            s.id, r.get("status"), ",".join(r.get("watch") or []) or "-", ",".join(r.get("alarms") or []) or "-",
            r.get("precursor_step"), r.get("failure_step"), ",".join(r.get("failure_by") or []),
            r.get("lead_steps"), r.get("lead_s")))
    summary = summarize(results)
    text = table(summary, command)
    log(text)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    if rules_md:
        write_between_markers(rules_md, "precursor-table", text)
    return summary


def main(argv):
    out, ids = argv[0], set(argv[1:])
    with open(os.path.join(out, PLAN)) as f:
        specs = [PSpec.from_json(d) for d in json.load(f)["specs"]]
    for spec in specs:
        if spec.id in ids:
            meta = train_run(spec, out)
            print("TRAINED %s %s" % (spec.id, meta["status"]), flush=True)
            # What outlives a run (MindSpore's modules, loaded at the first) is frozen: MindSpore collects garbage
            # fully before each compile, and would walk it again for every graph of the next runs.
            gc.collect()
            gc.freeze()


if __name__ == "__main__":
    main(sys.argv[1:])
