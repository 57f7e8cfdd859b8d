"""The likely class of a difference between a run and its reference, with the evidence that points to it.

From the first step where a quantity parts, in causal order of a training step (the learning rate it applies; the
forward pass and the loss; the backward pass and the gradients; the optimizer and the update; the weights; the
evaluation):

* ``lr_schedule``: the applied learning rate parts first (a warm-up one step ahead or behind is said as such, a
  constant factor too);
* at the first common step the loss parts: ``init`` (a layer's weight norm differs by more than its updates so far
  can explain), ``data`` (the run's loss at a step is the reference's at a neighbouring step: batch order; or the
  losses differ without sign while evaluation agrees: augmentation), ``dropout`` (the loss of one run is higher at
  almost every step while evaluation agrees: a train-only stochastic layer left on), ``forward`` (the rest: the
  forward computation itself);
* ``backward``: gradients part while the loss agrees;
* optimizer (the update ratio parts at equal gradients): ``weight_decay`` (only 1-D parameters: biases, norm scales
  and shifts, part while the weight matrices agree), ``bias_correction`` (every layer's ratio of update ratios
  follows Adam's bias-correction factor sqrt(1 - beta2^t) / (1 - beta1^t) or its inverse), ``adam_epsilon`` (the
  layers with the smallest gradients part the most: epsilon placed inside / outside the square root, or scaled by
  the bias correction as in MindSpore's ``nn.Adam``, or another value), ``optimizer`` (the rest);
* ``batchnorm_momentum``: only the evaluation loss parts, in a model with BatchNorm (its moving statistics are used
  only in evaluation; MindSpore's ``momentum=0.9`` is PyTorch's ``momentum=0.1``); ``eval_mode`` without BatchNorm;
* ``drift``: a quantity that leaves its tolerance gradually, late in training, with no earlier parting: float noise
  growing, not a porting difference.

Each answer: ``{"class", "family", "title", "confidence": "high" | "medium" | "low", "evidence": [str],
"advice": str, "layers": [str], "side": "run" | "reference" | null}``. Pure numpy.
"""

import re

import numpy as np

__all__ = ["CLASSES", "likely_class", "is_one_dimensional", "bias_correction_factor"]

CLASSES = {
    "lr_schedule": ("lr_schedule", "learning-rate schedule: the applied learning rate differs",
                    "Compare the schedules step by step: MindSpore's LearningRateSchedule gets the 0-based global "
                    "step, PyTorch's LambdaLR the number of scheduler steps taken; a warm-up off by one shows here."),
    "init": ("init_or_forward", "initialisation: the weights differ before training",
             "Copy the reference's initial weights (a checkpoint converted with the name mapping) or check the "
             "initializer and its fan mode of the layers named."),
    "forward": ("init_or_forward", "forward pass: the first loss differs with the same weights",
                "Feed one batch to both models with the same weights and compare layer outputs (an activation, a "
                "scale, an epsilon of a normalisation, a missing or extra layer)."),
    "data": ("data", "data: batch order or augmentation",
             "Feed both runs the same batches in the same order (no shuffle, or the same sampler seed) and turn "
             "random augmentation off for the check."),
    "dropout": ("dropout", "dropout left on",
                "Turn dropout off on both sides for the check (p=0 or evaluation mode for those layers), and random "
                "augmentation: random masks never agree across frameworks."),
    "backward": ("backward", "backward pass: gradients differ at equal loss",
                 "Check custom gradients, stop-gradient / detach, loss scaling and the loss reduction (sum or mean) "
                 "around the layers named."),
    "weight_decay": ("optimizer", "optimizer: weight decay on biases or norms",
                     "Exclude (or include) biases and normalisation parameters from weight decay on both sides "
                     "alike: parameter groups in PyTorch, group settings or a decay filter in MindSpore."),
    "bias_correction": ("optimizer", "optimizer: Adam bias correction",
                        "MindSpore's AdamWeightDecay does no bias correction; PyTorch's Adam / AdamW do. Use "
                        "nn.Adam or nn.AdamWeightDecay consistently with the reference, or write the correction."),
    "adam_epsilon": ("optimizer", "optimizer: Adam epsilon (placement or value)",
                     "Check eps and where it is added: PyTorch adds it to sqrt(v_hat); MindSpore's nn.Adam adds it "
                     "to sqrt(v) before the bias correction (a larger effective epsilon early on); TF-style code "
                     "adds it inside the square root."),
    "optimizer": ("optimizer", "optimizer: equal gradients, different updates",
                  "Compare the optimizer hyperparameters (betas / momentum, epsilon, weight decay, its kind)."),
    "batchnorm_momentum": ("batchnorm", "BatchNorm momentum convention",
                           "MindSpore's BatchNorm momentum is the weight of the old moving statistics, PyTorch's "
                           "the weight of the new batch: PyTorch's momentum=0.1 is MindSpore's momentum=0.9."),
    "eval_mode": ("eval", "evaluation differs while training agrees",
                  "Check what changes between training and evaluation: dropout, normalisation statistics, the "
                  "evaluation data pipeline."),
    "drift": ("drift", "numerical drift: float noise growing, no single cause",
              "Expected over long runs in two frameworks; compare a shorter window, or give a noise pair "
              "(--noise) to set the tolerance from the reference's own repeat."),
    "unknown": ("unknown", "a difference whose cause the recorded series cannot tell",
                "Record every tier more often (collect_freq, debug_freq, diagnostic_freq) on both sides."),
}

