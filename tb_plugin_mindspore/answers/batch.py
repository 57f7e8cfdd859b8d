"""The ``scalars`` and ``scalars_batch`` routes: one door (``sources.logdir.Sources``), one builder
(``scalar_answer.body``) for both.

Where a series comes from is the door's choice (``Sources.many``: the plugin's own store of every point of the run's
event files while it is as new as TensorBoard's listing, the ``*_MS`` reader, else TensorBoard's own sample).
Restarted runs: the final timeline, with the restarts and, when asked, the superseded points.

Answers are cached per series (see ``series_cache``) under the series' freshness token (``Sources.tokens``: its
last point, its band's last point, the door that answers and the version of what that door holds). ``scalars_batch``
sends values with 7 significant digits (the precision of the float32 they were recorded as) and wall times rounded
to the millisecond; ``scalars`` sends them unrounded.
"""

from tensorboard import errors

from ..sources import series_cache
from . import encode, scalar_answer

SCALARS_PLUGIN = "scalars"
MAX_RUNS = 200
MAX_TAGS = 500
MAX_PAIRS = 2000


class ScalarsBatch:
    """The two routes over ``sources`` (a ``sources.logdir.Sources``), ``cache`` a ``series_cache.ResponseCache``
    of the series' JSON texts."""

    def __init__(self, sources, cache):
        self._sources = sources
        self._cache = cache
        self._flights = series_cache.SingleFlight()
        self._answers = series_cache.ResponseCache(max_bytes=32 * 1024 * 1024, max_entries=512)

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
            self._answers.put(key, token, answer, size=len(answer))
        return answer

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
            body = scalar_answer.body(run, tag, got, max_points, window=window, with_superseded=with_superseded,
                                      rounded=rounded)
            out[tag] = self._cache.put(self._key(run, tag, how), tokens[(run, tag)], encode.dumps(body))
        return out
