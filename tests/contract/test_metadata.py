"""The data contract: tier classification of tags from everywhere, content versioning."""

import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import vocabulary


@pytest.mark.parametrize("tag,tier", [
    ("core/loss", "core"), ("core/learning_rate/group1", "core"), ("diagnostic/eval/accuracy", "diagnostic"),
    ("debug/update_ratio", "debug"),
    # mindformers' tags and their "vs samples" twins
    ("loss", "core"), ("learning-rate", "core"), ("grad-norm", "core"), ("loss-scale", "core"),
    ("throughput", "core"), ("loss vs samples", "core"), ("grad-norm vs samples", "core"),
    ("weight_norm", "diagnostic"), ("local_norm/model.layers.0.attention.wq.weight", "debug"),
    ("adam_m_norm/model.layers.0.w1", "debug"),
    # MindSpore SummaryCollector
    ("loss/auto", "core"),
    # plain user tags
    ("train/loss", "core"), ("lr", "core"), ("val/accuracy", "diagnostic"), ("eval_loss", "diagnostic"),
    ("my_custom_thing", "other"), ("conv1.weight/auto", "other"),
])
def test_tier_of(tag, tier):
    assert vocabulary.tier_of(tag) == tier


def test_display_name():
    assert metadata.display_name("core/loss") == "loss"
    assert metadata.display_name("loss/auto") == "loss"
    assert metadata.display_name("my_loss[:Scalar]") == "my_loss"


def test_interval_tags_round_trip():
    assert metadata.scalar_tag_of_interval(metadata.interval_tag("core/loss")) == "core/loss"
    assert metadata.scalar_tag_of_interval("core/loss") is None


def test_content_round_trip_and_versioning():
    body = metadata.parse_content(metadata.make_content(metadata.KIND_LAYERS, layers=["a", "b"]))
    assert body["version"] == metadata.CONTENT_VERSION and body["layers"] == ["a", "b"]
    with pytest.raises(metadata.ContentError, match="newer"):
        metadata.parse_content(b'{"version": 999, "kind": "layers"}')
    with pytest.raises(metadata.ContentError):
        metadata.parse_content(b"\xff\xfe")
    with pytest.raises(metadata.ContentError):
        metadata.parse_content(b'{"kind": "layers"}')
    with pytest.raises(ValueError):
        metadata.make_content("nonsense")


def test_every_series_has_a_data_class():
    from tensorboard.compat.proto import summary_pb2
    md = metadata.create_summary_metadata(metadata.KIND_INTERVAL)
    assert md.data_class == summary_pb2.DATA_CLASS_TENSOR
    assert md.plugin_data.plugin_name == "mindspore"
