"""MindSpore ``*_MS`` summary files as a TensorBoard data provider, and a provider that merges two providers.

:class:`MsDataProvider` answers TensorBoard's ``DataProvider`` calls from an :class:`~.ms_logdir.MsLogdir`:
SummaryCollector's / SummaryRecord's scalars as plugin ``scalars``, their histograms as plugin ``histograms`` (in
TensorBoard's ``[left, right, count]`` format), loss landscapes as our plugin's ``landscape`` tensors. Because it
speaks the same interface, every route, the dashboard, the heatmaps and the health engine read ``_MS`` runs exactly
like event-file runs, through :class:`MergedProvider`.

The ``MsLogdir`` reloads in a background thread (bounded work per round), so no request thread waits for parsing.

The one second door: what TensorBoard's provider interface has no call for (MindSpore's lineage, ``*_MS`` images
and tensors, which file superseded which steps, histograms' NaN / Inf counts) is read from the ``MsLogdir`` behind
the provider, :func:`ms_logdir_of` (``reading/run_info.py``, ``reading/media.py``, ``MergedProvider.histogram_stats``);
everything else goes through the provider interface.
"""

import logging
import os

import numpy as np
from tensorboard.data import provider

from .. import metadata
from .ms_logdir import MsLogdir
from .ms_roots import MsRoots

logger = logging.getLogger(__name__)

SCALARS = "scalars"
HISTOGRAMS = "histograms"


def _wanted(run_tag_filter, run, tag=None):
    if run_tag_filter is None:
        return True
    runs, tags = run_tag_filter.runs, run_tag_filter.tags
    if runs is not None and run not in runs:
        return False
    if tag is not None and tags is not None and tag not in tags:
        return False
    return True


def _thin(points, limit):
    """At most ``limit`` points, evenly spaced, always keeping the last (TensorBoard's downsample contract)."""
    if limit is None or len(points) <= limit:
        return points
    if limit <= 0:
        return []
    idx = np.linspace(0, len(points) - 1, limit).round().astype(int)
    return [points[i] for i in np.unique(idx)]


