"""``TrainMonitor(graph=True)``: the model graph of a real ``Model.train`` run, written once as TensorBoard's
GraphDef (TensorBoard's EventAccumulator and the tab's graph route read it); in PYNATIVE_MODE, where MindSpore has no
graph, training goes on and nothing is written."""

import pytest

ms = pytest.importorskip("mindspore")
from mindspore import nn  # noqa: E402
from mindspore.train import Model  # noqa: E402

from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor  # noqa: E402

from cb_helpers import classification_data, dense_net  # noqa: E402


def _train(run, graph=True):
    net = dense_net()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.05)
    model = Model(MonitoredTrainCell.wrap(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt))
    model.train(1, classification_data(4), callbacks=[TrainMonitor(str(run), collect_freq=2, graph=graph)],
                dataset_sink_mode=False)


@pytest.mark.slow
def test_graph_is_recorded_once_in_graph_mode(tmp_path, mode):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = tmp_path / "run"
    _train(run)
    acc = EventAccumulator(str(run))
    acc.Reload()
    if mode == "pynative":
        assert acc.Tags()["graph"] is False
        return
    graph = acc.Graph()
    ops = {n.op for n in graph.node}
    assert {"MatMul", "BiasAdd", "ReLU"} <= ops
    matmul = next(n for n in graph.node if n.op == "MatMul" and "Grad" not in n.name)
    assert [d.size for d in matmul.attr["_output_shapes"].list.shape[0].dim] == [8, 8]   # batch 8 x hidden 8
    assert any(n.op == "Parameter" and n.name.endswith("weight") for n in graph.node)


def test_graph_must_be_a_bool(tmp_path):
    with pytest.raises(ValueError, match="graph must be True or False"):
        TrainMonitor(str(tmp_path), graph="yes")