_ONE_D = re.compile(r"(^|\.)(bias|beta|gamma)$|(norm|ln|bn|layernorm|batchnorm)[^.]*\.weight$", re.I)
_BATCHNORM = re.compile(r"(^|\.|_)(bn\d*|batch_?norm\d*|batchnorm\d*d?)(\.|_|$)|running_mean|moving_mean", re.I)


def _answer(name, evidence, confidence, layers=(), side=None):
    family, title, advice = CLASSES[name]
    return {"class": name, "family": family, "title": title, "confidence": confidence,
            "evidence": [e for e in evidence if e], "advice": advice, "layers": list(layers), "side": side}


def _fmt(x):
    return "%.3g" % x


def is_one_dimensional(pair_or_name, shapes=None):
    """Whether a layer is a 1-D parameter (a bias, a norm scale or shift): by its recorded shape, else its name."""
    names = list(pair_or_name.reference) + list(pair_or_name.run) if hasattr(pair_or_name, "run") else \
        [pair_or_name]
    for n in names:
        if shapes and n in shapes:
            return len(shapes[n]) == 1
    return any(_ONE_D.search(n) for n in names)


def bias_correction_factor(t, beta1=0.9, beta2=0.999):
    """Adam's bias correction of the step size at step ``t``: sqrt(1 - beta2^t) / (1 - beta1^t)."""
    t = np.asarray(t, dtype=np.float64)
    return np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)


def _betas(run, reference):
    for r in (reference, run):
        groups = (r.info or {}).get("optimizer_groups")
        if isinstance(groups, list) and groups and isinstance(groups[0], dict):
            betas = groups[0].get("betas")
            if isinstance(betas, list) and len(betas) == 2:
                return float(betas[0]), float(betas[1])
    return 0.9, 0.999


# ---------------------------------------------------------------------------------------------------------------
def likely_class(partings, run, reference, order):
    """The likely class (see the module doc) from ``partings`` ({quantity: engine.Parting}) and the ``order`` of
    first partings (earliest first)."""
    t0 = order[0]["step"]
    at_t0 = {e["quantity"] for e in order if e["step"] == t0}
    lr = partings.get("learning_rate")
    if lr is not None and lr.parted and lr.first_step <= t0:
        return _lr_schedule(lr)
    loss = partings.get("loss")
    if loss is not None and t0 < int(loss.track.steps[0]):
        # Something parts before the first training step (an evaluation of the untrained models): the models
        # differ before training.
        wn = partings.get("layer_weight_norm")
        found = _init(partings, int(wn.track.steps[0])) if wn is not None else None
        if found is not None:
            found["evidence"].insert(0, "%s parts at step %d, before training" % (order[0]["quantity"], t0))
            return found
        return _answer("forward", ["%s parts at step %d, before training, while the weights agree: the models "
                                   "compute differently" % (order[0]["quantity"], t0)], "medium",
                       _first_layers(partings.get("layer_grad_norm")))
    found = _init(partings, t0)
    if found is not None:
        return found
    drift = _drift(partings, order)
    if drift is not None:
        return drift
    # Several quantities part at one recorded step: the one whose difference is far larger than what feeds it is
    # where it starts (Adam or SGD move each weight in proportion to its gradient: a gradient 2% off cannot make an
    # update 70% off). Otherwise the causal order of a step: forward (the loss), backward (gradients at an equal
    # loss), the optimizer (updates at equal gradients), the weights, the evaluation.
    grad = _largest(partings, ("grad_norm", "layer_grad_norm"), t0)
    if "update_ratio" in at_t0 and _median_at(partings.get("update_ratio"), t0) > 5 * grad:
        return _optimizer(partings, run, reference, t0)
    if "loss" in at_t0:
        return _forward_side(partings, t0)
    if at_t0 & {"grad_norm", "layer_grad_norm"}:
        return _backward(partings, t0)
    if at_t0 & {"weight_norm", "layer_weight_norm"} and "update_ratio" not in at_t0:
        return _weights_first(partings, run, reference, t0)
    if "update_ratio" in at_t0:
        return _optimizer(partings, run, reference, t0)
    if at_t0 == {"eval_loss"}:
        return _eval_only(partings, t0)
    return _answer("unknown", [], "low")


