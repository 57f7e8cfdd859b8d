"""The options grouped by what they switch on (``Debug``, ``Diagnostic``, ``Eval``, ``Layers``, ``LiveHealth``,
``Storage``, ``Ranks``): validated when built, shared by both entry points, and the flat keywords of earlier releases
still working with a FutureWarning that names the new form. No training here: construction only."""

import warnings

import pytest

pytest.importorskip("mindspore")

from tb_mindspore_callbacks import (  # noqa: E402
    DEBUG_ITEMS, Debug, Diagnostic, Eval, Layers, LiveHealth, LoopMonitor, Ranks, Storage, TrainMonitor,
)
from tb_mindspore_callbacks.demo import synthetic_dataset  # noqa: E402
from tb_mindspore_callbacks.recorders import DEBUG_RECORDERS  # noqa: E402
from tb_plugin_mindspore.answers import page_contract  # noqa: E402
from tb_plugin_mindspore.contract import debug_items  # noqa: E402

FLAT = ("collect_freq", "debug", "debug_freq", "activation_samples", "diagnostic_freq", "weight_norms",
        "eval_freq", "live_health", "on_anomaly", "checkpoint_dir", "flush_secs", "max_queue", "max_file_bytes",
        "max_run_bytes", "registry", "rank", "all_ranks", "flight_recorder")


def _flat(monitor):
    return {name: getattr(monitor.settings, name) for name in FLAT}


