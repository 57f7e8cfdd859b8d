"""The ``scalars`` and ``scalars_batch`` routes: one door (``sources.logdir.Sources``), one builder (:func:`body`)
for both.

Where a series comes from is the door's choice (``Sources.many``: the plugin's own store of every point of the run's
event files while it is as new as TensorBoard's listing, the ``*_MS`` reader, else TensorBoard's own sample).
Restarted runs: the final timeline, with the restarts and, when asked, the superseded points.

Answers are cached per series (``encode.ResponseCache``) under the series' freshness token (``Sources.tokens``: its
last point, its band's last point, the door that answers and the version of what that door holds). ``scalars_batch``
sends values with 7 significant digits (the precision of the float32 they were recorded as) and wall times rounded
to the millisecond; ``scalars`` sends them unrounded.

The builder
-----------
A series is a ``sources.logdir.Timeline`` wherever it was read (``Sources.series``): the final timeline's steps,
wall times and values, its min/max pyramid, its restarts and superseded points, its interval band. :func:`body`
answers any step window of it (``x_min`` / ``x_max``, default the whole series) on ``width`` pixel columns with the
M4 points of each column (first, last, min, max, first NaN/Inf), so every spike and NaN of the window is in the
answer; the interval band is the rows of the window merged into at most ``max_points`` rows (min of the mins, max of
the maxes).
"""

import collections
import threading

import numpy as np
from tensorboard import errors

from .. import metadata
from ..contract import interval as interval_contract
from ..contract import vocabulary
from ..sources import series_cache, series_store
from ..sources.logdir import Superseded, Timeline, from_points  # noqa: F401  (the answer's input)
from . import encode

SCALARS_PLUGIN = "scalars"
MAX_RUNS = 200
MAX_TAGS = 500
MAX_PAIRS = 2000


class ScalarsBatch:
    """The two routes over ``sources`` (a ``sources.logdir.Sources``), ``cache`` an ``encode.ResponseCache``
    of the series' JSON texts."""

    def __init__(self, sources, cache):
        self._sources = sources
        self._cache = cache
        self._flights = series_cache.SingleFlight()
        self._answers = encode.ResponseCache(max_bytes=32 * 1024 * 1024, max_entries=512)
        # A batch's compressed answer is kept from the second time its request is seen: a page refreshing its
        # charts asks the same batches again and again; a one-off combination of runs (a selection being made)
        # would only fill the cache (its series' texts are kept per series all the same).
        self._asked = collections.OrderedDict()
        self._asked_lock = threading.Lock()

    # -- routes --------------------------------------------------------------------------------------------------
    def one(self, ctx, eid, run, tag, max_points, window=None, with_superseded=False):
        """The ``scalars`` answer (``encode.Gzipped`` JSON; values unrounded) of one series; 404 for an unknown run
        or tag."""
        sources = self._sources.bind(ctx, eid)
        last = sources.last_scalars()
        if tag not in last.get(run, {}):
            if not last.get(run):
                raise errors.NotFoundError("no run named %r" % run)
            raise errors.NotFoundError("run %r has no scalar tag %r" % (run, tag))
        how = (max_points, window, bool(with_superseded), False)
        tokens = sources.tokens([run], [tag])
        key = ("one", run, tag, how)
        token = tokens.get((run, tag))
        answer = self._answers.get(key, token)
        if answer is None:
            text = self._text(sources, [run], [tag], how, tokens, missing=[])
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
        sources = self._sources.bind(ctx, eid)
        how = (max_points, window, bool(with_superseded), True)
        tokens = sources.tokens(runs, tags)
        key = ("batch", tuple(runs), tuple(tags), how)
        token = tuple(tokens.get((r, t)) for r in runs for t in tags)
        answer = self._answers.get(key, token)
        if answer is None:
            missing = []
            parts = self._text(sources, runs, tags, how, tokens, missing)
            answer = encode.Gzipped('{"series":[%s],"missing":%s}' % (",".join(parts), encode.dumps(missing)))
            if self._asked_before(key):
                self._answers.put(key, token, answer, size=len(answer))
        return answer

    def _asked_before(self, key, keep=4096):
        """Whether ``key`` was asked for before (the last ``keep`` keys are remembered)."""
        with self._asked_lock:
            seen = key in self._asked
            self._asked[key] = True
            self._asked.move_to_end(key)
            while len(self._asked) > keep:
                self._asked.popitem(last=False)
        return seen

    @staticmethod
    def _key(run, tag, how):
        return ("scalars", run, tag, how)

    def _text(self, sources, runs, tags, how, tokens, missing):
        """The JSON texts of the series that have data, in order (``missing`` gets the others)."""
        texts, todo = {}, {}  # todo: run -> [tag]
        for run in runs:
            for tag in tags:
                if (run, tag) not in tokens:
                    missing.append([run, tag])
                    continue
                text = self._cache.get(self._key(run, tag, how), tokens[(run, tag)])
                if text is None:
                    todo.setdefault(run, []).append(tag)
                else:
                    texts[(run, tag)] = text
        for run, run_tags in todo.items():
            # Identical requests arriving together (a page opened in several tabs, many clients) read once.
            flight = ("series", run, tuple(run_tags), how, tuple(tokens[(run, t)] for t in run_tags))
            got = self._flights.do(flight, lambda run=run, run_tags=run_tags: self._compute(
                sources, run, run_tags, how, tokens))
            for tag in run_tags:
                text = got.get(tag)
                if text is None:  # vanished between the two calls
                    missing.append([run, tag])
                else:
                    texts[(run, tag)] = text
        return [texts[(r, t)] for r in runs for t in tags if (r, t) in texts]

    def _compute(self, sources, run, run_tags, how, tokens):
        """{tag: JSON text or None} of one run's series, stored in the cache."""
        out, todo = {}, []
        for tag in run_tags:  # another request may have stored some of them meanwhile
            out[tag] = self._cache.get(self._key(run, tag, how), tokens[(run, tag)])
            if out[tag] is None:
                todo.append(tag)
        if not todo:
            return out
        max_points, window, with_superseded, rounded = how
        series = sources.many(run, todo, tokens={t: tokens[(run, t)] for t in todo})
        for tag in todo:
            got = series.get(tag)
            if got is None:
                continue
            answer = body(run, tag, got, max_points, window=window, with_superseded=with_superseded, rounded=rounded)
            out[tag] = self._cache.put(self._key(run, tag, how), tokens[(run, tag)], encode.dumps(answer))
        return out