def _largest(partings, quantities, step):
    """The largest relative difference of these quantities at ``step`` (0 where not recorded then)."""
    best = 0.0
    for q in quantities:
        p = partings.get(q)
        r = p.at(step) if p is not None else None
        if r is not None:
            row = p.diff[r][np.isfinite(p.diff[r])]
            if row.size:
                best = max(best, float(row.max()))
    return best


def _median_at(p, step):
    r = p.at(step) if p is not None else None
    if r is None:
        return 0.0
    row = p.diff[r][np.isfinite(p.diff[r])]
    return float(np.median(row)) if row.size else 0.0


def _weights_first(partings, run, reference, t0):
    """The weights part before anything that feeds them: the optimizer (its update ratios within tolerance still)."""
    wn = partings.get("layer_weight_norm")
    shapes = _shapes(run, reference)
    evidence = ["the weights part at step %d while the loss and the gradients agree" % t0]
    if wn is not None and wn.parted:
        found = _one_d_only(wn, shapes, t0, evidence, "weight norms", partings)
        if found is not None:
            return found
    ur = partings.get("update_ratio")
    if ur is not None and ur.parted and ur.first_step <= t0 + 2:
        # The update itself is seen a step later (a loop records its first update ratio at step 2): judge it there.
        found = _optimizer(partings, run, reference, ur.first_step)
        found["evidence"].insert(0, "the weights part at step %d (%s: a small norm shows a change of the update "
                                    "first), the update ratios at step %d"
                                 % (t0, ", ".join(_first_layers(wn)[:3]), ur.first_step))
        return found
    evidence.append("their update ratios are within tolerance so far (the weights add up small differences)"
                    if ur is not None else
                    "record update ratios (debug=['update_ratio']) on both sides to tell which optimizer setting")
    return _answer("optimizer", evidence, "low", _first_layers(wn))


def _first_layers(p, limit=10):
    if p is None or not p.parted:
        return []
    return [p.track.columns[c] for c in p.first_columns(limit)]


# -- learning rate -------------------------------------------------------------------------------------------------
def _lr_schedule(p):
    track = p.track
    col = p.first_columns(1)[0]
    rows = np.flatnonzero(p.diff[:, col] > p.tol[:, col])
    steps = track.steps
    a, b = track.run[:, col], track.reference[:, col]
    r0 = int(p.first_rows[col])
    evidence = ["applied learning rate at step %d: %s in the run, %s in the reference%s"
                % (steps[r0], _fmt(a[r0]), _fmt(b[r0]),
                   "" if len(track.columns) == 1 else " (parameter group %s)" % track.columns[col])]
    check = rows[:20]
    if check.size and steps.size > 1:
        matches = {}
        for shift in (1, -1):
            other = np.interp(steps[check] + shift, steps, b)
            ok = np.abs(a[check] - other) <= np.maximum(p.tol[check, col], 1e-6) * np.abs(other)
            matches[shift] = float(np.mean(ok))
        best = max(matches, key=matches.get)
        if matches[best] >= 0.8:
            evidence.append("the run's learning rate at each of these steps is the reference's at the %s step: "
                            "the schedule is one step %s (a warm-up off by one)"
                            % ("next" if best == 1 else "previous", "ahead" if best == 1 else "behind"))
            return _answer("lr_schedule", evidence, "high", side="run")
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = a[check] / b[check]
        ratio = ratio[np.isfinite(ratio)]
        if ratio.size and np.ptp(ratio) <= 1e-3 * np.abs(np.median(ratio)):
            evidence.append("the run's learning rate is %s times the reference's at every step that differs"
                            % _fmt(np.median(ratio)))
    evidence.append("the learning rate parts before (or with) every other quantity")
    return _answer("lr_schedule", evidence, "high")


