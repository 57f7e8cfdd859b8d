"""One door for the data of a logdir: :class:`Sources`, and what it answers for one series: :class:`Timeline`.

Every reader of points (the scalar answers, the Health panel, ``tb-mindspore check`` and ``report``) holds one
``Sources`` and asks it; none picks a reader itself. Behind the door, per series, best first:

1. ``events``: the plugin's own store of every point of the run's event files (``event_series.EventSeries``), used
   while it holds the series up to the last point TensorBoard lists (so an answer never lags TensorBoard's);
2. ``ms``: MindSpore's ``*_MS`` files (``ms_logdir.MsLogdir``, every point);
3. ``provider``: TensorBoard's data provider (merged with the ``*_MS`` provider), i.e. its sample of each series
   (read fast through the Python loader's multiplexer when there is one: ``points.py``).

The interface (a request binds its context first: ``sources.bind(ctx, experiment_id)``; commands use the default):

* listings: :meth:`runs`, :meth:`last_scalars` (``{run: {tag: last point}}``), :meth:`tensor_listing`
  (``{run: {tag: tensor time series}}`` of a plugin's tensors), :meth:`histogram_listing`;
* freshness: :meth:`token` (changes whenever a series or its band gets new points, and when the door changes);
* series: :meth:`series` / :meth:`many` (a :class:`Timeline`: the final timeline with its restarts and its
  interval band, named fields), :meth:`points` (every point TensorBoard's provider holds, for any plugin's
  series), :meth:`records` (our JSON records: run information, health events, the run end marker);
* what was left out: :meth:`warnings` (damaged ``*_MS`` records, unreadable files).

A :class:`Timeline` is what one scalar series is made of wherever it was read: the final timeline's steps
(ascending), wall times and values, its min/max pyramid (``series_store.Pyramid``), where the run restarted
(``series_store.py``'s restart rule) and, asked for only when shown, the points those restarts superseded; with its
interval band (``contract.interval.IntervalTable``, by name) when the run recorded one.

``provider``, ``ms``, ``multiplexer`` and ``logdir`` stay readable for the answers that serve TensorBoard's other
kinds (histograms, landscapes, images, lineage). How the commands load a logdir whole is :meth:`Sources.for_logdir`
alone (today TensorBoard's Python loader keeping every point, merged with the ``*_MS`` reader): a faster reader
goes there, and ``check`` and ``report`` follow.
"""

import collections
import copy
import logging

import numpy as np
from tensorboard.data import provider as tb_provider

from .. import metadata
from ..contract import interval as interval_contract
from ..io import fs
from . import (clusters, event_series, log_source, logdir_spec, ms_provider, points, run_fold, series_cache,
               series_store)
from .logdir_status import is_ms_summary_file

logger = logging.getLogger(__name__)

SCALARS_PLUGIN = "scalars"
HISTOGRAMS_PLUGIN = "histograms"
READ_ALL = 10 ** 9
EVENTS, MS, PROVIDER = "events", "ms", "provider"

# Which door answers a series, with the version of what it holds there (a new point or a reread changes it).
Door = collections.namedtuple("Door", "name version band_version", defaults=(None, None))
# A series' freshness token: its last point as TensorBoard lists it, its band's, and the door.
Token = collections.namedtuple("Token", "step wall_time band door")


# -- what one series is made of, wherever it was read -------------------------------------------------------------
# One part of a series that a restart superseded: where it came from, its steps, wall times and values.
Superseded = collections.namedtuple("Superseded", "source steps walls values")


class Timeline:
    """A series' final timeline (see the module doc). ``restarts``: ``[{"step", "superseded_points", "source"}]``;
    ``superseded``: a function returning ``[Superseded]``; ``band``: an ``IntervalTable`` sorted by step, or None."""

    __slots__ = ("steps", "walls", "values", "pyramid", "restarts", "superseded", "band")

    def __init__(self, steps, walls, values, pyramid_=None, restarts=(), superseded=None, band=None):
        self.steps, self.walls, self.values = steps, walls, values
        self.pyramid = pyramid_ if pyramid_ is not None else pyramid_of(values)
        self.restarts = list(restarts)
        self.superseded = superseded or (lambda: [])
        self.band = band

    def with_band(self, band):
        """This timeline with ``band`` (an ``IntervalTable`` or None) as its interval band."""
        return Timeline(self.steps, self.walls, self.values, self.pyramid, self.restarts, self.superseded, band)