# -- the builder --------------------------------------------------------------------------------------------------
Window = collections.namedtuple("Window", "x_min x_max width")
Window.__new__.__defaults__ = (None, None, None)


def columns_for(max_points, width=None):
    """Pixel columns of an answer of at most ``max_points`` points (5 a column at most, plus one on each side)."""
    most = max(1, (int(max_points) - 2) // 5)
    return most if width is None else max(1, min(int(width), most))


def _window_of(steps, window):
    lo = window.x_min if window.x_min is not None else (int(steps[0]) if steps.size else 0)
    hi = window.x_max if window.x_max is not None else (int(steps[-1]) if steps.size else 0)
    return lo, max(lo, hi)


def _points(steps, walls, values, keep, rounded):
    if rounded:
        return [list(p) for p in zip(steps[keep].tolist(), encode.round_list(walls[keep], 3),
                                     encode.json_significant(values[keep], 7))]
    return [list(p) for p in zip(steps[keep].tolist(), encode.json_numbers(walls[keep]),
                                 encode.json_numbers(np.asarray(values[keep], dtype=np.float64)))]


def _interval_rows(band, lo, hi, max_points):
    """The interval rows ``[[step, min, mean, max, count, nonfinite]]`` inside ``[lo, hi]`` (with the row on each side
    of the window), consecutive rows merged into at most ``max_points`` rows as ``contract.interval.merge`` merges
    them (last step, min of the mins, count-weighted mean, max of the maxes, summed counts), computed on the stored
    columns without copying the window; None without rows."""
    if band is None or not band.steps.size:
        return None
    steps = band.steps
    i0 = max(int(series_store.search(steps, lo, "left")) - 1, 0)
    i1 = min(int(series_store.search(steps, hi, "right")) + 1, steps.size)
    k = i1 - i0
    if k <= 0:
        return None
    size = -(-k // max_points)
    starts = np.arange(0, k, size)
    stops = np.minimum(starts + size, k)
    lows, means, highs = band.min[i0:i1], band.mean[i0:i1], band.max[i0:i1]
    count, bad = band.count[i0:i1], band.nonfinite[i0:i1]
    with np.errstate(invalid="ignore"):
        if size == 1:
            merged = (steps[i0:i1], lows, means, highs, count, bad)
        else:
            counts = np.add.reduceat(count, starts, dtype=np.float64)
            weighted = means * count
            weighted[np.isnan(weighted)] = 0   # an interval without finite values has no mean
            weighted = np.add.reduceat(weighted, starts, dtype=np.float64)
            merged = (steps[i0:i1][stops - 1], np.fmin.reduceat(lows, starts),
                      np.where(counts > 0, weighted / np.where(counts > 0, counts, 1), np.nan),
                      np.fmax.reduceat(highs, starts), counts, np.add.reduceat(bad, starts, dtype=np.float64))
    return encode.interval_rows(interval_contract.IntervalTable(*merged))


def body(run, tag, series, max_points, window=None, with_superseded=False, rounded=False):
    """The scalars answer of one series as JSON-safe data.

    ``series``: a :class:`Timeline` (its ``band``, sorted by step, or None, gives the answer's ``interval``);
    ``window``: a :class:`Window` (None: the whole series on ``columns_for(max_points)`` columns);
    ``with_superseded``: add the superseded points in the window (``"superseded"``); ``rounded``: values to 7
    significant digits and wall times to the millisecond (``scalars_batch``)."""
    window = window or Window()
    steps = series.steps
    n = int(steps.size)
    lo, hi = _window_of(steps, window)
    width = columns_for(max_points, window.width)
    keep = series_store.m4_indices(steps, series.values, series.pyramid, lo, hi, width) if n else np.zeros(0, np.int64)
    inside = int(series_store.search(steps, hi, "right") - series_store.search(steps, lo, "left")) if n else 0
    shown = int(((steps[keep] >= lo) & (steps[keep] <= hi)).sum()) if keep.size else 0
    out = {
        "run": run,
        "tag": tag,
        "tier": vocabulary.tier_of(tag),
        "display_name": metadata.display_name(tag),
        "total_points": n,
        "downsampled": bool(shown < inside),
        "points": _points(steps, series.walls, series.values, keep, rounded),
        "interval": _interval_rows(series.band, lo, hi, max_points),
        "restarts": series.restarts,
    }
    if window.x_min is not None or window.x_max is not None or window.width is not None:
        out["window"] = {"x_min": lo, "x_max": hi, "width": width, "points_inside": inside}
    if with_superseded:
        parts = []
        for part in series.superseded():
            p_keep = series_store.m4_indices(part.steps, part.values, series_store.Pyramid(), lo, hi, width)
            if p_keep.size:
                parts.append({"source": part.source,
                              "points": _points(part.steps, part.walls, part.values, p_keep, rounded)})
        out["superseded"] = parts
    return out