# -- drift ---------------------------------------------------------------------------------------------------------
def _drift(partings, order):
    """A first parting that creeps up (no jump of 10x over the preceding common steps) late in the run."""
    first = order[0]
    p = partings[first["quantity"]]
    col = p.first_columns(1)[0]
    r0 = int(p.first_rows[col])
    n = len(p.track)
    if r0 < 10 or r0 < 0.2 * n:
        return None
    before = p.diff[max(0, r0 - 10):r0, col]
    before = before[np.isfinite(before)]
    head = p.diff[:3, col]
    head = head[np.isfinite(head)]
    if not before.size or not head.size:
        return None
    level = float(np.median(before))
    if not level > 0 or p.diff[r0, col] > 10 * level or level < 10 * max(float(np.max(head)), 1e-12):
        return None
    return _answer("drift", [
        "%s leaves its tolerance at step %d after growing steadily from %s at the first steps to %s (no jump)"
        % (first["quantity"], first["step"], _fmt(np.max(head)), _fmt(p.diff[r0, col])),
        "nothing parted earlier: float rounding that grows with training, not one porting difference"], "medium")


# -- forward side: init, data, dropout, forward ----------------------------------------------------------------------
def _updates_so_far(partings, step, col_name):
    """Sum of the reference's update ratios of a layer up to ``step`` (a bound of its relative weight change), or
    None when not recorded."""
    ur = partings.get("update_ratio")
    if ur is None or col_name not in ur.track.columns:
        return None
    j = ur.track.columns.index(col_name)
    rows = ur.track.steps <= step
    if not rows.any():          # the first update ratios come later (a loop's at step 2): their size stands in
        rows = ur.track.steps == ur.track.steps[0]
    vals = np.maximum(np.abs(ur.track.reference[rows, j]), np.abs(ur.track.run[rows, j]))
    if not vals.size:
        return None
    if not np.all(np.isfinite(vals)):
        return np.inf        # weights that were 0 (a norm's shift): their norm is all update, nothing to tell
    # Steps between recorded ones count too: scale by the steps covered.
    covered = max(1, int(step) - int(ur.track.steps[0]) + 1)
    return float(np.sum(vals)) * covered / vals.size


def _init(partings, t0):
    """``init`` when, at its first common step (no later than ``t0``), a layer's weight norm differs by more than
    its updates so far can explain (a normalisation after it may hide that from the loss); else None."""
    wn = partings.get("layer_weight_norm")
    if wn is not None and (not wn.parted or int(wn.track.steps[0]) > t0 or wn.first_step != int(wn.track.steps[0])):
        return None
    if wn is not None and partings.get("update_ratio") is None:
        return None          # without update ratios a weight norm cannot be told from the updates that moved it
    if wn is None:
        g = partings.get("weight_norm")
        if g is not None and g.parted and g.first_step == int(g.track.steps[0]) and g.diff[0, 0] > 1e-2:
            return _answer("init", ["the global weight norm differs by %s at the first common step %d"
                                    % (_fmt(g.diff[0, 0]), g.track.steps[0])], "medium")
        return None
    step = int(wn.track.steps[0])
    d = wn.diff[0]
    suspects = []
    for j, name in enumerate(wn.track.columns):
        bound = _updates_so_far(partings, step, name)
        bound = 1e-2 * max(1, step) if bound is None else bound
        if np.isfinite(d[j]) and d[j] > max(3 * bound, 10 * wn.tol[0, j]):
            suspects.append((d[j], name, bound))
    if not suspects:
        return None
    suspects.sort(reverse=True)
    top = suspects[0]
    evidence = ["at step %d the weight norm of %s differs by %s, more than its updates so far can move it (%s): "
                "its initial weights differ" % (step, top[1], _fmt(top[0]), _fmt(top[2]))]
    if len(suspects) > 1:
        evidence.append("%d layers differ so: %s" % (len(suspects), ", ".join(s[1] for s in suspects[:5])))
    return _answer("init", evidence, "high", [s[1] for s in suspects])


def _permutation(loss, start, rows=20, reach=3):
    """Batches in another order: the fraction of ``rows`` steps from row ``start`` that pair up with a neighbouring
    step (within ``reach``) both ways, each one's loss the other's far better than its own (a swap of two batches
    matches twice; a perturbation of the same batches, dropout, matches now and then and never both ways), and one
    such pair ``(step, other step)``."""
    a, b = loss.track.run[:, 0], loss.track.reference[:, 0]
    stop = min(start + rows, a.size)
    best = {}
    for i in range(start, stop):
        same = abs(a[i] - b[i]) / max(abs(b[i]), 1e-12)
        found = None
        for j in range(max(0, i - reach), min(a.size, i + reach + 1)):
            if j != i:
                d = abs(a[i] - b[j]) / max(abs(b[j]), 1e-12)
                if found is None or d < found[1]:
                    found = (j, d)
        if found is not None and found[1] < same / 3 and found[1] < 0.05:
            best[i] = found[0]
    pairs = [(i, j) for i, j in best.items() if best.get(j) == i]
    n = stop - start
    if not pairs or not n:
        return 0.0, None
    i, j = pairs[0]
    return len(pairs) / n, (int(loss.track.steps[i]), int(loss.track.steps[j]))


