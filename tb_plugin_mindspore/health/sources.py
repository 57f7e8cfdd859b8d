"""Builds :class:`~.series.RunSeries` for the health engine, through the one door for data
(``sources.logdir.Sources``).

* :func:`read_runs` (with :class:`ProviderListing`): what the plugin's ``health`` route and ``tb-mindspore check``
  both use. Reads, through the door, every point it holds of plugin ``scalars`` and of our plugin ``mindspore``
  (interval statistics, per-layer vectors, run info, health events, the run end marker). With ``logdir`` (the
  server's own ``--logdir``, never a path from a request) it also looks at the run folders' event files for size and
  modification time. :func:`runs_from_provider` is the same over a bare data provider.
* :func:`runs_from_logdir`: a logdir on disk, for ``tb-mindspore check``. Loads it as the tab does
  (``Sources.for_logdir``: the event files through the plugin's own record reader, every point kept, linear in
  the number of files, merged with our ``*_MS`` reader as the plugin merges them), so runs have the tab's names;
  then the same code as above. Every record and file left out is named (``warnings``).
* :func:`runs_from_ms_logdir`: MindSpore ``*_MS`` summary runs (SummaryCollector's ``loss/auto`` and parameter
  histograms) from a :class:`~tb_plugin_mindspore.sources.ms_logdir.MsLogdir`.
"""

import logging
import math
import os
import time

import numpy as np

from .. import metadata
from ..contract import health_event as health_event_contract
from ..contract import interval as interval_contract
from ..contract import layers as layers_contract
from ..contract import run_end as run_end_contract
from ..contract import run_info as run_info_contract
from ..io import fs
from ..sources import clusters
from ..sources import ms_logdir as ms_logdir_module
from ..sources import points as points_module
from ..sources import series_cache
from ..sources.logdir import Sources, has_ms_files
from ..sources.logdir_status import is_ms_summary_file
from . import foreign
from .series import IntervalSeries, LayerSeries, RunSeries, RunState, Series, is_needed_tag

logger = logging.getLogger(__name__)

SCALARS_PLUGIN = "scalars"


# ---------------------------------------------------------------------------------------------------------------
# Files of a run folder
def _is_event_file(name):
    return "tfevents" in name


def is_data_file(name):
    """An event file or a MindSpore summary / lineage file (what a run merged as the tab does is read from)."""
    return _is_event_file(name) or is_ms_summary_file(name)


def run_dir(logdir, run):
    """The folder of ``run`` under a local ``logdir`` (``"."`` is the logdir itself), or ``None``. ``logdir`` may
    be anything with ``folder(run)``: ``logdir_spec.Roots`` or ``run_fold.RunFolders`` (``--logdir_spec``, a run
    written in several folders: run names as TensorBoard gives them, one run per training)."""
    if hasattr(logdir, "folder"):
        folder = logdir.folder(run)
        return None if folder is None or "://" in folder else folder
    if not logdir or "://" in str(logdir):
        return None
    base = os.path.abspath(os.path.expanduser(str(logdir)))
    path = os.path.normpath(os.path.join(base, run))
    if path != base and not path.startswith(base + os.sep):
        return None
    return path


def ms_files_closed(directory):
    """True when ``directory`` holds MindSpore summary files (``*_MS``) and every one is closed: ``SummaryRecord``
    makes its file read-only (mode 0400) when it closes it, MindSpore's own end marker. False while one is still
    writable, None without any."""
    found = False
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return None
    for entry in entries:
        try:
            if not entry.is_file() or not is_ms_summary_file(entry.name):
                continue
            mode = entry.stat().st_mode
        except OSError:
            continue
        found = True
        if mode & 0o222:
            return False
    return True if found else None


def file_stats(directory, predicate=_is_event_file):
    """``(total bytes, newest mtime, file count)`` of the matching files directly in ``directory``."""
    total, newest, count = 0, None, 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return None, None, 0
    for entry in entries:
        try:
            if not entry.is_file() or not predicate(entry.name):
                continue
            st = entry.stat()
        except OSError:
            continue
        total += st.st_size
        newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
        count += 1
    return total, newest, count


