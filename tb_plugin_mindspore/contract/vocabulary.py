"""The one table of tag vocabularies: our tags, mindformers', MindSpore SummaryCollector's and common plain names.

Three readers use it, so a tag learnt once is known everywhere:

* tiering (:func:`tier_of`): :func:`tier_rules`, first match wins (README "How tags are sorted into tiers");
* the health rules' quantities (``health/series.py``): :data:`ALIASES` (quantity -> tags, tried in order: ours,
  then mindformers', SummaryCollector's, plain names) and :data:`LAYER_ALIASES` (per-layer quantity -> our vector
  tags and the prefixes of per-layer scalar families);
* the dashboard's per-parameter families drawn as heatmaps (``answers/layers.py``): :data:`FAMILY_PREFIXES`.

Sources: the Hugging Face Trainer's logs (``train/loss``, ``train/learning_rate``, ``train/grad_norm``, ``eval/*``
and its bookkeeping; :func:`same_as` maps its quantities onto ours), mindformers' TensorBoard tags (``loss``, ``learning-rate``, ``grad-norm``, ``loss-scale``, ``throughput``
and their "vs samples" twins; ``local_norm/<param>``, ``adam_m_norm/<param>``, ``adam_v_norm/<param>``), MindSpore's
``SummaryCollector`` (``loss/auto``; parameter histograms ``<param>/auto``). Imports only the standard library.
"""

import re

from .. import metadata as md
from . import mindformers as mf

OURS = "ours"
MINDFORMERS = "mindformers"
SUMMARY_COLLECTOR = "summary_collector"
HUGGINGFACE = "huggingface"
PLAIN = "plain"
SOURCES = (OURS, MINDFORMERS, SUMMARY_COLLECTOR, HUGGINGFACE, PLAIN)

# Quantity -> the tags that carry it, per source. The health rules try them in SOURCES order.
QUANTITIES = {
    "loss": {OURS: (md.LOSS,), MINDFORMERS: ("loss",), SUMMARY_COLLECTOR: ("loss/auto",),
             HUGGINGFACE: ("train/loss",), PLAIN: ("train_loss", "Loss", "train/Loss")},
    "grad_norm": {OURS: (md.GRAD_NORM,), MINDFORMERS: ("grad-norm",), HUGGINGFACE: ("train/grad_norm",),
                  PLAIN: ("grad_norm", "global_norm", "gradient_norm", "train/gradient_norm", "optim/grad_norm")},
    "learning_rate": {OURS: (md.LEARNING_RATE,), MINDFORMERS: ("learning-rate",),
                      HUGGINGFACE: ("train/learning_rate",),
                      PLAIN: ("learning_rate", "lr", "train/lr", "optim/lr", "lr/group0")},
    "loss_scale": {OURS: (md.LOSS_SCALE,), MINDFORMERS: ("loss-scale",), PLAIN: ("loss_scale", "train/loss_scale")},
    "overflow_steps": {OURS: (md.OVERFLOW_STEPS,), PLAIN: ("overflow_steps", "train/overflow_steps")},
    "eval_loss": {OURS: (md.EVAL_LOSS,), HUGGINGFACE: ("eval/loss",),
                  PLAIN: ("eval_loss", "eval-loss", "eval loss", "val_loss", "val/loss", "valid/loss",
                          "validation/loss", "validation_loss", "test/loss", "test_loss")},
    "step_time_ms": {OURS: (md.STEP_TIME_MS,), MINDFORMERS: ("iteration-time",),
                     PLAIN: ("step_time_ms", "step-time", "step_time", "perf/step_time_ms", "timing/step_time_ms",
                             "train/step_time_ms")},
    "throughput": {OURS: (md.THROUGHPUT,), MINDFORMERS: ("throughput",),
                   PLAIN: ("samples_per_second", "perf/throughput", "train/throughput")},
    "monitor_cpu_ms": {OURS: (md.MONITOR_CPU_MS,)},
    "data_wait_ms": {OURS: (md.DATA_WAIT_MS,),
                     PLAIN: ("data_wait_ms", "data/wait_ms", "timing/data_wait_ms", "perf/data_wait_ms")},
    "weight_norm": {OURS: (md.WEIGHT_NORM_GLOBAL,), MINDFORMERS: ("weight_norm",), PLAIN: ("weights/norm",)},
    "sharpness": {OURS: (md.SHARPNESS,)},
    "sharpness_adam": {OURS: (md.SHARPNESS_PRECONDITIONED,)},
    "sharpness_threshold": {OURS: (md.SHARPNESS_THRESHOLD,)},
    "sharpness_ratio": {OURS: (md.SHARPNESS_RATIO,)},
    # The largest attention logit (our probe's debug item "attention_logits"; mindformers and Megatron-LM log it for
    # QK-Clip as max_attention_logit).
    "max_attention_logit": {OURS: (md.ATTENTION_MAX_LOGIT,), MINDFORMERS: ("max_attention_logit",),
                            PLAIN: ("max_attention_logits", "attention/max_logit", "max-attention-logit")},
}

