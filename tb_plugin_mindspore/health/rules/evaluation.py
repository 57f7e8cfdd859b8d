"""Evaluation against training: ``overfitting`` and ``train_eval_gap``."""

import numpy as np

from .base import WARN, Finding, rule
from .common import finite, fmt


def _train_fell(run, best_step, last_step):
    """``(t0, t1)``: train loss around the best evaluation and at the end of the evaluated range; ``None`` when
    there is no train loss, ``False`` when it cannot be judged or did not fall (then it is not overfitting)."""
    pts = finite(run.get("loss"))
    if pts is None:
        return None
    if pts.size < 2:
        return False
    tx, tsteps = pts.x, pts.series.steps[pts.idx]
    # The last points up to the best evaluation, else the first points after it.
    at_best = tx[tsteps <= best_step]
    if at_best.size == 0:
        at_best = tx[:1]
    later = tx[(tsteps > best_step) & (tsteps <= last_step)]
    if later.size == 0:
        return False
    k = max(1, min(at_best.size, later.size, 3))
    t0, t1 = float(np.median(at_best[-k:])), float(np.median(later[-k:]))
    return (t0, t1) if t1 < t0 else False    # train loss rising too: divergence (other rules speak)


# An eval loss within 5% of the untrained model's loss has not beaten it: the untrained loss is estimated from the
# first train-loss points or interval (a single batch, or steps already into training), not measured on the eval set.
UNTRAINED_MARGIN = 0.95


@rule("overfitting", WARN,
      "Prechelt, 'Early Stopping - But When?' (1998): generalization loss GL = 100 (E_va / E_opt - 1), stop when "
      "GL > 5; a patience of several evaluations as in Keras EarlyStopping",
      "Eval loss rising over several evaluations (not one point) while the train loss falls.",
      gl_percent=5.0, patience=3, min_points=4)
