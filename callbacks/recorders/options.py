"""Options grouped by what they switch on: small validated objects that ``TrainMonitor``, ``LoopMonitor`` and the
other entries share::

    TrainMonitor(run_dir, collect_freq=10,
                 debug=Debug(items=["update_ratio"], every=100),
                 eval=Eval(eval_dataset, metrics=["accuracy"], every=500),
                 layers=Layers(include=r"encoder\\.", max=64),
                 health=LiveHealth(on_anomaly="stop"),
                 storage=Storage(max_run_bytes=2 * 10**9))

Each object checks its values when it is built (``ValueError`` / ``TypeError`` with a one-line message), so a typo
fails before training starts. The flat keywords of earlier releases (``debug_freq=``, ``eval_dataset=``,
``layers_include=``, ``live_health=``, ...) still work for one release: :func:`from_keywords` turns them into these
objects with a ``FutureWarning`` that names the new form.
"""

import math
import os
import re
import warnings

from tb_plugin_mindspore.contract.debug_items import NAMES as DEBUG_ITEMS
from tb_plugin_mindspore.writing.writer import check_sizes

from ..cells.layers import DEFAULT_MAX_LAYERS, LayerSelection
from ..common.model_kinds import is_torch_style_module, not_a_cell
from .notify import parse_notify

__all__ = ["Debug", "Diagnostic", "Eval", "Layers", "LiveHealth", "Ranks", "Storage", "ANOMALY_ACTIONS",
           "DEBUG_ITEMS", "LIVE_HEALTH_DEFAULTS", "check_int", "from_keywords"]

# What live health may do when it finds a problem (``on_anomaly=``); "log" (a log line and an event in the run)
# always happens.
ANOMALY_ACTIONS = ("log", "stop", "skip", "checkpoint")
# Live-health thresholds (``LiveHealth(thresholds={...})`` overrides them); the rule thresholds mirror the offline
# rules (see live_health.py), these are the live-only ones.
LIVE_HEALTH_DEFAULTS = {
    "warmup_points": 5,        # core points seen before spikes are judged (the first steps move a lot)
    "grad_factor": None,       # gradient norm this many times the running max = explosion (None: rule's 10)
    "loss_factor": None,       # loss this many times the largest before = spike (None: rule's 10)
    "stall_s": None,           # seconds without a step = stalled (None: 10x the usual interval, at least 120 s)
}


def check_int(name, value, minimum=1, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError("%s must be %san int >= %d, got %r" % (name, "None or " if allow_none else "", minimum, value))
    return value


def _check_path(name, value, allow_none=True):
    if value is None and allow_none:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise ValueError("%s must be a path%s, got %r" % (name, " or None" if allow_none else "", value))
    return str(value)


def _regex(name, pattern):
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except (re.error, TypeError) as e:
        raise ValueError("%s is not a valid regular expression (%r): %s" % (name, pattern, e)) from None


class _Options:
    """Equality and a readable repr from the constructor's fields (``_FIELDS``)."""

    _FIELDS = ()

    def __eq__(self, other):
        return type(self) is type(other) and all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    def __hash__(self):
        return hash(type(self))

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % (f, getattr(self, f)) for f in self._FIELDS))


class Debug(_Options):
    """The debug tier (off by default).

    Args:
      items: debug items to record: a list from :data:`DEBUG_ITEMS` (``update_ratio``, ``layer_grad_norm``,
        ``activations``, ``data_wait``: ``tb_plugin_mindspore.contract.debug_items``), or ``"all"``; default none.
      every: debug points every this many steps.
      activation_samples: samples of the batch used for activation histograms.
      activations_include: regex on cell names selecting the cells whose outputs are histogrammed; default: the
        top-level blocks (children of the network, and of its CellList / SequentialCell containers).
    """

    _FIELDS = ("items", "every", "activation_samples", "activations_include")

    def __init__(self, items=(), every=100, activation_samples=4, activations_include=None):
        self.items = _debug_items(items)
        self.every = check_int("Debug(every=)", every)
        self.activation_samples = check_int("Debug(activation_samples=)", activation_samples)
        _regex("Debug(activations_include=)", activations_include)
        self.activations_include = activations_include

    @classmethod
    def of(cls, value):
        """``debug=``: a :class:`Debug`, or its items alone (a list, ``"all"``, None)."""
        return value if isinstance(value, cls) else cls(items=value)


