"""The ``scalars`` and ``scalars_batch`` routes: one reader, one builder (``scalar_answer.body``) for both.

Where a series comes from, best first: the plugin's own compact store of every point of the run's event files
(``event_series``; kept once the tab asks for a run, caught up before answering when TensorBoard has newer data);
the ``*_MS`` reader (``ms_logdir``, which keeps every point too); else TensorBoard's own sample through the data
provider (``points``), e.g. while the store reads a run for the first time (in the background). The store is used
only while its last point is the one TensorBoard lists, so an answer never lags TensorBoard's. Restarted runs: the final timeline, with the restarts and, when asked, the superseded
points (``timeline``).

Answers are cached per series (see ``series_cache``): the freshness token of a scalar series is its last point from
``read_last_scalars``, that of its interval band the ``list_tensors`` entry of ``interval/<tag>``, plus the
version of the store that answered; both listings are shared by all routes (``series_cache.Listings``).
``scalars_batch`` sends values with 7 significant digits (the precision of the float32 they were recorded as)
and wall times rounded to the millisecond; ``scalars`` sends them unrounded.
"""

import numpy as np
from tensorboard import errors

from .. import metadata
from ..contract import interval as interval_contract
from . import encode, points, scalar_answer, series_cache

SCALARS_PLUGIN = "scalars"
MAX_RUNS = 200
MAX_TAGS = 500
MAX_PAIRS = 2000


