"""Run metadata and hyperparameters (the ``run_info`` route), from every place a run keeps them.

Sources, per run:

* ``run_info``: our ``_meta/run_info`` tensor (JSON written by ``TrainMonitor``: MindSpore version, mode,
  ``collect_freq``, rank, setup, ``hparams``); read through the data provider with either loader. A run converted
  by ``tb-mindspore convert`` has one too, holding MindSpore's lineage under ``mindspore_lineage``.
* ``hparams``: TensorBoard HParams summaries (``_hparams_/session_start_info``), from any writer.
* ``lineage_file``: MindSpore's own lineage file (``*_lineage``, written by ``SummaryCollector``) read by
  ``MsLogdir.lineage``: network, loss function, optimizer, learning rate, epochs, batch size, dataset sizes,
  ``custom_lineage_data``, the dataset graph.
* ``converted_lineage``: the same lineage, from a converted run's ``run_info``.
* ``mindformers_config``: mindformers' YAML configuration, which its Trainer writes as text summaries
  (``runner_config/text_summary``, ``lr_schedule/text_summary``, ...), and ``hf_training_args``: Hugging Face's
  ``TrainingArguments`` and model configuration, which its TensorBoard callback writes as text summaries
  (``args/text_summary``, ``model_config/text_summary``): ``sources/config_texts.py``.

``hparams`` of the answer merges them, each hyperparameter under its canonical name (``contract/hparam_names.py``:
``lr`` and ``learning_rate`` are one): the run information's ``hparams`` first, then the lineage's, then the HParams
summary's, then the trainer's configuration's (the first source that names a hyperparameter wins; ``hparam_sources``
says which one that was, ``hparam_names`` the names it came as). Results and paths recorded beside them (the
lineage's ``loss``, ``model_path``, ``model_size``, metrics) are not hyperparameters: they stay in ``lineage``.
Numbers that JSON cannot hold are sent as ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.
"""

import logging
import math

import numpy as np
from tensorboard import errors
from tensorboard.data import provider as tb_provider

from .. import metadata
from ..contract import content
from ..contract import hparam_names
from ..contract import run_info as run_info_contract
from ..sources import config_texts
from ..sources import ms_provider

logger = logging.getLogger(__name__)

HPARAMS_PLUGIN = "hparams"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
_READ_ALL = 10 ** 9
_MAX_DEPTH = 32


def plain(value, depth=0):
    """``value`` as JSON-safe plain data: dict keys as strings, non-finite floats as their string names."""
    if depth > _MAX_DEPTH:
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def _value_of(v):
    """A ``google.protobuf.Value`` of a session start info as a Python value."""
    kind = v.WhichOneof("kind")
    if kind == "number_value":
        n = v.number_value
        return int(n) if n.is_integer() and abs(n) < 2 ** 53 else n
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    if kind is None or kind == "null_value":
        return None
    from google.protobuf import json_format

    return json_format.MessageToDict(v)


