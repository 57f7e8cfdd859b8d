"""Many scalar series in one answer (the ``scalars_batch`` route), so the first render of a page of charts needs one
request per group of runs instead of one per chart and run.

Every series in the answer has exactly the shape of the ``scalars`` route (same downsampling, same interval band).
Answers are cached per series (see ``series_cache``): the freshness token of a scalar series is its last point from
``read_last_scalars``, that of its interval band the ``list_tensors`` entry of ``interval/<tag>``; both listings are
shared by all routes (``series_cache.Listings``). To keep the answer compact, values are sent with 7 significant digits (the precision of the
float32 they were recorded as) and wall times rounded to the millisecond; the ``scalars`` route sends them unrounded.
"""

from tensorboard import errors

from .. import metadata
from . import downsample, encode, points, series_cache

import numpy as np

SCALARS_PLUGIN = "scalars"
MAX_RUNS = 200
MAX_TAGS = 500
MAX_PAIRS = 2000


class ScalarsBatch:
    def __init__(self, data_provider, cache, multiplexer=None):
        self._provider = data_provider
        self._cache = cache
        self._multiplexer = multiplexer   # the Python loader's (None under --load_fast): read directly
        self._listings = series_cache.listings_for(data_provider)
        self._flights = series_cache.SingleFlight()
        self._answers = series_cache.ResponseCache(max_bytes=32 * 1024 * 1024, max_entries=512)

    def read(self, ctx, eid, runs, tags, max_points):
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
        tokens = self._tokens(ctx, eid, runs, tags, max_points)
        key = ("batch", tuple(runs), tuple(tags), max_points)
        token = tuple(tokens[(r, t)][1] if (r, t) in tokens else None for r in runs for t in tags)
        answer = self._answers.get(key, token)
        if answer is None:
            answer = encode.Gzipped(self._text(ctx, eid, runs, tags, max_points, tokens))
            self._answers.put(key, token, answer, size=len(answer))
        return answer

    def _tokens(self, ctx, eid, runs, tags, max_points):
        """``{(run, tag): (cache key, freshness token, has an interval band)}`` of the pairs that have data."""
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
                tokens[(run, tag)] = (("scalars", run, tag, max_points), (datum.step, datum.wall_time, itoken),
                                      itoken is not None)
        return tokens

    def _text(self, ctx, eid, runs, tags, max_points, tokens):
        texts, todo, missing = {}, {}, []  # todo: run -> [tag]
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
            flight = ("batch", run, tuple(run_tags), max_points, tuple(tokens[(run, t)][1] for t in run_tags))
            got = self._flights.do(flight, lambda run=run, run_tags=run_tags: self._compute(
                ctx, eid, run, run_tags, max_points, tokens))
            for tag in run_tags:
                text = got.get(tag)
                if text is None:  # vanished between the two calls
                    missing.append([run, tag])
                else:
                    texts[(run, tag)] = text
        parts = [texts[(r, t)] for r in runs for t in tags if (r, t) in texts]
        return '{"series":[%s],"missing":%s}' % (",".join(parts), encode.dumps(missing))

    def _compute(self, ctx, eid, run, run_tags, max_points, tokens):
        """{tag: JSON text or None} of one run's series, stored in the cache."""
        out, todo = {}, []
        for tag in run_tags:  # another request may have stored some of them meanwhile
            key, token, _ = tokens[(run, tag)]
            out[tag] = self._cache.get(key, token)
            if out[tag] is None:
                todo.append(tag)
        if not todo:
            return out
        series = read_series(self._provider, ctx, eid, run, todo, max_points,
                             with_interval=[t for t in todo if tokens[(run, t)][2]], multiplexer=self._multiplexer)
        for tag in todo:
            key, token, _ = tokens[(run, tag)]
            body = series.get(tag)
            if body is not None:
                out[tag] = self._cache.put(key, token, encode.dumps(body))
        return out


def read_series(data_provider, ctx, eid, run, tags, max_points, with_interval=(), multiplexer=None):
    """{tag: JSON-safe scalars answer} for ``tags`` of one run (absent tags are left out). ``multiplexer``: the
    Python loader's, read directly where it holds the series (``points.py``)."""
    data = points.read(data_provider, ctx, eid, SCALARS_PLUGIN, {run: list(tags)}, scalar=True,
                       multiplexer=multiplexer).get(run, {})
    intervals = {}
    if with_interval:
        itags = {tag: metadata.interval_tag(tag) for tag in with_interval}
        idata = points.read(data_provider, ctx, eid, metadata.PLUGIN_NAME, {run: list(itags.values())},
                            scalar=False, multiplexer=multiplexer).get(run, {})
        for tag, itag in itags.items():
            rows = interval_table(idata.get(itag))
            if rows is not None:
                intervals[tag] = downsample.bucket_intervals(rows, max_points)
    out = {}
    for tag in tags:
        pts = data.get(tag)
        if pts is None:
            continue
        out[tag] = body_of_arrays(run, tag, pts.steps, pts.walls, pts.values, intervals.get(tag), max_points)
    return out


def interval_table(pts):
    """``[[step, min, mean, max, count, nonfinite]]`` sorted by step from interval ``points.Points`` (None if
    empty); rows of another width are skipped."""
    if pts is None:
        return None
    width = len(metadata.INTERVAL_FIELDS)
    keep = [i for i, v in enumerate(pts.values) if v.size == width]
    if not keep:
        return None
    order = sorted(keep, key=lambda i: pts.steps[i])
    return [[int(pts.steps[i])] + pts.values[i].tolist() for i in order]


def interval_rows(series):
    """``[[step, min, mean, max, count, nonfinite]]`` sorted by step from interval tensor data (None if empty)."""
    if not series:
        return None
    rows = []
    for d in sorted(series, key=lambda d: d.step):
        values = np.asarray(d.numpy, dtype=np.float64).reshape(-1)
        if values.size != len(metadata.INTERVAL_FIELDS):
            continue
        rows.append([d.step] + values.tolist())
    return rows or None


def series_body(run, tag, points, interval, max_points):
    """The ``scalars`` answer of one series as JSON-safe Python data, from the provider's scalar points."""
    n = len(points)
    steps = np.fromiter((d.step for d in points), dtype=np.int64, count=n)
    walls = np.fromiter((d.wall_time for d in points), dtype=np.float64, count=n)
    values = np.fromiter((d.value for d in points), dtype=np.float64, count=n)
    return body_of_arrays(run, tag, steps, walls, values, interval, max_points)


def body_of_arrays(run, tag, steps, walls, values, interval, max_points):
    """The ``scalars`` answer of one series as JSON-safe Python data, from its steps, wall times and values."""
    n = int(steps.size)
    order = np.lexsort((walls, steps))
    steps, walls, values = steps[order], walls[order], values[order]
    keep = downsample.keep_indices(values, max_points)
    pts = [list(p) for p in zip(steps[keep].tolist(), encode.round_list(walls[keep], 3),
                                encode.json_significant(values[keep], 7))]
    body = {
        "run": run,
        "tag": tag,
        "tier": metadata.tier_of(tag),
        "display_name": metadata.display_name(tag),
        "total_points": n,
        "downsampled": bool(keep.size < n),
        "points": pts,
        "interval": None,
    }
    if interval is not None:
        interval = np.asarray(interval, dtype=np.float64).reshape(-1, 6)
        body["interval"] = [
            [int(r[0])] + [encode.json_float(x) for x in r[1:4]] + [int(r[4]), int(r[5])] for r in interval
        ]
    return body
