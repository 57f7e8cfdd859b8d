"""The data contract of the MindSpore plugin: names, tiers, tags, summary metadata.

Both the writer side (``callbacks``, ``summary.py``) and the reader side (``plugin.py``, ``reading/``) import
this module; no other module defines a tag name or a metadata format.

Layout of what we write
-----------------------
* **Scalars** use TensorBoard's own scalar format (``simple_value``, plugin ``scalars``) so that the stock Scalars
  tab, ``EventAccumulator`` and ``tbparse`` read them. Their tags carry the tier: ``core/loss``,
  ``diagnostic/eval/accuracy``, ``debug/data_wait_ms``.
* **Interval statistics** of a scalar (min / mean / max / count / non-finite count of every step between two
  recorded points) are a tensor of our plugin under ``interval/<scalar tag>``; they let the dashboard draw a band and
  keep a spike that fell between two recorded steps.
* **Per-layer vectors** (one value per layer and step: update ratio, gradient norm, weight norm) are a tensor of
  our plugin; the layer names are in the metadata content.
* **Run information** (format version, rank, configuration) is a JSON string tensor under ``_meta/run_info``.

Every series we write has ``data_class`` set; every plugin content holds ``{"version": CONTENT_VERSION, ...}``.
This module imports only the standard library at import time (it is reached from the TensorBoard entry point).
"""

import json
import re

PLUGIN_NAME = "mindspore"
TAB_NAME = "MindSpore"
# Bump when the content written by the callbacks changes incompatibly; readers accept <= this version.
CONTENT_VERSION = 1

# ---------------------------------------------------------------------------------------------------------------
# Tiers
CORE = "core"
DIAGNOSTIC = "diagnostic"
DEBUG = "debug"
OTHER = "other"
TIERS = (CORE, DIAGNOSTIC, DEBUG, OTHER)

# ---------------------------------------------------------------------------------------------------------------
# Tags written by our callbacks. Names only here; the callbacks and the reader import them.
LOSS = "core/loss"
LEARNING_RATE = "core/learning_rate"          # per group: core/learning_rate/group<i>
GRAD_NORM = "core/grad_norm"                  # global L2 norm of all gradients, before clipping
LOSS_SCALE = "core/loss_scale"
OVERFLOW_STEPS = "core/overflow_steps"        # steps skipped by a loss-scale cell in the interval
STEP_TIME_MS = "core/step_time_ms"
THROUGHPUT = "core/throughput"                # samples per second
# One-off time not counted in step time: the first step (graph compilation) and the first debug point (monitoring
# graphs compiled once), written at the step where it was spent.
COMPILE_MS = "core/compile_ms"
# The CPU time per step that the monitor's own hooks took on the training thread since the previous core point (the
# user's evaluation left out): what monitoring costs, in a unit that other processes on the machine do not inflate.
MONITOR_CPU_MS = "core/monitor_cpu_ms"
# The process's CPU time per step since the previous core point (every thread): a step time that rises while this
# stays comes from other processes on the machine.
STEP_CPU_MS = "core/step_cpu_ms"

EVAL_LOSS = "diagnostic/eval_loss"
EVAL_METRIC_PREFIX = "diagnostic/eval/"       # diagnostic/eval/<metric name>
WEIGHT_NORM_GLOBAL = "diagnostic/weight_norm"
WEIGHT_NORM_LAYERS = "diagnostic/layer_weight_norm"     # per-layer vector
# Sharpness on a fixed probe batch (tb_mindspore_callbacks.sharpness): the Hessian's top eigenvalue, Hutchinson's
# trace, Adam's preconditioned top eigenvalue, the optimizer's edge-of-stability line (2/lr for SGD, Cohen et al.
# 2021; 38/lr for Adam with beta1 = 0.9, Cohen et al. 2022) and the watched value divided by that line.
SHARPNESS = "diagnostic/sharpness/top_eigenvalue"
HESSIAN_TRACE = "diagnostic/sharpness/hessian_trace"
SHARPNESS_PRECONDITIONED = "diagnostic/sharpness/preconditioned"
SHARPNESS_THRESHOLD = "diagnostic/sharpness/stability_threshold"
SHARPNESS_RATIO = "diagnostic/sharpness/stability_ratio"

