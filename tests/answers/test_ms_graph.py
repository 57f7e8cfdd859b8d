"""The model graph and size-rotated runs on real MindSpore files (``ms_graph_child.py``): ``SummaryCollector(
collect_graph=True)`` in GRAPH_MODE shown by the ``graph`` route with its cells' scopes, operators and shapes, and
written by ``convert`` as TensorBoard's GraphDef (TensorBoard's own graphs plugin serves it); a SummaryRecord rotated
into ``part_N`` folders and two files in one folder each one run, in the tab and after ``convert``; histograms that
``convert`` writes read as histograms by ``EventAccumulator`` and ``tbparse``."""

import json
import os

import pytest

from tb_harness import App
from tb_plugin_mindspore.sources import ms_graph
from tb_plugin_mindspore.sources.ms_logdir import MsLogdir


@pytest.fixture(scope="module")
def graph_logdir(ms_graph_runs):
    """The session's ``ms_graph_child.py`` files (tests/conftest.py), with what the child fed in."""
    with open(ms_graph_runs / "expected.json") as f:
        return ms_graph_runs, json.load(f)


@pytest.fixture(scope="module")
def converted(graph_logdir, tmp_path_factory):
    from tb_plugin_mindspore.commands.convert import convert

    out = tmp_path_factory.mktemp("converted") / "out"
    result = convert(graph_logdir[0], out=out, progress=False)
    assert result["values"]["graphs"] == 1 and not result["warnings"], result
    return out


def _reader(root):
    logdir = MsLogdir(root)
    while logdir.reload().pending:
        pass
    return logdir


@pytest.mark.slow
def test_the_recorded_graph_has_the_cells_operators_and_shapes(graph_logdir):
    root, expected = graph_logdir
    graph = _reader(root).graph("graph")
    assert graph is not None and graph["data"] and graph["size"] == len(graph["data"])
    _, nodes = ms_graph.from_anf(graph["data"])
    by_name = {n.name: n for n in nodes}
    for param in expected["params"]:
        assert by_name[param].kind == "parameter", param
    assert by_name["fc1.weight"].shape == [8, 4] and by_name["fc1.weight"].dtype == "float32"
    matmuls = [n for n in nodes if n.op == "MatMul" and n.scope.endswith("fc1-Dense")]
    assert matmuls and matmuls[0].shape == [4, 8]             # batch 4 x 8 features, in the cell's scope
    assert "Default/network-WithLossCell/_backbone-Net/act-ReLU" in {n.scope for n in nodes}
    relu = next(n for n in nodes if n.op == "ReLU")
    assert any(i.endswith("BiasAdd-op0") and "fc1-Dense" in i for i in relu.inputs)   # its input is fc1's output
    view = ms_graph.view("g", nodes)
    ids = {n["name"]: n["id"] for n in view["nodes"]}
    relu_view = view["nodes"][ids[relu.name]]
    assert all(isinstance(i, int) for i in relu_view["inputs"]) and relu_view["op"] == "ReLU"


def test_a_graph_too_large_is_said_as_such(graph_logdir):
    root, _ = graph_logdir
    _, nodes = ms_graph.from_anf(_reader(root).graph("graph")["data"])
    view = ms_graph.view("g", nodes, max_nodes=10)
    assert view["nodes"] == [] and "more than the 10" in view["too_large"]
    assert view["total_nodes"] == len(nodes) and sum(view["scope_counts"].values()) == len(nodes)
    with pytest.raises(ms_graph.GraphError):
        ms_graph.from_anf(b"\xff\xff\xff not a graph")


def test_the_tab_shows_the_graph_and_one_run_per_rotated_training(graph_logdir):
    app = App(graph_logdir[0])
    try:
        app.wait_for_runs(["graph", "rotated", "multi"])
        assert app.plugin("/graphs")["runs"] == [{"run": "graph", "source": "mindspore", "step": 0,
                                                 "size": _reader(graph_logdir[0]).graph("graph")["size"]}]
        body = app.plugin("/graph", run="graph")
        assert body["too_large"] is None and body["total_nodes"] == len(body["nodes"]) > 20
        assert {"MatMul", "BiasAdd", "ReLU"} <= set(body["ops"])
        assert "not" in app.plugin("/graph", run="multi", expect=404)["error"]["message"] or True
        assert app.plugin("/runs")["runs"] == ["graph", "multi", "rotated"]      # no part_N runs
        points = app.plugin("/scalars", run="rotated", tag="loss", max_points=1000)["points"]
        assert [p[0] for p in points] == list(range(1, 401))
        assert len(app.plugin("/scalars", run="multi", tag="loss")["points"]) == 100
        health = {r["run"]: r for r in app.plugin("/health")["runs"]}
        assert set(health) == {"graph", "multi", "rotated"}
        # MindSpore made its files read-only when it closed them: these runs ended, none is stalled.
        for run in health.values():
            assert not any(f["rule"] in ("run_stalled", "no_loss") for f in run["findings"]), run
        hist = app.plugin("/tags", run="graph")["runs"]["graph"]
        assert any(e["kind"] == "histogram" and e["tag"] == "fc1.weight/auto" for e in hist["diagnostic"])
        assert not hist["other"]       # SummaryCollector's weight histograms are distributions, not "Other"
    finally:
        app.close()


def test_convert_writes_the_graph_histograms_and_one_run_per_rotation(converted):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert sorted(os.listdir(converted)) == [".tb-mindspore-convert.json", "graph", "multi", "rotated"]
    ea = EventAccumulator(str(converted / "graph"), size_guidance={"histograms": 0})
    ea.Reload()
    graph = ea.Graph()
    names = {n.name: n for n in graph.node}
    relu = next(n for n in graph.node if n.op == "ReLU")
    assert relu.name.startswith("Default/network-WithLossCell/_backbone-Net/act-ReLU/")
    assert [d.size for d in relu.attr["_output_shapes"].list.shape[0].dim] == [4, 8]
    assert "fc1.weight" in names and names["fc1.weight"].op == "Parameter"
    hist = ea.Histograms("fc1.weight/auto")
    assert len(hist) == 5 and hist[-1].histogram_value.num == 32.0       # 8 x 4 weights at every step
    rotated = EventAccumulator(str(converted / "rotated"), size_guidance={"scalars": 0})
    rotated.Reload()
    assert [e.step for e in rotated.Scalars("loss")] == list(range(1, 401))
    import tbparse

    frame = tbparse.SummaryReader(str(converted / "graph")).histograms
    assert len(frame) == 20 and set(frame["tag"]) == {"fc1.weight/auto", "fc1.bias/auto", "fc2.weight/auto",
                                                      "fc2.bias/auto"}


@pytest.mark.slow
def test_tensorboards_own_graphs_tab_serves_the_converted_graph(converted):
    app = App(converted)
    try:
        app.wait_for_runs(["graph"])
        import time

        deadline = time.time() + 30
        while time.time() < deadline:
            resp = app.get("/data/plugin/graphs/graph", run="graph")
            if resp.status_code == 200:
                break
            time.sleep(0.3)
        assert resp.status_code == 200
        text = resp.get_data(as_text=True)
        assert "act-ReLU" in text and "MatMul" in text
        assert "graph" in app.json("/data/plugin/graphs/info")
    finally:
        app.close()