def _eval_agrees(partings, t0):
    """``(True/False/None, evidence)``: whether the model's function agrees while the training loss does not. Best
    is an evaluation of the same weights the step ``t0`` trained from (at step ``t0 - 1``, e.g. before training):
    it agrees within its tolerance or not. Else the first evaluation after ``t0``: it agrees when 3x closer than the
    training loss up to there. None: no eval loss in both."""
    ev, loss = partings.get("eval_loss"), partings.get("loss")
    if ev is None or loss is None:
        return None, ""
    before = ev.at(t0 - 1)
    if before is not None:
        d, tol = float(ev.diff[before, 0]), float(ev.tol[before, 0])
        return d <= tol, ("evaluated with the weights step %d trained from, the two models %s (eval loss "
                          "difference %s, tolerance %s)" % (t0, "agree" if d <= tol else "differ", _fmt(d), _fmt(tol)))
    rows = np.flatnonzero(ev.track.steps >= t0)
    if not rows.size:
        return None, ""
    r = rows[0]
    step = int(ev.track.steps[r])
    train = loss.diff[loss.track.steps <= step, 0]
    train = train[np.isfinite(train)]
    if not train.size:
        return None, ""
    d_eval, d_train = float(ev.diff[r, 0]), float(np.median(train))
    agrees = d_eval < d_train / 3
    return agrees, ("evaluation loss at step %d differs by %s against %s for the training loss up to there"
                    % (step, _fmt(d_eval), _fmt(d_train)))


def _forward_side(partings, t0):
    loss = partings["loss"]
    r0 = loss.at(t0)
    first = t0 == int(loss.track.steps[0])
    evidence = ["the loss differs from %s %d (%s, tolerance %s) while the weights agree%s"
                % ("the first common step" if first else "step", t0, _fmt(loss.diff[r0, 0]), _fmt(loss.tol[r0, 0]),
                   "" if first else " and nothing parted before it")]
    grads = _first_layers(partings.get("layer_grad_norm"))
    n = min(r0 + 20, len(loss.track))
    a, b = loss.track.run[r0:n, 0], loss.track.reference[r0:n, 0]
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    higher = float(np.mean(a > b)) if a.size else 0.5
    consistent = higher >= 0.8 or higher <= 0.2
    agrees, said = _eval_agrees(partings, t0)
    evidence.append(said)
    # How much the loss moves from one batch to the next, against how far the two runs are apart.
    rough_a, rough_b = _roughness(a), _roughness(b)
    apart = float(np.median(np.abs(a - b) / np.maximum(np.abs(b), 1e-12))) if a.size else 0.0
    if consistent:
        side = "run" if higher >= 0.8 else "reference"
        noisier = rough_a > 1.2 * rough_b if side == "run" else rough_b > 1.2 * rough_a
        if agrees or (agrees is None and noisier):
            evidence.append("the %s's training loss is higher at %d%% of the %d steps from there%s, as a train-only "
                            "random layer makes it" % (side, round(100 * max(higher, 1 - higher)), a.size,
                                                       " and moves more from step to step" if noisier else ""))
            return _answer("dropout", evidence, "high" if agrees else "medium", side=side)
        evidence.append("the %s's loss is higher at %d%% of the %d steps from there: a systematic difference"
                        % (side, round(100 * max(higher, 1 - higher)), a.size))
        if agrees is False:
            evidence.append("evaluation differs as much as training: the forward computation itself differs")
        return _answer("forward", evidence, "medium", grads)
    g_higher, g_steps = _grad_sign(partings, t0)
    if agrees is not False and g_higher is not None and (g_higher >= 0.75 or g_higher <= 0.25):
        evidence.append("the loss differs either way from step to step, but the gradient norm is %s in the run at "
                        "%d%% of %d steps: a train-only random layer in one of the runs (dropout zeroes and "
                        "rescales what flows through it) changes the gradients' size systematically"
                        % ("lower" if g_higher <= 0.25 else "higher", round(100 * max(g_higher, 1 - g_higher)),
                           g_steps))
        return _answer("dropout", evidence, "medium" if agrees is None else "high")
    frac, example = _permutation(loss, r0)
    if frac >= 0.3:
        evidence.append("the run's loss at step %d is the reference's at step %d and the other way round (%d%% of "
                        "the steps from there pair up so with a neighbouring step): the batches come in another "
                        "order" % (example[0], example[1], round(100 * frac)))
        return _answer("data", evidence, "high")
    if agrees and "weights step" in said:
        evidence.append("the training loss differs at random from step to step (higher at %d%% of %d steps) while "
                        "the same weights evaluate alike: something random acts in training only, a dropout layer "
                        "left on (or a random augmentation of the inputs)" % (round(100 * higher), a.size))
        return _answer("dropout", evidence, "medium")
    if agrees is not False and apart < 0.5 * rough_b:
        evidence.append("the difference changes sign from step to step and is smaller than the loss's own change "
                        "from one batch to the next (%s against %s): the same batches, perturbed in training only"
                        % (_fmt(apart), _fmt(rough_b)))
        return _answer("dropout", evidence, "medium" if agrees else "low")
    if agrees is not False and apart <= 3 * max(rough_b, 1e-12):
        evidence.append("the difference changes sign from step to step (the run is higher at %d%% of %d steps) and "
                        "is the size of the loss's own change from one batch to the next (%s against %s): other "
                        "samples or augmentations" % (round(100 * higher), a.size, _fmt(apart), _fmt(rough_b)))
        return _answer("data", evidence, "medium" if agrees else "low")
    evidence.append("the difference changes sign from step to step")
    return _answer("forward", evidence, "low", grads)