# ---------------------------------------------------------------------------------------------------------------
# Through the data provider
class ProviderListing:
    """What the door lists for the health rules, without reading any series.

    ``scalars``: ``{run: {tag: last point}}`` (``read_last_scalars``: one point per series on both loaders);
    ``ours``: ``{run: {tag: (content, tensor time series)}}`` of the series of our plugin a rule reads (interval
    statistics of a scalar a rule reads, per-layer vectors, run information); ``histograms``: ``{run: (tag, ...)}``.
    ``sources``: a ``sources.logdir.Sources`` bound to the request (its listings are shared with the plugin's other
    routes); ``runs``: list only these runs (``None``: all).
    """

    def __init__(self, sources, runs=None):
        self.sources = sources
        runs = set(runs) if runs else None     # only these runs (None: all)
        self.scalars = series_cache.only(sources.last_scalars(), runs)
        self.ours, self.landscapes = {}, {}
        for run, tags in series_cache.only(sources.tensor_listing(), runs).items():
            for tag, ts in tags.items():
                content = series_cache.parsed_content(ts.plugin_content)
                if content is not None and _rule_reads(content, tag):
                    self.ours.setdefault(run, {})[tag] = (content, ts)
                elif content is not None and content.get("kind") == metadata.KIND_LANDSCAPE:
                    self.landscapes[run] = self.landscapes.get(run, ()) + (tag,)
        hists = sources.histogram_listing()
        self.histograms = {run: tuple(sorted(tags)) for run, tags in series_cache.only(hists, runs).items()}

    def runs(self, only=None):
        """Runs with scalars or our plugin's data (restricted to ``only``), sorted."""
        names = set(self.scalars) | set(self.ours)
        if only:
            names &= set(only)
        return sorted(names)

    def token(self, run, logdir=None):
        """Changes whenever anything a rule reads of ``run`` changes: the last point of every series read, the tag
        names, the event files' size and modification time (hashable)."""
        scalars = self.scalars.get(run) or {}
        read = tuple(sorted((t, int(d.step), float(d.wall_time)) for t, d in scalars.items() if is_needed_tag(t)))
        # Which door answers each series read (the store of every point once it caught up, else TensorBoard's
        # sample): a run is judged again when its series move to the door that holds every point.
        doors = tuple(sorted((tag, token.door) for (_, tag), token in self.sources.tokens(
            [run], [t for t, _, _ in read]).items()))
        ours = tuple(sorted((t, int(ts.max_step), float(ts.max_wall_time))
                            for t, (_, ts) in (self.ours.get(run) or {}).items()))
        directory = run_dir(logdir, run)
        files = file_stats(directory) if directory is not None else None
        return (read, doors, frozenset(scalars), ours, self.histograms.get(run, ()), files, _cluster_token(directory))


def _cluster_token(directory):
    """The data version of the cluster the run's rules judge (its rank files read to their end: one ``stat`` per
    file when nothing changed), so that rows appended to rank files alone make the run judged again; None without
    one."""
    if directory is None:
        return None
    try:
        data = clusters.cluster_for_health(directory)
    except (OSError, ValueError):
        return None
    return None if data is None else data.token


def _rule_reads(content, tag):
    kind = content.get("kind")
    if kind == metadata.KIND_INTERVAL:
        of = interval_contract.scalar_tag(tag, content)
        return bool(of) and is_needed_tag(of)
    return kind == metadata.KIND_LAYERS or kind in _JSON_KINDS


def runs_from_provider(data_provider, ctx, experiment_id, runs=None, logdir=None, now=None, multiplexer=None):
    """``[RunSeries]`` of the runs the data provider knows (or only ``runs``), sorted by name.

    Args:
      data_provider: TensorBoard's ``context.data_provider`` (or a ``Sources``).
      ctx: the request's ``RequestContext``; experiment_id: the request's experiment id.
      runs: limit to these run names (``None``: every run with scalars or our plugin's data).
      logdir: the server's own local logdir; enables event-file size and modification time per run.
      now: the time the check runs at (default: ``time.time()``).
      multiplexer: the Python loader's multiplexer behind ``data_provider``, read directly where it holds a series.
    """
    sources = Sources.of_provider(data_provider, logdir, multiplexer=multiplexer).bind(ctx, experiment_id)
    listing = ProviderListing(sources)
    return read_runs(sources, listing, listing.runs(runs), logdir=logdir, now=now)