# Per-layer quantity -> our per-layer vector tags, and per source the prefixes of families of per-layer scalars
# (``<prefix><layer name>``).
LAYER_QUANTITIES = {
    "update_ratio": ((md.UPDATE_RATIO_LAYERS,), {OURS: ("debug/update_ratio/",), PLAIN: ("update_ratio/",)}),
    "layer_grad_norm": ((md.GRAD_NORM_LAYERS,), {OURS: ("debug/layer_grad_norm/",), MINDFORMERS: ("local_norm/",),
                                                 HUGGINGFACE: ("grad_norm/",), PLAIN: ("grads/norm/",)}),
    "layer_weight_norm": ((md.WEIGHT_NORM_LAYERS,), {OURS: ("diagnostic/layer_weight_norm/",),
                                                     PLAIN: ("weight_norm/", "weights/norm/")}),
}

# Per-parameter families (one scalar tag per parameter), drawn by the dashboard as heatmaps: mindformers'
# (contract/mindformers.py: local_norm/, adam_m_norm/, adam_v_norm/, weight_stable_rank/, weight_eigenvalue/) and
# per-layer gradient norms logged by hand from a Hugging Face-style training (grad_norm/<named_parameters() name>).
HF_FAMILY_PREFIXES = ("grad_norm/",)
FAMILY_PREFIXES = tuple(mf.FAMILIES) + HF_FAMILY_PREFIXES

# The Hugging Face Trainer's logs (transformers' TensorBoardCallback, or its log dict: ``train/`` before every key
# but ``eval_*`` -> ``eval/*``). Its quantities are ours, drawn in our charts (:func:`same_as`); its bookkeeping
# (epoch, FLOPs, run-level summaries, evaluation timing) goes to the Other tier, out of Core.
HF_BOOKKEEPING = ("train/epoch", "train/total_flos", "train/train_runtime", "train/train_samples_per_second",
                  "train/train_steps_per_second", "train/train_loss", "train/num_input_tokens_seen",
                  "eval/epoch", "eval/runtime", "eval/samples_per_second", "eval/steps_per_second",
                  "test/runtime", "test/samples_per_second", "test/steps_per_second")
# Their eval metrics (``eval/<metric>``) are ours too: ``diagnostic/eval/<metric>``.
_HF_EVAL_PREFIX = "eval/"
# mindformers' other per-parameter scalars (debug tier, not drawn as a family).
_MINDFORMERS_DEBUG_PREFIXES = ("local_loss/",)


def _same_as_table():
    out = {}
    for quantity, by_source in QUANTITIES.items():
        for tag in by_source.get(HUGGINGFACE, ()):
            out[tag] = by_source[OURS][0]
    return out


_SAME_AS = None


def same_as(tag):
    """Our tag of the same quantity for a Hugging Face Trainer tag (``train/loss`` -> ``core/loss``,
    ``eval/accuracy`` -> ``diagnostic/eval/accuracy``), else None: the dashboard draws it in that chart."""
    global _SAME_AS
    if _SAME_AS is None:
        _SAME_AS = _same_as_table()
    if tag in _SAME_AS:
        return _SAME_AS[tag]
    if tag.startswith(_HF_EVAL_PREFIX) and tag not in HF_BOOKKEEPING and "/" not in tag[len(_HF_EVAL_PREFIX):] \
            and len(tag) > len(_HF_EVAL_PREFIX):
        return md.EVAL_METRIC_PREFIX + tag[len(_HF_EVAL_PREFIX):]
    return None