def test_the_groups_give_the_settings_the_old_keywords_gave(tmp_path):
    with pytest.warns(FutureWarning):
        old = TrainMonitor(str(tmp_path), collect_freq=5, debug=["update_ratio"], debug_freq=20,
                           activation_samples=2, diagnostic_freq=7, weight_norms=False, live_health={"stall_s": 60},
                           on_anomaly="stop", max_run_bytes=10 ** 9, registry=None, all_ranks=True, rank=0,
                           layers_include=r"\.weight$", max_layers=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # the new form warns about nothing
        new = TrainMonitor(str(tmp_path), collect_freq=5,
                           debug=Debug(items=["update_ratio"], every=20, activation_samples=2),
                           diagnostic=Diagnostic(every=7, weight_norms=False),
                           health=LiveHealth(thresholds={"stall_s": 60}, on_anomaly="stop"),
                           storage=Storage(max_run_bytes=10 ** 9, registry=None), ranks=Ranks(rank=0, all=True),
                           layers=Layers(include=r"\.weight$", max=8))
    assert _flat(old) == _flat(new)
    assert old.settings.layers.max_layers == new.settings.layers.max_layers == 8
    assert new.debug == ("update_ratio",) and new.debug_freq == 20 and new.on_anomaly == ("log", "stop")


def test_both_entry_points_take_the_same_groups(tmp_path):
    loop = LoopMonitor(str(tmp_path / "loop"), debug=Debug(items=["data_wait"], every=3), health=False,
                       storage=Storage(registry=None))
    assert loop.settings.debug == ("data_wait",) and loop.settings.live_health is None
    assert loop.settings.diagnostic_freq == 100     # a loop has no epochs: weight norms every 100 steps
    assert LoopMonitor(str(tmp_path / "l2"), diagnostic=Diagnostic(every=4)).settings.diagnostic_freq == 4
    with pytest.raises(ValueError, match="LoopMonitor does not run evaluations"):
        LoopMonitor(str(tmp_path / "l3"), eval=Eval(synthetic_dataset(4)))
    monitor = TrainMonitor(str(tmp_path / "t"), eval=Eval(synthetic_dataset(4), metrics=["accuracy"], every=9))
    assert monitor.eval_freq == 9 and list(monitor.eval_metrics) == ["accuracy"]


@pytest.mark.parametrize("old, new", [
    ({"debug_freq": 50}, "use TrainMonitor(debug=Debug(every=50))"),
    ({"debug": "all", "debug_freq": 8}, "use TrainMonitor(debug=Debug(items='all', every=8))"),
    ({"live_health": False}, "use TrainMonitor(health=False)"),
    ({"on_anomaly": "stop"}, "use TrainMonitor(health=LiveHealth(on_anomaly='stop'))"),
    ({"max_run_bytes": 10 ** 9, "registry": None},
     "use TrainMonitor(storage=Storage(max_run_bytes=1000000000, registry=None))"),
    ({"all_ranks": True}, "use TrainMonitor(ranks=Ranks(all=True))"),
    ({"layers_include": "w", "max_layers": 4}, "use TrainMonitor(layers=Layers(include='w', max=4))"),
    ({"diagnostic_freq": 7}, "use TrainMonitor(diagnostic=Diagnostic(every=7))"),
    ({"eval_dataset": None}, "leave it out (no evaluation is the default)"),
])
def test_an_old_keyword_warns_with_the_new_form(tmp_path, old, new):
    with pytest.warns(FutureWarning) as caught:
        TrainMonitor(str(tmp_path), **old)
    [message] = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert message.startswith("TrainMonitor(") and "is deprecated and will be removed in the next release" in message
    assert message.endswith(new), message
    assert caught[0].filename == __file__          # the warning points at the caller's line


def test_an_old_keyword_of_the_loop_names_the_loop(tmp_path):
    with pytest.warns(FutureWarning, match=r"LoopMonitor\(debug_freq=3\) is deprecated.*LoopMonitor\(debug="):
        LoopMonitor(str(tmp_path), debug_freq=3)


@pytest.mark.parametrize("make, message", [
    (lambda: Debug(items=["bogus"]), "unknown debug item(s) 'bogus'; choose from update_ratio, layer_grad_norm"),
    (lambda: Debug(every=0), "Debug(every=) must be an int >= 1, got 0"),
    (lambda: Debug(activations_include="*"), "Debug(activations_include=) is not a valid regular expression"),
    (lambda: Diagnostic(every=-1), "Diagnostic(every=) must be None or an int >= 1, got -1"),
    (lambda: Diagnostic(weight_norms="yes"), "Diagnostic(weight_norms=) must be True or False, got 'yes'"),
    (lambda: Eval([1, 2]), "Eval(dataset=) must be a mindspore.dataset Dataset"),
    (lambda: Eval(synthetic_dataset(4), metrics=["no_such"]), "unknown eval metric 'no_such'"),
    (lambda: Eval(synthetic_dataset(4), model="m"), "Eval(model=) needs a mindspore.train.Model"),
    (lambda: Layers(include="("), "layers_include is not a valid regular expression"),
    (lambda: Layers(max=0), "max_layers must be"),
    (lambda: LiveHealth(thresholds={"grad_factr": 5}), "unknown live_health threshold(s) 'grad_factr'"),
    (lambda: LiveHealth(on_anomaly="explode"), "on_anomaly must be one of 'log', 'stop', 'skip', 'checkpoint'"),
    (lambda: LiveHealth(checkpoint_dir=3), "checkpoint_dir must be a path or None, got 3"),
    (lambda: Storage(flush_secs=0), "flush_secs must be a number > 0, got 0"),
    (lambda: Storage(max_queue=0), "max_queue must be an int >= 1, got 0"),
    (lambda: Storage(registry=3), "registry must be 'auto', a file path or None, got 3"),
    (lambda: Ranks(rank=-1), "rank must be None or an int >= 0, got -1"),
])
def test_each_group_checks_its_values_when_built(make, message):
    with pytest.raises(ValueError) as err:
        make()
    assert message in str(err.value)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"debug": Debug(), "debug_freq": 3}, ValueError,
     "TrainMonitor(debug_freq=3) and debug= set the same options; give them in debug=Debug(...) only"),
    ({"health": 3}, ValueError, "health must be a LiveHealth(...), True or False, got 3"),
    ({"layers": "w"}, ValueError, "layers must be a Layers(...), got 'w'"),
    ({"eval": [1]}, ValueError, "eval must be an Eval(dataset, ...), got [1]"),
    ({"collect_freqs": 3}, TypeError, "TrainMonitor() got an unexpected keyword argument 'collect_freqs'"),
    ({"live_health": False, "on_anomaly": "stop"}, ValueError, "needs live_health on"),
])
def test_misuse_of_the_groups_is_named(tmp_path, kwargs, error, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(error) as err:
            TrainMonitor(str(tmp_path), **kwargs)
    assert message in str(err.value)


def test_arguments_after_the_run_folder_are_keyword_only(tmp_path):
    with pytest.raises(TypeError):
        TrainMonitor(str(tmp_path), 10)
    with pytest.raises(TypeError):
        LoopMonitor(str(tmp_path), None, None)   # optimizer may be positional, network may not


def test_a_debug_item_is_declared_once_and_everything_is_built_from_it():
    """Each debug recorder names its contract row; the items, their recorders and the page's expected debug
    series and axes all come from the rows."""
    assert DEBUG_ITEMS == debug_items.NAMES == tuple(cls.item.name for cls in DEBUG_RECORDERS)
    assert [cls.item for cls in DEBUG_RECORDERS] == list(debug_items.ITEMS)
    expected = page_contract.build()["expected"]["debug"]
    assert [e["item"] for e in expected] == list(debug_items.NAMES)
    axes = page_contract.build()["axes"]
    for item in debug_items.ITEMS:
        for tag in item.tags:
            if item.axis:
                assert axes[tag] == {"label": item.axis[0], "unit": item.axis[1]}