def read_runs(sources, listing, names, logdir=None, now=None, problems=None):
    """``[RunSeries]`` of the runs ``names`` (a :class:`ProviderListing` says which series to read), sorted.

    Reads, through ``sources`` (bound to the request), the series a rule uses: each scalar as the tab's charts read
    it (``Sources.many``: the final timeline of every point, with its interval band, from the best door), then in
    one call each our plugin's other series (per-layer vectors, and the bands the timelines did not carry) and our
    JSON records. ``problems``: a list that gets every JSON record left out (run information, health events, run
    end markers)."""
    now = time.time() if now is None else float(now)
    names = sorted(n for n in names if n in listing.scalars or n in listing.ours)
    if not names:
        return []
    scalar_data, banded = {}, {}
    for run in names:
        tags = sorted(t for t in (listing.scalars.get(run) or {}) if is_needed_tag(t))
        timelines = sources.many(run, tags) if tags else {}
        scalar_data[run] = {tag: points_module.Points(tl.steps, tl.walls, tl.values)
                            for tag, tl in timelines.items()}
        banded[run] = {tag: tl.band for tag, tl in timelines.items() if tl.band is not None}
    ours = {run: listing.ours.get(run) or {} for run in names}
    tensor_tags = {run: sorted(t for t, (c, _) in tags.items() if c.get("kind") not in _JSON_KINDS
                               and not _banded(t, c, banded[run]))
                   for run, tags in ours.items()}
    tensor_data = sources.points(metadata.PLUGIN_NAME, tensor_tags, scalar=False)
    records = sources.records({
        run: [t for t, (c, _) in tags.items() if c.get("kind") in _JSON_KINDS] for run, tags in ours.items()})
    runs = [_run_series(run, scalar_data.get(run) or {}, tensor_data.get(run) or {}, listing, logdir, now,
                        _json_facts(ours[run], records.get(run) or {}, problems, run), bands=banded[run])
            for run in names]
    # mindformers' configuration and files beside the run (health/foreign.py)
    return foreign.enrich(runs, sources.provider, sources.request_context(), sources.experiment_id)


def _banded(tag, content, bands):
    """Whether ``tag`` is the interval band of a scalar whose timeline already carries it."""
    return content.get("kind") == metadata.KIND_INTERVAL and interval_contract.scalar_tag(tag, content) in bands


# Our series that hold one JSON object per record, read whole and decoded by their contract module.
_JSON_KINDS = (metadata.KIND_RUN_INFO, metadata.KIND_HEALTH_EVENT, metadata.KIND_RUN_END)


_WHAT = {metadata.KIND_RUN_INFO: "run information", metadata.KIND_HEALTH_EVENT: "health event",
         metadata.KIND_RUN_END: "run end marker"}


def _decoded(kind, decode, items, problems=None, run=None):
    """The decoded records of ``items`` (``(tag, datum)``); one that cannot be read is left out and, with a
    ``problems`` list, named there (a health event nested 100,000 deep must not vanish silently)."""
    out = []
    for tag, datum in items:
        try:
            out.append(decode(datum.numpy))
        except (TypeError, ValueError) as e:   # ContentError is a ValueError
            if problems is not None:
                problems.append({"run": run, "file": None, "offset": None, "tag": tag, "step": int(datum.step),
                                 "reason": "%s at step %d left out: %s" % (_WHAT[kind], datum.step, e)})
    return out


def _json_facts(ours, records, problems=None, run=None):
    """``(run information of the newest record, [health events by step], newest run end marker or None)``; records
    left out are named in ``problems`` (a list) when given."""
    by_kind = {}
    for tag, data in records.items():
        by_kind.setdefault(ours[tag][0].get("kind"), []).extend((tag, d) for d in data)

    def decoded(kind, decode):
        return _decoded(kind, decode, sorted(by_kind.get(kind, []), key=lambda item: item[1].step), problems, run)

    infos = decoded(metadata.KIND_RUN_INFO, run_info_contract.decode)
    events, seen = [], set()
    for ev in decoded(metadata.KIND_HEALTH_EVENT, health_event_contract.decode):
        key = (ev["rule"], ev["first_step"], ev["step"], tuple(ev["layers"]))   # one event written twice: once
        if key not in seen:
            seen.add(key)
            events.append(ev)
    ends = decoded(metadata.KIND_RUN_END, run_end_contract.decode)
    return (infos[-1] if infos else {}), events, (ends[-1] if ends else None)


def json_problems(sources):
    """``status`` warnings: health events and run end markers that cannot be read (left out of the health rules,
    so a run would look healthier than it was), with run, tag and step; ``sources``: bound to the request."""
    ours = {}
    for run, tags in sources.tensor_listing().items():
        for tag, ts in tags.items():
            content = series_cache.parsed_content(ts.plugin_content)
            if content is not None and content.get("kind") in (metadata.KIND_HEALTH_EVENT, metadata.KIND_RUN_END):
                ours.setdefault(run, {})[tag] = (content, ts)
    records = sources.records({run: list(tags) for run, tags in ours.items()})
    problems = []
    for run in sorted(records):
        _json_facts(ours[run], records[run], problems, run)
    return problems


