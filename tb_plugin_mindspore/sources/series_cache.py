"""What the sources and the answers keep while the data under them is unchanged: the data provider's listings and
freshness tokens (:class:`Listings`, :func:`listings_for`, :class:`TtlMemo`), parsed plugin contents
(:func:`parsed_content`), and one computation shared by identical concurrent requests (:class:`SingleFlight`).

Reading a long series through TensorBoard's data provider is the slow part of every route (the provider builds one
Python object per point). Each answer is kept with a *freshness token*, something cheap to ask the provider for
that changes whenever the series gets new data (the last step and wall time of the series, from
``read_last_scalars`` or ``list_tensors``); these listings are what the tokens come from, reused for a second so
that a page's burst of requests asks once. The answers themselves are kept by ``answers.encode.ResponseCache``.
Thread-safe: TensorBoard serves requests from several threads.
"""

import collections
import logging
import threading
from concurrent import futures

from .. import metadata

logger = logging.getLogger(__name__)

# How long a caller waits for a computation another request started before it gives up (the computation goes on
# and its answer is kept for the next caller).
WAIT_SECS = 120.0


class SingleFlight:
    """Concurrent requests for the same answer share one computation.

    The first caller for a key computes; later callers for that key, while it runs, wait for its result (or get its
    exception). ``shared`` counts the callers that were spared a computation. Thread-safe.
    """

    def __init__(self, wait_secs=WAIT_SECS):
        self.wait_secs = wait_secs
        self._lock = threading.Lock()
        self._flights = {}  # key -> Future
        self.shared = 0

    def claim(self, keys):
        """``(mine, theirs)``: the keys this caller must compute (and then :meth:`resolve` or :meth:`fail`), and
        ``{key: Future}`` of the keys another caller is computing now."""
        mine, theirs = [], {}
        with self._lock:
            for key in keys:
                flight = self._flights.get(key)
                if flight is None:
                    self._flights[key] = futures.Future()
                    mine.append(key)
                else:
                    theirs[key] = flight
                    self.shared += 1
        return mine, theirs

    def resolve(self, key, value):
        with self._lock:
            flight = self._flights.pop(key, None)
        if flight is not None:
            flight.set_result(value)

    def fail(self, key, error):
        with self._lock:
            flight = self._flights.pop(key, None)
        if flight is not None:
            flight.set_exception(error)

    def wait(self, flight):
        """The result of another caller's computation (its exception is raised here too)."""
        try:
            return flight.result(timeout=self.wait_secs)
        except futures.TimeoutError:
            raise TimeoutError("a shared computation took longer than %.0f s" % self.wait_secs)

    def do(self, key, compute):
        """``compute()``, or the result of the identical computation already running."""
        mine, theirs = self.claim([key])
        if not mine:
            return self.wait(theirs[key])
        try:
            value = compute()
        except BaseException as e:
            self.fail(key, e)
            raise
        self.resolve(key, value)
        return value

    def __len__(self):
        return len(self._flights)


# How long a freshness token (or a listing) read from the data provider is reused. TensorBoard itself reloads the
# log directory every few seconds (``--reload_interval``, default 5 s), so new data can only ever appear that
# often; reusing the answer of a provider call for one second makes a page's burst of requests ask once.
TOKEN_TTL_SECS = 1.0


# A listing that is slow to compute (thousands of runs: each of TensorBoard's provider calls then takes seconds) is
# reused ADAPTIVE_FACTOR times as long as it took, at most ADAPTIVE_MAX_SECS: otherwise every request of a page
# would wait for a new one. Once expired, a listing that took at least STALE_MIN_COST_SECS is still answered, for up
# to STALE_MAX_SECS after it was made, while one new listing is made in the background (stale while revalidate): a
# page's requests and a heatmap's warm answers never wait for a listing of thousands of runs, and what they show is
# at most one listing older than TensorBoard's own reload (which itself comes every few seconds).
ADAPTIVE_FACTOR = 4.0
ADAPTIVE_MAX_SECS = 10.0
STALE_MIN_COST_SECS = 0.25
STALE_MAX_SECS = 60.0


