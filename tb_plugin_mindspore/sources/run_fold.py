"""One run per training: the folders TensorBoard lists as runs, folded back into the trainings that wrote them.

Two layouts write one training into several folders, each of which TensorBoard lists as a run of its own:

* **Rotated parts**: ``<run>/part_0``, ``<run>/part_1``, ... (a size-rotated writer starting a new folder per
  part). They fold into ``<run>``, in part order (the parent folder's own files, if any, first), so a series is one
  line across its parts.
* **add_scalars key folders**: tensorboardX (mindformers' writer) and ``torch.utils.tensorboard`` write
  ``add_scalars(main_tag, {key: value})`` as one folder per key, ``<run>/<main_tag>/<key>/``, holding the one tag
  ``main_tag``. Such a folder (its only scalar tag is the path between its parent run and its own name) folds into
  ``<run>`` as the tag ``<main_tag>/<key>`` (``max_attention_logit/<param>/head_3``, ``expert_load/<layer>/ep_7``).

:class:`RunFold` is the pure mapping (physical run names and their scalar tags in, logical runs and members out);
:class:`FoldedProvider` answers TensorBoard's ``DataProvider`` calls with the logical runs, and
:class:`FoldedMultiplexer` the Python loader's multiplexer calls the plugin makes, so every route, the health rules,
``check`` and ``report`` see one run per training. A logdir without either layout is passed through untouched.
"""

import collections
import logging
import re
import threading
import time

import numpy as np
from tensorboard.data import provider

from . import series_cache

PART = re.compile(r"^(?:(.*)/)?part_(\d+)$")
FOLD_TTL_SECS = 2.0

logger = logging.getLogger(__name__)

Member = collections.namedtuple("Member", "run order main_tag key")
Member.__doc__ = """A physical run in a logical one: ``order`` (part number, -1 for the parent folder itself);
``main_tag`` / ``key`` for an add_scalars key folder (its tag ``main_tag`` is the logical tag ``main_tag/key``),
else None."""


def _key_folder(run, tags):
    """``(parent folder, "" for the root; main_tag; key)`` when ``run`` is an add_scalars key folder holding ``tags``, else None."""
    if len(tags) != 1:
        return None
    (tag,) = tags
    if not tag or tag.startswith("/"):
        return None
    head, sep, key = run.rpartition("/")
    if not sep or not key or key in (".", ".."):
        return None
    if head == tag:
        return "", tag, key
    if head.endswith("/" + tag):
        return head[:-len(tag) - 1], tag, key
    return None


class RunFold:
    """The mapping of one listing. ``runs``: ``{physical run: scalar tag names}``; ``root_names``: names of
    ``--logdir_spec`` entries (their own folder is TensorBoard's ``<name>/.``)."""

    def __init__(self, runs, root_names=()):
        self._roots = set(root_names or ())
        members = {}
        for run, tags in runs.items():
            logical, member = self._place(run, tags or ())
            members.setdefault(logical, []).append(member)
        self.members = {k: sorted(v, key=lambda m: (m.order, m.run)) for k, v in members.items()}
        self.owner = {m.run: logical for logical, ms in self.members.items() for m in ms}
        self.trivial = all(len(ms) == 1 and ms[0].run == logical and ms[0].main_tag is None
                           for logical, ms in self.members.items())

    def _parent(self, prefix):
        if not prefix:
            return "."
        if prefix in self._roots:
            return prefix + "/."
        return prefix

    def _place(self, run, tags):
        main_tag = key = None
        base = run
        found = _key_folder(run, tags)
        if found is not None:
            prefix, main_tag, key = found
            base = self._parent(prefix)
        order = -1
        m = PART.match(base)
        if m:
            base, order = self._parent(m.group(1)), int(m.group(2))
        return base, Member(run, order, main_tag, key)

    # -- names -------------------------------------------------------------------------------------------------
    def logical_runs(self):
        return sorted(self.members)

    def logical_tag(self, member, tag):
        if member.main_tag is not None and tag == member.main_tag:
            return member.main_tag + "/" + member.key
        return tag

    def folded(self, logical):
        """Whether ``logical`` is made of other names than itself (parts or key folders)."""
        ms = self.members.get(logical)
        return bool(ms) and not (len(ms) == 1 and ms[0].run == logical and ms[0].main_tag is None)

    def physical_filter(self, run_tag_filter):
        """The ``RunTagFilter`` of the physical runs and tags behind a logical one (None passes through)."""
        if run_tag_filter is None or (run_tag_filter.runs is None and run_tag_filter.tags is None):
            return run_tag_filter
        runs = None
        if run_tag_filter.runs is not None:
            runs = [m.run for r in run_tag_filter.runs for m in self.members.get(r, ())]
        tags = None
        if run_tag_filter.tags is not None:
            tags = set(run_tag_filter.tags)
            for ms in self.members.values():
                for m in ms:
                    if m.main_tag is not None and (m.main_tag + "/" + m.key) in tags:
                        tags.add(m.main_tag)
        return provider.RunTagFilter(runs=runs, tags=tags)

    def fold(self, physical, combine, run_tag_filter=None):
        """``{run: {tag: value}}`` of physical runs -> logical runs: values of one logical series, in member order,
        go through ``combine(list)``."""
        want_runs = run_tag_filter.runs if run_tag_filter is not None else None
        want_tags = run_tag_filter.tags if run_tag_filter is not None else None
        logical_runs = self.members if want_runs is None else [r for r in want_runs if r in self.members]
        out = {}
        for logical in logical_runs:
            ms = self.members[logical]
            if len(ms) == 1 and ms[0].main_tag is None:      # a run of one folder: as it is
                tags = physical.get(ms[0].run)
                if tags:
                    picked = tags if want_tags is None else {t: v for t, v in tags.items() if t in want_tags}
                    if picked:
                        out[logical] = picked
                continue
            merged = {}
            for m in ms:
                tags = physical.get(m.run)
                if not tags:
                    continue
                for tag, value in tags.items():
                    ltag = tag if m.main_tag is None or tag != m.main_tag else m.main_tag + "/" + m.key
                    if want_tags is None or ltag in want_tags:
                        merged.setdefault(ltag, []).append(value)
            if merged:
                out[logical] = {tag: (values[0] if len(values) == 1 else combine(values))
                                for tag, values in merged.items()}
        return out