UPDATE_RATIO_LAYERS = "debug/update_ratio"    # per-layer vector ||w_after - w_before|| / ||w_before||
GRAD_NORM_LAYERS = "debug/layer_grad_norm"    # per-layer vector
ACTIVATION_PREFIX = "debug/activation/"       # debug/activation/<layer>: histograms
DATA_WAIT_MS = "debug/data_wait_ms"
# The largest attention logit q.k/sqrt(d) of the network's attention blocks on a few samples (debug item
# "attention_logits"): over every block, and per block (a per-layer vector named by the block).
ATTENTION_MAX_LOGIT = "debug/attention/max_logit"
ATTENTION_MAX_LOGIT_LAYERS = "debug/attention/max_logit_layers"

# Memory of the training process (core tier, at every core point): host resident set size, and the device memory
# MindSpore's allocator holds where the backend reports it (nothing on CPU).
HOST_MEMORY_MB = "core/host_memory_mb"
DEVICE_MEMORY_MB = "core/device_memory_mb"
# Per-rank statistics (tb_mindspore_callbacks.rank_stats; reading/cluster.py): one small file per rank in the run
# folder's CLUSTER_DIR, ``rank<k>`` + RANK_FILE_SUFFIX, not an event file (format: rank_file.py).
CLUSTER_DIR = "cluster"
RANK_FILE_SUFFIX = ".tbmsrank"
# ``host_load``: the node's load average over its CPU count at the row (above 1: more runnable threads than CPUs, so
# the ranks sharing that node run unevenly); appended later: files without it read as NaN.
RANK_FIELDS = ("step_time_ms", "data_wait_ms", "loss", "grad_norm", "host_memory_mb", "device_memory_mb",
               "device_limit_mb", "host_load")

RUN_INFO = "_meta/run_info"
INTERVAL_PREFIX = "interval/"

# Kinds of our own plugin's series (the "kind" field of the plugin content).
KIND_INTERVAL = "interval"
KIND_LAYERS = "layers"
KIND_RUN_INFO = "run_info"
KINDS = (KIND_INTERVAL, KIND_LAYERS, KIND_RUN_INFO)
# Appended for MindSpore's own summary data (``tb-mindspore convert``): a loss landscape as one JSON string tensor
# (the dict of ``sources.ms_files.landscape_dict``), and a TensorSummary tensor with its MindSpore dtype.
KIND_LANDSCAPE = "landscape"
KIND_TENSOR = "tensor"
KINDS = KINDS + (KIND_LANDSCAPE, KIND_TENSOR)
# Live health (issue 16): one JSON string tensor per event found while training, at the step it was detected
# (fields: HEALTH_EVENT_FIELDS), and the run's end marker (RUN_END_FIELDS). Builders and decoders below.
HEALTH_EVENT = "_meta/health_event"
RUN_END = "_meta/run_end"
KIND_HEALTH_EVENT = "health_event"
KIND_RUN_END = "run_end"
KINDS = KINDS + (KIND_HEALTH_EVENT, KIND_RUN_END)
# Flight recorder dumps: per-layer vectors (KIND_LAYERS) of the steps before an anomaly, at their real steps.
FLIGHT_GRAD_NORM_LAYERS = "debug/flight/layer_grad_norm"
FLIGHT_NONFINITE_LAYERS = "debug/flight/layer_nonfinite"

# Order of the values in an interval tensor.
INTERVAL_FIELDS = ("min", "mean", "max", "count", "nonfinite")


def learning_rate_group_tag(group_index):
    return "%s/group%d" % (LEARNING_RATE, group_index)


def interval_tag(scalar_tag):
    """Tag of the interval statistics that belong to ``scalar_tag``."""
    return INTERVAL_PREFIX + scalar_tag


def scalar_tag_of_interval(tag):
    """Inverse of :func:`interval_tag`; ``None`` if ``tag`` is not an interval tag."""
    if tag.startswith(INTERVAL_PREFIX):
        return tag[len(INTERVAL_PREFIX):]
    return None


# ---------------------------------------------------------------------------------------------------------------
# Tier classification of tags from anywhere (ours, mindformers', MindSpore SummaryCollector's, plain user tags) is
# ``contract.vocabulary.tier_of``: the patterns live in that one table of tag vocabularies, which names our tags
# from here (README "How tags are sorted into tiers").