def aliases(quantity):
    """The tags of ``quantity`` in the order the health rules try them."""
    by_source = QUANTITIES[quantity]
    return tuple(t for source in SOURCES for t in by_source.get(source, ()))


def layer_prefixes(quantity):
    """The per-layer family prefixes of a per-layer ``quantity``, in SOURCES order."""
    by_source = LAYER_QUANTITIES[quantity][1]
    return tuple(p for source in SOURCES for p in by_source.get(source, ()))


ALIASES = {q: aliases(q) for q in QUANTITIES}
LAYER_ALIASES = {q: (vectors, layer_prefixes(q)) for q, (vectors, _) in LAYER_QUANTITIES.items()}


def _names(prefixes):
    return "|".join(re.escape(p.rstrip("/")) for p in prefixes)


def tier_rules():
    """``((compiled pattern, tier, source), ...)``: the tier of a tag from anywhere; first match wins."""
    twin = r"(_vs_samples| vs samples)?$"
    by_tier = {}
    for tag, (tier, _, _) in mf.TAGS.items():
        by_tier.setdefault(tier, []).append(re.escape(tag))
    mf_rules = tuple((r"^(%s)%s" % ("|".join(tags), twin), tier, MINDFORMERS, 0) for tier, tags in by_tier.items())
    mf_rules += tuple((r"^%s" % re.escape(prefix), tier, MINDFORMERS, 0)
                      for prefix, (tier, _) in list(mf.FAMILIES.items()) + [(p, t[:2]) for p, t in mf.TABLES.items()])
    mf_rules += tuple((p.pattern, md.DEBUG, MINDFORMERS, 0) for p in mf.RANK_PATTERNS)
    mf_rules += ((r"^(%s)$" % "|".join(re.escape(t) for t in mf.RANK_TAGS), md.DEBUG, MINDFORMERS, 0),)
    rules = (
        # Our own scheme.
        (r"^core/", md.CORE, OURS, 0),
        (r"^diagnostic/", md.DIAGNOSTIC, OURS, 0),
        (r"^debug/", md.DEBUG, OURS, 0),
        # The Hugging Face Trainer's bookkeeping (out of Core), before mindformers' eval rule and the plain train/ and
        # eval/ rules.
        (r"^(%s)$" % "|".join(re.escape(t) for t in HF_BOOKKEEPING), md.OTHER, HUGGINGFACE, 0),
        (r"^train/(loss|learning_rate|grad_norm)$", md.CORE, HUGGINGFACE, 0),
        (r"^(%s)/" % _names(HF_FAMILY_PREFIXES), md.DEBUG, HUGGINGFACE, 0),
        # mindformers' TensorBoard tags (and their "... vs samples" twins; contract/mindformers.py).
    ) + mf_rules + (
        (r"^(eval[-_ ]?loss|eval[-_/].*)( vs samples|_vs_samples)?$", md.DIAGNOSTIC, MINDFORMERS, 0),
        (r"^(%s)/" % _names(_MINDFORMERS_DEBUG_PREFIXES), md.DEBUG, MINDFORMERS, 0),
        # MindSpore SummaryCollector: loss/auto; parameter histograms are <param>/auto (weight distributions).
        (r"^loss/auto$", md.CORE, SUMMARY_COLLECTOR, 0),
        # Plain user tags by prefix or name.
        (r"^(train[/_])?(loss|lr|learning_rate|grad_norm|gradient_norm)$", md.CORE, PLAIN, re.I),
        (r"^(train|lr|learning_rate|optim|optimizer)/", md.CORE, PLAIN, re.I),
        (r"^(eval|val|valid|validation|test|metrics?|weights?)[/_]", md.DIAGNOSTIC, PLAIN, re.I),
        (r"^(eval|val|validation)_?(loss|acc|accuracy)$", md.DIAGNOSTIC, PLAIN, re.I),
        (r"^(activations?|grads?|gradients?|layers?|update_ratio|timing|data|perf)[/_]", md.DEBUG, PLAIN, re.I),
    )
    return tuple((re.compile(pattern, flags), tier, source) for pattern, tier, source, flags in rules)


_TIER_RULES = tier_rules()


def tier_of(tag):
    """The dashboard tier of a scalar tag; unknown tags go to ``metadata.OTHER`` (never dropped)."""
    for pattern, tier, _source in _TIER_RULES:
        if pattern.search(tag):
            return tier
    return md.OTHER