def _combine_listing(entries):
    last = max(entries, key=lambda e: (e.max_step, e.max_wall_time))
    fields = {"max_step": last.max_step, "max_wall_time": max(e.max_wall_time for e in entries),
              "plugin_content": entries[0].plugin_content, "description": entries[0].description,
              "display_name": entries[0].display_name}
    if isinstance(last, provider.ScalarTimeSeries):
        return provider.ScalarTimeSeries(last_value=last.last_value, **fields)
    if isinstance(last, provider.BlobSequenceTimeSeries):
        return provider.BlobSequenceTimeSeries(max_length=max(e.max_length for e in entries), **fields)
    return provider.TensorTimeSeries(**fields)


def _concat(parts):
    out = []
    for p in parts:
        out.extend(p)
    return out


def _thin(points, limit):
    if limit is None or len(points) <= limit:
        return points
    idx = np.unique(np.linspace(0, len(points) - 1, max(limit, 1)).round().astype(int))
    return [points[i] for i in idx]


def _last(points):
    return max(points, key=lambda d: (d.step, d.wall_time))


class _FoldSource:
    """The current :class:`RunFold` of a provider. Each run's scalar tags are asked once (a folder that only may be
    an add_scalars key folder, and has no tag yet, again until it has one), so keeping the fold current costs one
    run listing per ``FOLD_TTL_SECS`` on a logdir of thousands of key folders; the fold is rebuilt only when the
    runs or those tags change. When that listing is slow (``series_cache.STALE_MIN_COST_SECS``), requests get the
    current fold while the next one is made in the background."""

    def __init__(self, inner, multiplexer=None, root_names=()):
        self._inner = inner
        self._mux = multiplexer
        self._roots = tuple(root_names or ())
        self._lock = threading.Lock()
        self._fold = None
        self._tags = {}          # physical run -> its scalar tags when it has exactly one, else ()
        self._settled = set()    # runs whose tags were seen (never asked again)
        self._at = None
        self._cost = 0.0         # how long the last refresh took
        self._refreshing = False

    def get(self, ctx=None, experiment_id=""):
        now = time.monotonic()
        with self._lock:
            if self._fold is not None and now - self._at < FOLD_TTL_SECS:
                return self._fold
            if self._fold is not None and self._cost >= series_cache.STALE_MIN_COST_SECS \
                    and now - self._at < series_cache.STALE_MAX_SECS:
                # a slow listing (thousands of folders): answer with the fold as it is while one new listing is
                # made in the background (series_cache.TtlMemo does the same for the listings)
                if not self._refreshing:
                    self._refreshing = True
                    threading.Thread(target=self._refresh_in_background, args=(ctx, experiment_id),
                                     name="tb-mindspore-fold", daemon=True).start()
                return self._fold
        return self._refresh(ctx, experiment_id)

    def _refresh_in_background(self, ctx, experiment_id):
        try:
            self._refresh(ctx, experiment_id)
        except Exception:   # the next request refreshes it again
            logger.debug("refreshing the run fold failed", exc_info=True)
        finally:
            with self._lock:
                self._refreshing = False

    def _refresh(self, ctx, experiment_id):
        started = time.monotonic()
        if ctx is None:
            from tensorboard import context as tb_context

            ctx = tb_context.RequestContext()
        names = _run_names(self._inner, ctx, experiment_id)
        with self._lock:
            known = dict(self._tags)
            settled = set(self._settled)
        ask = [n for n in names if n not in settled]
        changed = set(known) != set(names)
        if ask:
            found, seen = self._tags_of(ctx, experiment_id, ask)
            settled.update(seen)
            for n in ask:
                tags = found.get(n, ())
                if known.get(n, None) != tags:
                    changed = True
                known[n] = tags
        with self._lock:
            self._tags = {n: known[n] for n in names}
            self._settled = settled & set(names)
            if self._fold is None or changed:
                self._fold = RunFold(self._tags, self._roots)
            self._at = time.monotonic()
            self._cost = self._at - started
            return self._fold

    def _tags_of(self, ctx, eid, runs):
        """``({run: (tag,)}, settled)``: the runs among ``runs`` that hold exactly one scalar tag (only a folder with
        one tag can be an add_scalars key folder; the others fold by name), and the runs whose tags are known now
        (any run that cannot be a key folder, and those that hold a tag). TensorBoard's side only: ``*_MS`` runs fold
        by name in their reader."""
        out = {}
        candidates = [r for r in runs if _may_be_key_folder(r)]
        settled = set(runs) - set(candidates)
        if not candidates:
            return out, settled
        if self._mux is not None:
            every = self._mux.AllSummaryMetadata()
            listing = {run: [t for t, md in (every.get(run) or {}).items() if md.plugin_data.plugin_name == "scalars"]
                       for run in candidates}
        else:
            primary = getattr(self._inner, "primary", self._inner)
            listing = primary.list_scalars(ctx, experiment_id=eid, plugin_name="scalars",
                                           run_tag_filter=provider.RunTagFilter(runs=candidates))
        for run, tags in listing.items():
            if tags:
                settled.add(run)
            if len(tags) == 1:
                out[run] = tuple(tags)
        return out, settled


