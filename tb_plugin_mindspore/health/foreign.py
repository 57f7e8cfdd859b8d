"""What other writers say about a run, for the health rules: mindformers' configuration and files (MindSpore's closed
summary files are ``health/sources.ms_files_closed``).

* **mindformers' configuration** (its YAML, written as TensorBoard text ``<key>/text_summary`` by
  ``write_args_to_tensorboard``, each value a Python ``repr``): ``lr_schedule`` becomes the run's declared learning
  rate intent (``run.info["lr_config"]``: a schedule such as ``CosineWithWarmUpLR``, or a constant), the
  ``runner_wrapper``'s ``use_clip_grad`` / ``max_grad_norm`` its gradient clipping (``run.info["grad_clip"]``), so
  the learning-rate rules read what the user configured and advice never asks a run that clips to add clipping.
* **mindformers' files** (``sources/mindformers_files.py``): ``abnormal_global_norm.json`` (the steps where
  mindformers stopped the training for its global norm), ``health_ckpts.json`` (healthy / unhealthy checkpoints),
  ``meta.json`` (the last checkpoint; one at the last recorded step means the training ended there), in
  ``run.info["mindformers"]``.

:func:`enrich` fills these in after the series are read; :func:`advise` adds to the findings what they change (the
last healthy checkpoint before a problem, clipping that is already on).
"""

import logging
import re

from ..sources import config_texts, mindformers_files

logger = logging.getLogger(__name__)

TEXT_PLUGIN = "text"
_CONFIG_TAGS = ("lr_schedule/text_summary", "runner_wrapper/text_summary", "optimizer/text_summary")
_ADD_CLIPPING = re.compile(r"\b([Aa])dd gradient clipping(?: \((?:[^()]|\([^()]*\))*\))?")
MAX_TEXT = 1 << 20


def parse_repr(text):
    """A Python literal written with ``str(dict)`` or JSON (mindformers' text values; ``sources/config_texts.py``
    reads them, keeping the literal pairs of a dict that holds objects), or None when it is neither."""
    if not isinstance(text, (str, bytes)) or len(text) > MAX_TEXT:
        return None
    value = config_texts.parse_text(text)
    return None if isinstance(value, str) else value


def lr_config(schedule):
    """``run.info["lr_config"]`` of a mindformers ``lr_schedule`` dict: ``{"kind": "schedule" | "constant", "class",
    "source": "mindformers"}``, or None."""
    if not isinstance(schedule, dict):
        return None
    cls = str(schedule.get("type") or "")
    warm = any(isinstance(schedule.get(k), (int, float)) and not isinstance(schedule.get(k), bool)
               and schedule.get(k) > 0 for k in ("warmup_steps", "warmup_ratio", "warmup_epochs"))
    constant = "constant" in cls.lower() and not warm
    return {"kind": "constant" if constant else "schedule", "class": cls or None, "source": "mindformers",
            "value": schedule.get("learning_rate")}


def grad_clip(wrapper):
    """``{"enabled": bool, "max_norm": float | None, "source": "mindformers"}`` of a ``runner_wrapper`` dict."""
    if not isinstance(wrapper, dict) or "use_clip_grad" not in wrapper:
        return None
    norm = wrapper.get("max_grad_norm")
    return {"enabled": bool(wrapper.get("use_clip_grad")),
            "max_norm": float(norm) if isinstance(norm, (int, float)) and not isinstance(norm, bool) else None,
            "source": "mindformers"}


def _texts(data_provider, ctx, eid, names):
    """``{run: {tag: str}}`` of mindformers' configuration text tags (the newest record of each)."""
    from tensorboard.data import provider as tb_provider

    try:
        listing = data_provider.list_tensors(ctx, experiment_id=eid, plugin_name=TEXT_PLUGIN,
                                             run_tag_filter=tb_provider.RunTagFilter(runs=names, tags=_CONFIG_TAGS))
        if not listing:
            return {}
        data = data_provider.read_tensors(
            ctx, experiment_id=eid, plugin_name=TEXT_PLUGIN, downsample=10,
            run_tag_filter=tb_provider.RunTagFilter(runs=sorted(listing), tags=_CONFIG_TAGS))
    except Exception:   # a provider without the text plugin, a data server gone: the rules go on without it
        logger.debug("reading mindformers' configuration text failed", exc_info=True)
        return {}
    out = {}
    for run, tags in data.items():
        for tag, points in tags.items():
            if not points:
                continue
            value = max(points, key=lambda d: d.step).numpy
            try:
                flat = value.reshape(-1)
                raw = flat[0] if flat.size else b""
            except AttributeError:
                raw = value
            out.setdefault(run, {})[tag] = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return out


