"""mindformers' (MindSpore Transformers') TensorBoard vocabulary: what each tag its callbacks write means here.

Written through tensorboardX into ``<output>/tensorboard/rank_<k>/`` by ``MFLossMonitor`` (loss, its parts,
learning rate, gradient norm, loss scale, iteration time, throughput, each also as a ``<tag> vs samples`` twin whose
step axis counts samples; tensorboardX turns the spaces into ``_``), ``TrainingStateMonitor`` (per-parameter local
and optimizer-state norms, weight norm, stable rank and top eigenvalue per weight and MoE expert, max attention
logit per head, per-device local norms and losses) and the MoE load balancing (expert load per layer). Per-head and
per-expert values are ``add_scalars`` key folders, folded back into their run (``sources/run_fold.py``) as
``max_attention_logit/<param>/head_<h>`` and ``expert_load/<layer>/ep_<e>``.

Read by ``contract/vocabulary.py`` (tiers, the health rules' quantities, per-parameter families), the page contract
(axis labels and units, the core order) and the ``tags`` route (twins folded into a samples x axis, loss parts).
Imports only the standard library.
"""

import functools
import re

# tag -> (tier, axis label, unit). Tiers by name (metadata's constants are these strings).
CORE, DIAGNOSTIC, DEBUG = "core", "diagnostic", "debug"
TAGS = {
    "loss": (CORE, "loss", ""),
    "lm-loss": (CORE, "language-model loss (part of the loss)", ""),
    "mtp-loss": (CORE, "multi-token-prediction loss (part of the loss)", ""),
    "load-balancing-loss": (CORE, "MoE load-balancing loss (part of the loss)", ""),
    "indexer-loss": (CORE, "sparse-attention indexer loss (part of the loss)", ""),
    "learning-rate": (CORE, "learning rate", ""),
    "grad-norm": (CORE, "gradient L2 norm", ""),
    "loss-scale": (CORE, "loss scale", ""),
    "iteration-time": (CORE, "step time", "ms"),
    "throughput": (CORE, "throughput", "samples/s/device"),
    "batch-size": (CORE, "global batch size", "samples"),
    "B-samples-per-day": (DIAGNOSTIC, "throughput", "billion samples/day"),
    "model-flops-throughput-per-npu": (DIAGNOSTIC, "model FLOPS per device", "TFLOPS"),
    "throughput_linearity": (DIAGNOSTIC, "throughput / baseline", ""),
    "weight_norm": (DIAGNOSTIC, "weight L2 norm", ""),
    "max_attention_logit/mean": (DIAGNOSTIC, "max attention logit (mean over heads)", ""),
    "max_attention_logit/max": (DIAGNOSTIC, "max attention logit (max over heads)", ""),
}
# The loss and the parts it is made of (MFLossMonitor's separate losses).
LOSS_PARTS = ("lm-loss", "mtp-loss", "load-balancing-loss", "indexer-loss")
CORE_ORDER = ("loss",) + LOSS_PARTS + ("learning-rate", "grad-norm", "loss-scale", "iteration-time", "throughput",
                                       "batch-size")

# Per-parameter families (one scalar per parameter, drawn as parameters x steps heatmaps): prefix -> (tier, label).
FAMILIES = {
    "local_norm/": (DEBUG, "local gradient norm"),
    "adam_m_norm/": (DEBUG, "Adam first moment norm"),
    "adam_v_norm/": (DEBUG, "Adam second moment norm"),
    "weight_stable_rank/": (DIAGNOSTIC, "weight stable rank"),
    "weight_eigenvalue/": (DIAGNOSTIC, "weight top eigenvalue"),
}
# Per-layer x per-head / per-expert tables (add_scalars key folders): prefix -> (tier, label, column word).
TABLES = {
    "max_attention_logit/": (DIAGNOSTIC, "max attention logit", "head"),
    "expert_load/": (DIAGNOSTIC, "expert load", "expert"),
}
_TABLE_KEY = re.compile(r"^(?P<row>.+)/(?P<col>(?:head|ep|expert)_?(?P<index>\d+))$")

# Per-device values: drawn per rank in the Cluster section. Exact tags and patterns.
RANK_TAGS = ("device_local_norm", "local_loss", "device_loss")   # the last two: the PyNative trainer's log
RANK_PATTERNS = (re.compile(r"^local_[A-Za-z0-9_]+_loss$"), re.compile(r"^device_accum_local_[A-Za-z0-9_]+_loss$"))

# mindformers' YAML configuration, written as TensorBoard text (``<key>/text_summary``).
TEXT_SUFFIX = "/text_summary"
CONFIG_KEYS = ("lr_schedule", "optimizer", "runner_wrapper", "runner_config", "model", "parallel_config",
               "moe_config", "trainer", "context", "train_dataset")

# "<tag> vs samples" as tensorboardX writes it ("loss_vs_samples") and as written with the space.
_TWIN = re.compile(r"^(?P<tag>.+?)(?:_vs_samples| vs samples)$")


@functools.lru_cache(maxsize=1 << 16)   # the same tags come back for every rank and request
def twin_of(tag):
    """The tag whose samples twin ``tag`` is (``loss_vs_samples`` -> ``loss``), else None."""
    m = _TWIN.match(tag)
    return m.group("tag") if m else None


@functools.lru_cache(maxsize=1 << 16)   # the same tags come back for every rank and request
def is_rank_tag(tag):
    """A per-device value (the Cluster section draws it per rank)."""
    return tag in RANK_TAGS or any(p.match(tag) for p in RANK_PATTERNS)


@functools.lru_cache(maxsize=1 << 16)   # the same tags come back for every rank and request
def table_of(tag):
    """``(prefix, row, column, index)`` of a table cell tag (``max_attention_logit/<param>/head_3``), else None."""
    for prefix in TABLES:
        if tag.startswith(prefix):
            m = _TABLE_KEY.match(tag[len(prefix):])
            if m:
                return prefix, m.group("row"), m.group("col"), int(m.group("index"))
    return None


def config_key(tag):
    """The configuration key of one of mindformers' text tags (``lr_schedule/text_summary`` -> ``lr_schedule``)."""
    if tag.endswith(TEXT_SUFFIX):
        return tag[:-len(TEXT_SUFFIX)]
    return None