def _debug_items(debug):
    if debug is None or debug is False:
        return ()
    if debug is True or debug == "all":
        return DEBUG_ITEMS
    if isinstance(debug, str):
        debug = [debug]
    try:
        items = tuple(debug)
    except TypeError:
        raise ValueError("debug must be 'all' or a list of %s, got %r" % (", ".join(DEBUG_ITEMS), debug)) from None
    unknown = [i for i in items if i not in DEBUG_ITEMS]
    if unknown:
        raise ValueError("unknown debug item(s) %s; choose from %s (or 'all')"
                         % (", ".join(repr(u) for u in unknown), ", ".join(DEBUG_ITEMS)))
    return tuple(i for i in DEBUG_ITEMS if i in items)


class Diagnostic(_Options):
    """The diagnostic tier's weight norms.

    Args:
      every: weight norms every this many steps; None: at each epoch end (``LoopMonitor``: every 100 steps).
      weight_norms: record per-layer weight norms and the global weight norm.
    """

    _FIELDS = ("every", "weight_norms")

    def __init__(self, every=None, weight_norms=True):
        self.every = check_int("Diagnostic(every=)", every, allow_none=True)
        if not isinstance(weight_norms, bool):
            raise ValueError("Diagnostic(weight_norms=) must be True or False, got %r" % (weight_norms,))
        self.weight_norms = weight_norms


class Eval(_Options):
    """Evaluation while training (diagnostic tier: ``diagnostic/eval_loss``, ``diagnostic/eval/<metric>``).

    Args:
      dataset: a ``mindspore.dataset`` Dataset to evaluate on.
      metrics: metric names (``"accuracy"``) or ``{name: Metric}``; the loss is always recorded.
      every: evaluate every this many steps; None: at each epoch end.
      model: a ``Model`` to evaluate with; by default one is built from the training network's backbone and loss
        function.
    """

    _FIELDS = ("dataset", "metrics", "every", "model")

    def __init__(self, dataset, metrics=None, every=None, model=None):
        if not hasattr(dataset, "create_tuple_iterator"):
            raise ValueError("Eval(dataset=) must be a mindspore.dataset Dataset, got %r" % (dataset,))
        if model is not None and (not hasattr(model, "eval") or is_torch_style_module(model)):
            raise ValueError(not_a_cell("Eval(model=)", model, "a mindspore.train.Model"))
        self.dataset = dataset
        self.metrics = parse_metrics(metrics)
        self.every = check_int("Eval(every=)", every, allow_none=True)
        self.model = model


def parse_metrics(metrics):
    """``{name: Metric}`` from None, a dict, or names known to ``mindspore.train.get_metric_fn``."""
    from mindspore.train import Metric, get_metric_fn   # lazy: start-up cost (MindSpore's metrics module)

    if metrics is None:
        return {}
    if isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(metrics, dict):
        out = {}
        for name, m in metrics.items():
            if not isinstance(m, Metric):
                raise ValueError("eval_metrics[%r] must be a mindspore.train.Metric, got %r" % (name, m))
            out[str(name)] = m
        return out
    out = {}
    for name in metrics:
        try:
            out[str(name)] = get_metric_fn(name)
        except Exception as e:
            raise ValueError("unknown eval metric %r (%s)" % (name, e)) from None
    return out


class Layers(_Options):
    """Which parameters are the per-layer series' layers (heatmaps, update ratios, per-layer norms).

    Args:
      include: regex on parameter names selecting the layers; default: every parameter with >= 2 dims.
      exclude: regex of parameter names to leave out.
      max: at most this many layers (an evenly spaced subset when more match).
    """

    _FIELDS = ("include", "exclude", "max")

    def __init__(self, include=None, exclude=None, max=DEFAULT_MAX_LAYERS):
        self.selection = LayerSelection(include, exclude, max)
        self.include, self.exclude, self.max = include, exclude, max


