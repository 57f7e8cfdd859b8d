"""Our view over TensorBoard's data provider: the runs and their tags by tier (the ``runs`` and ``tags`` routes).

Reads through ``context.data_provider`` (works with both the Python loader and ``--load_fast``; with the Python
loader's multiplexer, tag names come from its summary metadata). Scalars of any origin (ours, mindformers', the
user's) are listed by tier (``vocabulary.tier_of``); a scalar says whether interval statistics (``interval/<tag>``)
describe it. The series themselves are answered by ``scalars.py``.
"""

import logging

from tensorboard import errors

from .. import metadata
from ..contract import vocabulary
from ..contract import interval as interval_contract
from ..contract import mindformers
from ..sources import series_cache
from . import encode, histograms, layers

logger = logging.getLogger(__name__)

SCALARS_PLUGIN = "scalars"


class DataView:
    def __init__(self, data_provider, multiplexer=None):
        self._provider = data_provider
        # The Python loader's multiplexer (None under --load_fast): lists tag names without reading any point.
        self._multiplexer = multiplexer
        self._names = series_cache.TtlMemo(max_entries=4096)
        self._labels = {}   # tag -> (tier, display name): a logdir of thousands of runs repeats a few tag names
        # The provider's listings, shared with the other routes and reused for up to a second (see series_cache).
        self._listings = series_cache.listings_for(data_provider)
        self._parsed = None   # (listing, {run: {tag: parsed content}})

    # -- listing ---------------------------------------------------------------------------------------------------
    def _our_tensors(self, ctx, eid, runs=None):
        """{run: {tag: parsed content}} of our plugin's tensor series (unreadable content is skipped, logged)."""
        listing = self._listings.tensors(ctx, eid, metadata.PLUGIN_NAME)
        derived = self._parsed
        if derived is None or derived[0] is not listing:   # parsed once per listing (reused for up to a second)
            out = {}
            for run, tags in listing.items():
                for tag, series in tags.items():
                    content = series_cache.parsed_content(series.plugin_content)
                    if content is not None:
                        out.setdefault(run, {})[tag] = content
            derived = self._parsed = (listing, out)
        return series_cache.only(derived[1], runs)

    def _scalar_listing(self, ctx, eid, runs=None):
        """{run: {tag: last point}}. ``read_last_scalars`` costs one point per series on the Python loader, whereas
        its ``list_scalars`` walks every point of every series (seconds on long runs); shared by all routes."""
        return series_cache.only(self._listings.last_scalars(ctx, eid), runs)

    def _scalar_tags(self, ctx, eid, runs=None):
        """{run: {tag: ...}} of the scalar series (only the tag names count), for the ``runs`` and ``tags`` routes.

        With the Python loader's multiplexer, its summary metadata names them without reading a point (the last
        point of each of 40,000 series costs about a second there), merged with the other provider's listing
        (``*_MS`` files); otherwise :meth:`_scalar_listing`."""
        if self._multiplexer is None:
            return self._scalar_listing(ctx, eid, runs)
        return series_cache.only(self._names.get(("scalar_tags", eid), lambda: self._multiplexer_tags(ctx, eid)),
                                 runs)

    def _multiplexer_tags(self, ctx, eid):
        from tensorboard.compat.proto import summary_pb2

        out = {}
        for run, tags in self._multiplexer.AllSummaryMetadata().items():
            names = {t: None for t, md in tags.items() if md.data_class == summary_pb2.DATA_CLASS_SCALAR
                     and md.plugin_data.plugin_name == SCALARS_PLUGIN}
            if names:
                out[run] = names
        extra = getattr(self._provider, "extra", None)
        if extra is not None:
            for run, tags in extra.list_scalars(ctx, experiment_id=eid, plugin_name=SCALARS_PLUGIN).items():
                mine = out.setdefault(run, {})
                for tag in tags:
                    mine.setdefault(tag, None)
        return out

    def _label(self, tag):
        label = self._labels.get(tag)
        if label is None:
            if len(self._labels) > 100000:
                self._labels.clear()
            same = vocabulary.same_as(tag)
            label = self._labels[tag] = (vocabulary.tier_of(same or tag), metadata.display_name(same or tag), same)
        return label

    # -- answers of the routes: JSON built and compressed once, shared by the requests of the same second ----------
    def runs_answer(self, ctx, eid):
        """The ``runs`` route's answer (``encode.Gzipped``)."""
        return self._names.get(("runs_answer", eid), lambda: encode.Gzipped(encode.dumps(
            {"runs": self.runs(ctx, eid)})))

    def tags_answer(self, ctx, eid, run=None):
        """The ``tags`` route's answer (``encode.Gzipped``): on thousands of runs, TensorBoard's own JSON encoding of
        the entries (``json_util.Cleanse`` walks every one) would cost more than building them."""
        return self._names.get(("tags_answer", eid, run), lambda: encode.Gzipped(encode.dumps(
            {"tiers": list(metadata.TIERS), "runs": self.tags(ctx, eid, run)})))

    def tags_summary(self, ctx, eid):
        """``(runs with any series, whether any run has scalars)`` for the ``status`` route, shared like the other
        answers: rebuilding every run's tag table on each status request cost that route most of its time."""
        def summary():
            tags = self.tags(ctx, eid)
            return len(tags), any(entries for tiers in tags.values() for entries in tiers.values())
        return self._names.get(("tags_summary", eid), summary)

    def runs(self, ctx, eid):
        """Runs that hold scalars, histograms or our plugin's data, sorted by name."""
        names = set(self._scalar_tags(ctx, eid))
        names.update(self._our_tensors(ctx, eid))
        names.update(histograms.list_histograms(self._listings, ctx, eid))
        return sorted(names)

    def tags(self, ctx, eid, run=None):
        """{run: {tier: [tag entry]}} for every tier; entries sorted by tag.

        Scalars first (``"kind": "scalar"``; a member of a per-parameter family such as ``local_norm/<param>``
        also has ``"family": "local_norm/*"``), then per-layer series (``"kind": "layers"``, see
        ``reading.layers``), then histograms (``"kind": "histogram"``).
        """
        runs = [run] if run is not None else None
        scalars = self._scalar_tags(ctx, eid, runs)
        ours = self._our_tensors(ctx, eid, runs)
        hists = histograms.list_histograms(self._listings, ctx, eid, runs)
        if run is not None and run not in scalars and run not in ours and run not in hists:
            raise errors.NotFoundError("no run named %r" % run)
        result = {}
        for name in sorted(set(scalars) | set(ours) | set(hists)):
            intervals = {interval_contract.scalar_tag(t, c) for t, c in ours.get(name, {}).items()
                         if c.get("kind") == metadata.KIND_INTERVAL}
            tiers = {tier: [] for tier in metadata.TIERS}
            scalar_tags = sorted(scalars.get(name, {}))
            twins, tables = tag_groups(scalar_tags)
            twin_tags = set(twins.values())
            for tag in scalar_tags:
                if tag in twin_tags or mindformers.table_of(tag):
                    continue   # a samples twin is an x axis of its tag; table cells are drawn as one table
                tier, display, same = self._label(tag)
                entry = {"tag": tag, "display_name": display, "kind": "scalar", "interval": tag in intervals}
                if same:
                    entry["same_as"] = same     # drawn in that chart (the same quantity, another library's tag)
                family = layers.family_of(tag)
                if family:
                    entry["family"] = family
                if tag in twins:
                    entry["samples_tag"] = twins[tag]
                if tag in mindformers.LOSS_PARTS and "loss" in scalars.get(name, {}):
                    entry["part_of"] = "loss"
                if mindformers.is_rank_tag(tag):
                    entry["per_rank"] = True
                tiers[tier].append(entry)
            for prefix, (rows, cols, word) in sorted(tables.items()):
                tier = self._label(prefix + "x/" + word + "_0")[0]
                tiers[tier].append({"tag": prefix + "*", "display_name": mindformers.TABLES[prefix][1],
                                    "kind": "table", "rows": len(rows), "columns": len(cols), "column": word})
            for tier, entry in layers.list_layer_series(ours.get(name, {}), scalar_tags):
                tiers[tier].append(entry)
            for tag in hists.get(name, []):
                tier, entry = histograms.histogram_entry(tag)
                tiers[tier].append(entry)
            result[name] = tiers
        return result


def tag_groups(scalar_tags):
    """``(twins, tables)`` of one run's scalar tags: ``{tag: its samples twin}`` (mindformers' ``<tag> vs samples``,
    a samples x axis for ``tag``) and ``{prefix: (row names, column indices, column word)}`` of the layer x head /
    expert tables folded from add_scalars key folders (``contract/mindformers.py``)."""
    present = set(scalar_tags)
    twins, tables = {}, {}
    for tag in scalar_tags:
        main = mindformers.twin_of(tag)
        if main is not None and main in present:
            twins[main] = tag
            continue
        cell = mindformers.table_of(tag)
        if cell is not None:
            prefix, row, _, index = cell
            rows, cols, _ = tables.setdefault(prefix, (set(), set(), mindformers.TABLES[prefix][2]))
            rows.add(row)
            cols.add(index)
    return twins, tables
