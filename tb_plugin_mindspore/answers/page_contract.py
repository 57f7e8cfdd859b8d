"""The page's part of the data contract, served by the ``contract`` route so the tab copies nothing.

Built from :mod:`..metadata` (tag names, tiers) and the health rules' thresholds (their defaults merged with the
server's health configuration), so a renamed tag or a moved threshold reaches the heatmap marks and the tier hints.
"""

from .. import metadata as md
from ..contract import debug_items
from ..health.rules import RULES
from ..contract import mindformers as mf

CONTRACT_VERSION = 1

TIER_TEXT = {
    md.CORE: ("Core", "Is training progressing? Loss, learning rate, gradient norm, speed.",
              "No core series in these runs. The plugin's training callback, TrainMonitor, records loss, learning "
              "rate, gradient norm, step time and throughput here."),
    md.DIAGNOSTIC: ("Diagnostic", "Is it healthy? Evaluation, weight norms, loss scale.",
                    "No diagnostic series in these runs. TrainMonitor records per-layer weight norms by default "
                    "(diagnostic=Diagnostic(weight_norms=True), at each epoch end or every Diagnostic(every=...) "
                    "steps), and the evaluation loss and metrics when it is given eval=Eval(dataset, "
                    "metrics=[...])."),
    md.DEBUG: ("Debug", "Where does it go wrong? Per-layer and timing detail.",
               'No debug series in these runs. The debug tier is off by default: TrainMonitor(debug="all") records '
               "per-layer update ratios, per-layer gradient norms (with MonitoredTrainCell), activation histograms "
               "and data wait time every 100 steps (Debug(every=...)); or pick items, e.g. "
               'debug=Debug(items=["update_ratio"]).'),
    md.OTHER: ("Other", "Series outside the tier scheme.", None),
}

# Core charts first in the order people read them (a tag's sub-series, e.g. learning_rate/group1, follow it).
TAG_ORDER = (md.LOSS, md.LEARNING_RATE, md.GRAD_NORM, md.LOSS_SCALE, md.OVERFLOW_STEPS, md.STEP_TIME_MS,
             md.THROUGHPUT) + mf.CORE_ORDER

# Per-layer heatmaps in the order people read them: the update ratio leads (the Debug tier's headline), the flight
# recorder's dumps (the steps before an anomaly) come last; others by name in between.
PANELS_FIRST = (md.UPDATE_RATIO_LAYERS, md.GRAD_NORM_LAYERS, md.WEIGHT_NORM_LAYERS)
PANELS_LAST = (md.FLIGHT_GRAD_NORM_LAYERS, md.FLIGHT_NONFINITE_LAYERS)
# One-off values, drawn as points (no line between them, no smoothing): a line through them would read as a trend.
POINT_TAGS = (md.COMPILE_MS,)

# Series of our callbacks a tier usually has; when some are absent the tier says which TrainMonitor option adds them.
EXPECTED = {
    md.DIAGNOSTIC: (
        {"label": "per-layer weight norms", "tags": [md.WEIGHT_NORM_LAYERS], "prefixes": [],
         "option": "diagnostic=Diagnostic(weight_norms=True)"},
        {"label": "evaluation", "tags": [md.EVAL_LOSS], "prefixes": [md.EVAL_METRIC_PREFIX],
         "option": "eval=Eval(dataset, ...)"},
    ),
    md.DEBUG: tuple({"label": item.label, "tags": list(item.tags), "prefixes": list(item.prefixes), "item": item.name}
                    for item in debug_items.ITEMS),
}

# The y axis of each of our series: what is measured and its unit ("" when it has none). Other tags: by suffix.
AXES = {
    md.LOSS: ("loss", ""),
    md.LEARNING_RATE: ("learning rate", ""),
    md.GRAD_NORM: ("gradient L2 norm", ""),
    md.LOSS_SCALE: ("loss scale", ""),
    md.OVERFLOW_STEPS: ("overflow", "steps"),
    md.STEP_TIME_MS: ("step time", "ms"),
    md.THROUGHPUT: ("throughput", "samples/s"),
    md.COMPILE_MS: ("compile time", "ms"),
    md.MONITOR_CPU_MS: ("monitoring's CPU time per step", "ms"),
    md.EVAL_LOSS: ("eval loss", ""),
    md.WEIGHT_NORM_GLOBAL: ("weight L2 norm", ""),
    md.WEIGHT_NORM_LAYERS: ("weight L2 norm", ""),
}
AXES.update({tag: item.axis for item in debug_items.ITEMS if item.axis for tag in item.tags})
AXES.update({tag: (label, unit) for tag, (_, label, unit) in mf.TAGS.items()})   # mindformers' tags
# Reference lines drawn on a chart from another series of the same run: the edge-of-stability line (2/lr for SGD,
# 38/lr for Adam's preconditioned sharpness; Cohen et al. 2021, 2022) on the sharpness charts.
REFERENCES = {
    md.SHARPNESS: (md.SHARPNESS_THRESHOLD, "stability line"),
    md.SHARPNESS_PRECONDITIONED: (md.SHARPNESS_THRESHOLD, "stability line"),
}

UNIT_SUFFIXES = (("_ms", "ms"), ("_sec", "s"), ("_seconds", "s"), ("_bytes", "bytes"))

# Where the update-ratio marks of the heatmap come from: the rule and threshold of each mark.
_MARK_RULES = {"slow": ("layer_not_learning", "low"), "fast": ("layer_too_fast", "high")}
HEALTHY_UPDATE_RATIO = 1e-3  # centre of the colour scale (CS231n's rule of thumb, as the layer rules cite)


def rule_thresholds(config=None):
    """``{rule id: {threshold: value}}``: every rule's defaults with the configuration's overrides."""
    out = {}
    for r in RULES:
        merged = dict(r.defaults)
        for key, value in ((config or {}).get(r.id) or {}).items():
            if key in merged and isinstance(merged[key], (int, float)) and not isinstance(merged[key], bool):
                merged[key] = float(value)
        out[r.id] = merged
    return out


def build(config=None):
    """The JSON answer of the ``contract`` route."""
    thresholds = rule_thresholds(config)
    marks = {name: float(thresholds[rule][key]) for name, (rule, key) in _MARK_RULES.items()}
    return {
        "version": CONTRACT_VERSION,
        "tiers": [{"id": t, "title": TIER_TEXT[t][0], "subtitle": TIER_TEXT[t][1], "empty_note": TIER_TEXT[t][2]}
                  for t in md.TIERS],
        "tag_order": list(TAG_ORDER),
        "panel_order": {"first": list(PANELS_FIRST), "last": list(PANELS_LAST)},
        "point_tags": list(POINT_TAGS),
        "expected": {tier: [dict(e) for e in items] for tier, items in EXPECTED.items()},
        "axes": {tag: {"label": label, "unit": unit} for tag, (label, unit) in AXES.items()},
        "unit_suffixes": [{"suffix": s, "unit": u} for s, u in UNIT_SUFFIXES],
        "references": {tag: {"tag": ref, "label": label} for tag, (ref, label) in REFERENCES.items()},
        "update_ratio": {"healthy": HEALTHY_UPDATE_RATIO, "slow": marks["slow"], "fast": marks["fast"],
                         "rules": {name: rule for name, (rule, _) in _MARK_RULES.items()}},
    }
