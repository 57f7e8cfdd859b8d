"""Precursors: what usually comes before a transformer's training goes wrong, said as "watch" (level info, ``watch``
in the JSON), never as an error: ``attention_logit_growth`` and ``adam_epsilon_dominated``. The edge of stability
(``sharpness_above_stability``, rules/sharpness.py) is the third. Their lead time (steps from the watch to the
failure it announces) is measured by the health corpus (RULES.md)."""

import numpy as np

from ... import metadata
from .. import detectors
from .base import INFO, Finding, rule
from .common import finite, fmt, layer_list

_ADAM = ("adam", "lamb")


@rule("attention_logit_growth", INFO,
      "Dehghani et al. 2023 ('Scaling Vision Transformers to 22 Billion Parameters'): attention logits that keep "
      "growing make the softmax one-hot and precede divergence; Wortsman et al. 2023 ('Small-scale proxies for "
      "large-scale Transformer training instabilities') reproduce it at small scale; QK-Clip (Kimi K2's MuonClip) and "
      "Megatron-LM's qk_clip_threshold cap the largest logit at 100. Watch when it reaches 100, or grows 10x from its "
      "early level to above 30 (our earlier signal)",
      "Watch: the largest attention logit (our probe, or mindformers' max_attention_logit) reached QK-Clip's limit "
      "of 100 or grew tenfold: the usual precursor of loss spikes in transformer training.",
      limit=100.0, growth=10.0, growth_floor=30.0, min_points=3)
def attention_logit_growth(run, cfg):
    pts = finite(run.get("max_attention_logit"), cfg["min_points"])
    if pts is None:
        return []
    x = np.abs(pts.x)
    early = float(np.median(x[:max(1, min(3, pts.size // 4))]))
    over = np.nonzero(x >= cfg["limit"])[0]
    grown = np.nonzero((x >= cfg["growth"] * max(early, 1e-12)) & (x >= cfg["growth_floor"]))[0]
    hits = [int(i) for i in (over[:1].tolist() + grown[:1].tolist())]
    if not hits:
        return []
    first = min(hits)
    peak = int(np.argmax(x))
    why = ("QK-Clip's limit of %s" % fmt(float(cfg["limit"])) if over.size and over[0] == first else
           "%s times its early level %s" % (fmt(float(x[first]) / max(early, 1e-12)), fmt(early)))
    return [Finding("attention_logit_growth", INFO,
                    "Watch: the largest attention logit reached %s at step %d (%s); it peaks at %s at step %d. "
                    "Growing attention logits make the attention one-hot and usually come before loss spikes." % (
                        fmt(float(x[first])), pts.step(first), why, fmt(float(x[peak])), pts.step(peak)),
                    pts.tag, (pts.step(first), pts.step(-1)), watch=True,
                    advice="If the loss starts to spike: add QK normalisation (a LayerNorm on queries and keys), "
                    "clip the logits (QK-Clip), lower the learning rate or add weight decay on the attention "
                    "projections.")]


def _grad_rms(run):
    """``(tag, steps, names, rms matrix)``: per-layer gradient RMS ||g|| / sqrt(size) from the per-layer gradient norms
    (debug tier or flight recorder) and the layer sizes of run information; None without either."""
    sizes = (run.info or {}).get("layer_sizes") if isinstance(run.info, dict) else None
    if not isinstance(sizes, dict) or not sizes:
        return None
    series = run.layer_series("layer_grad_norm") or run.layers.get(metadata.FLIGHT_GRAD_NORM_LAYERS)
    if series is None or not series.steps.size:
        return None
    cols = [j for j, n in enumerate(series.layers) if isinstance(sizes.get(n), int) and sizes[n] > 0]
    if not cols:
        return None
    n = np.array([sizes[series.layers[j]] for j in cols], dtype=np.float64)
    return series.tag, series.steps, [series.layers[j] for j in cols], series.values[:, cols] / np.sqrt(n)


@rule("adam_epsilon_dominated", INFO,
      "Adam's update is lr * m / (sqrt(v) + eps) (Kingma and Ba 2015): when a layer's gradient RMS (about sqrt(v)) "
      "falls below eps, eps dominates the denominator and the update shrinks towards lr * m / eps; Wortsman et al. "
      "2023 ('Small-scale proxies for large-scale Transformer training instabilities', the AdamW epsilon) show the "
      "update RMS collapsing there and recommend a smaller eps. MindSpore's AdamWeightDecay defaults to eps = 1e-6. "
      "Watch when layers' median gradient RMS over the last third of the run is below eps",
      "Watch: Adam's epsilon dominates the update of layers whose gradient RMS fell below it (their updates shrink; "
      "learning slows there).",
      min_points=3, tail_frac=1 / 3.0)
def adam_epsilon_dominated(run, cfg):
    info = run.info if isinstance(run.info, dict) else {}
    eps = info.get("optimizer_eps")
    name = str(info.get("optimizer") or "").lower()
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps > 0 or not name.startswith(_ADAM):
        return []
    found = _grad_rms(run)
    if found is None:
        return []
    tag, steps, names, rms = found
    if steps.size < cfg["min_points"]:
        return []
    k = max(1, int(round(steps.size * cfg["tail_frac"])))
    tail = detectors.quiet_nanmedian(np.where(np.isfinite(rms[-k:]), rms[-k:], np.nan), axis=0)
    low = [(n, float(v)) for n, v in zip(names, tail) if np.isfinite(v) and 0 < v < eps]
    if not low:
        return []
    low.sort(key=lambda t: t[1])
    below = rms < eps
    first_row = int(np.argmax(below.any(axis=1))) if below.any() else steps.size - k
    span = (int(steps[first_row]), int(steps[-1]))
    shown = layer_list(["%s (%s)" % (n, fmt(v)) for n, v in low])
    return [Finding("adam_epsilon_dominated", INFO,
                    "Watch: %d layer(s) have a gradient RMS below %s's epsilon %s over the last %d points (%s): "
                    "their updates shrink towards lr * m / eps, so they learn more slowly than the learning rate "
                    "says." % (len(low), info.get("optimizer"), fmt(float(eps)), k, shown),
                    tag, span, layers=tuple(n for n, _ in low), watch=True,
                    advice="Lower eps (1e-8, or 1e-15 as Wortsman et al. do) or scale the loss up.")]