class LiveHealth(_Options):
    """Live health: every core point judged while training runs (NaN / Inf, gradient explosion, loss spikes) and a
    watchdog for stalls; ``health=False`` turns it off.

    Args:
      thresholds: overrides of :data:`LIVE_HEALTH_DEFAULTS` (a dict).
      on_anomaly: what happens at a finding besides the log line and the ``_meta/health_event``: ``"stop"``,
        ``"skip"`` (the update of a step whose gradient norm is non-finite or spiking is not applied),
        ``"checkpoint"``, or a tuple of them; default ``("log",)``.
      checkpoint_dir: where ``"checkpoint"`` saves (default ``<logdir>/checkpoints``).
      notify: webhooks each live finding is posted to (``recorders/notify.py``: URLs, ``"env:VAR"``, dicts with
        ``url`` / ``url_env``, ``format``, ``secret``, ``timeout``, ``retries``); also taken from
        ``thresholds["notify"]`` (the previous release's ``live_health={"notify": [...]}``).
    """

    _FIELDS = ("thresholds", "on_anomaly", "checkpoint_dir", "notify")

    def __init__(self, thresholds=None, on_anomaly=("log",), checkpoint_dir=None, notify=None):
        if isinstance(thresholds, dict) and "notify" in thresholds:
            if notify is not None:
                raise ValueError("notify given both as LiveHealth(notify=) and in thresholds; give it once")
            thresholds = dict(thresholds)
            notify = thresholds.pop("notify")
        self.notify = tuple(parse_notify(notify))
        self.thresholds = parse_live_health(True if thresholds is None else thresholds)
        if self.thresholds is None:
            raise ValueError("LiveHealth(thresholds=) must be a dict of thresholds; turn live health off with "
                             "health=False")
        self.on_anomaly = parse_actions(on_anomaly)
        self.checkpoint_dir = _check_path("checkpoint_dir", checkpoint_dir)

    @classmethod
    def of(cls, value):
        """``health=``: a :class:`LiveHealth`, True (the defaults) or False / None (off: returns None)."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, cls):
            return value
        raise ValueError("health must be a LiveHealth(...), True or False, got %r" % (value,))


def parse_actions(on_anomaly):
    """``on_anomaly`` -> a tuple of :data:`ANOMALY_ACTIONS` ("log" always included)."""
    items = [on_anomaly] if isinstance(on_anomaly, str) else on_anomaly
    try:
        items = tuple(items)
    except TypeError:
        items = None
    if not items or any(not isinstance(i, str) or i not in ANOMALY_ACTIONS for i in items):
        raise ValueError("on_anomaly must be one of %s or a tuple of them, got %r"
                         % (", ".join(repr(a) for a in ANOMALY_ACTIONS), on_anomaly))
    return tuple(a for a in ANOMALY_ACTIONS if a == "log" or a in items)


def parse_live_health(live_health):
    """``live_health`` -> None (off) or the thresholds dict (defaults updated by a dict given)."""
    if live_health is False or live_health is None:
        return None
    if live_health is True:
        return dict(LIVE_HEALTH_DEFAULTS)
    if not isinstance(live_health, dict):
        raise ValueError("live_health must be True, False or a dict of thresholds (%s), got %r"
                         % (", ".join(LIVE_HEALTH_DEFAULTS), live_health))
    unknown = sorted(set(live_health) - set(LIVE_HEALTH_DEFAULTS))
    if unknown:
        raise ValueError("unknown live_health threshold(s) %s; choose from %s"
                         % (", ".join(repr(u) for u in unknown), ", ".join(LIVE_HEALTH_DEFAULTS)))
    out = dict(LIVE_HEALTH_DEFAULTS)
    for key, value in live_health.items():
        if key == "warmup_points":
            check_int("live_health['warmup_points']", value, minimum=1)
        elif value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                    or not value > (1 if key.endswith("factor") else 0) or not math.isfinite(value)):
            raise ValueError("live_health[%r] must be None or a number > %d, got %r"
                             % (key, 1 if key.endswith("factor") else 0, value))
        out[key] = value
    return out


class Storage(_Options):
    """Where and how the events are written.

    Args:
      flush_secs: the longest a written value waits in memory before reaching the file (> 0).
      max_queue: values that may wait for the writer thread before new ones are dropped (and counted).
      max_file_bytes / max_run_bytes: event-file rotation size and budget for the run folder (see SummaryWriter).
      registry: ``"auto"`` (``experiments.md`` in the folder that holds the run folder), a file path, or None.
    """

    _FIELDS = ("flush_secs", "max_queue", "max_file_bytes", "max_run_bytes", "registry")

    def __init__(self, flush_secs=2.0, max_queue=10000, max_file_bytes=None, max_run_bytes=None, registry="auto"):
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or not flush_secs > 0:
            raise ValueError("flush_secs must be a number > 0, got %r" % (flush_secs,))
        self.flush_secs = float(flush_secs)
        self.max_queue = check_int("max_queue", max_queue)
        check_sizes(max_file_bytes, max_run_bytes)
        self.max_file_bytes, self.max_run_bytes = max_file_bytes, max_run_bytes
        if registry is not None and not isinstance(registry, (str, os.PathLike)):
            raise ValueError("registry must be 'auto', a file path or None, got %r" % (registry,))
        self.registry = registry


class Ranks(_Options):
    """Which ranks write.

    Args:
      rank: the rank of this process; by default detected at train begin.
      all: also write from ranks other than 0 (each into ``<logdir>/rank<k>``).
    """

    _FIELDS = ("rank", "all")

    def __init__(self, rank=None, all=False):
        self.rank = check_int("rank", rank, minimum=0, allow_none=True)
        self.all = bool(all)


# -- the keywords of earlier releases -------------------------------------------------------------------------------
# old keyword -> (option group, its field)
OLD_KEYWORDS = {
    "flush_secs": ("storage", "flush_secs"), "max_queue": ("storage", "max_queue"),
    "max_file_bytes": ("storage", "max_file_bytes"), "max_run_bytes": ("storage", "max_run_bytes"),
    "registry": ("storage", "registry"),
    "rank": ("ranks", "rank"), "all_ranks": ("ranks", "all"),
    "diagnostic_freq": ("diagnostic", "every"), "weight_norms": ("diagnostic", "weight_norms"),
    "eval_dataset": ("eval", "dataset"), "eval_metrics": ("eval", "metrics"), "eval_freq": ("eval", "every"),
    "eval_model": ("eval", "model"),
    "debug_freq": ("debug", "every"), "activation_samples": ("debug", "activation_samples"),
    "activations_include": ("debug", "activations_include"),
    "layers_include": ("layers", "include"), "layers_exclude": ("layers", "exclude"), "max_layers": ("layers", "max"),
    "live_health": ("health", "thresholds"), "on_anomaly": ("health", "on_anomaly"),
    "checkpoint_dir": ("health", "checkpoint_dir"),
}
GROUPS = {"debug": Debug, "diagnostic": Diagnostic, "eval": Eval, "layers": Layers, "health": LiveHealth,
          "storage": Storage, "ranks": Ranks}


def _shown(value):
    """A value as the warning shows it: itself when short, else ``...``."""
    if value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 40):
        return repr(value)
    if isinstance(value, (tuple, list)) and len(repr(value)) <= 60:
        return repr(value)
    return "..."


def from_keywords(owner, keywords, groups):
    """``groups`` (``{group: object or None}`` as given) with the old flat ``keywords`` folded in, one
    ``FutureWarning`` per group naming the new form; raises TypeError for an unknown keyword and ValueError when a
    group is given both ways. ``debug=`` given as its items (a list or ``"all"``) takes the old debug keywords
    (``debug="all", debug_freq=8`` becomes ``debug=Debug(items="all", every=8)``)."""
    unknown = sorted(k for k in keywords if k not in OLD_KEYWORDS)
    if unknown:
        raise TypeError("%s() got an unexpected keyword argument %r" % (owner, unknown[0]))
    by_group = {}
    for key, value in keywords.items():
        group, field = OLD_KEYWORDS[key]
        by_group.setdefault(group, {})[field] = (key, value)
    out = dict(groups)
    for group, fields in by_group.items():
        old = ", ".join("%s=%s" % (key, _shown(value)) for key, value in fields.values())
        args = {field: value for field, (_, value) in fields.items()}
        given = out.get(group)
        if group == "debug" and given is not None and not isinstance(given, Debug):
            args = dict(items=given, **args)      # debug=[...] with debug_freq= and the like
            old = "debug=%s, %s" % (_shown(given), old)
        elif given is not None:
            raise ValueError("%s(%s) and %s= set the same options; give them in %s=%s(...) only"
                             % (owner, old, group, group, GROUPS[group].__name__))
        if group == "eval" and args.get("dataset") is None:
            if args.get("model") is not None:
                raise ValueError("eval_model was given without an eval_dataset")
            parse_metrics(args.get("metrics"))                       # checked as before, even without a dataset
            check_int("eval_freq", args.get("every"), allow_none=True)
            out[group], new = None, None          # eval_dataset=None (or none given): no evaluation, as before
        elif group == "health" and (args.get("thresholds", True) is False or args.get("thresholds", True) is None):
            if args.get("on_anomaly", "log") not in ("log", ("log",)):
                raise ValueError("on_anomaly=%r needs live_health on (it acts on what live health finds)"
                                 % (args["on_anomaly"],))
            out[group], new = False, "health=False"
        else:
            if group == "health" and args.get("thresholds") is True:
                args.pop("thresholds")
            out[group] = GROUPS[group](**args)
            new = "%s=%s(%s)" % (group, GROUPS[group].__name__,
                                 ", ".join("%s=%s" % (f, _shown(v)) for f, v in args.items()))
        advice = "use %s(%s)" % (owner, new) if new else "leave it out (no evaluation is the default)"
        warnings.warn("%s(%s) is deprecated and will be removed in the next release; %s" % (owner, old, advice),
                      FutureWarning, stacklevel=3)
    return out