def overfitting(run, cfg):
    pts = finite(run.get("eval_loss"), cfg["min_points"])
    if pts is None:
        return []
    x = pts.x
    best = int(np.argmin(x))
    after = x[best + 1:]
    if after.size < cfg["patience"]:
        return []
    gl = 100.0 * (float(x[-1]) / max(float(x[best]), 1e-12) - 1.0)
    tail_med = float(np.median(after[-int(cfg["patience"]):]))
    gl_tail = 100.0 * (tail_med / max(float(x[best]), 1e-12) - 1.0)
    if gl <= cfg["gl_percent"] or gl_tail <= cfg["gl_percent"]:
        return []
    rises = np.diff(x[best:])
    if np.count_nonzero(rises > 0) < max(1, rises.size // 2):
        return []    # one high point, not a trend
    best_step, last_step = pts.span(best, -1)
    untrained = untrained_loss(run)
    if untrained is not None and float(x[best]) >= UNTRAINED_MARGIN * untrained:
        return []    # eval never beat the untrained model: a broken evaluation (train_eval_gap), not overfitting
    train = _train_fell(run, best_step, last_step)
    if train is False:
        return []
    train_note = "" if train is None else " while the train loss fell from %s to %s" % (fmt(train[0]), fmt(train[1]))
    return [Finding("overfitting", WARN,
                    "Eval loss rose from its best %s at step %d to %s at step %d (generalization loss %.0f%%, "
                    "above Prechelt's %.0f%%)%s: the model is overfitting. Keep the checkpoint from step %d, stop "
                    "earlier, add regularisation (weight decay, dropout, augmentation) or more data." % (
                        fmt(float(x[best])), best_step, fmt(float(x[-1])), last_step, gl, cfg["gl_percent"],
                        train_note, best_step),
                    pts.tag, (best_step, last_step))]


def untrained_loss(run, k=3):
    """The loss of the untrained model (None without): the median of the first ``k`` finite train-loss points, or
    the first interval's mean when it is higher (it averages every step from the first; with points every 10 steps
    the first three are already 30 steps into training, below the untrained model's loss when it learns fast)."""
    pts = finite(run.get("loss"))
    if pts is None or not pts.size:
        return None
    first = float(np.median(pts.x[:min(k, pts.size)]))
    iv = run.interval_of(pts.series)
    if iv is not None and len(iv):
        mean = iv.mean[int(np.argmin(iv.steps))]
        if np.isfinite(mean):
            first = max(first, float(mean))
    return first


def train_at(run, steps, k=3):
    """Per step of ``steps``: the median of the last ``k`` finite train-loss points at or before it (NaN before
    the first)."""
    pts = finite(run.get("loss"))
    out = np.full(len(steps), np.nan)
    if pts is None:
        return out
    tsteps = pts.series.steps[pts.idx]
    for i, s in enumerate(steps):
        upto = pts.x[tsteps <= s]
        if upto.size:
            out[i] = float(np.median(upto[-k:]))
    return out


@rule("train_eval_gap", WARN,
      "Prechelt 1998 measures a generalization gap from a best evaluation that improved on the untrained model; an "
      "eval loss that never did (within 5%), while the train loss fell by a quarter, is not overfitting but an evaluation that "
      "differs from training: BatchNorm moving statistics against batch statistics (Ioffe and Szegedy 2015; Ioffe "
      "2017, 'Batch Renormalization': they disagree with small or non-i.i.d. batches), dropout, or an eval dataset "
      "/ loss prepared differently. The eval loss must also be 2x the train loss at the same step over most "
      "evaluations (NaN/Inf counted); the factors are our heuristics, checked on issue 32's corpus (RULES.md)",
      "A broken evaluation: the eval loss never better than the untrained model's loss and far above the train loss "
      "at the same step while training learns (BatchNorm moving statistics, dropout, a different eval pipeline or "
      "loss); never reported as overfitting.",
      factor=2.0, start_frac=UNTRAINED_MARGIN, train_fall=0.75, min_points=1)
def train_eval_gap(run, cfg):
    series = run.get("eval_loss")
    train = finite(run.get("loss"), 2)
    if series is None or not len(series) or train is None:
        return []
    at = train_at(run, series.steps)
    ok = np.isfinite(at) & (at > 0)
    if np.count_nonzero(ok) < cfg["min_points"]:
        return []
    steps, ev, at = series.steps[ok], series.values[ok], at[ok]
    ev = np.where(np.isnan(ev), np.inf, ev)              # NaN / Inf in eval mode: an unbounded gap
    start = untrained_loss(run)
    if start is None or start <= 0 or float(train.x[-1]) > cfg["train_fall"] * start:
        return []                                        # training did not learn: other rules speak
    best = float(np.min(ev))
    ratio = ev / at
    if best < cfg["start_frac"] * start or not float(np.median(ratio)) >= cfg["factor"]:
        return []
    gap = np.nonzero(ratio >= cfg["factor"])[0]
    k = int(np.argmax(np.isfinite(ev) & (ev == best))) if np.isfinite(best) else 0
    span = (int(steps[0]), int(steps[gap[-1]]))      # no evaluation was ever better than the untrained model
    nonfinite = int(np.count_nonzero(~np.isfinite(ev)))
    return [Finding("train_eval_gap", WARN,
                    "The evaluation looks broken, not overfitting: no evaluation was ever better than the untrained "
                    "model (best eval loss %s at step %d, against %s at the start) while the train loss fell to %s; "
                    "%d of %d evaluations are at least %sx the train loss at the same step%s. The model behaves "
                    "differently in eval mode, or the eval data is not what it trained on. Usual causes: BatchNorm "
                    "moving statistics that do not match the training batches (momentum too close to 1 for the "
                    "number of steps, small or non-shuffled batches), dropout, an eval dataset prepared differently "
                    "(normalisation, labels) or another loss. If the evaluation is right, the model memorises a "
                    "training set too small or too noisy to learn anything that generalises: more (or cleaner) "
                    "data, not an earlier checkpoint. Do not keep a checkpoint by this eval loss until it is "
                    "fixed." % (
                        fmt(best), int(steps[k]), fmt(start), fmt(float(train.x[-1])), gap.size, ev.size,
                        fmt(float(cfg["factor"])), (" (%d of them NaN/Inf)" % nonfinite) if nonfinite else ""),
                    series.tag, span)]