def _step(datum):
    return datum.step


def _run_series(run, scalar_points, tensor_points, listing, logdir, now, facts=({}, [], None), bands=None):
    """One :class:`RunSeries` from ``{tag: points.Points}`` of its scalars and of our plugin's series; ``facts``:
    what :func:`_json_facts` decoded (run information, health events, run end marker); ``bands``: ``{scalar tag:
    IntervalTable}`` read with the scalars (the timelines' bands)."""
    info, events, run_end = facts
    scalars = {}
    first_wall, last_wall = None, None
    for tag, pts in scalar_points.items():
        if not len(pts.steps):
            continue
        s = Series.from_points(tag, pts.steps, pts.walls, pts.values)
        scalars[tag] = s
        lo, hi = float(np.min(s.wall_times)), float(np.max(s.wall_times))
        first_wall = lo if first_wall is None else min(first_wall, lo)
        last_wall = hi if last_wall is None else max(last_wall, hi)
    listed = listing.scalars.get(run) or {}
    other = tuple(sorted(t for t in listed if t not in scalars))
    for datum in listed.values():
        wall = getattr(datum, "wall_time", None)
        if wall is not None and math.isfinite(wall):
            last_wall = wall if last_wall is None else max(last_wall, wall)
    intervals = {tag: IntervalSeries.from_table(tag, band) for tag, band in (bands or {}).items()}
    layers = {}
    contents = listing.ours.get(run) or {}
    for tag, pts in tensor_points.items():
        content = (contents.get(tag) or (None, None))[0]
        if content is None or not len(pts.steps):
            continue
        kind = content.get("kind")
        newest = float(np.max(pts.walls))
        last_wall = newest if last_wall is None else max(last_wall, newest)
        if kind == metadata.KIND_INTERVAL:
            of = interval_contract.scalar_tag(tag, content)
            table = interval_contract.table(pts.steps, pts.values)
            if of and table is not None:
                intervals[of] = IntervalSeries.from_table(of, table)
        elif kind == metadata.KIND_LAYERS:
            names_ = layers_contract.names(content)
            decoded = [layers_contract.decode(content, v) for v in pts.values]
            keep = [i for i, v in enumerate(decoded) if v is not None]
            if keep:
                layers[tag] = LayerSeries.from_rows(tag, names_, pts.steps[keep], pts.walls[keep],
                                                    [decoded[i] for i in keep],
                                                    frozen=layers_contract.frozen(content))
    state = RunState(now=now, last_event_time=last_wall, first_event_time=first_wall)
    last_step = max((int(s.steps[-1]) for s in scalars.values() if len(s.steps)), default=None)
    if run_end is not None and last_step is not None and int(run_end.get("step", 0)) < last_step:
        run_end = None      # training went on after it (a resume into the same folder): it no longer ends the run
    directory = run_dir(logdir, run)
    if directory is not None:
        total, newest, count = file_stats(directory, is_data_file)
        state.total_bytes, state.last_modified, state.event_files = total, newest, count
        state.directory = directory
        state.ms_closed = ms_files_closed(directory)
    return RunSeries(run=run, scalars=scalars, intervals=intervals, layers=layers, state=state, info=info,
                     health_events=events, run_end=run_end, histogram_tags=listing.histograms.get(run, ()), other_tags=other,
                     landscape_tags=tuple(sorted(listing.landscapes.get(run, ()))))


# ---------------------------------------------------------------------------------------------------------------
# From a logdir on disk
def runs_from_view(events_root, ms_root, logdir, now=None, warnings=None):
    """``[RunSeries]`` of every run the tab lists for this logdir (its own ``runs`` route, with the same names:
    event files under ``events_root``, ``*_MS`` files under ``ms_root`` or none), plus the ``*_MS`` runs that hold
    only lineage (the tab's Run info lists those), sorted by name. ``logdir``: where the run folders really are
    (file sizes and modification times); ``warnings``: a list that gets every record and file left out
    (``{"run", "file", "offset", "reason"}``, plus ``"tag"`` and ``"step"`` for a JSON record)."""
    sources = Sources.for_logdir(events_root, ms_root, logdir)
    if warnings is not None:
        warnings.extend(sources.warnings(limit=10 ** 6))
    listing = ProviderListing(sources)
    runs = read_runs(sources, listing, listing.runs(), logdir=sources.folders or logdir, now=now, problems=warnings)
    taken = {r.run for r in runs}
    if sources.ms is not None:   # MindSpore runs whose series no rule reads (histograms, landscapes, lineage only)
        runs += [r for r in runs_from_ms_logdir(sources.ms, now=now) if r.run not in taken]
        taken = {r.run for r in runs}
    state_now = time.time() if now is None else float(now)
    for name in sources.runs():   # event-file runs of histograms or landscapes only
        if name not in taken:
            runs.append(RunSeries(run=name, state=RunState(now=state_now),
                                  histogram_tags=listing.histograms.get(name, ()),
                                  landscape_tags=tuple(sorted(listing.landscapes.get(name, ())))))
    return sorted(runs, key=lambda r: r.run)