def _may_be_key_folder(run):
    """A run name that an add_scalars key folder could have (``<main_tag>/<key>`` at least)."""
    return "/" in run.rstrip("/.")


class FoldedProvider(provider.DataProvider):
    """``inner`` (TensorBoard's provider merged with the ``*_MS`` one) with one run per training (module doc)."""

    def __init__(self, inner, multiplexer=None, root_names=()):
        self.inner = inner
        self._folds = _FoldSource(inner, multiplexer, root_names)

    def __getattr__(self, name):   # anything else (hparams, histogram_stats of MergedProvider, extra) as is
        return getattr(self.inner, name)

    def fold(self, ctx=None, experiment_id=""):
        return self._folds.get(ctx, experiment_id)

    def experiment_metadata(self, ctx=None, *, experiment_id):
        return self.inner.experiment_metadata(ctx, experiment_id=experiment_id)

    def list_plugins(self, ctx=None, *, experiment_id):
        return self.inner.list_plugins(ctx, experiment_id=experiment_id)

    def list_runs(self, ctx=None, *, experiment_id):
        runs = self.inner.list_runs(ctx, experiment_id=experiment_id)
        fold = self.fold(ctx, experiment_id)
        if fold.trivial:
            return runs
        starts = {}
        for r in runs:
            logical = fold.owner.get(r.run_name, r.run_name)
            if logical not in starts or (r.start_time is not None and (starts[logical] is None
                                                                        or r.start_time < starts[logical])):
                starts[logical] = r.start_time
        return [provider.Run(run_id=name, run_name=name, start_time=starts.get(name)) for name in sorted(starts)]

    def _call(self, method, combine, ctx, experiment_id, run_tag_filter, **kwargs):
        fold = self.fold(ctx, experiment_id)
        if fold.trivial:
            return getattr(self.inner, method)(ctx, experiment_id=experiment_id, run_tag_filter=run_tag_filter,
                                               **kwargs)
        data = getattr(self.inner, method)(ctx, experiment_id=experiment_id,
                                           run_tag_filter=fold.physical_filter(run_tag_filter), **kwargs)
        return fold.fold(data, combine, run_tag_filter)

    def _read(self, method, ctx, experiment_id, plugin_name, downsample, run_tag_filter):
        folded = self._call(method, _concat, ctx, experiment_id, run_tag_filter, plugin_name=plugin_name,
                            downsample=downsample)
        if downsample is None or self.fold(ctx, experiment_id).trivial:
            return folded
        return {run: {tag: _thin(points, downsample) for tag, points in tags.items()} for run, tags in folded.items()}

    def list_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._call("list_scalars", _combine_listing, ctx, experiment_id, run_tag_filter,
                          plugin_name=plugin_name)

    def read_scalars(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        return self._read("read_scalars", ctx, experiment_id, plugin_name, downsample, run_tag_filter)

    def read_last_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._call("read_last_scalars", _last, ctx, experiment_id, run_tag_filter, plugin_name=plugin_name)

    def list_tensors(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._call("list_tensors", _combine_listing, ctx, experiment_id, run_tag_filter,
                          plugin_name=plugin_name)

    def read_tensors(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        return self._read("read_tensors", ctx, experiment_id, plugin_name, downsample, run_tag_filter)

    def list_blob_sequences(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._call("list_blob_sequences", _combine_listing, ctx, experiment_id, run_tag_filter,
                          plugin_name=plugin_name)

    def read_blob_sequences(self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None):
        return self._read("read_blob_sequences", ctx, experiment_id, plugin_name, downsample, run_tag_filter)

    def read_blob(self, ctx=None, *, blob_key):
        return self.inner.read_blob(ctx, blob_key=blob_key)

    def histogram_stats(self, run, tag):
        fold = self._folds.get()
        for m in fold.members.get(run, ()) if fold.folded(run) else ():
            stats = self.inner.histogram_stats(m.run, tag)
            if stats:
                return stats
        return self.inner.histogram_stats(run, tag)


class FoldedMultiplexer:
    """The Python loader's multiplexer calls the plugin makes (``AllSummaryMetadata``, ``SummaryMetadata``,
    ``Tensors``), with the runs of a :class:`FoldedProvider`; everything else as is."""

    def __init__(self, multiplexer, folded_provider):
        self.multiplexer = multiplexer
        self._provider = folded_provider

    def __getattr__(self, name):
        return getattr(self.multiplexer, name)

    def _fold(self):
        return self._provider.fold()

    def AllSummaryMetadata(self):   # noqa: N802 - TensorBoard's name
        fold = self._fold()
        data = self.multiplexer.AllSummaryMetadata()
        if fold.trivial:
            return data
        return fold.fold(data, lambda values: values[0])

    def _members(self, run, tag):
        fold = self._fold()
        if not fold.folded(run):
            return [(run, tag)]
        out = []
        for m in fold.members.get(run, ()):
            if m.main_tag is not None:
                if tag == m.main_tag + "/" + m.key:
                    out.append((m.run, m.main_tag))
            else:
                out.append((m.run, tag))
        return out

    def SummaryMetadata(self, run, tag):   # noqa: N802
        for r, t in self._members(run, tag):
            try:
                return self.multiplexer.SummaryMetadata(r, t)
            except KeyError:
                continue
        raise KeyError("no run %r with tag %r" % (run, tag))

    def Tensors(self, run, tag):   # noqa: N802
        found, events = False, []
        for r, t in self._members(run, tag):
            try:
                events.extend(self.multiplexer.Tensors(r, t))
                found = True
            except KeyError:
                continue
        if not found:
            raise KeyError("no run %r with tag %r" % (run, tag))
        return events


class RunFolders:
    """Where a run as the tab names it lives on disk: ``folders(run)`` its folders in order (a run written in parts
    has several; add_scalars key folders are read through TensorBoard), ``folder(run)`` the one its newest data
    goes to (what the health rules' file statistics look at). ``roots``: a ``logdir_spec.Roots``."""

    def __init__(self, roots, folded_provider):
        self.roots = roots
        self._provider = folded_provider

    def folders(self, run):
        fold = self._provider.fold()
        if fold.folded(run):
            found = [self.roots.folder(m.run) for m in fold.members[run] if m.main_tag is None]
            return [f for f in found if f] or None
        return self.roots.folder(run)

    def folder(self, run):
        found = self.folders(run)
        if isinstance(found, list):
            return found[-1]
        return found


def folded(data_provider, multiplexer=None, roots=None):
    """``(provider, multiplexer)`` with one run per training (see the module doc)."""
    names = [r.name for r in roots if r.name] if roots is not None and roots.is_spec else ()
    p = FoldedProvider(data_provider, multiplexer=multiplexer, root_names=names)
    return p, (FoldedMultiplexer(multiplexer, p) if multiplexer is not None else None)


def _run_names(provider, ctx, experiment_id):
    """The run names of ``provider``. TensorBoard's ``MultiplexerDataProvider.list_runs`` asks every run's first
    event time, which waits forever on a run whose loader is blocked (a FIFO named like an event file): for it, the
    multiplexer's run names are read instead."""
    primary = getattr(provider, "primary", provider)
    mux = getattr(primary, "_multiplexer", None)
    if mux is None or not hasattr(mux, "Runs"):
        return [r.run_name for r in provider.list_runs(ctx, experiment_id=experiment_id)]
    names = list(mux.Runs())
    extra = getattr(provider, "extra", None) if primary is not provider else None
    if extra is not None:
        seen = set(names)
        names += [r.run_name for r in extra.list_runs(ctx, experiment_id=experiment_id) if r.run_name not in seen]
    return names