class ScalarsBatch:
    """``events``: an ``event_series.EventSeries`` (None: read through the provider only); ``ms``: the
    ``ms_logdir.MsLogdir`` of the ``*_MS`` files (or None)."""

    def __init__(self, data_provider, cache, multiplexer=None, events=None, ms=None):
        self._provider = data_provider
        self._cache = cache
        self._multiplexer = multiplexer   # the Python loader's (None under --load_fast): read directly
        self._events = events
        self._ms = ms
        self._listings = series_cache.listings_for(data_provider)
        self._flights = series_cache.SingleFlight()
        self._answers = series_cache.ResponseCache(max_bytes=32 * 1024 * 1024, max_entries=512)

    # -- routes --------------------------------------------------------------------------------------------------
    def one(self, ctx, eid, run, tag, max_points, window=None, with_superseded=False):
        """The ``scalars`` answer (``encode.Gzipped`` JSON; values unrounded) of one series; 404 for an unknown run
        or tag."""
        last = self._listings.last_scalars(ctx, eid)
        if tag not in last.get(run, {}):
            if not last.get(run):
                raise errors.NotFoundError("no run named %r" % run)
            raise errors.NotFoundError("run %r has no scalar tag %r" % (run, tag))
        how = (max_points, window, bool(with_superseded), False)
        tokens = self._tokens(ctx, eid, [run], [tag], how)
        key = ("one", run, tag, how)
        token = tokens[(run, tag)][1] if (run, tag) in tokens else None
        answer = self._answers.get(key, token)
        if answer is None:
            text = self._text(ctx, eid, [run], [tag], how, tokens, missing=[])
            if not text:   # gone since the listing
                raise errors.NotFoundError("run %r has no scalar tag %r" % (run, tag))
            answer = encode.Gzipped(text[0])
            self._answers.put(key, token, answer, size=len(answer))
        return answer

    def read(self, ctx, eid, runs, tags, max_points, window=None, with_superseded=False):
        """``encode.Gzipped`` JSON ``{"series": [scalars answer, ...], "missing": [[run, tag], ...]}`` for every
        (run, tag) pair of ``runs`` x ``tags``, in that order; pairs without data are listed in ``missing``. The
        compressed answer is kept too, while every series in it is unchanged (a page refreshing the same charts)."""
        runs = list(dict.fromkeys(runs))
        tags = list(dict.fromkeys(tags))
        if not runs or not tags:
            raise errors.InvalidArgumentError("scalars_batch needs at least one 'run' and one 'tag' parameter")
        if len(runs) > MAX_RUNS or len(tags) > MAX_TAGS or len(runs) * len(tags) > MAX_PAIRS:
            raise errors.InvalidArgumentError(
                "scalars_batch takes at most %d runs, %d tags and %d pairs per request" % (MAX_RUNS, MAX_TAGS, MAX_PAIRS)
            )
        how = (max_points, window, bool(with_superseded), True)
        tokens = self._tokens(ctx, eid, runs, tags, how)
        key = ("batch", tuple(runs), tuple(tags), how)
        token = tuple(tokens[(r, t)][1] if (r, t) in tokens else None for r in runs for t in tags)
        answer = self._answers.get(key, token)
        if answer is None:
            missing = []
            parts = self._text(ctx, eid, runs, tags, how, tokens, missing)
            answer = encode.Gzipped('{"series":[%s],"missing":%s}' % (",".join(parts), encode.dumps(missing)))
            self._answers.put(key, token, answer, size=len(answer))
        return answer

    # -- where each series comes from ----------------------------------------------------------------------------
    def _source(self, run, tag, datum):
        """``("events", version)`` when the event store holds the series up to TensorBoard's last point (or read
        past an undecodable record, where TensorBoard's fast loader stops reading the file),
        ``("ms", version)`` for a ``*_MS`` run, else ``("provider",)``."""
        events = self._events
        if events is not None and events.want(run):
            target = (int(datum.step), float(datum.wall_time))
            series = events.series(run, tag)
            if (series is None or series.last() != target) and events.caught_up(run):
                events.sync(run)   # what is new since the background thread's last read
                series = events.series(run, tag)
            if series is not None and (series.last() == target or (
                    events.skipped_undecodable(run) and events.caught_up(run))):
                # Up to TensorBoard's last point; or past a record TensorBoard's fast loader stops at for good.
                interval = events.interval(run, tag)
                return ("events", series.version, interval.version if interval is not None else None)
        if self._ms is not None and self._ms.has_run(run):
            return ("ms", self._ms.version(run))
        return ("provider",)

    def _tokens(self, ctx, eid, runs, tags, how):
        """``{(run, tag): (cache key, freshness token, source)}`` of the pairs that have data."""
        last = self._listings.last_scalars(ctx, eid)
        ilisting = self._listings.tensors(ctx, eid, metadata.PLUGIN_NAME)
        tokens = {}
        for run in runs:
            for tag in tags:
                datum = last.get(run, {}).get(tag)
                if datum is None:
                    continue
                iseries = ilisting.get(run, {}).get(metadata.interval_tag(tag))
                itoken = (iseries.max_step, iseries.max_wall_time) if iseries is not None else None
                source = self._source(run, tag, datum)
                tokens[(run, tag)] = (("scalars", run, tag, how), (datum.step, datum.wall_time, itoken, source),
                                      source)
        return tokens

    def _text(self, ctx, eid, runs, tags, how, tokens, missing):
        """The JSON texts of the series that have data, in order (``missing`` gets the others)."""
        texts, todo = {}, {}  # todo: run -> [tag]
        for run in runs:
            for tag in tags:
                if (run, tag) not in tokens:
                    missing.append([run, tag])
                    continue
                key, token, _ = tokens[(run, tag)]
                text = self._cache.get(key, token)
                if text is None:
                    todo.setdefault(run, []).append(tag)
                else:
                    texts[(run, tag)] = text
        for run, run_tags in todo.items():
            # Identical requests arriving together (a page opened in several tabs, many clients) read once.
            flight = ("series", run, tuple(run_tags), how, tuple(tokens[(run, t)][1] for t in run_tags))
            got = self._flights.do(flight, lambda run=run, run_tags=run_tags: self._compute(
                ctx, eid, run, run_tags, how, tokens))
            for tag in run_tags:
                text = got.get(tag)
                if text is None:  # vanished between the two calls
                    missing.append([run, tag])
                else:
                    texts[(run, tag)] = text
        return [texts[(r, t)] for r in runs for t in tags if (r, t) in texts]

    def _compute(self, ctx, eid, run, run_tags, how, tokens):
        """{tag: JSON text or None} of one run's series, stored in the cache."""
        out, todo = {}, []
        for tag in run_tags:  # another request may have stored some of them meanwhile
            key, token, _ = tokens[(run, tag)]
            out[tag] = self._cache.get(key, token)
            if out[tag] is None:
                todo.append(tag)
        if not todo:
            return out
        max_points, window, with_superseded, rounded = how
        series = self._timelines(ctx, eid, run, todo, {t: tokens[(run, t)][2] for t in todo})
        for tag in todo:
            got = series.get(tag)
            if got is None:
                continue
            body = scalar_answer.body(run, tag, got[0], got[1], max_points, window=window,
                                      with_superseded=with_superseded, rounded=rounded)
            key, token, _ = tokens[(run, tag)]
            out[tag] = self._cache.put(key, token, encode.dumps(body))
        return out

    def _timelines(self, ctx, eid, run, tags, sources):
        """``{tag: (scalar_answer.Timeline, interval (steps, rows) or None)}`` from each tag's source."""
        out, rest = {}, []
        for tag in tags:
            kind = sources[tag][0]
            got = None
            if kind == "events":
                got = self._from_events(run, tag)
            elif kind == "ms":
                got = self._from_ms(run, tag)
            if got is None:
                rest.append(tag)
            else:
                out[tag] = got
        if rest:
            out.update(self._from_provider(ctx, eid, run, rest))
        # Interval bands of series not in the event store come from the provider (ours are tensors in event files).
        need = [t for t, (series, interval) in out.items() if interval is None and sources[t][0] == "ms"]
        if need:
            bands = self._provider_intervals(ctx, eid, run, need)
            for tag, band in bands.items():
                out[tag] = (out[tag][0], band)
        return out

    def _from_events(self, run, tag):
        series = self._events.series(run, tag)
        if series is None:
            return None
        steps, walls, values, pyramid = series.final()
        timeline = scalar_answer.Timeline(
            steps, walls, values, pyramid, restarts=[r.to_json() for r in series.restarts()],
            superseded=lambda: [scalar_answer.Superseded(*part) for part in series.superseded()])
        band = self._events.interval(run, tag)
        interval = None
        if band is not None:
            isteps, _, rows, _ = band.final()
            interval = (isteps, rows)
        return timeline, interval

    def _from_ms(self, run, tag):
        ms = self._ms
        try:
            arrays = ms.scalar_arrays(run, tag)
        except KeyError:
            return None
        if arrays is None:
            return None
        steps, walls, values = arrays
        order = np.argsort(steps, kind="stable")
        # Per file that a later one cut: its points of this tag from the cut on (ms_logdir keeps them all).
        parts = []
        for s, w, v, cutoff in ms._scalar_copies(run, [tag]).get(tag, []):
            s = np.frombuffer(s, dtype=np.int64)
            lost = s >= cutoff if cutoff is not None else np.zeros(s.size, dtype=bool)
            if lost.any():
                parts.append((cutoff, s[lost], np.frombuffer(w, dtype=np.float64)[lost],
                              np.frombuffer(v, dtype=np.float32)[lost]))
        by = [lost["by"] for f in ms.files(run) for lost in f.get("superseded") or [] if tag in lost.get("tags", ())]
        restarts = [{"step": int(cut), "superseded_points": int(lost_steps.size), "source": source}
                    for (cut, lost_steps, _, _), source in zip(parts, by + [None] * len(parts))]

        def superseded():
            return [scalar_answer.Superseded(source["source"], s, w, v)
                    for (_, s, w, v), source in zip(parts, restarts)]

        timeline = scalar_answer.Timeline(steps[order], walls[order], values[order], restarts=restarts,
                                          superseded=superseded)
        return timeline, None

    def _from_provider(self, ctx, eid, run, tags):
        data = points.read(self._provider, ctx, eid, SCALARS_PLUGIN, {run: list(tags)}, scalar=True,
                           multiplexer=self._multiplexer).get(run, {})
        bands = self._provider_intervals(ctx, eid, run, [t for t in tags if t in data])
        return {tag: (scalar_answer.from_points(pts.steps, pts.walls, pts.values), bands.get(tag))
                for tag, pts in data.items()}

    def _provider_intervals(self, ctx, eid, run, tags):
        """``{tag: (steps, rows)}`` of the interval bands the provider holds for ``tags`` of one run."""
        listing = self._listings.tensors(ctx, eid, metadata.PLUGIN_NAME).get(run, {})
        itags = {tag: metadata.interval_tag(tag) for tag in tags if metadata.interval_tag(tag) in listing}
        if not itags:
            return {}
        idata = points.read(self._provider, ctx, eid, metadata.PLUGIN_NAME, {run: list(itags.values())},
                            scalar=False, multiplexer=self._multiplexer).get(run, {})
        out = {}
        for tag, itag in itags.items():
            table = interval_table(idata.get(itag))
            if table is not None:
                out[tag] = table
        return out


def interval_table(pts):
    """``(steps, rows)`` sorted by step (rows: ``contract.interval.FIELDS``) of interval ``points.Points``, or None."""
    if pts is None:
        return None
    table = interval_contract.table(pts.steps, pts.values)
    if table is None:
        return None
    return table.steps, np.column_stack([getattr(table, f) for f in interval_contract.FIELDS])