def display_name(tag):
    """Short label for a chart: our tier prefix removed, MindSpore's ``/auto`` and ``[:Scalar]`` cleaned up."""
    for prefix in (CORE + "/", DIAGNOSTIC + "/", DEBUG + "/"):
        if tag.startswith(prefix):
            return tag[len(prefix):]
    cleaned = re.sub(r"\[:(Scalar|Tensor|Histogram|Image)\]$", "", tag)
    cleaned = re.sub(r"/auto$", "", cleaned)
    return cleaned


# ---------------------------------------------------------------------------------------------------------------
# Plugin content (bytes in SummaryMetadata.plugin_data.content): UTF-8 JSON.
class ContentError(ValueError):
    """Plugin content that this version cannot read."""


# The contents made last, by their arguments: a writer makes the same few (one per tag) at every point, and the
# JSON encoding was most of the cost of building a value on the writer thread.
_CONTENTS = {}
_CONTENTS_MAX = 512


def _frozen(value):
    """A hashable stand-in for a content field (lists of names, nested dicts), or None when there is none."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return (type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        items = tuple(_frozen(v) for v in value)
        return None if None in items else ("list", items)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        items = tuple((k, _frozen(value[k])) for k in sorted(value))
        return None if any(v is None for _, v in items) else ("dict", items)
    return None


def make_content(kind, **fields):
    if kind not in KINDS:
        raise ValueError("unknown kind %r (expected one of %s)" % (kind, ", ".join(KINDS)))
    key = _frozen(dict(fields, kind=kind))
    found = _CONTENTS.get(key) if key is not None else None
    if found is not None:
        return found
    body = {"version": CONTENT_VERSION, "kind": kind}
    body.update(fields)
    content = json.dumps(body, sort_keys=True).encode("utf-8")
    if key is not None:
        if len(_CONTENTS) >= _CONTENTS_MAX:
            _CONTENTS.clear()
        _CONTENTS[key] = content
    return content


# Deepest nesting of JSON that readers accept (ours is at most 4 deep); deeper text is refused as hostile before
# Python's recursion limit can turn it into a RecursionError in a route.
MAX_JSON_DEPTH = 64


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth(text, stop=None):
    """The deepest nesting of arrays / objects in JSON ``text`` (brackets inside strings do not count); counting
    ends as soon as the depth passes ``stop``."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    depth = best = 0
    for ch in brackets:
        depth += 1 if ch in "[{" else -1
        if depth > best:
            best = depth
            if stop is not None and best > stop:
                break
    return best


def json_depth_exceeds(text, limit=MAX_JSON_DEPTH):
    """Whether ``text`` nests deeper than ``limit`` (cheap when it has few brackets)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    return json_depth(text, stop=limit) > limit


def loads_json(text, what="JSON", limit=MAX_JSON_DEPTH):
    """``json.loads`` for text from files: raises ContentError (a ValueError) for anything unreadable, including
    nesting deeper than ``limit`` (never RecursionError or MemoryError)."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ContentError("%s is not UTF-8: %s" % (what, e))
    if not isinstance(text, str):
        raise ContentError("%s is not text (%s)" % (what, type(text).__name__))
    if json_depth_exceeds(text, limit):
        raise ContentError("%s nests deeper than %d levels; refused" % (what, limit))
    try:
        return json.loads(text)
    except (ValueError, RecursionError, MemoryError) as e:
        raise ContentError("%s is not JSON: %s" % (what, str(e)[:200]))


def parse_content(content):
    """Parses plugin content written by any version of the callbacks; raises ContentError if unreadable."""
    body = loads_json(content, "plugin content") if content else {}
    if not isinstance(body, dict):
        raise ContentError("plugin content is not a JSON object")
    version = body.get("version")
    if not isinstance(version, int) or version < 1:
        raise ContentError("plugin content has no valid version: %r" % (version,))
    if version > CONTENT_VERSION:
        raise ContentError(
            "written by a newer tb-plugin-mindspore (content version %d > %d); upgrade the plugin"
            % (version, CONTENT_VERSION)
        )
    if body.get("kind") not in KINDS:
        raise ContentError("unknown kind %r" % (body.get("kind"),))
    return body