def _grad_sign(partings, t0, rows=40):
    """Fraction of up to ``rows`` steps from ``t0`` where the run's global gradient norm is above the reference's,
    and how many steps that is (``(None, 0)`` when it is not recorded)."""
    g = partings.get("grad_norm")
    r = g.at(t0) if g is not None else None
    if r is None:
        return None, 0
    a, b = g.track.run[r:r + rows, 0], g.track.reference[r:r + rows, 0]
    ok = np.isfinite(a) & np.isfinite(b) & (a != b)
    if ok.sum() < 8:
        return None, 0
    return float(np.mean(a[ok] > b[ok])), int(ok.sum())


def _roughness(values):
    """The median relative change of a series from one step to the next."""
    if values.size < 3:
        return 0.0
    return float(np.median(np.abs(np.diff(values)) / np.maximum(np.abs(values[1:]), 1e-12)))


# -- backward --------------------------------------------------------------------------------------------------------
def _backward(partings, t0):
    loss = partings.get("loss")
    lg = partings.get("layer_grad_norm")
    layers = _first_layers(lg) if lg is not None and lg.parted and lg.first_step == t0 else []
    evidence = []
    if loss is not None:
        r = loss.at(t0)
        if r is not None:
            evidence.append("at step %d the loss agrees (difference %s, tolerance %s)"
                            % (t0, _fmt(loss.diff[r, 0]), _fmt(loss.tol[r, 0])))
    if layers:
        r = lg.at(t0)
        j = lg.track.columns.index(layers[0])
        evidence.append("the gradient norm of %s differs by %s (run %s, reference %s)"
                        % (layers[0], _fmt(lg.diff[r, j]), _fmt(lg.track.run[r, j]), _fmt(lg.track.reference[r, j])))
        untouched = len(lg.track.columns) - int(np.sum(lg.first_rows >= 0))
        if untouched:
            evidence.append("%d other layers' gradients still agree there" % untouched)
    else:
        g = partings.get("grad_norm")
        if g is not None and g.at(t0) is not None:
            evidence.append("the global gradient norm differs by %s" % _fmt(g.diff[g.at(t0), 0]))
    confidence = "high" if evidence and evidence[0].startswith("at step") else "medium"
    return _answer("backward", evidence, confidence, layers)


