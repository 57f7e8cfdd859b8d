"""The plugin's ``health`` answers, kept per run while the run's data is unchanged.

Reading every point of a long run through TensorBoard's data provider is what a health check costs (seconds on a
run of 100,000 steps); the rules themselves take milliseconds. So, per run:

* a *token* (``health.sources.ProviderListing.token``: the last point of every series a rule reads, the tag names, the
  event files' size and modification time) says whether its data changed; the provider listings behind it are
  shared with the other routes and reused for up to a second;
* the run's series and the findings of the rules that depend only on the data are kept under that token
  (bounded by size, least recently used first); the rules that depend on the time of the check
  (``engine.CLOCK_RULES``: stalled, unfinished) run again on every request, on the kept series;
* runs whose token changed are read again (the provider cannot read "points since step N", so a changed run is
  read whole; with the plugin's sample limits that is at most a few ten thousand points per series);
* the rules that read only a cluster's rank files (``health/rules/cluster.py``) judge the state the server's
  rank-file reader last left (``sources/clusters.py``), once per state: the reader judges each new state ahead of
  the requests, with this cache's configuration;
* concurrent requests share the computation of a run (single flight), and at most ``max_parallel`` computations
  run at a time: a request whose client has gone leaves behind at most one computation per run, whose answer
  is kept for the next request.
"""

import collections
import dataclasses
import threading
import time
import weakref

from ..health import engine
from ..health import sources as health_sources
from ..sources import clusters, series_cache
from ..sources.logdir import Sources
from . import encode

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_PARALLEL = 1


@dataclasses.dataclass
class _Entry:
    series: object          # RunSeries
    findings: list          # findings of the data rules


def _series_bytes(run):
    n = 0
    for group in (run.scalars, run.intervals, run.layers):
        for s in group.values():
            n += sum(v.nbytes for v in vars(s).values() if hasattr(v, "nbytes"))
    return n + 4096


class HealthCache:
    """Health reports over ``sources`` (the logdir's ``sources.logdir.Sources``, or a bare data provider with its
    ``logdir`` and ``multiplexer``), cached per run (see the module docstring). Thread-safe."""

    def __init__(self, sources, logdir=None, config=None, max_bytes=DEFAULT_MAX_BYTES,
                 max_parallel=DEFAULT_MAX_PARALLEL, clock=time.time, multiplexer=None,
                 report_ttl=series_cache.TOKEN_TTL_SECS):
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive, got %r" % (max_bytes,))
        if max_parallel < 1:
            raise ValueError("max_parallel must be at least 1, got %r" % (max_parallel,))
        engine.validate_config(config)
        self._sources = Sources.of_provider(sources, logdir, multiplexer=multiplexer)
        self._logdir = logdir or self._sources.folders or self._sources.logdir
        self._config = config
        self._clock = clock
        self._entries = encode.ResponseCache(max_bytes=max_bytes)
        self._flights = series_cache.SingleFlight()
        self._gate = threading.BoundedSemaphore(max_parallel)
        self._data_rules, self._clock_rules = engine.split_rules()
        # The JSON of a whole answer is reused for as long as the provider listings behind the tokens are: under
        # load, the tokens and the clock rules of every run are not worked out again for each request.
        self._answers = series_cache.TtlMemo(ttl=report_ttl)
        self.computed = collections.Counter()   # run -> times it was read and checked
        # The rank files' reader judges each new state of a cluster with the rules that read only the cluster, in
        # its own thread, as soon as it read it: a check after a reload finds those findings ready.
        method = weakref.WeakMethod(self._judge_ahead)

        def listener(folder, data):
            judge = method()
            if judge is not None:
                judge(folder, data)

        self._listener = listener
        clusters.on_reload(listener)

    def close(self):
        """Stops judging the clusters' new states ahead of the checks."""
        clusters.off_reload(self._listener)

    def _judge_ahead(self, folder, data):
        engine.judge_cluster_ahead(folder, data.view(), self._config)

    @property
    def stats(self):
        """``{"hits", "misses", "computed_runs", "shared"}`` (for tests and benchmarks)."""
        return {"hits": self._entries.hits, "misses": self._entries.misses,
                "computed_runs": sum(self.computed.values()), "shared": self._flights.shared}

    def runs(self, ctx, eid):
        return health_sources.ProviderListing(self._sources.bind(ctx, eid)).runs()

    def report_json(self, ctx, eid, runs=None):
        """:meth:`report` as gzipped JSON (``encode.Gzipped``, what the route sends), shared by the requests of the
        same second."""
        key = (eid, tuple(runs) if runs else None)
        return self._answers.get(key, lambda: encode.Gzipped(encode.dumps(self.report(ctx, eid, runs))))

    def report(self, ctx, eid, runs=None):
        """The findings report (``engine.report``'s shape) of every run, or of the runs in ``runs``."""
        listing = health_sources.ProviderListing(self._sources.bind(ctx, eid), runs=runs)
        names = listing.runs(runs)
        with clusters.one_reload():     # the rules judge the rank files as the tokens saw them
            tokens = {run: listing.token(run, self._logdir) for run in names}
            entries, missing = {}, []
            for run in names:
                entry = self._entries.get((eid, run), tokens[run])
                if entry is None:
                    missing.append((eid, run, tokens[run]))
                else:
                    entries[run] = entry
            if missing:
                entries.update(self._compute(ctx, eid, listing, missing))
        now = self._clock()
        return {"runs": [self._run_report(entries[run], now) for run in names if entries.get(run) is not None]}

    def _run_report(self, entry, now):
        run = entry.series
        if run.state is not None:
            run = dataclasses.replace(run, state=dataclasses.replace(run.state, now=now))
        findings = list(entry.findings) + engine.check_run(run, self._config, rules=self._clock_rules)
        engine.sort_findings(findings)
        return {"run": run.run, "status": engine.status_of(findings), "findings": [f.to_json() for f in findings]}

    def _compute(self, ctx, eid, listing, missing):
        """``{run: _Entry or None}`` for ``missing`` ``[(eid, run, token)]``: computed here or by a concurrent
        request."""
        mine, theirs = self._flights.claim(missing)
        out = {}
        try:
            if mine:
                with self._gate:
                    out.update(self._read_and_check(ctx, eid, listing, mine))
        finally:
            for key in mine:   # whatever happened, nobody waits forever
                if key[1] in out:
                    self._flights.resolve(key, out[key[1]])
                else:
                    self._flights.fail(key, RuntimeError("the health check of run %r failed" % key[1]))
        for (_, run, _), flight in theirs.items():
            out[run] = self._flights.wait(flight)
        return out

    def _read_and_check(self, ctx, eid, listing, keys):
        out, todo = {}, {}
        for _, run, token in keys:   # a request that finished meanwhile may have stored them
            entry = self._entries.get((eid, run), token)
            if entry is not None:
                out[run] = entry
            else:
                todo[run] = token
        if not todo:
            return out
        read = {r.run: r for r in health_sources.read_runs(self._sources.bind(ctx, eid), listing, sorted(todo),
                                                           logdir=self._logdir, now=self._clock())}
        for run, token in todo.items():
            series = read.get(run)
            if series is None:     # gone between the listing and the read
                out[run] = None
                continue
            entry = _Entry(series, engine.check_run(series, self._config, rules=self._data_rules))
            self._entries.put((eid, run), token, entry, size=_series_bytes(series))
            self.computed[run] += 1
            out[run] = entry
        return out