def create_summary_metadata(kind, description="", **fields):
    """SummaryMetadata for one of our plugin's series (data_class TENSOR). Imports protobuf lazily."""
    from tensorboard.compat.proto import summary_pb2

    return summary_pb2.SummaryMetadata(
        summary_description=description,
        plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name=PLUGIN_NAME, content=make_content(kind, **fields)
        ),
        data_class=summary_pb2.DATA_CLASS_TENSOR,
    )


# ---------------------------------------------------------------------------------------------------------------
# Live health events and the run end marker (JSON string tensors under HEALTH_EVENT / RUN_END).
HEALTH_EVENT_FIELDS = ("rule", "severity", "step", "first_step", "message", "advice", "layers", "action",
                       "checkpoint", "source")
HEALTH_SEVERITIES = ("error", "warning")
HEALTH_ACTIONS = ("none", "stopped", "skipped_update", "checkpoint")
RUN_END_FIELDS = ("status", "step", "wall_time", "reason")
RUN_END_STATUSES = ("finished", "stopped", "interrupted", "failed")


def health_event(rule, severity, step, first_step=None, message="", advice="", layers=(), action="none",
                 checkpoint=None, source="live"):
    """The JSON object of one live health event (raises ValueError on a bad severity or action)."""
    if severity not in HEALTH_SEVERITIES:
        raise ValueError("severity must be one of %s, got %r" % (", ".join(HEALTH_SEVERITIES), severity))
    if action not in HEALTH_ACTIONS:
        raise ValueError("action must be one of %s, got %r" % (", ".join(HEALTH_ACTIONS), action))
    return {"rule": str(rule), "severity": severity, "step": int(step),
            "first_step": int(step if first_step is None else first_step), "message": str(message),
            "advice": str(advice), "layers": [str(n) for n in layers], "action": action,
            "checkpoint": None if checkpoint is None else str(checkpoint), "source": str(source)}


def decode_health_event(obj):
    """A health event as written by any version (text or dict) -> dict with every field of HEALTH_EVENT_FIELDS;
    raises ContentError when it is not one."""
    if not isinstance(obj, dict):
        obj = loads_json(obj, "the health event")
    if not isinstance(obj, dict) or not isinstance(obj.get("rule"), str) or not obj["rule"]:
        raise ContentError("a health event needs a rule name")
    try:
        step = int(obj.get("step"))
        first = int(obj.get("first_step", step))
    except (TypeError, ValueError):
        raise ContentError("a health event needs an integer step")
    layers = obj.get("layers") or []
    return {"rule": obj["rule"], "severity": "warning" if obj.get("severity") == "warning" else "error",
            "step": step, "first_step": min(first, step), "message": str(obj.get("message") or ""),
            "advice": str(obj.get("advice") or ""),
            "layers": [str(n) for n in layers] if isinstance(layers, list) else [],
            "action": obj.get("action") if obj.get("action") in HEALTH_ACTIONS else "none",
            "checkpoint": obj.get("checkpoint") if isinstance(obj.get("checkpoint"), str) else None,
            "source": str(obj.get("source") or "live")}


def run_end(status, step, wall_time, reason=""):
    """The JSON object of the run end marker (raises ValueError on an unknown status)."""
    if status not in RUN_END_STATUSES:
        raise ValueError("status must be one of %s, got %r" % (", ".join(RUN_END_STATUSES), status))
    return {"status": status, "step": int(step), "wall_time": float(wall_time), "reason": str(reason or "")}


def decode_run_end(obj):
    """A run end marker (text or dict) -> dict with RUN_END_FIELDS; raises ContentError when it is not one."""
    if not isinstance(obj, dict):
        obj = loads_json(obj, "the run end marker")
    if not isinstance(obj, dict) or obj.get("status") not in RUN_END_STATUSES:
        raise ContentError("a run end marker needs a status among %s" % ", ".join(RUN_END_STATUSES))
    try:
        step = int(obj.get("step"))
        wall = float(obj.get("wall_time") or 0.0)
    except (TypeError, ValueError):
        raise ContentError("a run end marker needs an integer step")
    return {"status": obj["status"], "step": step, "wall_time": wall, "reason": str(obj.get("reason") or "")}