# -- optimizer -------------------------------------------------------------------------------------------------------
def _optimizer(partings, run, reference, t0):
    ur = partings["update_ratio"]
    lg = partings.get("layer_grad_norm")
    shapes = _shapes(run, reference)
    evidence = []
    if lg is not None and lg.at(t0) is not None:
        r = lg.at(t0)
        if not np.any((lg.first_rows >= 0) & (lg.first_rows <= r)):
            compared = np.isfinite(lg.tol[r]) & np.isfinite(lg.diff[r])
            evidence.append("at step %d the gradients agree in every layer (largest difference %s)"
                            % (t0, _fmt(np.max(lg.diff[r][compared]) if compared.any() else 0.0)))
    found = _weight_decay(ur, shapes, t0, evidence) or _bias_correction(ur, run, reference, evidence) or \
        _adam_epsilon(ur, lg, shapes, t0, evidence)
    if found is not None:
        return found
    layers = _first_layers(ur)
    r0 = ur.at(t0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = ur.track.run[r0] / ur.track.reference[r0]
    ratio = ratio[np.isfinite(ratio)]
    if ratio.size:
        evidence.append("the run's update ratios are %s-%s times the reference's at step %d"
                        % (_fmt(np.min(ratio)), _fmt(np.max(ratio)), t0))
    return _answer("optimizer", evidence, "medium", layers)


def _weight_decay(ur, shapes, t0, evidence):
    return _one_d_only(ur, shapes, t0, evidence, "update ratios")


def _decay_shaped(wn, partings, r0, one_d, early):
    """Whether the weight norms' differences at row ``r0``, each measured in its layer's update size (the
    reference's update ratio there), are far larger for the parted 1-D parameters than for every weight matrix: a
    change to the size of every update (bias correction, a learning-rate factor) shows first in the small norms of
    biases too, but in proportion to their updates."""
    ur = partings.get("update_ratio")
    step = int(wn.track.steps[r0])
    r = ur.at(step) if ur is not None else None
    if r is None:
        return False
    scaled = np.full(len(wn.track.columns), np.nan)
    for j, col in enumerate(wn.track.columns):
        if col in ur.track.columns:
            u = ur.track.reference[r, ur.track.columns.index(col)]
            if np.isfinite(u) and u > 0:
                scaled[j] = wn.diff[r0, j] / u
    matrices = scaled[~one_d & np.isfinite(scaled)]
    biases = scaled[early & np.isfinite(scaled)]
    return bool(biases.size and matrices.size and np.max(matrices) < 0.2 * np.min(biases))


def _one_d_only(p, shapes, t0, evidence, what, partings=None):
    """``weight_decay`` when only 1-D parameters (biases, norm scales and shifts) part early in ``p`` (update
    ratios or weight norms) while every weight matrix agrees; else None."""
    pairs = p.track.pairs or []
    one_d = np.array([is_one_dimensional(x, shapes) for x in pairs]) if pairs else \
        np.array([is_one_dimensional(c) for c in p.track.columns])
    parted = p.first_rows >= 0
    r0 = p.at(t0)
    if r0 is None or r0 > 2:      # weight decay acts from the first update on
        return None
    early = parted & (p.first_rows <= r0 + 2)
    if not early.any() or not one_d.any() or one_d.all():
        return None
    if not np.all(one_d[early]) or np.any(parted[~one_d] & (p.first_rows[~one_d] <= r0 + 5)):
        return None
    if what == "weight norms" and not _decay_shaped(p, partings, r0, one_d, early):
        return None
    layers = _first_layers(p)
    j = p.track.columns.index(layers[0])
    if what == "weight norms":
        side = "run" if p.track.run[r0, j] < p.track.reference[r0, j] else "reference"
        tail = "the %s's are smaller: weight decay shrinks them there" % side
    else:
        side = "run" if p.track.run[r0, j] > p.track.reference[r0, j] else "reference"
        tail = "the %s's updates of them are larger: weight decay reaches them there" % side
    return _answer("weight_decay", evidence + [
        "from step %d the %s of %d 1-D parameters (biases, norm scales and shifts: %s) differ while every weight "
        "matrix's agree" % (t0, what, int(early.sum()), ", ".join(layers[:4])), tail], "high", layers, side)


def _shapes(run, reference):
    shapes = {}
    for r in (run, reference):
        s = (r.info or {}).get("layer_shapes")
        if isinstance(s, dict):
            shapes.update({k: v for k, v in s.items() if isinstance(v, list)})
    return shapes


def _bias_correction(ur, run, reference, evidence):
    beta1, beta2 = _betas(run, reference)
    r0 = int(ur.first_rows[ur.first_rows >= 0].min())
    rows = np.arange(r0, min(r0 + 5, len(ur.track)))      # before the weights drift apart
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = ur.track.run[rows] / ur.track.reference[rows]
        logs = np.log(ratio)
    good = np.isfinite(logs)
    if good.sum() < 3:
        return None
    med = np.array([np.median(row[g]) if g.any() else np.nan for row, g in zip(logs, good)])
    spread = np.array([np.subtract(*np.percentile(row[g], [75, 25])) if g.sum() > 1 else 0.0
                       for row, g in zip(logs, good)])
    expected = np.log(bias_correction_factor(ur.track.steps[rows], beta1, beta2))
    ok = np.isfinite(med)
    # Only early in training does the correction differ from 1, and then it moves every layer's update.
    if not np.any(np.abs(expected[ok]) > np.log(1.25)) or np.mean(ur.first_rows[ur.first_rows >= 0] <= r0 + 1) * \
            np.sum(ur.first_rows >= 0) < 0.5 * len(ur.track.columns):
        return None
    if ok.sum() < 2 or np.median(spread[ok]) > np.log(1.3):
        return None
    for sign, side in ((-1, "run"), (1, "reference")):
        if np.mean(np.abs(med[ok] - sign * expected[ok]) < np.log(1.25)) >= 0.8:
            t = int(ur.track.steps[rows[0]])
            return _answer("bias_correction", evidence + [
                "every layer's update is %s times the reference's at step %d, and the ratio follows Adam's bias "
                "correction sqrt(1 - %g^t) / (1 - %g^t)%s over the next steps (%s at t=%d)"
                % (_fmt(np.exp(med[0])), t, beta2, beta1, " inverted" if sign < 0 else "",
                   _fmt(np.exp(sign * expected[0])), t),
                "the %s applies no bias correction" % side], "high", side=side)
    return None


def _adam_epsilon(ur, lg, shapes, t0, evidence):
    if lg is None or len(ur.track.columns) < 3:
        return None
    r0 = ur.at(t0)
    rg = lg.at(t0)
    if r0 is None or rg is None:
        return None
    cols = [j for j, c in enumerate(ur.track.columns) if c in lg.track.columns]
    if len(cols) < 3:
        return None
    sizes = []
    for j in cols:
        pair = ur.track.pairs[j] if ur.track.pairs else None
        shape = shapes.get(pair.reference[0]) if pair is not None else None
        sizes.append(float(np.prod(shape)) if shape else 1.0)
    gnorm = np.array([lg.track.reference[rg, lg.track.columns.index(ur.track.columns[j])] for j in cols])
    rms = gnorm / np.sqrt(np.array(sizes))
    d = ur.diff[r0, cols]
    later = ur.diff[min(r0 + 20, len(ur.track) - 1), cols]
    fading = bool(np.nanmedian(later) < np.nanmedian(d) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = ur.track.run[r0, cols] / ur.track.reference[r0, cols]
    one_way = bool(np.all(ratio[np.isfinite(ratio)] < 1) or np.all(ratio[np.isfinite(ratio)] > 1))
    ok = np.isfinite(d) & np.isfinite(rms) & (rms > 0) & (d > 0)
    if ok.sum() < 3:
        return None
    if not all(s > 1 for s in sizes):          # no shapes recorded: the per-element gradient size is unknown
        if not (fading and one_way):
            return None
        return _answer("adam_epsilon", evidence + [
            "at step %d every layer's update is %s-%s times the reference's, all one way, and the difference fades "
            "over the next steps, as an epsilon scaled by the bias correction does (record the layer shapes to "
            "tell more)" % (t0, _fmt(np.nanmin(ratio)), _fmt(np.nanmax(ratio)))], "medium", _first_layers(ur))
    rank_d = np.argsort(np.argsort(np.log(d[ok])))
    rank_g = np.argsort(np.argsort(np.log(rms[ok])))
    rho = float(np.corrcoef(rank_d, rank_g)[0, 1])
    if not rho <= -0.5:
        return None
    small = ur.track.columns[cols[int(np.flatnonzero(ok)[np.argmin(rms[ok])])]]
    return _answer("adam_epsilon", evidence + [
        "at step %d every layer's update differs, the more the smaller its gradients (rank correlation %s between "
        "the difference and the gradient's size per element; largest at %s)" % (t0, _fmt(rho), small),
        "the difference fades over the next steps, as an epsilon scaled by the bias correction does" if fading
        else ""], "high" if fading else "medium", _first_layers(ur))


# -- evaluation only -------------------------------------------------------------------------------------------------
def _eval_only(partings, t0):
    ev = partings["eval_loss"]
    r = ev.at(t0)
    evidence = ["the evaluation loss parts at step %d (difference %s) while the training loss, gradients and "
                "update ratios agree up to there" % (t0, _fmt(ev.diff[r, 0]))]
    names = []
    for q in ("layer_weight_norm", "layer_grad_norm", "update_ratio"):
        p = partings.get(q)
        if p is not None:
            for col, pair in zip(p.track.columns, p.track.pairs or [None] * len(p.track.columns)):
                names.append(col)
                if pair is not None:
                    names.extend(pair.run)
    bn = sorted({n.rsplit(".", 1)[0] for n in names if _BATCHNORM.search(n)})
    if bn:
        evidence.append("the model has BatchNorm layers (%s), whose moving statistics only evaluation uses"
                        % ", ".join(bn[:4]))
        return _answer("batchnorm_momentum", evidence, "high", bn[:10])
    return _answer("eval_mode", evidence, "medium")
