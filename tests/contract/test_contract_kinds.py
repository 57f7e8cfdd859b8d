"""Every kind of our series: written by its builder into a real event file, read back through TensorBoard's data
provider, decoded by the named decoder next to it (the contract package, both directions)."""

import math

import numpy as np
import pytest

import logdirs
from tb_plugin_mindspore import contract, metadata
from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.answers import encode
from tb_plugin_mindspore.contract import interval


def _read_back(tmp_path, values):
    """{tag: (parsed content, [TensorDatum by step])} of our plugin's series after a real write and load."""
    from tensorboard import context
    from tensorboard.data import provider as tb_provider

    from tb_plugin_mindspore.sources.logdir import load_provider

    logdirs.write_events(str(tmp_path / "run"), steps=3, extra=values)
    provider = load_provider(str(tmp_path))
    ctx = context.RequestContext()
    listing = provider.list_tensors(ctx, experiment_id="", plugin_name=metadata.PLUGIN_NAME)["run"]
    data = provider.read_tensors(ctx, experiment_id="", plugin_name=metadata.PLUGIN_NAME, downsample=10 ** 6,
                                 run_tag_filter=tb_provider.RunTagFilter(runs=["run"]))["run"]
    return {tag: (metadata.parse_content(series.plugin_content), sorted(data[tag], key=lambda d: d.step))
            for tag, series in listing.items()}


def test_every_kind_has_a_builder_and_a_decoder():
    modules = {metadata.KIND_INTERVAL: "interval", metadata.KIND_LAYERS: "layers",
               metadata.KIND_RUN_INFO: "run_info", metadata.KIND_LANDSCAPE: "landscape",
               metadata.KIND_TENSOR: "tensor", metadata.KIND_HEALTH_EVENT: "health_event",
               metadata.KIND_RUN_END: "run_end"}
    assert set(modules) == set(metadata.KINDS)
    for name in modules.values():
        module = getattr(contract, name)
        assert callable(module.value) and callable(module.decode), name


def test_round_trip_through_an_event_file(tmp_path):
    landscape = {"landscape": {"x": [0.0, 1.0], "y": [0.0], "z": [[1.0, math.inf]]}, "metadata": {"unit": "step"}}
    got = _read_back(tmp_path, [
        (5, summary.layers(metadata.FLIGHT_GRAD_NORM_LAYERS, ["a", "b"], [1.5, math.nan])),
        (5, summary.landscape("landscape/random", landscape)),
        (5, summary.tensor("t", np.arange(6, dtype=np.int16).reshape(2, 3))),
        (6, summary.health_event("nonfinite", "error", 6, first_step=4, message="loss is NaN", layers=["b"],
                                 action="stopped")),
        (7, summary.run_end("stopped", 7, logdirs.T0 + 7, reason="nonfinite")),
    ])
    content, data = got[metadata.interval_tag(metadata.LOSS)]
    assert interval.scalar_tag("interval/core/loss", content) == metadata.LOSS
    table = interval.table_of_data(data)
    assert table.steps.tolist() == [1, 2, 3] and table.max.tolist() == [1.0, 0.5, 1.0 / 3]
    assert interval.decode(data[0].numpy) == interval.IntervalStats(1.0, 1.0, 1.0, 1, 0)

    content, data = got[metadata.FLIGHT_GRAD_NORM_LAYERS]
    assert contract.layers.names(content) == ["a", "b"]
    vector = contract.layers.decode(content, data[0].numpy)
    assert vector[0] == 1.5 and math.isnan(vector[1])

    content, data = got[metadata.RUN_INFO]
    info = contract.run_info.decode(data[0].numpy)
    assert contract.run_info.lr_config(info) == {"kind": "constant", "class": None, "groups": [], "value": 0.1}

    assert contract.landscape.decode(got["landscape/random"][1][0].numpy)["landscape"]["z"] == [[1.0, None]]
    content, data = got["t"]
    assert contract.tensor.decode(content, data[0].numpy).dtype == np.int16

    event = contract.health_event.decode(got[metadata.HEALTH_EVENT][1][0].numpy)
    assert (event["rule"], event["first_step"], event["layers"], event["action"]) == ("nonfinite", 4, ["b"], "stopped")
    end = contract.run_end.decode(got[metadata.RUN_END][1][0].numpy)
    assert (end["status"], end["step"], end["reason"]) == ("stopped", 7, "nonfinite")


def test_builders_refuse_bad_input_with_a_message():
    with pytest.raises(ValueError, match="2 layer names for 3 values"):
        contract.layers.value("debug/x", ["a", "b"], [1, 2, 3])
    with pytest.raises(ValueError, match="severity must be one of"):
        contract.health_event.value("r", "fatal", 1)
    with pytest.raises(ValueError, match="status must be one of"):
        contract.run_end.value("done", 1, 0.0)


def test_decoders_refuse_what_is_not_theirs():
    assert interval.decode(np.zeros(3)) is None
    assert contract.layers.decode({"kind": "layers", "layers": ["a"]}, np.zeros(2)) is None
    for decode in (contract.run_info.decode, contract.health_event.decode, contract.run_end.decode):
        with pytest.raises(metadata.ContentError):
            decode(np.array(b"[1, 2]", dtype=object))


def test_interval_layouts_are_named():
    # Rows of another width are left out; the table is sorted by step.
    t = interval.table([3, 1, 2], [np.array([1, 1, 1, 1, 0]), np.array([0, 0.5, 2, 2, 0]), np.zeros(4)])
    assert t.steps.tolist() == [1, 3] and t.max.tolist() == [2.0, 1.0]
    # Merging keeps every extreme and NaN step, and the wire rows name non-finite numbers.
    steps = np.arange(1, 101)
    big = interval.IntervalTable(steps, np.full(100, 1.0), np.full(100, 2.0), np.where(steps == 37, 99.0, 3.0),
                                 np.full(100, 10.0), (steps == 64).astype(float))
    merged = interval.merge(big, 10)
    assert merged.steps.size == 10 and merged.max.max() == 99.0 and merged.nonfinite.sum() == 1
    assert merged.count.sum() == 1000 and np.allclose(merged.mean, 2.0)
    rows = encode.interval_rows(interval.IntervalTable(np.array([5]), np.array([np.nan]), np.array([np.inf]),
                                                        np.array([1.0]), np.array([3.0]), np.array([1.0])))
    assert rows == [[5, "NaN", "Infinity", 1.0, 3, 1]] and len(interval.ROW_FIELDS) == len(rows[0])


def test_lr_config_is_read_with_every_field():
    info = {"lr_config": {"kind": "schedule", "class": "WarmupCosineLR",
                          "groups": [{"kind": "constant", "value": 1e-3}, {"kind": "bogus"}]}}
    assert contract.run_info.lr_config(info) == {
        "kind": "schedule", "class": "WarmupCosineLR",
        "groups": [{"kind": "constant", "class": None, "value": 1e-3}, {"kind": "unknown", "class": None}]}
    assert contract.run_info.lr_config({}) is None