class TtlMemo:
    """Remembers ``compute()`` results per key for ``ttl`` seconds (bounded; thread-safe). ``adaptive``: a result
    that took long to compute is kept longer (``ADAPTIVE_FACTOR`` times its cost, at most ``ADAPTIVE_MAX_SECS``), and
    after that answered while its next computation runs in the background (``STALE_MIN_COST_SECS``,
    ``STALE_MAX_SECS``)."""

    def __init__(self, ttl=TOKEN_TTL_SECS, max_entries=256, clock=None, adaptive=False):
        import time

        self.adaptive = adaptive
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock or time.monotonic
        self._items = collections.OrderedDict()  # key -> (time, value, keep, cost)
        self._lock = threading.Lock()
        # When an entry expires under load, the requests that arrive meanwhile wait for one recomputation instead of
        # all recomputing it at once.
        self._flights = SingleFlight()
        self._refreshing = set()   # keys recomputed in the background now
        self.stale_answers = 0     # answers given from an expired entry while it was recomputed

    def _fresh(self, key):
        with self._lock:
            item = self._items.get(key)
            if item is not None and self._clock() - item[0] < max(self.ttl, item[2]):
                return item
        return None

    def _stale(self, key):
        """An expired entry that may still be answered while it is recomputed (see the class doc), or None."""
        if not self.adaptive:
            return None
        with self._lock:
            item = self._items.get(key)
            if item is not None and item[3] >= STALE_MIN_COST_SECS and self._clock() - item[0] < STALE_MAX_SECS:
                return item
        return None

    def peek(self, key):
        """The fresh value of ``key``, or None (nothing is computed)."""
        item = self._fresh(key)
        return item[1] if item is not None else None

    def get(self, key, compute):
        item = self._fresh(key)
        if item is not None:
            return item[1]
        item = self._stale(key)
        if item is not None:
            self._refresh(key, compute)
            self.stale_answers += 1
            return item[1]
        return self._flights.do(key, lambda: self._compute(key, compute))

    def _refresh(self, key, compute):
        """Recomputes ``key`` in a background thread unless that is already happening."""
        with self._lock:
            if key in self._refreshing:
                return
            self._refreshing.add(key)

        def run():
            try:
                self._flights.do(key, lambda: self._compute(key, compute))
            except Exception:   # the next request computes it again (and raises to its caller)
                logger.debug("background recomputation of %r failed", key, exc_info=True)
            finally:
                with self._lock:
                    self._refreshing.discard(key)

        threading.Thread(target=run, name="tb-mindspore-listing", daemon=True).start()

    def _compute(self, key, compute):
        item = self._fresh(key)   # stored by the flight that just ended
        if item is not None:
            return item[1]
        started = self._clock()
        value = compute()
        now = self._clock()
        cost = now - started
        keep = min(ADAPTIVE_MAX_SECS, ADAPTIVE_FACTOR * cost) if self.adaptive else 0.0
        with self._lock:
            self._items[key] = (now, value, keep, cost)
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)
        return value

    def clear(self):
        with self._lock:
            self._items.clear()


class Listings:
    """The data provider listings every route starts from, shared by all routes and reused for ``TOKEN_TTL_SECS``.

    ``last_scalars``: ``read_last_scalars`` of every run (tag names and the last point of each scalar series: the
    freshness token of a scalar series); ``tensors(plugin)``: ``list_tensors`` of every run (plugin content, and
    ``max_step`` / ``max_wall_time``: the freshness token of a tensor series). On a large log directory each of
    these costs tens of milliseconds (TensorBoard's loaders walk the stored points), so a page refresh, which asks
    the tag listing and then many series at once, asks each of them once. A listing that took long (thousands of runs,
    mindformers' add_scalars folders: seconds) is kept for 4x its cost, at most 10 s, and then answered while the next
    one is made in the background (``TtlMemo(adaptive=True)``).
    """

    def __init__(self, data_provider, ttl=TOKEN_TTL_SECS):
        self._provider = data_provider
        self._memo = TtlMemo(ttl=ttl, adaptive=ttl > 0)   # thousands of runs: a listing costs seconds

    def last_scalars(self, ctx, eid):
        return self._memo.get(("last_scalars", eid), lambda: self._provider.read_last_scalars(
            ctx, experiment_id=eid, plugin_name="scalars"))

    def run_last_scalars(self, ctx, eid, run):
        """``{tag: last point}`` of one run: from the every-run listing while it is fresh, else from a call for that run
        alone (kept as the listing is). On a logdir of thousands of runs the every-run listing costs seconds; a
        heatmap or table of one run need not wait for it."""
        every = self._memo.peek(("last_scalars", eid))
        if every is not None:
            return every.get(run, {})
        from tensorboard.data import provider as tb_provider

        return self._memo.get(("last_scalars", eid, run), lambda: self._provider.read_last_scalars(
            ctx, experiment_id=eid, plugin_name="scalars",
            run_tag_filter=tb_provider.RunTagFilter(runs=[run])).get(run, {}))

    def tensors(self, ctx, eid, plugin_name):
        return self._memo.get(("tensors", eid, plugin_name), lambda: self._provider.list_tensors(
            ctx, experiment_id=eid, plugin_name=plugin_name))

    def clear(self):
        self._memo.clear()


_listings = {}
_listings_lock = threading.Lock()


def listings_for(data_provider):
    """The one :class:`Listings` of a data provider (every route of the plugin shares it)."""
    with _listings_lock:
        entry = _listings.get(id(data_provider))
        if entry is None or entry[0] is not data_provider:
            entry = (data_provider, Listings(data_provider))
            _listings[id(data_provider)] = entry
        return entry[1]


def only(listing, runs=None, tags=None):
    """``{run: {tag: value}}`` restricted to ``runs`` / ``tags`` (None: all)."""
    out = {}
    for run, series in listing.items():
        if runs is not None and run not in runs:
            continue
        picked = series if tags is None else {t: v for t, v in series.items() if t in tags}
        if picked:
            out[run] = picked
    return out


_CONTENTS = {}
_CONTENTS_MAX = 4096


def parsed_content(raw):
    """``metadata.parse_content(raw)``, remembered by the raw bytes (every listing repeats the same few contents, and
    parsing them for every tag of every run on each request is a large share of a busy server's time); ``None``
    for content that cannot be read (logged once). The returned dict is shared: read it, do not change it."""
    raw = bytes(raw or b"")
    try:
        return _CONTENTS[raw]
    except KeyError:
        pass
    try:
        content = metadata.parse_content(raw)
    except (metadata.ContentError, ValueError, RecursionError) as e:
        logger.warning("mindspore plugin: skipping series with unreadable plugin content: %s",
                       str(e)[:200] if isinstance(e, metadata.ContentError) else type(e).__name__)
        content = None
    if len(_CONTENTS) >= _CONTENTS_MAX:
        _CONTENTS.clear()
    _CONTENTS[raw] = content
    return content