def pyramid_of(values):
    p = series_store.Pyramid()
    p.extend(np.asarray(values))
    return p


def from_points(steps, walls, values, band=None):
    """A Timeline of points in any order (a data provider's sample): sorted by step, then wall time."""
    steps = np.asarray(steps, dtype=np.int64)
    walls = np.asarray(walls, dtype=np.float64)
    order = np.lexsort((walls, steps))
    return Timeline(steps[order], walls[order], np.asarray(values, dtype=np.float64)[order], band=band)


def band_of_rows(steps, rows):
    """The ``IntervalTable`` of stored interval rows: ``steps`` and an ``(n, 5)`` matrix whose columns are
    ``contract.interval.FIELDS`` in order (the layout ``series_store`` keeps them in); the columns are views."""
    if steps is None or not np.asarray(steps).size:
        return None
    return interval_contract.IntervalTable(steps, *(rows[:, i] for i in range(len(interval_contract.FIELDS))))


class Sources:
    """The door to one logdir's points (see the module doc).

    Args:
      provider: the data provider to read through (TensorBoard's, merged with the ``*_MS`` files').
      logdir: the local folder or URL the runs are under (``None`` when unknown).
      multiplexer: the Python loader's multiplexer behind ``provider`` (``None`` under ``--load_fast``).
      events: an ``event_series.EventSeries`` of ``logdir`` (``None``: the provider's sample only).
      ms: the ``ms_logdir.MsLogdir`` behind the provider's ``*_MS`` part (``None``: none).
      folders: where a run lives on disk (``run_fold.RunFolders``: every entry of ``--logdir_spec``, a run's part
        folders; ``None``: unknown, e.g. a bare provider).
      logs: the ``log_source.LogSource`` of mindformers' training logs behind the provider (``None``: none).
      roots: the folders TensorBoard reads with their run-name prefixes (``logdir_spec.Roots``; by default the one
        ``logdir``).
    """

    def __init__(self, provider, logdir=None, *, multiplexer=None, events=None, ms=None, folders=None, logs=None,
                 roots=None):
        self.provider = provider
        self.logdir = logdir or None
        self.multiplexer = multiplexer
        self.events = events
        self.ms = ms
        self.folders = folders
        self.logs = logs
        self.roots = roots if roots is not None else logdir_spec.Roots.single(logdir or "")
        self.listings = series_cache.listings_for(provider)
        self.ctx, self.experiment_id = None, ""
        self._reads_rank_files = False

    # -- making one ----------------------------------------------------------------------------------------------
    @classmethod
    def for_tensorboard(cls, context, reload_interval=5.0):
        """The plugin's: TensorBoard's provider merged with the ``*_MS`` files and mindformers' training logs under
        its logdir or every entry of its ``--logdir_spec`` (read in threads every ``reload_interval`` seconds), with
        one run per training (``run_fold``: rotated part folders and add_scalars key folders folded into their run),
        and the plugin's own store of every point of the shown runs."""
        flags = getattr(context, "flags", None)
        # --logdir DIR, or --logdir_spec name1:DIR1,...: every reader names runs as TensorBoard does.
        roots = logdir_spec.Roots.from_flags(flags, getattr(context, "logdir", "") or "")
        logdir = roots.logdir or ""
        # mindformers' training logs in run folders or named with --mindspore_mindformers_log
        logs = log_source.LogSource(roots, log_source.parse_flag(getattr(flags, "mindspore_mindformers_log", None)))
        merged, ms = ms_provider.with_ms_files(context.data_provider, logdir, reload_interval=reload_interval,
                                               roots=roots, logs=logs)
        provider, multiplexer = run_fold.folded(merged, getattr(context, "multiplexer", None), roots)
        folders = run_fold.RunFolders(roots, provider)
        events = event_series.for_logdir(logdir, interval=reload_interval, roots=roots, folder_of=folders.folders)
        made = cls(provider, logdir, multiplexer=multiplexer, events=events, ms=ms.ms if ms is not None else None,
                   folders=folders if roots else None, logs=logs if ms is not None else None, roots=roots)
        # the rank files of the clusters the health checks judge, read as the event files are (sources.clusters)
        if reload_interval and reload_interval > 0:
            clusters.read_in_background(reload_interval)
            made._reads_rank_files = True
        return made

    @classmethod
    def for_logdir(cls, events_root, ms_root=None, logdir=None):
        """``tb-mindspore check`` / ``report``: the event files under ``events_root`` read whole by the plugin's own
        record reader (every point kept, :func:`load_provider`) merged, as the plugin merges them, with the ``*_MS``
        files and mindformers' training logs under ``ms_root`` read completely (none without ``ms_root``), one run
        per training as the tab folds them (``run_fold``); ``logdir``: where the run folders really are (default
        ``events_root``). A local ``events_root`` also gets the tab's store of every point (``event_series``: the
        final timelines and their bands that the charts and the Health panel read), filled by the same read: each
        event file is read once."""
        logdir = logdir or events_root
        events = None if fs.is_remote(events_root) else event_series.EventSeries(events_root)
        provider = load_provider(events_root, store=events)
        logs = None
        if ms_root and not fs.is_remote(ms_root):   # mindformers' logs in run folders, as the tab reads them
            logs = log_source.LogSource(logdir_spec.Roots.single(ms_root))
            logs.reload()
            logs = logs if logs.runs() else None
        ms = None
        if ms_root and (has_ms_files(ms_root) or logs is not None):
            ms = ms_provider.MsDataProvider(ms_root, reload_interval=None, logs=logs)
            for _ in range(100000):
                if not ms.ms.reload().pending:
                    break
            provider = ms_provider.MergedProvider(provider, ms)
        provider = run_fold.folded(provider)[0]
        folders = run_fold.RunFolders(logdir_spec.Roots.single(logdir), provider) if logdir else None
        return cls(provider, logdir, ms=ms.ms if ms is not None else None, events=events, folders=folders,
                   logs=logs)

    @classmethod
    def of_provider(cls, provider, logdir=None, multiplexer=None):
        """Over a provider made elsewhere (one that ``ms_provider.with_ms_files`` merged keeps its ``*_MS`` door)."""
        if isinstance(provider, cls):
            return provider
        return cls(provider, logdir, multiplexer=multiplexer, ms=ms_provider.ms_logdir_of(provider))

    def bind(self, ctx, experiment_id):
        """This door for one request: listings and reads carry its context and experiment id."""
        bound = copy.copy(self)
        bound.ctx, bound.experiment_id = ctx, experiment_id
        return bound

    def request_context(self):
        """The request's ``RequestContext`` (a fresh one for the commands, which have no request)."""
        return self._ctx()

    def _ctx(self):
        if self.ctx is None:
            from tensorboard import context as tb_context   # lazy: start-up cost of TensorBoard's request context

            self.ctx = tb_context.RequestContext()
        return self.ctx

    def close(self):
        """Stops the background readers."""
        if self.events is not None:
            self.events.stop()
        if self.ms is not None:
            self.ms.stop()
        if self.logs is not None:
            self.logs.stop()
        if self._reads_rank_files:
            self._reads_rank_files = False
            clusters.stop_reading()

    # -- listings ------------------------------------------------------------------------------------------------
    def last_scalars(self):
        """``{run: {tag: last point}}`` (``step``, ``wall_time``, ``value``) of every scalar series."""
        return self.listings.last_scalars(self._ctx(), self.experiment_id)

    def tensor_listing(self, plugin_name=metadata.PLUGIN_NAME):
        """``{run: {tag: tensor time series}}`` (``max_step``, ``max_wall_time``, ``plugin_content``) of a plugin's
        tensor series (default: ours)."""
        return self.listings.tensors(self._ctx(), self.experiment_id, plugin_name)

    def histogram_listing(self):
        """``{run: {tag: tensor time series}}`` of the histograms (empty when the provider has none)."""
        try:
            return self.tensor_listing(HISTOGRAMS_PLUGIN)
        except Exception:  # a provider without histograms must not stop a listing
            return {}

    def runs(self):
        """Runs that hold scalars, our plugin's series (with readable content) or histograms, sorted by name: the
        tab's ``runs`` route lists the same."""
        names = set(self.last_scalars()) | set(self.histogram_listing())
        names.update(run for run, tags in self.tensor_listing().items()
                     if any(series_cache.parsed_content(ts.plugin_content) is not None for ts in tags.values()))
        return sorted(names)

    # -- freshness -----------------------------------------------------------------------------------------------
    def token(self, run, tag):
        """The freshness token of a scalar series with its band: changes when either gets a new point, and when the
        door that answers changes (``None`` for a series no listing holds)."""
        return self.tokens([run], [tag]).get((run, tag))

    def tokens(self, runs, tags):
        """``{(run, tag): token}`` (see :meth:`token`) of the pairs of ``runs`` x ``tags`` that have data."""
        last = self.last_scalars()
        bands = self.tensor_listing()
        out = {}
        for run in runs:
            for tag in tags:
                datum = last.get(run, {}).get(tag)
                if datum is None:
                    continue
                band = bands.get(run, {}).get(metadata.interval_tag(tag))
                band_token = (band.max_step, band.max_wall_time) if band is not None else None
                out[(run, tag)] = Token(datum.step, datum.wall_time, band_token, self._door(run, tag, datum))
        return out

    def _door(self, run, tag, datum):
        """The :data:`Door`: ``EVENTS`` when the event store holds the series up to TensorBoard's last point (or read
        past an undecodable record, where TensorBoard's fast loader stops reading the file), ``MS`` for a ``*_MS``
        run, else ``PROVIDER``."""
        events = self.events
        if events is not None and events.want(run):
            target = (int(datum.step), float(datum.wall_time))
            series = events.series(run, tag)
            if (series is None or series.last() != target) and events.caught_up(run):
                events.sync(run)   # what is new since the background thread's last read
                series = events.series(run, tag)
            if series is not None and (series.last() == target or (
                    events.skipped_undecodable(run) and events.caught_up(run))):
                # Up to TensorBoard's last point; or past a record TensorBoard's fast loader stops at for good.
                band = events.interval(run, tag)
                return Door(EVENTS, series.version, band.version if band is not None else None)
        if self.ms is not None and self.ms.has_run(run):
            return Door(MS, self.ms.version(run))
        return Door(PROVIDER)

    # -- series --------------------------------------------------------------------------------------------------
    def series(self, run, tag):
        """The :class:`Timeline` of one scalar series (with its band), or None."""
        return self.many(run, [tag]).get(tag)

    def many(self, run, tags, tokens=None):
        """``{tag: Timeline}`` of a run's scalar series that have data, each from its best door; ``tokens`` (what
        :meth:`token` gave for them) saves working the doors out again."""
        if tokens is None:
            tokens = {tag: token for (_, tag), token in self.tokens([run], tags).items()}
        doors = {tag: tokens[tag].door.name for tag in tags if tokens.get(tag) is not None}
        out, rest = {}, []
        for tag, door in doors.items():
            got = self._from_events(run, tag) if door == EVENTS else self._from_ms(run, tag) if door == MS else None
            if got is None:
                rest.append(tag)
            else:
                out[tag] = got
        if rest:
            out.update(self._from_provider(run, rest))
        # The bands of *_MS series come from the provider (ours are tensors in event files, if any).
        need = [t for t, got in out.items() if got.band is None and doors[t] == MS]
        if need:
            for tag, band in self._provider_bands(run, need).items():
                out[tag] = out[tag].with_band(band)
        return out

    def _from_events(self, run, tag):
        series = self.events.series(run, tag)
        if series is None:
            return None
        steps, walls, values, pyramid = series.final()
        band, stored = None, self.events.interval(run, tag)
        if stored is not None:
            isteps, _, rows, _ = stored.final()
            band = band_of_rows(isteps, rows)
        return Timeline(
            steps, walls, values, pyramid, restarts=[r.to_json() for r in series.restarts()],
            superseded=lambda: [Superseded(*part) for part in series.superseded()], band=band)

    def _from_ms(self, run, tag):
        ms = self.ms
        try:
            arrays = ms.scalar_arrays(run, tag)
        except KeyError:
            return None
        if arrays is None:
            return None
        steps, walls, values = arrays
        order = np.argsort(steps, kind="stable")
        restarts, superseded = ms.restarts_of(run, tag)
        return Timeline(steps[order], walls[order], values[order], restarts=restarts,
                                 superseded=lambda: [Superseded(*part) for part in superseded()])

    def _from_provider(self, run, tags):
        data = self.points(SCALARS_PLUGIN, {run: list(tags)}, scalar=True).get(run, {})
        bands = self._provider_bands(run, [t for t in tags if t in data])
        return {tag: from_points(pts.steps, pts.walls, pts.values, band=bands.get(tag))
                for tag, pts in data.items()}

    def _provider_bands(self, run, tags):
        """``{tag: IntervalTable}`` of the interval bands the provider holds for ``tags`` of one run."""
        listing = self.tensor_listing().get(run, {})
        itags = {tag: metadata.interval_tag(tag) for tag in tags if metadata.interval_tag(tag) in listing}
        if not itags:
            return {}
        data = self.points(metadata.PLUGIN_NAME, {run: list(itags.values())}, scalar=False).get(run, {})
        out = {}
        for tag, itag in itags.items():
            pts = data.get(itag)
            band = interval_contract.table(pts.steps, pts.values) if pts is not None else None
            if band is not None:
                out[tag] = band
        return out

    def points(self, plugin_name, run_tags, scalar):
        """``{run: {tag: points.Points}}``: every point TensorBoard's provider holds of ``run_tags`` (``{run: [tag]}``)
        of one plugin's series, in one call (through the Python loader's multiplexer where it holds them)."""
        return points.read(self.provider, self._ctx(), self.experiment_id, plugin_name, run_tags, scalar=scalar,
                           multiplexer=self.multiplexer)

    def records(self, run_tags):
        """``{run: {tag: [TensorDatum] by step}}``: every record of our plugin's JSON series ``run_tags`` (run
        information, health events, the run end marker), in one call."""
        run_tags = {run: tags for run, tags in run_tags.items() if tags}
        if not run_tags:
            return {}
        data = self.provider.read_tensors(
            self._ctx(), experiment_id=self.experiment_id, plugin_name=metadata.PLUGIN_NAME, downsample=READ_ALL,
            run_tag_filter=tb_provider.RunTagFilter(runs=sorted(run_tags),
                                                    tags=sorted({t for tags in run_tags.values() for t in tags})))
        return {run: {tag: sorted((data.get(run) or {}).get(tag) or [], key=lambda d: d.step) for tag in tags}
                for run, tags in run_tags.items()}

    # -- what was left out ---------------------------------------------------------------------------------------
    def warnings(self, limit=100):
        """Damaged or undecodable records and unreadable files: ``[{"run", "file", "offset", "reason"}]`` of the
        ``*_MS`` door, of mindformers' text logs, and of the event files when the plugin's own reader is the provider (the commands')."""
        events = getattr(self.provider, "event_file_warnings", None)   # through a merged provider too
        out = list(events(limit)) if events is not None else []
        if self.logs is not None:   # mindformers' text logs
            out += list(self.logs.warnings())[:max(0, limit - len(out))]
        if self.ms is None:
            return out[:limit]
        for run in self.ms.runs():
            for w in self.ms.warnings(run):
                if len(out) >= limit:
                    return out
                out.append(dict(w, run=run))
        return out


# -- a logdir read whole, for the commands ------------------------------------------------------------------------
def load_provider(logdir, store=None):
    """A data provider over the event files under ``logdir`` (local or a URL) with every point of every scalar and
    of this plugin's series, read completely by the plugin's own record reader (``event_provider.py``; TensorBoard's
    Python loader listed a run's folder once per file it read: quadratic in the number of files); ``store``: an
    ``event_series.EventSeries`` filled by the same read."""
    from . import event_provider   # lazy: start-up cost of TensorBoard's migrations (the commands only)

    return event_provider.load(logdir, store=store)


def has_ms_files(path):
    """Whether any folder under ``path`` (local or a URL) holds a MindSpore summary or lineage file."""
    for _, _, names in fs.walk(path):
        if any(is_ms_summary_file(n) for n in names):
            return True
    return False