def runs_from_logdir(logdir, now=None, include_ms=True, warnings=None):
    """``[RunSeries]`` of every run under ``logdir`` (a local folder or a URL; TensorBoard event files and ``*_MS``
    files), named and merged as the tab does (:func:`runs_from_view`). Files and records that cannot be read
    (FIFOs, link loops, damaged or undecodable records, impossible record lengths) are left out and, with a
    ``warnings`` list, named in it."""
    logdir = fs.normalize(logdir)   # a local folder or a URL (io/fs.py)
    return runs_from_view(logdir, logdir if include_ms else None, logdir, now=now, warnings=warnings)


def runs_from_ms_logdir(ms_logdir, runs=None, now=None):
    """``[RunSeries]`` of MindSpore ``*_MS`` summary runs.

    ``ms_logdir`` is a :class:`~tb_plugin_mindspore.sources.ms_logdir.MsLogdir` (already reloaded, e.g. the
    plugin's) or a local path (read completely here).
    """
    now = time.time() if now is None else float(now)
    if isinstance(ms_logdir, (str, os.PathLike)):
        path = fs.normalize(ms_logdir)
        if not has_ms_files(path):
            return []
        reader = ms_logdir_module.MsLogdir(path)
        for _ in range(100000):
            if not reader.reload().pending:
                break
    else:
        reader = ms_logdir
    out = []
    for run in reader.runs():
        if runs and run not in runs:
            continue
        try:
            tags = reader.tags(run)
        except KeyError:
            continue
        scalars = {}
        first_wall, last_wall = None, None
        for tag in tags.get("scalars", []):
            arrays = reader.scalar_arrays(run, tag)
            if arrays is None or not len(arrays[0]):
                continue
            steps, walls, values = arrays
            scalars[tag] = Series.from_points(tag, steps, walls, values)
            lo, hi = float(np.min(walls)), float(np.max(walls))
            first_wall = lo if first_wall is None else min(first_wall, lo)
            last_wall = hi if last_wall is None else max(last_wall, hi)
        state = RunState(now=now, last_event_time=last_wall, first_event_time=first_wall)
        directory = run_dir(getattr(reader, "roots", None) or getattr(reader, "logdir", None), run)
        if directory is not None:
            total, newest, count = file_stats(directory, is_ms_summary_file)
            state.total_bytes, state.last_modified, state.event_files = total, newest, count
            state.ms_closed = ms_files_closed(directory)
            state.directory = directory
        info = {}
        if not scalars:
            holds = _ms_holds(reader, run, tags)
            if holds:
                info["mindspore_holds"] = holds
        out.append(RunSeries(run=run, scalars=scalars, state=state, info=info,
                             histogram_tags=tuple(tags.get("histograms", [])),
                             landscape_tags=tuple(tags.get("landscapes", []))))
    return foreign.enrich(out)   # mindformers' files beside the run (health/foreign.py)


def _ms_holds(reader, run, tags):
    """What a MindSpore run without scalars holds, in words ("MindSpore lineage (evaluation metrics acc=0.5)"),
    or "" when it holds nothing."""
    parts = []
    for kind, label in (("histograms", "histogram"), ("tensors", "tensor"), ("images", "image"),
                        ("landscapes", "loss landscape")):
        n = len(tags.get(kind, []))
        if n:
            parts.append("%d %s tag%s" % (n, label, "" if n == 1 else "s"))
    try:
        hparams = reader.lineage(run).get("hparams", {})
    except (AttributeError, KeyError):
        hparams = {}
    if hparams:
        metrics = ["%s=%s" % (k.split("/", 1)[1], hparams[k]) for k in sorted(hparams) if k.startswith("metric/")]
        parts.append("MindSpore lineage" + (" (evaluation metrics %s)" % ", ".join(metrics[:6]) if metrics else ""))
    try:
        graphs = int(reader.stats(run).get("graphs", 0))
    except (AttributeError, KeyError, TypeError, ValueError):
        graphs = 0
    if graphs:
        parts.append("the computational graph")
    return ", ".join(parts)