class MsDataProvider(provider.DataProvider):
    """Read-only data provider over the ``*_MS`` files under ``logdir``."""

    def __init__(self, logdir, reload_interval=5.0, ms=None, logs=None):
        self.ms = ms if ms is not None else MsLogdir(logdir)
        # mindformers' training logs (log_source.LogSource): more runs of scalars, read in their own thread
        self.logs = logs
        if logs is not None:
            if reload_interval is not None and reload_interval > 0:
                logs.start(interval=reload_interval)
            else:
                logs.reload()
        self._reload_interval = reload_interval
        if reload_interval is not None and reload_interval > 0:
            self.ms.start(interval=reload_interval)
        else:
            self.ms.reload()

    def close(self):
        self.ms.stop()
        if self.logs is not None:
            self.logs.stop()

    def _log_runs(self):
        return self.logs.runs() if self.logs is not None else []

    def warnings(self, limit=100):
        """Skipped records and unreadable files: ``[{"run", "file", "offset", "reason"}]`` (at most ``limit``)."""
        out = list(self.logs.warnings())[:limit] if self.logs is not None else []
        for run in self.ms.runs():
            for w in self.ms.warnings(run):
                if len(out) >= limit:
                    return out
                out.append(dict(w, run=run))
        return out

    def experiment_metadata(self, ctx=None, *, experiment_id):
        return provider.ExperimentMetadata()

    def list_plugins(self, ctx=None, *, experiment_id):
        kinds = set()
        for run in self.ms.runs():
            tags = self.ms.tags(run)
            if tags.get("scalars"):
                kinds.add(SCALARS)
            if tags.get("histograms"):
                kinds.add(HISTOGRAMS)
            if tags.get("landscapes"):
                kinds.add(metadata.PLUGIN_NAME)
        if self._log_runs():
            kinds.add(SCALARS)
        return sorted(kinds)

    def list_runs(self, ctx=None, *, experiment_id):
        names = sorted(set(self.ms.runs()) | set(self._log_runs()))
        return [provider.Run(run_id=r, run_name=r, start_time=None) for r in names]

    def _scalar_runs(self, tags=None):
        """``[(run, {tag: [(step, wall, value)]})]`` of the ``*_MS`` runs, then the logs' series (the ``*_MS``
        series win for a tag in both)."""
        out = {}
        for run in self.ms.runs():
            out[run] = self.ms.scalars(run, tags=tags)
        for run in self._log_runs():
            mine = out.setdefault(run, {})
            for tag, points in self.logs.scalars(run, tags=None if tags is None else set(tags)).items():
                mine.setdefault(tag, points)
        return out.items()

    # -- scalars -------------------------------------------------------------------------------------------------
    def list_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        if plugin_name != SCALARS:
            return {}
        out = {}
        for run, series in self._scalar_runs():
            if not _wanted(run_tag_filter, run):
                continue
            for tag, points in series.items():
                if not points or not _wanted(run_tag_filter, run, tag):
                    continue
                last = points[-1]
                out.setdefault(run, {})[tag] = provider.ScalarTimeSeries(
                    max_step=max(p[0] for p in points), max_wall_time=max(p[1] for p in points),
                    plugin_content=b"", description="MindSpore summary file", display_name=metadata.display_name(tag),
                    last_value=last[2],
                )
        return out

    def read_scalars(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        if plugin_name != SCALARS:
            return {}
        out = {}
        tags = None if run_tag_filter is None or run_tag_filter.tags is None else sorted(run_tag_filter.tags)
        for run, series in self._scalar_runs(tags):
            if not _wanted(run_tag_filter, run):
                continue
            for tag, points in series.items():
                if not _wanted(run_tag_filter, run, tag):
                    continue
                out.setdefault(run, {})[tag] = [
                    provider.ScalarDatum(step=int(s), wall_time=float(w), value=float(v))
                    for s, w, v in _thin(points, downsample)
                ]
        return out

    def read_last_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        data = self.read_scalars(experiment_id=experiment_id, plugin_name=plugin_name, run_tag_filter=run_tag_filter)
        return {run: {tag: points[-1] for tag, points in tags.items() if points} for run, tags in data.items()}

    # -- tensors: histograms (plugin "histograms") and landscapes (our plugin) ---------------------------------------
    def _tensor_series(self, run, plugin_name, tags=None):
        """{tag: [(step, wall, ndarray)]} and {tag: plugin content} for one run."""
        if plugin_name == HISTOGRAMS:
            from tensorboard.plugins.histogram import metadata as hist_md

            content = hist_md.create_summary_metadata("", "").plugin_data.content
            series = {
                tag: [(s, w, np.asarray(b, dtype=np.float64).reshape(-1, 3)) for s, w, b in points]
                for tag, points in self.ms.histograms(run, tags=tags).items()
            }
            return series, {tag: content for tag in series}
        if plugin_name == metadata.PLUGIN_NAME:
            series, contents = {}, {}
            import json

            for tag, points in self.ms.landscapes(run, tags=tags).items():
                series[tag] = [(s, w, np.array(json.dumps(d, default=float), dtype=object)) for s, w, d in points]
                contents[tag] = metadata.make_content(metadata.KIND_LANDSCAPE, source="mindspore")
            return series, contents
        return {}, {}

    def list_tensors(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        out = {}
        for run in self.ms.runs():
            if not _wanted(run_tag_filter, run):
                continue
            series, contents = self._tensor_series(run, plugin_name)
            for tag, points in series.items():
                if not points or not _wanted(run_tag_filter, run, tag):
                    continue
                out.setdefault(run, {})[tag] = provider.TensorTimeSeries(
                    max_step=max(p[0] for p in points), max_wall_time=max(p[1] for p in points),
                    plugin_content=contents[tag], description="MindSpore summary file",
                    display_name=metadata.display_name(tag),
                )
        return out

    def read_tensors(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        out = {}
        for run in self.ms.runs():
            if not _wanted(run_tag_filter, run):
                continue
            tags = None if run_tag_filter is None or run_tag_filter.tags is None else sorted(run_tag_filter.tags)
            series, _ = self._tensor_series(run, plugin_name, tags=tags)
            for tag, points in series.items():
                if not _wanted(run_tag_filter, run, tag):
                    continue
                out.setdefault(run, {})[tag] = [
                    provider.TensorDatum(step=int(s), wall_time=float(w), numpy=a) for s, w, a in _thin(points, downsample)
                ]
        return out

    def histogram_stats(self, run, tag):
        """``{step: {"count", "min", "max", "sum", "nan_count", "pos_inf_count", "neg_inf_count"}}`` of a histogram
        series (what TensorBoard's histogram format has no place for), or None when this provider lacks it."""
        if not self.ms.has_run(run):
            return None
        series = self.ms.histogram_stats(run, tag)
        if not series:
            return None
        return {int(step): numbers for step, _, numbers in series}

    def list_blob_sequences(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return {}

    def read_blob_sequences(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        return {}

    def read_blob(self, ctx=None, *, blob_key):
        raise KeyError(blob_key)


class MergedProvider(provider.DataProvider):
    """Answers from ``primary`` (TensorBoard's own provider) and ``extra`` (``_MS`` files) together.

    Listings are merged per run; when both hold the same run and tag, ``primary`` wins. Reads go to both and are
    merged the same way.
    """

    def __init__(self, primary, extra):
        self.primary = primary
        self.extra = extra

    def __getattr__(self, name):  # anything else (e.g. hparams) goes to TensorBoard's own provider
        return getattr(self.primary, name)

    @staticmethod
    def _merge(a, b):
        out = {run: dict(tags) for run, tags in (a or {}).items()}
        for run, tags in (b or {}).items():
            mine = out.setdefault(run, {})
            for tag, value in tags.items():
                mine.setdefault(tag, value)
        return out

    def _both(self, method, **kwargs):
        first = getattr(self.primary, method)(**kwargs)
        try:
            second = getattr(self.extra, method)(**kwargs)
        except Exception:  # a problem in the _MS reader must not hide the event-file runs
            logger.exception("mindspore plugin: reading MindSpore summary files failed")
            second = {}
        return self._merge(first, second)

    def experiment_metadata(self, ctx=None, *, experiment_id):
        return self.primary.experiment_metadata(ctx, experiment_id=experiment_id)

    def list_plugins(self, ctx=None, *, experiment_id):
        return sorted(set(self.primary.list_plugins(ctx, experiment_id=experiment_id) or ())
                      | set(self.extra.list_plugins(ctx, experiment_id=experiment_id)))

    def list_runs(self, ctx=None, *, experiment_id):
        runs = list(self.primary.list_runs(ctx, experiment_id=experiment_id))
        names = {r.run_name for r in runs}
        runs += [r for r in self.extra.list_runs(ctx, experiment_id=experiment_id) if r.run_name not in names]
        return runs

    def list_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._both("list_scalars", ctx=ctx, experiment_id=experiment_id, plugin_name=plugin_name,
                          run_tag_filter=run_tag_filter)

    def read_scalars(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        return self._both("read_scalars", ctx=ctx, experiment_id=experiment_id, plugin_name=plugin_name,
                          downsample=downsample, run_tag_filter=run_tag_filter)

    def read_last_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._both("read_last_scalars", ctx=ctx, experiment_id=experiment_id, plugin_name=plugin_name,
                          run_tag_filter=run_tag_filter)

    def list_tensors(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._both("list_tensors", ctx=ctx, experiment_id=experiment_id, plugin_name=plugin_name,
                          run_tag_filter=run_tag_filter)

    def read_tensors(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        return self._both("read_tensors", ctx=ctx, experiment_id=experiment_id, plugin_name=plugin_name,
                          downsample=downsample, run_tag_filter=run_tag_filter)

    def histogram_stats(self, run, tag):
        """The ``_MS`` histogram statistics of ``MsDataProvider.histogram_stats``, when the series is not
        ``primary``'s (``primary`` wins, as for reads); None otherwise."""
        try:
            return self.extra.histogram_stats(run, tag)
        except Exception:  # a problem in the _MS reader must not break the route
            logger.exception("mindspore plugin: reading MindSpore histogram statistics failed")
            return None

    def list_blob_sequences(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self.primary.list_blob_sequences(ctx, experiment_id=experiment_id, plugin_name=plugin_name,
                                                run_tag_filter=run_tag_filter)

    def read_blob_sequences(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        return self.primary.read_blob_sequences(ctx, experiment_id=experiment_id, plugin_name=plugin_name,
                                                downsample=downsample, run_tag_filter=run_tag_filter)

    def read_blob(self, ctx=None, *, blob_key):
        return self.primary.read_blob(ctx, blob_key=blob_key)


def ms_logdir_of(data_provider):
    """The ``MsLogdir`` behind a provider made by :func:`with_ms_files` (the second door), or ``None``."""
    extra = getattr(data_provider, "extra", None)
    return getattr(extra, "ms", None) if isinstance(extra, MsDataProvider) else None


def with_ms_files(data_provider, logdir, reload_interval=5.0, roots=None, logs=None):
    """``data_provider`` merged with the ``*_MS`` files under ``logdir`` (a local folder, or a URL such as
    ``s3://bucket/prefix`` read through ``io/fs.py``), or under every entry of ``roots`` (a
    ``logdir_spec.Roots``: ``--logdir_spec``, runs named as TensorBoard names them)."""
    if roots is not None and roots.is_spec:
        if not roots:
            return data_provider, None
        ms = MsDataProvider("", reload_interval=reload_interval, ms=MsRoots(roots), logs=logs)
        return MergedProvider(data_provider, ms), ms
    if not logdir:
        return data_provider, None
    ms = MsDataProvider(logdir, reload_interval=reload_interval, logs=logs)
    return MergedProvider(data_provider, ms), ms
