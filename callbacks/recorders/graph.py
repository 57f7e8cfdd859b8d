"""``GraphRecorder``: the model graph of a ``Model.train`` run, once, as the run's graph (``TrainMonitor(graph=True)``).

After the first step (the training network is compiled then) it asks MindSpore for the network's graph (the same
``Cell.get_func_graph_proto()`` that ``SummaryCollector(collect_graph=True)`` records, GRAPH_MODE only) and writes
it as TensorBoard's GraphDef (``tb_plugin_mindspore.sources.ms_graph``): TensorBoard's Graphs tab and the MindSpore
tab's Model graph section draw it, with the cells' scopes, operators and shapes. In PYNATIVE_MODE there is no graph:
one log line says so. Never raises into training.
"""

from tb_plugin_mindspore.sources import ms_graph

from ..common.util import cb_get, logger
from .base import Recorder


class GraphRecorder(Recorder):
    name = "graph"

    def __init__(self):
        self._ctx = None
        self._done = False

    def on_start(self, ctx):
        self._ctx = ctx
        self._done = False

    def on_step(self, record):
        if self._done or self._ctx is None:
            return
        self._done = True
        network = cb_get(self._ctx.cb_params, "train_network") if self._ctx.cb_params is not None else None
        if network is None or not hasattr(network, "get_func_graph_proto"):
            logger.warning("tb-mindspore: graph=True records the graph of Model.train's network; none was found")
            return
        try:
            raw = network.get_func_graph_proto()
        except Exception as e:   # PYNATIVE_MODE, or a network MindSpore cannot export
            raw = None
            logger.debug("tb-mindspore: get_func_graph_proto failed: %s", e)
        if not raw:
            logger.warning("tb-mindspore: graph=True: MindSpore has no graph of this network (it exists in "
                           "GRAPH_MODE only); no graph recorded")
            return
        _, nodes = ms_graph.from_model(raw)
        self._ctx.writer.graph(ms_graph.to_graphdef(nodes), step=record.step)