def enrich(runs, data_provider=None, ctx=None, eid="", problems=None):
    """Fills ``run.info`` of each :class:`~.series.RunSeries` from what other writers left (module doc).
    ``problems``: a list that receives ``{"run", "file", "offset", "reason"}`` for files left out."""
    texts = _texts(data_provider, ctx, eid, [r.run for r in runs]) if data_provider is not None and runs else {}
    for run in runs:
        info = run.info if isinstance(run.info, dict) else {}
        run.info = info
        text = texts.get(run.run) or {}
        config = {}
        for tag, value in text.items():
            parsed = parse_repr(value)
            if parsed is not None:
                config[tag.split("/", 1)[0]] = parsed
        if config:
            info.setdefault("mindformers_config", config)
            lr = lr_config(config.get("lr_schedule"))
            if lr is not None and not isinstance(info.get("lr_config"), dict):
                info["lr_config"] = lr
            clip = grad_clip(config.get("runner_wrapper"))
            if clip is not None and "grad_clip" not in info:
                info["grad_clip"] = clip
        directory = getattr(run.state, "directory", None) if run.state is not None else None
        if not directory:
            continue
        files = mindformers_files.read_run(directory)
        for p in files.problems:
            if problems is not None:
                problems.append(dict(p, run=run.run))
            logger.warning("mindspore plugin: %s: %s", p["file"], p["reason"])
        last = run.last_step()
        if files:
            info["mindformers"] = files.as_dict()
            ckpt = files.last_checkpoint
            if ckpt and ckpt.get("step") is not None and last is not None and ckpt["step"] >= last:
                info.setdefault("finished", True)    # the checkpoint mindformers saves at the end of training
            if files.abnormal and run.run_end is None:
                step = max(files.abnormal)
                if last is None or step >= last - 1:
                    run.run_end = {"step": int(max(step, last or step)), "status": "stopped",
                                   "reason": "mindformers stopped the training: the global norm reached its "
                                             "global_norm_spike_threshold"}
    return runs


def mindformers_files_of(run):
    """The run's ``run.info["mindformers"]`` (see ``MindformersFiles.as_dict``), or {}."""
    info = run.info if isinstance(run.info, dict) else {}
    value = info.get("mindformers")
    return value if isinstance(value, dict) else {}


def last_healthy_before(run, step):
    """The newest checkpoint mindformers marked healthy at or before ``step``: ``{"ckpt", "step", ...}`` or None."""
    best = None
    for c in mindformers_files_of(run).get("checkpoints") or ():
        if c.get("healthy") and c.get("step") is not None and c["step"] <= step \
                and (best is None or c["step"] > best["step"]):
            best = c
    return best


def advise(run, findings):
    """Adds to the findings what the run's configuration and files change (in place; returns them): the last
    healthy checkpoint before each warning or error, and, where clipping is already on, advice to tighten it
    instead of adding it."""
    clip = (run.info or {}).get("grad_clip") if isinstance(run.info, dict) else None
    for f in findings:
        if clip and clip.get("enabled") and _ADD_CLIPPING.search(f.message):
            said = "max_grad_norm=%s" % clip["max_norm"] if clip.get("max_norm") is not None else "on"
            f.message = _ADD_CLIPPING.sub(lambda m: ("%sower the gradient clipping threshold (clipping is already "
                                                     "on: %s)" % ("L" if m.group(1) == "A" else "l", said)),
                                          f.message)
        advise(run, f.follow_ons)
        if f.level == "info" or f.checkpoint:
            continue
        good = last_healthy_before(run, int(f.steps[0]))
        if good is not None:
            f.checkpoint = good["ckpt"]
            f.message += " Last healthy checkpoint before step %d: %s (step %d, mindformers' health_ckpts.json)." % (
                int(f.steps[0]), good["ckpt"], good["step"])
    return findings
