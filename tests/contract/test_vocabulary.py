"""One table of tag vocabularies read by tiering, the health rules and the dashboard's families."""

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import mindformers, vocabulary
from tb_plugin_mindspore.health import series
from tb_plugin_mindspore.answers import layers


def test_the_three_readers_read_the_one_table():
    assert series.ALIASES is vocabulary.ALIASES
    assert series.LAYER_ALIASES is vocabulary.LAYER_ALIASES
    assert layers.FAMILY_PREFIXES == vocabulary.FAMILY_PREFIXES


def test_foreign_tags_of_core_quantities_land_in_core():
    for quantity in ("loss", "grad_norm", "learning_rate", "loss_scale"):
        by_source = vocabulary.QUANTITIES[quantity]
        for source in (vocabulary.OURS, vocabulary.MINDFORMERS, vocabulary.SUMMARY_COLLECTOR):
            for tag in by_source.get(source, ()):
                assert vocabulary.tier_of(tag) == metadata.CORE, (quantity, source, tag)


def test_mindformers_families_are_in_their_tier_and_feed_the_health_rules():
    # gradient and optimizer-state norms are debug; weight stable rank and top eigenvalue describe the weights
    tiers = {prefix: tier for prefix, (tier, _) in mindformers.FAMILIES.items()}
    assert tiers["local_norm/"] == metadata.DEBUG and tiers["weight_stable_rank/"] == metadata.DIAGNOSTIC
    for prefix in vocabulary.FAMILY_PREFIXES:
        assert vocabulary.tier_of(prefix + "model.layers.0.w1") == tiers.get(prefix, metadata.DEBUG), prefix
        assert layers.family_of(prefix + "w") == prefix + "*"
    mf = vocabulary.LAYER_QUANTITIES["layer_grad_norm"][1][vocabulary.MINDFORMERS]
    assert set(mf) <= set(vocabulary.FAMILY_PREFIXES)
    assert series.is_needed_tag("local_norm/model.layers.0.w1")


def test_every_tier_rule_names_its_source():
    for pattern, tier, source in vocabulary.tier_rules():
        assert tier in metadata.TIERS and source in vocabulary.SOURCES, pattern.pattern