class RunInfoReader:
    """Answers the ``run_info`` route from ``data_provider`` and ``ms_logdir`` (an ``MsLogdir`` or None)."""

    def __init__(self, data_provider, ms_logdir=None):
        self._provider = data_provider
        # Run information and HParams summaries live in event files only: ask TensorBoard's own provider (the merged
        # provider's primary) so the *_MS files' landscapes are not listed for nothing.
        self._events = getattr(data_provider, "primary", data_provider)
        self._ms = ms_logdir if ms_logdir is not None else ms_provider.ms_logdir_of(data_provider)   # second door
        self._problems = []

    # -- sources -------------------------------------------------------------------------------------------------
    def _run_infos(self, ctx, eid, runs=None):
        """{run: dict} of our ``run_info`` series (the last step's JSON)."""
        rtf = tb_provider.RunTagFilter(runs=runs) if runs else None
        listing = self._events.list_tensors(ctx, experiment_id=eid, plugin_name=metadata.PLUGIN_NAME,
                                            run_tag_filter=rtf)
        wanted = {run: set(tags) for run, tags in content.of_kind(listing, metadata.KIND_RUN_INFO).items()}
        if not wanted:
            if runs is None:
                self._problems = []
            return {}
        data = self._events.read_tensors(
            ctx, experiment_id=eid, plugin_name=metadata.PLUGIN_NAME, downsample=_READ_ALL,
            run_tag_filter=tb_provider.RunTagFilter(runs=sorted(wanted), tags=sorted(set().union(*wanted.values()))),
        )
        out = {}
        problems = []
        for run, tags in wanted.items():
            points = [d for tag in sorted(tags) for d in ((data.get(run) or {}).get(tag) or [])]
            records = []
            for datum in sorted(points, key=lambda d: (d.step, d.wall_time)):
                try:
                    records.append(run_info_contract.decode(datum.numpy))
                except Exception as e:  # one damaged record is left out and reported; the others still count
                    reason = "run information at step %d left out: %s" % (datum.step, str(e)[:300])
                    logger.warning("mindspore plugin: run %s: %s", run, reason)
                    problems.append({"run": run, "file": None, "offset": None, "tag": metadata.RUN_INFO,
                                     "step": int(datum.step), "reason": reason})
                    continue
            info = run_info_contract.merge(records)    # a later record adds to and overrides an earlier one
            if info:
                out[run] = info
        if runs is None:
            self._problems = problems
        return out

    def problems(self, ctx, eid):
        """``[{"run", "file", "offset", "tag", "step", "reason"}]``: run information records left out."""
        self._run_infos(ctx, eid)
        return list(self._problems)

    def _session_hparams(self, ctx, eid, runs=None):
        """{run: {name: value}} of TensorBoard HParams session start infos."""
        from tensorboard.plugins.hparams import metadata as hparams_metadata

        rtf = tb_provider.RunTagFilter(runs=runs, tags=[SESSION_START_INFO_TAG]) if runs else \
            tb_provider.RunTagFilter(tags=[SESSION_START_INFO_TAG])
        try:
            listing = self._events.list_tensors(ctx, experiment_id=eid, plugin_name=HPARAMS_PLUGIN,
                                                run_tag_filter=rtf)
        except Exception:  # a provider without the hparams plugin's data must not stop the route
            logger.exception("mindspore plugin: listing HParams summaries failed")
            return {}
        out = {}
        for run, tags in listing.items():
            series = tags.get(SESSION_START_INFO_TAG)
            if series is None:
                continue
            try:
                info = hparams_metadata.parse_session_start_info_plugin_data(series.plugin_content)
            except Exception:
                continue
            values = {name: _value_of(v) for name, v in info.hparams.items()}
            if values:
                out[run] = values
        return out

    def _trainer_configs(self, ctx, eid, runs=None):
        """{run: (source, {dotted name: value})} of the hyperparameters in a trainer's configuration text summaries
        (mindformers' YAML, Hugging Face's TrainingArguments: ``sources/config_texts.py``)."""
        try:
            listing = self._events.list_tensors(ctx, experiment_id=eid, plugin_name=config_texts.TEXT_PLUGIN,
                                                run_tag_filter=tb_provider.RunTagFilter(runs=runs) if runs else None)
            writers = {run: config_texts.writer_of(tags) for run, tags in listing.items()}
            wanted = {run: config_texts.config_tags(w, listing[run]) for run, w in writers.items() if w is not None}
            if not wanted:
                return {}
            data = self._events.read_tensors(
                ctx, experiment_id=eid, plugin_name=config_texts.TEXT_PLUGIN, downsample=_READ_ALL,
                run_tag_filter=tb_provider.RunTagFilter(runs=sorted(wanted),
                                                        tags=sorted(set().union(*wanted.values()))))
        except Exception:  # a provider without text summaries must not stop the route
            logger.exception("mindspore plugin: reading configuration text summaries failed")
            return {}
        out = {}
        for run, tags in wanted.items():
            sections = {}
            for tag in tags:
                points = (data.get(run) or {}).get(tag) or []
                if points:
                    text = np.asarray(points[-1].numpy).reshape(-1)
                    sections[config_texts.section_of(tag)] = text[0] if text.size else ""
            values = config_texts.hyperparameters(writers[run], sections)
            if values:
                out[run] = (writers[run].source, values)
        return out

    def _lineage_file(self, run):
        if self._ms is None or not self._ms.has_run(run):
            return None
        try:
            lineage = self._ms.lineage(run)
        except KeyError:
            return None
        return lineage or None

    def _ms_files(self, run):
        """``MsLogdir.files`` of a ``*_MS`` run (which file superseded which steps), [] for other runs."""
        if self._ms is None or not self._ms.has_run(run):
            return []
        try:
            return self._ms.files(run)
        except KeyError:
            return []

    # -- answers -------------------------------------------------------------------------------------------------
    def _answer(self, run, info, session, lineage, ms_files=None, config=None):
        """``config``: ``(source, values)`` of a trainer's configuration text summaries, or None."""
        sources = []
        if info is not None:
            sources.append("run_info")
            info = dict(info)
            converted = info.pop("mindspore_lineage", None)
            if lineage is None and isinstance(converted, dict) and converted:
                lineage = converted
                sources.append("converted_lineage")
        if lineage is not None and "converted_lineage" not in sources:
            sources.append("lineage_file")
        if session:
            sources.append("hparams")
        config_source, config_values = config or (None, {})
        if config_source:
            sources.append(config_source)
        ours = (info or {}).get("hparams")
        hparams, origin, names = hparam_names.merge((("run_info", ours if isinstance(ours, dict) else {}),
                                                     ("lineage", (lineage or {}).get("hparams") or {}),
                                                     ("hparams", session or {}),
                                                     (config_source, config_values)))
        return plain({"run": run, "sources": sources, "run_info": info, "hparams": hparams,
                      "hparam_sources": origin, "hparam_names": names, "lineage": lineage,
                      "ms_files": ms_files or []})

    def one(self, ctx, eid, run):
        """The answer for one run (404 if the run does not exist; a run with nothing has empty fields)."""
        known = {r.run_name for r in self._provider.list_runs(ctx, experiment_id=eid)}
        if run not in known and (self._ms is None or not self._ms.has_run(run)):
            raise errors.NotFoundError("no run named %r" % run)
        info = self._run_infos(ctx, eid, [run]).get(run)
        session = self._session_hparams(ctx, eid, [run]).get(run)
        config = self._trainer_configs(ctx, eid, [run]).get(run)
        return self._answer(run, info, session, self._lineage_file(run), self._ms_files(run), config)

    def all(self, ctx, eid):
        """``{"runs": {run: answer}}`` for the runs that have any of it."""
        infos = self._run_infos(ctx, eid)
        sessions = self._session_hparams(ctx, eid)
        configs = self._trainer_configs(ctx, eid)
        lineages, files = {}, {}
        if self._ms is not None:
            for run in self._ms.runs():
                lineage = self._lineage_file(run)
                if lineage is not None:
                    lineages[run] = lineage
                listed = self._ms_files(run)
                if sum(f["kind"] == "summary" for f in listed) > 1:   # a re-run or resume: say which file won
                    files[run] = listed
        names = sorted(set(infos) | set(sessions) | set(lineages) | set(files) | set(configs))
        return {"runs": {run: self._answer(run, infos.get(run), sessions.get(run), lineages.get(run),
                                           files.get(run) or self._ms_files(run), configs.get(run)) for run in names}}
