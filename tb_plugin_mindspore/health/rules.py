"""The health rules: one small function each, with its id, level, source and configurable thresholds.

Every rule is ``fn(run, cfg) -> [Finding]`` where ``run`` is a :class:`~.series.RunSeries` and ``cfg`` the rule's
thresholds (its defaults, overridden by the user's configuration). A rule that lacks the series it needs returns
nothing: absence of data is reported once, by ``no_loss``, not by every rule.

Conventions:

* Steps are training steps as recorded. A value between two recorded points is known only through the interval
  statistics (min / mean / max / count / non-finite of every step since the previous point); rules that look for
  spikes or NaN read those too, and then report the step range the interval covers.
* "Warm-up" is counted in recorded points. ``_warmup`` shortens it for short runs so that a 30-point run is
  still checked (never below ``MIN_WARMUP`` points).
* Thresholds come from published practice where there is one (the source is named next to it), otherwise they
  are our heuristics, said so, and configurable.
"""

import math
import re
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

import numpy as np

INFO, WARN, ERROR = "info", "warn", "error"
LEVELS = (INFO, WARN, ERROR)
LEVEL_RANK = {INFO: 0, WARN: 1, ERROR: 2}
MIN_WARMUP = 3


@dataclass
class Finding:
    rule: str
    level: str
    message: str
    tag: str
    steps: Tuple[int, int]

    def to_json(self):
        return {"rule": self.rule, "level": self.level, "message": self.message, "tag": self.tag,
                "steps": [int(self.steps[0]), int(self.steps[1])]}


@dataclass(frozen=True)
class Rule:
    id: str
    level: str          # the most severe level the rule reports
    source: str         # where its method and thresholds come from
    summary: str
    defaults: Dict[str, object]
    fn: Callable

    def describe(self):
        return {"id": self.id, "level": self.level, "source": self.source, "summary": self.summary,
                "defaults": dict(self.defaults)}


RULES: List[Rule] = []


def rule(rule_id, level, source, summary, **defaults):
    """Registers ``fn`` as a rule. ``defaults`` are its thresholds; the user's configuration overrides them."""

    def register(fn):
        RULES.append(Rule(rule_id, level, source, summary, dict(defaults), fn))
        return fn

    return register


