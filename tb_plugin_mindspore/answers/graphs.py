"""The ``graphs`` and ``graph`` routes: the model graph of each run, from either source.

* MindSpore ``*_MS`` files: the ``graph_def`` that ``SummaryCollector(collect_graph=True)`` records (MindSpore's
  GraphProto), from the ``*_MS`` reader (the second door, ``ms_provider.ms_logdir_of``);
* event files: a TensorBoard GraphDef (``tb-mindspore convert`` output, ``TrainMonitor(graph=True)``), through the
  provider's blob sequences of TensorBoard's ``graphs`` plugin.

Both become one node list (``ms_graph.py``); the answer is kept while the run's graph is unchanged.
"""

from tensorboard import errors

from ..sources import ms_graph, ms_provider
from ..sources.ms_logdir import MAX_GRAPH_BYTES
from . import encode

GRAPHS_PLUGIN = "graphs"
RUN_GRAPH = "__run_graph__"


class GraphReader:
    def __init__(self, data_provider, cache, ms_logdir=None):
        self._provider = data_provider
        self._cache = cache
        self._ms = ms_logdir if ms_logdir is not None else ms_provider.ms_logdir_of(data_provider)

    def _tb_graphs(self, ctx, eid):
        try:
            listing = self._provider.list_blob_sequences(ctx, experiment_id=eid, plugin_name=GRAPHS_PLUGIN)
        except Exception:   # a provider without blob sequences
            return {}
        return {run: tags[RUN_GRAPH] for run, tags in listing.items() if RUN_GRAPH in tags}

    def _ms_graph(self, run):
        if self._ms is None or not self._ms.has_run(run):
            return None
        return self._ms.graph(run)

    def listing(self, ctx, eid):
        """``{"runs": [{"run", "source": "mindspore" | "tensorboard", "step", "size"}]}``."""
        out = {}
        for run, series in self._tb_graphs(ctx, eid).items():
            out[run] = {"run": run, "source": "tensorboard", "step": int(series.max_step), "size": None}
        if self._ms is not None:
            for run in self._ms.runs():
                g = self._ms.graph(run)
                if g is not None:
                    out[run] = {"run": run, "source": "mindspore", "step": g["step"], "size": g["size"]}
        return {"runs": [out[r] for r in sorted(out)]}

    def graph(self, ctx, eid, run, max_nodes=ms_graph.MAX_NODES):
        """The ``graph`` route's answer for ``run`` (``ms_graph.view`` with ``run``, ``source``, ``step``)."""
        g = self._ms_graph(run)
        if g is not None:
            token = ("ms", g["file"], g["step"], g["size"])
            key = ("graph", run, max_nodes)
            text = self._cache.get(key, token)
            if text is not None:
                return text
            if g["data"] is None:
                body = {"name": "", "total_nodes": None, "ops": {}, "scope_counts": {}, "nodes": [],
                        "too_large": "The graph is %d bytes, more than the %d read; `tb-mindspore convert` writes it "
                                     "for TensorBoard's Graphs tab." % (g["size"], ms_graph_max_bytes())}
            else:
                try:
                    name, nodes = ms_graph.from_anf(g["data"])
                except ms_graph.GraphError as e:
                    raise errors.NotFoundError("the graph of run %r cannot be read: %s" % (run, e))
                body = ms_graph.view(name, nodes, max_nodes)
            body.update(run=run, source="mindspore", step=g["step"], file=g["file"])
            return self._cache.put(key, token, encode.Gzipped(encode.dumps(body)))
        series = self._tb_graphs(ctx, eid).get(run)
        if series is None:
            raise errors.NotFoundError("run %r has no model graph (SummaryCollector records one with "
                                       "collect_specified_data={'collect_graph': True} in GRAPH_MODE)" % run)
        token = ("tb", series.max_step, series.max_wall_time)
        key = ("graph", run, max_nodes)
        text = self._cache.get(key, token)
        if text is not None:
            return text
        from tensorboard.data import provider as tb_provider

        blobs = self._provider.read_blob_sequences(
            ctx, experiment_id=eid, plugin_name=GRAPHS_PLUGIN, downsample=1,
            run_tag_filter=tb_provider.RunTagFilter(runs=[run], tags=[RUN_GRAPH])).get(run, {}).get(RUN_GRAPH) or []
        if not blobs or not blobs[-1].values:
            raise errors.NotFoundError("run %r has no model graph" % run)
        raw = self._provider.read_blob(ctx, blob_key=blobs[-1].values[0].blob_key)
        try:
            name, nodes = ms_graph.from_graphdef(raw)
        except ms_graph.GraphError as e:
            raise errors.NotFoundError("the graph of run %r cannot be read: %s" % (run, e))
        body = ms_graph.view(name, nodes, max_nodes)
        body.update(run=run, source="tensorboard", step=int(blobs[-1].step), file=None)
        return self._cache.put(key, token, encode.Gzipped(encode.dumps(body)))


def ms_graph_max_bytes():
    return MAX_GRAPH_BYTES
