"""TensorBoard event files as a data provider, read by the plugin's own reader: :class:`EventFilesProvider`.

It answers TensorBoard's ``DataProvider`` calls from an :class:`~.event_logdir.EventLogdir`, the way TensorBoard's
``MultiplexerDataProvider`` answers them from its Python loader (same runs, tags, summary metadata, data classes
and values), so the commands that load a whole logdir at once (``check``, ``report``) read it through the same
provider interface as the tab, without TensorBoard's loader. :func:`load` reads a logdir completely.
"""

import json

import numpy as np
from tensorboard.compat.proto import summary_pb2
from tensorboard.data import provider

from .event_logdir import EventLogdir

_SCALAR = summary_pb2.DATA_CLASS_SCALAR
_TENSOR = summary_pb2.DATA_CLASS_TENSOR
_BLOB = summary_pb2.DATA_CLASS_BLOB_SEQUENCE


def load(logdir, store=None):
    """An :class:`EventFilesProvider` over ``logdir`` with every event file read to its end; ``store``: an
    ``event_series.EventSeries`` filled by the same read (see ``EventLogdir``)."""
    return EventFilesProvider(EventLogdir(logdir, store=store).read_all())


def _thin(points, limit):
    """At most ``limit`` points, evenly spaced, always keeping the last (TensorBoard's downsample contract)."""
    if limit is None or len(points) <= limit:
        return points
    if limit <= 0:
        return []
    idx = np.unique(np.linspace(0, len(points) - 1, limit).round().astype(int))
    return [points[i] for i in idx]


class EventFilesProvider(provider.DataProvider):
    """Read-only data provider over an :class:`EventLogdir` (reloaded by its owner)."""

    def __init__(self, event_logdir):
        self.events = event_logdir

    def event_file_warnings(self, limit=100):
        """Records and files left out: ``[{"run", "file", "offset", "reason"}]`` (``Sources.warnings`` asks)."""
        return self.events.warnings(limit)

    def _index(self, plugin_name, run_tag_filter, data_class):
        runs = tags = None
        if run_tag_filter is not None:
            runs, tags = run_tag_filter.runs, run_tag_filter.tags
        out = {}
        for run in self.events.runs():
            if runs is not None and run not in runs:
                continue
            for tag, s in self.events.series(run).items():
                if tags is not None and tag not in tags:
                    continue
                if s.data_class == data_class and s.plugin == plugin_name and len(s):
                    out.setdefault(run, {})[tag] = s
        return out

    # -- the provider interface ----------------------------------------------------------------------------------
    def experiment_metadata(self, ctx=None, *, experiment_id):
        return provider.ExperimentMetadata(data_location=str(self.events.logdir or ""))

    def list_plugins(self, ctx=None, *, experiment_id):
        return sorted({s.plugin for run in self.events.runs() for s in self.events.series(run).values()
                       if s.plugin and len(s)})

    def list_runs(self, ctx=None, *, experiment_id):
        return [provider.Run(run_id=r, run_name=r, start_time=self.events.first_wall_time(r))
                for r in self.events.runs()]

    def _list(self, cls, index):
        return {run: {tag: cls(max_step=s.max_step, max_wall_time=s.max_wall,
                               plugin_content=s.metadata.plugin_data.content,
                               description=s.metadata.summary_description, display_name=s.metadata.display_name)
                      for tag, s in tags.items()}
                for run, tags in index.items()}

    def list_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._list(provider.ScalarTimeSeries, self._index(plugin_name, run_tag_filter, _SCALAR))

    def read_scalars(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        out = {}
        for run, tags in self._index(plugin_name, run_tag_filter, _SCALAR).items():
            out[run] = {tag: [provider.ScalarDatum(step=int(st), wall_time=float(w), value=float(v))
                              for st, w, v in _thin(s.points(), downsample)]
                        for tag, s in tags.items()}
        return out

    def read_last_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        out = {}
        for run, tags in self._index(plugin_name, run_tag_filter, _SCALAR).items():
            out[run] = {tag: provider.ScalarDatum(step=int(s.steps[-1]), wall_time=float(s.walls[-1]),
                                                  value=float(s.values[-1]))
                        for tag, s in tags.items()}
        return out

    def list_tensors(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._list(provider.TensorTimeSeries, self._index(plugin_name, run_tag_filter, _TENSOR))

    def read_tensors(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        out = {}
        for run, tags in self._index(plugin_name, run_tag_filter, _TENSOR).items():
            out[run] = {tag: [provider.TensorDatum(step=int(st), wall_time=float(w), numpy=a)
                              for st, w, a in _thin(s.points(), downsample)]
                        for tag, s in tags.items()}
        return out

    def list_blob_sequences(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        out = {}
        for run, tags in self._index(plugin_name, run_tag_filter, _BLOB).items():
            out[run] = {tag: provider.BlobSequenceTimeSeries(
                max_step=s.max_step, max_wall_time=s.max_wall,
                max_length=max((len(b) for _, _, b in s.points()), default=0),
                plugin_content=s.metadata.plugin_data.content, description=s.metadata.summary_description,
                display_name=s.metadata.display_name) for tag, s in tags.items()}
        return out

    def read_blob_sequences(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        out = {}
        for run, tags in self._index(plugin_name, run_tag_filter, _BLOB).items():
            out[run] = {}
            for tag, s in tags.items():
                by_step = {}
                for step, wall, blobs in s.points():     # the last one written at a step wins, as in TensorBoard
                    by_step[step] = provider.BlobSequenceDatum(
                        step=int(step), wall_time=float(wall),
                        values=tuple(provider.BlobReference(_blob_key(run, tag, step, i)) for i in range(len(blobs))))
                out[run][tag] = _thin([by_step[k] for k in sorted(by_step)], downsample)
        return out

    def read_blob(self, ctx=None, *, blob_key):
        try:
            run, tag, step, index = json.loads(blob_key)
            s = self.events.series(run)[tag]
            for st, _, blobs in reversed(s.points()):
                if st == step:
                    return blobs[index]
        except (ValueError, TypeError, KeyError, IndexError):
            pass
        raise KeyError(blob_key)


def _blob_key(run, tag, step, index):
    return json.dumps([run, tag, int(step), int(index)])