# ---------------------------------------------------------------------------------------------------------------
# Helpers
def _fmt(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "NaN"
    if isinstance(x, float) and math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    ax = abs(x)
    if ax != 0 and (ax >= 1e4 or ax < 1e-3):
        return "%.3g" % x
    return "%.4g" % x


def _secs(seconds):
    if seconds < 120:
        return "%d s" % round(seconds)
    if seconds < 7200:
        return "%d min" % round(seconds / 60)
    if seconds < 2 * 86400:
        return "%.1f h" % (seconds / 3600)
    return "%.1f days" % (seconds / 86400)


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def _warmup(n, wanted):
    """Warm-up points for a series of ``n`` points: ``wanted``, shortened to a quarter of a short series."""
    return int(max(MIN_WARMUP, min(int(wanted), n // 4)))


def _steps(series, i, j=None):
    j = i if j is None else j
    return (int(series.steps[i]), int(series.steps[j]))


def _aligned_interval(run, series):
    """Interval rows aligned to ``series`` points: dict of arrays (NaN / 0 where a point has no interval)."""
    iv = run.interval_of(series)
    n = len(series)
    out = {"min": np.full(n, np.nan), "max": np.full(n, np.nan), "count": np.zeros(n), "nonfinite": np.zeros(n)}
    if iv is None or not len(iv):
        return None
    k = np.clip(np.searchsorted(iv.steps, series.steps), 0, len(iv) - 1)
    hit = iv.steps[k] == series.steps
    for name in ("min", "max", "count", "nonfinite"):
        out[name][hit] = getattr(iv, name)[k[hit]]
    return out


def _upper(run, series):
    """Per point, the largest value seen since the previous point: max(value, interval max), finite or NaN.

    Returns ``(upper, from_interval)`` where ``from_interval[i]`` says the interval max exceeded the recorded value.
    """
    values = series.values.astype(np.float64)
    upper = np.where(np.isfinite(values), values, np.nan)
    from_interval = np.zeros(len(series), dtype=bool)
    iv = _aligned_interval(run, series)
    if iv is not None:
        imax = np.where(np.isfinite(iv["max"]), iv["max"], np.nan)
        with np.errstate(invalid="ignore"):
            from_interval = np.isfinite(imax) & ~(imax <= np.nan_to_num(upper, nan=-np.inf))
        upper = np.fmax(upper, imax)
    return upper, from_interval


def _clean_loss(run):
    """The loss series if it is entirely finite, else ``None`` (once NaN/Inf appear, ``nonfinite`` speaks and
    trend statistics over exploding values mean nothing)."""
    series = run.get("loss")
    if series is None or not np.all(np.isfinite(series.values)):
        return None
    iv = _aligned_interval(run, series)
    if iv is not None and np.any(iv["nonfinite"] > 0):
        return None
    return series


def _finite(series):
    """``(indices, values)`` of the finite points of a series."""
    mask = np.isfinite(series.values)
    idx = np.nonzero(mask)[0]
    return idx, series.values[idx].astype(np.float64)


def _rolling_median(x, window):
    window = max(1, int(window) | 1)
    half = window // 2
    padded = np.pad(x, half, mode="edge")
    view = np.lib.stride_tricks.sliding_window_view(padded, window)
    return np.median(view, axis=1)


def _rolling_mean(x, window):
    window = max(1, int(window) | 1)
    half = window // 2
    padded = np.pad(x, half, mode="edge")
    return np.convolve(padded, np.ones(window) / window, mode="valid")


def _robust_std(x):
    if x.size == 0:
        return 0.0
    return float(1.4826 * np.median(np.abs(x - np.median(x))))


def _layer_list(names, limit=4):
    shown = ", ".join(names[:limit])
    return shown + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


# ---------------------------------------------------------------------------------------------------------------
# Data presence
@rule("no_loss", WARN, "seed article 5.1 / 5.5 ('no data'): nothing to judge the run by",
      "The run records no training loss (or too few points to judge trends).",
      min_points=5)
def no_loss(run, cfg):
    loss = run.get("loss")
    if loss is None:
        tags = sorted(set(run.scalars) | set(run.other_tags))
        holds = run.info.get("mindspore_holds") if isinstance(run.info, dict) else None
        if not tags and holds:
            # An evaluation-only or lineage-only MindSpore run (SummaryCollector in Model.eval): nothing missing.
            return [Finding("no_loss", INFO, "No scalars in this run: it holds %s; the training rules have nothing "
                            "to check." % holds, "", (0, 0))]
        if not tags:
            return [Finding("no_loss", WARN, "No scalars recorded in this run. Record training with "
                            "tb_mindspore_callbacks.TrainMonitor (or check that the run folder is the one "
                            "training writes to).", "", (0, 0))]
        first, last = run.first_step() or 0, run.last_step() or 0
        return [Finding("no_loss", WARN, "No training loss among the %d recorded tag(s) (%s), so the loss rules "
                        "cannot run. Record it as core/loss (TrainMonitor does) or under a usual name (loss, "
                        "train/loss)." % (len(tags), _layer_list(tags, 6)), "", (first, last))]
    if len(loss) < cfg["min_points"]:
        return [Finding("no_loss", INFO, "Only %d loss point(s) so far; trend rules need at least %d."
                        % (len(loss), cfg["min_points"]), loss.tag, _steps(loss, 0, -1))]
    return []


# ---------------------------------------------------------------------------------------------------------------
# NaN / Inf
def _nonfinite_ranges(run, series):
    """``[(first, last)]`` step ranges known to contain a non-finite value, in step order; and the count."""
    values = series.values
    steps = series.steps.astype(np.int64)
    bad_value = ~np.isfinite(values)
    iv = _aligned_interval(run, series)
    if iv is None:
        bad = np.nonzero(bad_value)[0]
        # One count per step (MindSpore may write a step twice, e.g. at an epoch end).
        return [(int(steps[i]), int(steps[i])) for i in bad], int(np.unique(steps[bad]).size)
    in_interval = iv["nonfinite"] > 0
    span = np.where(iv["count"] >= 1, iv["count"], 1).astype(np.int64)
    lo = np.where(in_interval, steps - span + 1, steps)
    bad = np.nonzero(in_interval | bad_value)[0]
    count = int(np.sum(iv["nonfinite"][in_interval])) + int(np.count_nonzero(bad_value & ~in_interval))
    return [(int(lo[i]), int(steps[i])) for i in bad], count


@rule("nonfinite", ERROR, "standard practice (Megatron-LM check_for_nan_in_loss_and_grad; mindformers "
      "check_for_nan_in_loss_and_grad): a NaN/Inf loss or gradient norm means the weights are corrupted",
      "NaN or Inf in loss, gradient norm or eval loss, at the first step it happened.")
def nonfinite(run, cfg):
    findings = []
    loss = run.get("loss")
    loss_scale = run.get("loss_scale")
    for quantity in ("loss", "grad_norm", "eval_loss"):
        series = run.get(quantity)
        if series is None:
            continue
        ranges, count = _nonfinite_ranges(run, series)
        if not ranges:
            continue
        lo, hi = ranges[0]
        last = ranges[-1][1]
        name = {"loss": "Loss", "grad_norm": "Gradient norm", "eval_loss": "Eval loss"}[quantity]
        exact = lo == hi
        where = ("at step %d" % lo) if exact else ("between steps %d and %d (recorded every few steps; the "
                                                   "interval statistics caught it)" % (lo, hi))
        kinds = series.values[~np.isfinite(series.values)]
        what = "NaN" if kinds.size and np.all(np.isnan(kinds)) else ("Inf" if kinds.size and
                                                                    np.all(np.isinf(kinds)) else "NaN/Inf")
        persists = not np.isfinite(series.values[-1])
        tail = (" and is still non-finite at the last recorded step %d" % int(series.steps[-1])) if persists else ""
        level = ERROR
        advice = ("Lower the learning rate, add gradient clipping (MonitoredTrainCell(clip_grad_norm=...)), "
                  "check the input data for NaN/Inf at that step, or use loss scaling for float16.")
        if quantity == "grad_norm" and loss_scale is not None and (loss is None or not _nonfinite_ranges(
                run, loss)[0]):
            level = INFO
            advice = ("A loss-scale cell is in use and the loss stayed finite: these are overflow steps that "
                      "dynamic loss scaling skipped, which is expected now and then.")
        findings.append(Finding("nonfinite", level, "%s became %s %s (%d non-finite step(s) in all)%s. %s"
                                % (name, what, where, count, tail, advice), series.tag, (lo, last)))
    return findings


# ---------------------------------------------------------------------------------------------------------------
# Gradient norm
@rule("grad_explosion", ERROR,
      "ZClip (Kumar et al. 2025, arXiv:2504.02507): EMA mean/variance of the gradient norm, alpha 0.97, z-score "
      "threshold 2.5, 25 warm-up steps, anomalies enter the EMA clipped; Megatron-LM's 10x spike factor for the "
      "ratio to the running max",
      "Gradient norm spikes against its running baseline (EMA z-score with warm-up and persistence, ratio to the "
      "running max) or grows steadily.",
      alpha=0.97, z_thresh=2.5, warmup=25, min_ratio=2.0, persistence=2, persistence_window=5, max_ratio=10.0,
      growth_ratio=10.0, error_ratio=1000.0, min_points=6)
def grad_explosion(run, cfg):
    series = run.get("grad_norm")
    if series is None:
        return []
    upper, from_interval = _upper(run, series)
    idx = np.nonzero(np.isfinite(upper))[0]
    x = upper[idx]
    n = x.size
    if n < cfg["min_points"]:
        return []
    w = _warmup(n, cfg["warmup"])
    baseline = float(np.median(x[:w]))
    findings = []
    eps = 1e-12

    # Sustained growth: the late level against the warm-up level.
    late = float(np.median(x[-w:]))
    growth = late / max(baseline, eps)
    growth_range = None
    if growth >= cfg["growth_ratio"]:
        below = np.nonzero(x[:-1] <= 2.0 * baseline)[0]
        start = int(below[-1]) + 1 if below.size else 0
        growth_range = (int(series.steps[idx[start]]), int(series.steps[idx[-1]]))
        level = ERROR if growth >= cfg["error_ratio"] else WARN
        findings.append(Finding(
            "grad_explosion", level,
            "Gradient norm grew %s-fold, from %s in the first %d points to %s at the end (steps %d-%d): gradients "
            "are exploding. Lower the learning rate and add gradient clipping "
            "(MonitoredTrainCell(clip_grad_norm=1.0))." % (_fmt(growth), _fmt(baseline), w, _fmt(late),
                                                          growth_range[0], growth_range[1]),
            series.tag, growth_range))

    # Spikes: EMA z-score (ZClip) with persistence, or a single point far above the running max.
    mu = float(np.mean(x[:w]))
    var = float(np.var(x[:w]))
    alpha = float(cfg["alpha"])
    running_max = float(np.max(x[:w]))
    anomalies, hard = [], []
    peak_ratio, peak_i = 0.0, None
    for i in range(w, n):
        v = float(x[i])
        sd = math.sqrt(max(var, 0.0)) + eps
        z = (v - mu) / sd
        ratio_max = v / max(running_max, eps)
        is_z = z > cfg["z_thresh"] and v > cfg["min_ratio"] * mu
        is_hard = ratio_max >= cfg["max_ratio"]
        if is_z or is_hard:
            anomalies.append(i)
            if is_hard:
                hard.append(i)
            r = v / max(mu, eps)
            if r > peak_ratio:
                peak_ratio, peak_i = r, i
            v_update = mu + cfg["z_thresh"] * sd   # ZClip: an anomaly enters the statistics clipped
        else:
            v_update = v
        mu = alpha * mu + (1 - alpha) * v_update
        var = alpha * var + (1 - alpha) * (v_update - mu) ** 2
        running_max = max(running_max, v)
    # Episodes: anomalies no more than persistence_window points apart.
    episodes, current = [], []
    for i in anomalies:
        if current and i - current[-1] > cfg["persistence_window"]:
            episodes.append(current)
            current = []
        current.append(i)
    if current:
        episodes.append(current)
    hard_set = set(hard)
    alarms = [e for e in episodes if len(e) >= cfg["persistence"] or any(i in hard_set for i in e)]
    if growth_range is not None:
        alarms = [e for e in alarms if int(series.steps[idx[e[0]]]) < growth_range[0]]
    if alarms:
        first, last = alarms[0][0], alarms[-1][-1]
        steps = (int(series.steps[idx[first]]), int(series.steps[idx[last]]))
        between = " (a step between two recorded points; seen in the interval max)" if from_interval[idx[peak_i]] \
            else ""
        level = ERROR if peak_ratio >= cfg["error_ratio"] else WARN
        findings.append(Finding(
            "grad_explosion", level,
            "Gradient norm spiked %d time(s) between steps %d and %d; the largest, %s at step %d%s, is %s times "
            "its running average. Add gradient clipping (MonitoredTrainCell(clip_grad_norm=...)) or lower the "
            "learning rate; check the batches at those steps." % (
                len(alarms), steps[0], steps[1], _fmt(float(x[peak_i])), int(series.steps[idx[peak_i]]), between,
                _fmt(peak_ratio)),
            series.tag, steps))
    return findings


def _loss_converged(run, ratio):
    loss = run.get("loss")
    if loss is None:
        return False
    _, x = _finite(loss)
    if x.size < 4:
        return False
    w = max(2, x.size // 5)
    early, late = float(np.median(x[:w])), float(np.median(x[-w:]))
    return early > 0 and late < ratio * early


@rule("vanishing_gradients", WARN,
      "seed article 4.3 (gradient norm tending to zero); collapse threshold 1e-3 of its early level is our "
      "heuristic",
      "Global or per-layer gradient norm collapsing towards zero while the loss has not converged.",
      collapse_ratio=1e-3, abs_floor=1e-8, layer_rel_floor=1e-4, loss_converged_ratio=1e-2, warmup=25,
      min_points=6)
def vanishing_gradients(run, cfg):
    findings = []
    converged = _loss_converged(run, cfg["loss_converged_ratio"])
    series = run.get("grad_norm")
    if series is not None:
        idx, x = _finite(series)
        if x.size >= cfg["min_points"]:
            w = _warmup(x.size, cfg["warmup"])
            early, late = float(np.median(x[:w])), float(np.median(x[-w:]))
            if late < cfg["abs_floor"] or (early > 0 and late / early < cfg["collapse_ratio"]):
                steps = (int(series.steps[idx[-w]]), int(series.steps[idx[-1]]))
                if converged:
                    findings.append(Finding(
                        "vanishing_gradients", INFO,
                        "Gradient norm fell to %s (from %s) but the loss converged too: expected near a minimum."
                        % (_fmt(late), _fmt(early)), series.tag, steps))
                else:
                    findings.append(Finding(
                        "vanishing_gradients", WARN,
                        "Gradient norm collapsed to %s (from %s early in the run) while the loss has not "
                        "converged: gradients are vanishing. Check activations (saturating sigmoid/tanh), "
                        "initialisation and normalisation layers; a residual path or a higher learning rate may "
                        "help." % (_fmt(late), _fmt(early)), series.tag, steps))
    layers = run.layer_series("layer_grad_norm")
    if layers is not None and layers.steps.size >= 2 and not converged:
        n = layers.steps.size
        w = _warmup(n, cfg["warmup"]) if n >= cfg["min_points"] else 1
        vals = np.where(np.isfinite(layers.values), layers.values, np.nan)
        early = _nanmedian(vals[:w], axis=0)
        late = _nanmedian(vals[-w:], axis=0)
        typical = float(np.nanmedian(late)) if np.any(np.isfinite(late)) else float("nan")
        bad = []
        for j, name in enumerate(layers.layers):
            if not np.isfinite(late[j]):
                continue
            collapsed = n >= cfg["min_points"] and early[j] > 0 and late[j] / early[j] < cfg["collapse_ratio"]
            tiny = late[j] < cfg["abs_floor"] or (typical > 0 and late[j] < cfg["layer_rel_floor"] * typical)
            if collapsed or tiny:
                bad.append(name)
        if bad and len(bad) < len(layers.layers):
            steps = (int(layers.steps[-w]), int(layers.steps[-1]))
            findings.append(Finding(
                "vanishing_gradients", WARN,
                "Gradients of %d layer(s) vanished (%s) while the median layer's gradient norm is %s: those "
                "layers stop learning. Look at what sits before them (saturation, dead ReLUs, a detached or "
                "frozen path)." % (len(bad), _layer_list(bad), _fmt(typical)), layers.tag, steps))
    return findings


# ---------------------------------------------------------------------------------------------------------------
# Loss trends
@rule("loss_not_decreasing", WARN,
      "seed article 4.3 ('loss not decreasing at all: learning rate too small or labels wrong'); 1% minimum "
      "relative decrease is our heuristic",
      "Loss did not decrease (or rose) between the start and the end of the run.",
      min_rel_decrease=0.01, min_points=8, window_frac=0.2)
def loss_not_decreasing(run, cfg):
    series = _clean_loss(run)
    if series is None:
        return []
    idx, x = _finite(series)
    if x.size < cfg["min_points"]:
        return []
    w = max(2, int(x.size * cfg["window_frac"]))
    early, late = float(np.median(x[:w])), float(np.median(x[-w:]))
    scale = max(abs(early), 1e-12)
    rel = (early - late) / scale
    if rel >= cfg["min_rel_decrease"]:
        return []
    steps = _steps(series, idx[0], idx[-1])
    if rel < -cfg["min_rel_decrease"]:
        verb = "rose from %s to %s (%+.0f%%)" % (_fmt(early), _fmt(late), -rel * 100)
    else:
        verb = "stayed at %s (%s at the end)" % (_fmt(early), _fmt(late))
    return [Finding("loss_not_decreasing", WARN,
                    "Loss %s over steps %d-%d: the model is not learning. Check the learning rate (too small, or "
                    "not applied), that labels match inputs, and that gradients reach the weights."
                    % (verb, steps[0], steps[1]), series.tag, steps)]


@rule("loss_plateau", INFO, "seed article 4.3 ('loss stuck at a value: capacity or vanishing gradients'); "
      "window and tolerance are our heuristics",
      "Loss flat over the last part of the run although it decreased before.",
      window_frac=0.3, rel_tol=0.01, min_points=12)
def loss_plateau(run, cfg):
    series = _clean_loss(run)
    if series is None:
        return []
    idx, x = _finite(series)
    if x.size < cfg["min_points"]:
        return []
    w = max(2, x.size // 10)
    total = float(np.median(x[:w]) - np.median(x[-w:]))
    if total <= 0:
        return []     # not decreasing at all: loss_not_decreasing speaks
    k = max(4, int(x.size * cfg["window_frac"]))
    tail = x[-k:]
    hw = max(2, k // 4)
    change = float(np.median(tail[:hw]) - np.median(tail[-hw:]))
    if abs(change) > cfg["rel_tol"] * total:
        return []
    steps = _steps(series, idx[-k], idx[-1])
    return [Finding("loss_plateau", INFO,
                    "Loss has been flat at about %s since step %d (less than %.0f%% of its total decrease over the "
                    "last %d points). Converged, or stuck: a learning-rate decay, more capacity or more data may "
                    "help if the value is not good enough." % (_fmt(float(np.median(tail))), steps[0],
                                                               cfg["rel_tol"] * 100, k),
                    series.tag, steps)]


@rule("loss_oscillation", WARN,
      "seed article 4.3 / 5.5 ('loss oscillating violently: learning rate too large or batch too small'); noise "
      "measured as the robust spread around a rolling mean, relative to the initial loss (our heuristic)",
      "Loss noise (spread around its trend) large relative to the loss level.",
      max_rel_noise=0.2, trend_window=5, min_points=10)
def loss_oscillation(run, cfg):
    series = _clean_loss(run)
    if series is None:
        return []
    idx, x = _finite(series)
    if x.size < cfg["min_points"]:
        return []
    w = max(MIN_WARMUP, x.size // 10)
    level = abs(float(np.median(x[:w])))
    if level <= 0:
        return []
    half = x.size // 2
    part = x[half:]
    trend = _rolling_mean(part, cfg["trend_window"])   # a mean: a rolling median follows a zig-zag exactly
    noise = _robust_std(part - trend)
    rel = noise / level
    if rel <= cfg["max_rel_noise"]:
        return []
    steps = _steps(series, idx[half], idx[-1])
    share = ("%.0f%% of" % (rel * 100)) if rel < 10 else ("%s times" % _fmt(rel))
    return [Finding("loss_oscillation", WARN,
                    "Loss oscillates: its spread around the trend over steps %d-%d is %s, %s the initial "
                    "loss %s. Lower the learning rate or use a larger batch." % (
                        steps[0], steps[1], _fmt(noise), share, _fmt(level)), series.tag, steps)]


@rule("loss_spike", WARN,
      "Megatron-LM check_for_spiky_loss: a loss more than 10x the largest loss observed so far",
      "Loss spikes: a point (or a step between two points, from the interval max) far above what came before.",
      factor=10.0, local_factor=4.0, local_window=10, warmup=10, min_points=6)
def loss_spike(run, cfg):
    series = run.get("loss")
    if series is None:
        return []
    upper, from_interval = _upper(run, series)
    idx = np.nonzero(np.isfinite(upper))[0]
    x = upper[idx]
    n = x.size
    if n < cfg["min_points"]:
        return []
    w = _warmup(n, cfg["warmup"])
    lw = max(1, int(cfg["local_window"]))
    prior_max = np.maximum.accumulate(x)[:-1]                  # prior_max[i - 1]: max of x[:i]
    padded = np.concatenate([np.full(lw - 1, x[0]), x])
    windows = np.lib.stride_tricks.sliding_window_view(padded, lw)[:-1]   # windows[i - 1]: the lw points before i
    recent_med = np.median(windows, axis=1)
    i = np.arange(w, n)
    is_spike = x[i] > cfg["factor"] * prior_max[i - 1]
    is_local = ~is_spike & (recent_med[i - 1] > 0) & (x[i] > cfg["local_factor"] * recent_med[i - 1])
    spikes, local = i[is_spike].tolist(), i[is_local].tolist()
    findings = []
    for group, level, what in ((spikes, WARN, "%s times the largest loss before it (Megatron-LM's spiky-loss "
                                              "factor is %s)" % ("%s", _fmt(float(cfg["factor"])))),
                               (local, INFO, "%s times the median of the %d points before it"
                                % ("%s", int(cfg["local_window"])))):
        if not group:
            continue
        peak = max(group, key=lambda i: x[i])
        prior = x[:peak]
        ref = float(np.max(prior)) if level == WARN else float(np.median(prior[-int(cfg["local_window"]):]))
        between = " between two recorded points (interval max)" if from_interval[idx[peak]] else ""
        steps = (int(series.steps[idx[group[0]]]), int(series.steps[idx[group[-1]]]))
        findings.append(Finding(
            "loss_spike", level,
            "Loss spiked %d time(s) between steps %d and %d; the largest, %s at step %d%s, is %s. Check the batches "
            "at those steps; gradient clipping or a lower learning rate makes training robust to them." % (
                len(group), steps[0], steps[1], _fmt(float(x[peak])), int(series.steps[idx[peak]]), between,
                what % _fmt(float(x[peak]) / max(ref, 1e-12))),
            series.tag, steps))
    return findings


# ---------------------------------------------------------------------------------------------------------------
# Learning rate
@rule("lr_constant", WARN,
      "seed article 4.3: a learning rate that never leaves its initial value usually means the schedule is not "
      "bound to the optimizer",
      "Learning rate constant through the whole run (or zero).",
      rel_tol=1e-6, min_points=5, min_steps=20)
def lr_constant(run, cfg):
    series = run.get("learning_rate")
    groups = run.learning_rate_groups()
    if series is None and groups:
        series = groups[0]
    if series is None:
        return []
    idx, x = _finite(series)
    if x.size < cfg["min_points"] or int(series.steps[idx[-1]] - series.steps[idx[0]]) < cfg["min_steps"]:
        return []
    steps = _steps(series, idx[0], idx[-1])
    hi, lo = float(np.max(np.abs(x))), float(np.min(x))
    if hi == 0:
        return [Finding("lr_constant", ERROR, "Learning rate is 0 for the whole run (steps %d-%d): no weight "
                        "changes. Pass a positive learning rate or schedule to the optimizer." % steps,
                        series.tag, steps)]
    if float(np.max(x)) - lo > cfg["rel_tol"] * hi:
        return []
    return [Finding("lr_constant", WARN,
                    "Learning rate stayed at %s for the whole run (steps %d-%d, %d points). If you configured a "
                    "warm-up or decay, the schedule is not reaching the optimizer: pass the schedule itself as "
                    "learning_rate=... (a LearningRateSchedule or a list of per-step values), not a number "
                    "computed from it. Ignore this if a constant rate is intended." % (
                        _fmt(float(x[0])), steps[0], steps[1], x.size), series.tag, steps)]


def _nanmedian(values, axis):
    """``np.nanmedian`` without its warning for all-NaN slices (they become NaN)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with np.errstate(all="ignore"):
            return np.nanmedian(values, axis=axis)


def _step_median(layers):
    """Median over layers of a LayerSeries, per step (finite values only)."""
    vals = np.where(np.isfinite(layers.values), layers.values, np.nan)
    return _nanmedian(vals, axis=1) if vals.size else np.array([])


def _values_at(series, steps):
    """Values of ``series`` at the recorded point at or before each of ``steps`` (NaN before the first)."""
    pos = np.searchsorted(series.steps, steps, side="right") - 1
    out = np.full(len(steps), np.nan)
    ok = pos >= 0
    out[ok] = series.values[pos[ok]]
    return out


@rule("lr_update_mismatch", WARN,
      "CS231n (Karpathy), 'Neural Networks Part 3': the update/weight ratio tracks the learning rate; an update "
      "size that ignores a large LR change means the recorded LR is not the applied one",
      "Learning rate changes a lot while the per-layer update ratio does not follow.",
      min_lr_change=2.0, follow_frac=0.25, window=5, min_points=4)
def lr_update_mismatch(run, cfg):
    lr = run.get("learning_rate")
    ratio = run.layer_series("update_ratio")
    if lr is None or ratio is None or ratio.steps.size < cfg["min_points"]:
        return []
    upd = _step_median(ratio)
    lr_at = _values_at(lr, ratio.steps)
    ok = np.isfinite(upd) & np.isfinite(lr_at) & (upd > 0) & (lr_at > 0)
    if np.count_nonzero(ok) < cfg["min_points"]:
        return []
    steps = ratio.steps[ok]
    lupd, llr = np.log(upd[ok]), np.log(lr_at[ok])
    diffs = np.abs(np.diff(llr))
    w = int(cfg["window"])
    if diffs.size and diffs.max() >= math.log(cfg["min_lr_change"]):
        k = int(np.argmax(diffs)) + 1            # first point after the largest jump
        before, after = slice(max(0, k - w), k), slice(k, min(len(llr), k + w))
    else:
        third = max(1, len(llr) // 3)
        before, after = slice(0, third), slice(len(llr) - third, len(llr))
    lr_change = float(np.median(llr[after]) - np.median(llr[before]))
    if abs(lr_change) < math.log(cfg["min_lr_change"]):
        return []
    upd_change = float(np.median(lupd[after]) - np.median(lupd[before]))
    if abs(upd_change) >= cfg["follow_frac"] * abs(lr_change) and np.sign(upd_change) == np.sign(lr_change):
        return []
    span = (int(steps[before][0]), int(steps[after][-1]))
    return [Finding("lr_update_mismatch", WARN,
                    "Learning rate changed %s-fold over steps %d-%d but the median update ratio changed only "
                    "%s-fold: the recorded learning rate is probably not the one the optimizer applies (a "
                    "schedule computed beside the optimizer, or per-group rates that override it)." % (
                        _fmt(math.exp(lr_change)), span[0], span[1], _fmt(math.exp(upd_change))),
                    lr.tag, span)]


# ---------------------------------------------------------------------------------------------------------------
# Per-layer learning
_DEFAULT_IGNORE = r"(^|[./_])(bias|beta)$"


def _layer_medians(ratio, skip_first):
    vals = ratio.values[1:] if skip_first and ratio.steps.size > 1 else ratio.values
    vals = np.where(np.isfinite(vals), vals, np.nan)
    return _nanmedian(vals, axis=0)


@rule("layer_not_learning", WARN,
      "CS231n 'Neural Networks Part 3' (ratio of update to weight magnitude should be about 1e-3; much lower "
      "means the learning rate is too low); the seed article's closing lesson (a classification head that barely "
      "learned)",
      "A layer whose update ratio ||dw||/||w|| stays below 1e-4 (or whose weights do not change) while other "
      "layers learn.",
      low=1e-4, weight_rtol=1e-6, others_min_change=1e-3, ignore="")
def layer_not_learning(run, cfg):
    findings = []
    ignore = re.compile(cfg["ignore"]) if cfg["ignore"] else None
    ratio = run.layer_series("update_ratio")
    covered = set()
    if ratio is not None and ratio.steps.size and ratio.layers:
        med = _layer_medians(ratio, skip_first=True)
        names = [(n, float(m)) for n, m in zip(ratio.layers, med)
                 if np.isfinite(m) and not (ignore and ignore.search(n))]
        covered = {n for n, _ in names}
        slow = [(n, m) for n, m in names if m < cfg["low"]]
        learning = [(n, m) for n, m in names if m >= cfg["low"]]
        steps = (int(ratio.steps[0]), int(ratio.steps[-1]))
        if slow and learning:
            typical = float(np.median([m for _, m in learning]))
            slow.sort(key=lambda t: t[1])
            detail = ", ".join("%s (%s)" % (n, _fmt(m)) for n, m in slow[:4])
            more = " and %d more" % (len(slow) - 4) if len(slow) > 4 else ""
            findings.append(Finding(
                "layer_not_learning", WARN,
                "%d layer(s) barely learn: median update ratio ||dw||/||w|| %s%s, below %s, while the other layers "
                "update at about %s per step (CS231n: about 1e-3 is healthy). Check their learning rate "
                "(parameter groups), whether they are frozen (requires_grad) and whether gradients reach them."
                % (len(slow), detail, more, _fmt(float(cfg["low"])), _fmt(typical)), ratio.tag, steps))
        elif slow and not learning:
            findings.append(Finding(
                "layer_not_learning", WARN,
                "Every layer updates slowly: median update ratio %s, below %s (CS231n: about 1e-3 is healthy). "
                "The learning rate is probably too low." % (
                    _fmt(float(np.median([m for _, m in slow]))), _fmt(float(cfg["low"]))), ratio.tag, steps))
    weights = run.layer_series("layer_weight_norm")
    if weights is not None and weights.steps.size >= 2:
        vals = weights.values
        with np.errstate(all="ignore"):
            first, last = vals[0], vals[-1]
            change = np.abs(last - first) / np.maximum(np.abs(first), 1e-30)
        names = [(n, float(c)) for n, c in zip(weights.layers, change)
                 if np.isfinite(c) and n not in covered and not (ignore and ignore.search(n))]
        frozen = [n for n, c in names if c <= cfg["weight_rtol"]]
        moving = [n for n, c in names if c >= cfg["others_min_change"]]
        if frozen and moving:
            steps = (int(weights.steps[0]), int(weights.steps[-1]))
            findings.append(Finding(
                "layer_not_learning", WARN,
                "The weights of %d layer(s) did not change over steps %d-%d (%s) while other layers' weight norms "
                "moved: they are frozen or get a zero learning rate." % (
                    len(frozen), steps[0], steps[1], _layer_list(frozen)), weights.tag, steps))
    return findings


@rule("layer_too_fast", WARN,
      "CS231n 'Neural Networks Part 3' (update/weight ratio about 1e-3; much higher means the learning rate is "
      "too high); 1e-1 as the alarm level",
      "A layer whose update ratio ||dw||/||w|| stays above 1e-1.",
      high=1e-1, ignore=_DEFAULT_IGNORE)
def layer_too_fast(run, cfg):
    ratio = run.layer_series("update_ratio")
    if ratio is None or not ratio.steps.size or not ratio.layers:
        return []
    ignore = re.compile(cfg["ignore"]) if cfg["ignore"] else None
    med = _layer_medians(ratio, skip_first=True)
    fast = [(n, float(m)) for n, m in zip(ratio.layers, med)
            if np.isfinite(m) and m > cfg["high"] and not (ignore and ignore.search(n))]
    if not fast:
        return []
    fast.sort(key=lambda t: -t[1])
    detail = ", ".join("%s (%s)" % (n, _fmt(m)) for n, m in fast[:4])
    more = " and %d more" % (len(fast) - 4) if len(fast) > 4 else ""
    steps = (int(ratio.steps[0]), int(ratio.steps[-1]))
    return [Finding("layer_too_fast", WARN,
                    "%d layer(s) change too fast: median update ratio ||dw||/||w|| %s%s, above %s per step "
                    "(CS231n: about 1e-3 is healthy). Lower their learning rate or add warm-up." % (
                        len(fast), detail, more, _fmt(float(cfg["high"]))), ratio.tag, steps)]


# ---------------------------------------------------------------------------------------------------------------
# Overfitting
@rule("overfitting", WARN,
      "Prechelt, 'Early Stopping - But When?' (1998): generalization loss GL = 100 (E_va / E_opt - 1), stop when "
      "GL > 5; a patience of several evaluations as in Keras EarlyStopping",
      "Eval loss rising over several evaluations (not one point) while the train loss falls.",
      gl_percent=5.0, patience=3, min_points=4)
def overfitting(run, cfg):
    ev = run.get("eval_loss")
    if ev is None:
        return []
    idx, x = _finite(ev)
    if x.size < cfg["min_points"]:
        return []
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
    best_step, last_step = int(ev.steps[idx[best]]), int(ev.steps[idx[-1]])
    train = run.get("loss")
    train_note = ""
    if train is not None:
        tidx, tx = _finite(train)
        tsteps = train.steps[tidx]
        if tx.size < 2:
            return []
        # Train loss around the best evaluation (the last points up to it, else the first points after it) and
        # at the end of the evaluated range.
        at_best = tx[tsteps <= best_step]
        if at_best.size == 0:
            at_best = tx[:1]
        later = tx[(tsteps > best_step) & (tsteps <= last_step)]
        if later.size == 0:
            return []
        k = max(1, min(at_best.size, later.size, 3))
        t0, t1 = float(np.median(at_best[-k:])), float(np.median(later[-k:]))
        if not t1 < t0:
            return []    # train loss rising too: divergence, not overfitting (other rules speak)
        train_note = " while the train loss fell from %s to %s" % (_fmt(t0), _fmt(t1))
    return [Finding("overfitting", WARN,
                    "Eval loss rose from its best %s at step %d to %s at step %d (generalization loss %.0f%%, "
                    "above Prechelt's %.0f%%)%s: the model is overfitting. Keep the checkpoint from step %d, stop "
                    "earlier, add regularisation (weight decay, dropout, augmentation) or more data." % (
                        _fmt(float(x[best])), best_step, _fmt(float(x[-1])), last_step, gl, cfg["gl_percent"],
                        train_note, best_step),
                    ev.tag, (best_step, last_step))]


# ---------------------------------------------------------------------------------------------------------------
# Throughput
def _aligned(a, b):
    common, ia, ib = np.intersect1d(a.steps, b.steps, return_indices=True)
    return common, a.values[ia], b.values[ib]


@rule("input_bound", WARN,
      "TensorFlow profiler input-pipeline analysis: input-bound 'moderately' above 5% and 'highly' above 20% of "
      "step time spent waiting for input",
      "Share of step time spent waiting for data.",
      warn_share=0.20, info_share=0.05, min_points=3)
def input_bound(run, cfg):
    wait = run.get("data_wait_ms")
    step = run.get("step_time_ms")
    if wait is None or step is None:
        return []
    steps, w, s = _aligned(wait, step)
    ok = np.isfinite(w) & np.isfinite(s) & (s > 0)
    if np.count_nonzero(ok) < cfg["min_points"]:
        return []
    steps, w, s = steps[ok], w[ok], s[ok]
    share = float(np.median(w / s))
    if share < cfg["info_share"]:
        return []
    level = WARN if share >= cfg["warn_share"] else INFO
    span = (int(steps[0]), int(steps[-1]))
    degree = "highly" if level == WARN else "moderately"
    return [Finding("input_bound", level,
                    "Training is %s input-bound: steps wait %s ms for data out of %s ms (%.0f%% of step time). "
                    "Speed up the input pipeline: num_parallel_workers on map/batch, python_multiprocessing, "
                    "prefetching, caching decoded data, or lighter per-sample transforms." % (
                        degree, _fmt(float(np.median(w))), _fmt(float(np.median(s))), share * 100),
                    wait.tag, span)]


@rule("step_time_regression", WARN,
      "seed article 5.4 (a slowdown beyond 50% is not the expected monitoring cost); comparing a rolling median "
      "with the run's own early step time, sustained over a share of the run and a minimum wall time, is our "
      "heuristic",
      "Step time rising (or throughput falling) well above the run's own early level, and staying there.",
      factor=1.5, min_points=8, min_fraction=0.2, min_duration_s=60.0)
def step_time_regression(run, cfg):
    series = run.get("step_time_ms")
    inverse = False
    if series is None:
        series = run.get("throughput")
        inverse = True
    if series is None:
        return []
    idx, x = _finite(series)
    keep = x > 0
    idx, x = idx[keep], x[keep]
    if x.size < cfg["min_points"]:
        return []
    x = 1.0 / x if inverse else x
    idx, x = idx[1:], x[1:]          # the first point may include graph compilation
    w = max(MIN_WARMUP, x.size // 5)
    baseline = float(np.median(x[:w]))
    if baseline <= 0:
        return []
    trend = _rolling_median(x, min(max(3, w), 51) | 1)
    slow = trend > cfg["factor"] * baseline
    slow[:w] = False
    # The longest stretch of consecutive slow points: a regression persists, a burst of load on the machine does not.
    best, start = (0, 0), None
    for i, flag in enumerate(np.append(slow, False)):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    lo, hi = best
    if hi - lo < max(2, cfg["min_fraction"] * x.size):
        return []
    wall = series.wall_times[idx]
    if wall[hi - 1] - wall[lo] < cfg["min_duration_s"]:
        return []
    span = (int(series.steps[idx[lo]]), int(series.steps[idx[hi - 1]]))
    worst = float(np.median(x[lo:hi]))
    if inverse:
        msg = ("Throughput fell to %s samples/s from %s early in the run (%s times slower) over steps %d-%d."
               % (_fmt(1.0 / worst), _fmt(1.0 / baseline), _fmt(worst / baseline), span[0], span[1]))
    else:
        msg = ("Step time rose to %s ms from %s ms early in the run (%s times slower) over steps %d-%d."
               % (_fmt(worst), _fmt(baseline), _fmt(worst / baseline), span[0], span[1]))
    return [Finding("step_time_regression", WARN, msg + " Look for other jobs on the machine, a growing input "
                    "queue, host-side work in callbacks, or memory pressure.", series.tag, span)]


# ---------------------------------------------------------------------------------------------------------------
# Run state
def _usual_interval(run):
    """Median seconds between two recorded points of the run's densest series (None if unknown)."""
    best = None
    for s in run.scalars.values():
        if len(s) >= 3 and (best is None or len(s) > len(best)):
            best = s
    if best is None:
        return None
    wall = np.unique(best.wall_times[np.isfinite(best.wall_times)])
    if wall.size < 3:
        return None
    d = np.diff(wall)
    d = d[d > 0]
    return float(np.median(d)) if d.size else None


def _progress(run):
    """``(last_step, expected_last_step or None, finished: bool or None)``."""
    last = run.last_step()
    expected = run.expected_last_step()
    if run.info.get("finished") is True:
        return last, expected, True
    if expected is None or last is None:
        return last, expected, None
    return last, expected, last >= expected


@rule("run_stalled", WARN,
      "seed article 5.1 / 6.2; stalled = silent for 10x the run's own recording interval (our heuristic)",
      "No new events for much longer than the run's own interval while the run is not finished.",
      stall_factor=10.0, min_stall_s=120.0, crash_after_s=1800.0, recent_s=6 * 3600.0)
def run_stalled(run, cfg):
    state = run.state
    if state is None or state.last_event_time is None:
        return []
    last_seen = max(t for t in (state.last_event_time, state.last_modified) if t is not None)
    idle = state.now - last_seen
    interval = _usual_interval(run)
    threshold = max(cfg["min_stall_s"], cfg["stall_factor"] * interval if interval else 0.0)
    last, expected, finished = _progress(run)
    if finished or idle <= threshold or last is None:
        return []
    steps = (last, last)
    usual = (" (%s times its usual %s between points)" % (_fmt(idle / interval), _secs(interval))) if interval \
        else ""
    if finished is None:
        if idle > cfg["recent_s"]:
            return []       # an old run of unknown length: most likely finished long ago
        return [Finding("run_stalled", INFO,
                        "No new events for %s%s, last at step %d. If the training is still running, it is stuck "
                        "(input pipeline, a hung rank, a deadlock); if it ended, ignore this." % (
                            _secs(idle), usual, last), "", steps)]
    if idle > max(cfg["crash_after_s"], threshold):
        return []           # run_unfinished speaks
    return [Finding("run_stalled", WARN,
                    "No new events for %s%s, at step %d of %d: the training looks stuck (input pipeline, a hung "
                    "rank, a deadlock) or was stopped." % (_secs(idle), usual, last, expected), "", steps)]


@rule("run_unfinished", WARN,
      "seed article 3.2 / 5.6 (runs interrupted before on_train_end); expected length from the run info the "
      "callbacks record (epochs x steps per epoch)",
      "The run stopped before its planned last step and has been silent since: crashed or killed.",
      crash_after_s=1800.0, stall_factor=10.0, min_stall_s=120.0)
def run_unfinished(run, cfg):
    state = run.state
    if state is None or state.last_event_time is None:
        return []
    last, expected, finished = _progress(run)
    if finished is not False:
        return []
    last_seen = max(t for t in (state.last_event_time, state.last_modified) if t is not None)
    idle = state.now - last_seen
    interval = _usual_interval(run)
    threshold = max(cfg["min_stall_s"], cfg["stall_factor"] * interval if interval else 0.0)
    if idle <= max(cfg["crash_after_s"], threshold):
        return []
    return [Finding("run_unfinished", WARN,
                    "The run stopped at step %d of %d (%.0f%%) and nothing was written for %s: it crashed or was "
                    "killed. Look at the end of its log; resume from the last checkpoint." % (
                        last, expected, 100.0 * last / expected, _secs(idle)), "", (last, last))]


@rule("log_size", WARN,
      "seed article 5.2 (event files over 10 GB from per-step histograms; clean up above 5 GB)",
      "Event files larger than a size budget, or growing fast enough to exceed it.",
      max_bytes=5 * 1024 ** 3, max_bytes_per_hour=1024 ** 3)
def log_size(run, cfg):
    state = run.state
    if state is None or not state.total_bytes:
        return []
    total = int(state.total_bytes)
    first, last = run.first_step(), run.last_step()
    steps = (first or 0, last or 0)
    advice = ("Record less often (collect_freq), drop histograms you do not need, or set a disk budget on the "
              "writer.")
    if total > cfg["max_bytes"]:
        return [Finding("log_size", WARN, "Event files hold %s, above the %s budget. %s" % (
            _bytes(total), _bytes(cfg["max_bytes"]), advice), "", steps)]
    _, expected, finished = _progress(run)
    if finished is False and expected and last:
        projected = total * float(expected) / float(last)
        if projected > cfg["max_bytes"]:
            return [Finding("log_size", WARN, "Event files hold %s at step %d and will reach about %s by step %d, "
                            "above the %s budget. %s" % (_bytes(total), last, _bytes(projected), expected,
                                                         _bytes(cfg["max_bytes"]), advice), "", steps)]
    if state.first_event_time is not None and state.last_event_time is not None:
        span = state.last_event_time - state.first_event_time
        if span >= 60:
            rate = total / span * 3600.0
            if rate > cfg["max_bytes_per_hour"]:
                return [Finding("log_size", WARN, "Event files grow by %s per hour (%s so far), above %s per "
                                "hour. %s" % (_bytes(rate), _bytes(total), _bytes(cfg["max_bytes_per_hour"]),
                                              advice), "", steps)]
    return []


@rule("monitoring_overhead", WARN,
      "seed article 5.4 (a slowdown beyond 50% means the monitoring callback is too heavy); measured here: "
      "SummaryCollector with weight histograms made training 2.55x slower",
      "Monitoring itself costs too much step time.",
      max_overhead=0.5, min_count=4, min_points=3)
def monitoring_overhead(run, cfg):
    findings = []
    series = run.get("step_time_ms")
    iv = run.interval_of(series) if series is not None else None
    if iv is not None and len(iv) >= cfg["min_points"] + 1:
        # Within one interval, the step that follows a recorded point carries the recording cost: its excess over
        # the fastest step of the interval bounds what monitoring adds per interval.
        rows = slice(1, None)      # the first interval includes compilation
        mn, mean, mx, count = iv.min[rows], iv.mean[rows], iv.max[rows], iv.count[rows]
        ok = np.isfinite(mn) & np.isfinite(mx) & np.isfinite(mean) & (count >= cfg["min_count"]) & (mean > 0)
        if np.count_nonzero(ok) >= cfg["min_points"]:
            excess = (mx - mn)[ok]
            train = (count * mean)[ok] - excess
            overhead = float(np.median(excess / np.maximum(train, 1e-12)))
            if overhead > cfg["max_overhead"]:
                steps = (int(iv.steps[1:][ok][0]), int(iv.steps[1:][ok][-1]))
                findings.append(Finding(
                    "monitoring_overhead", WARN,
                    "Monitoring seems to cost about %.0f%% of training time: one step per recorded interval takes "
                    "%s ms longer than the others. Record less often (a larger collect_freq or debug frequency) "
                    "or turn off debug items you do not need." % (overhead * 100, _fmt(float(np.median(excess)))),
                    series.tag, steps))
    auto_hist = [t for t in run.histogram_tags if t.endswith("/auto") or "/auto[" in t]
    if auto_hist:
        first, last = run.first_step() or 0, run.last_step() or 0
        findings.append(Finding(
            "monitoring_overhead", INFO,
            "This run records %d parameter histogram(s) with MindSpore's SummaryCollector (%s); in our measurement "
            "that configuration made training 2.55x slower. TrainMonitor records the core tier at a few percent."
            % (len(auto_hist), _layer_list(auto_hist, 3)), auto_hist[0], (first, last)))
    return findings


RULES_BY_ID = {r.id: r for r in RULES}
