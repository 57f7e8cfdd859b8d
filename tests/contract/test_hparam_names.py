"""One canonical name per hyperparameter, whatever wrote it; results and paths are not hyperparameters."""

from tb_plugin_mindspore.contract import hparam_names as hn


def test_every_writer_s_name_maps_to_one_canonical_name():
    # make_run_dir's short keys, hparams= keys, MindSpore's lineage, mindformers' nested config, HF names.
    for names, canonical in ((("lr", "learning_rate", "Learning-Rate", "lr_schedule.learning_rate"), "learning_rate"),
                             (("bs", "batch_size", "runner_config.batch_size", "per_device_train_batch_size"),
                              "batch_size"),
                             (("h", "hidden", "hidden_size", "model.model_config.hidden_size"), "hidden_size"),
                             (("epoch", "epochs", "num_train_epochs"), "epochs"),
                             (("heads", "num_heads", "num_attention_heads"), "num_heads"),
                             (("warmup", "warmup_steps"), "warmup")):
        assert {hn.canonical_name(n) for n in names} == {canonical}, names
    assert hn.canonical_name("my_custom_knob") == "my_custom_knob"
    assert len(hn._ALIAS) == sum(len(v) for v in hn.CANONICAL.values()), "an alias listed under two names"


def test_results_and_paths_are_not_hyperparameters():
    for name in ("loss", "model_path", "model_size", "train_dataset_path", "valid_dataset_path", "metric/accuracy",
                 "output_dir", "checkpoint.path"):
        assert not hn.is_hyperparameter(name), name
    for name in ("lr", "train_dataset_size", "network", "optimizer", "loss_function", "parallel_mode"):
        assert hn.is_hyperparameter(name), name


def test_merge_keeps_the_first_source_and_every_name_given():
    hparams, origin, names = hn.merge((
        ("run_info", {"lr": 0.001, "bs": 32, "batch_size": 32, "hidden": 64}),
        ("lineage", {"learning_rate": 0.5, "epoch": 1, "loss": 0.9, "model_path": "/x"}),
        ("hparams", {"lr": 0.001, "seed": 3}),
    ))
    assert hparams == {"learning_rate": 0.001, "batch_size": 32, "hidden_size": 64, "epochs": 1, "seed": 3}
    assert origin == {"learning_rate": "run_info", "batch_size": "run_info", "hidden_size": "run_info",
                      "epochs": "lineage", "seed": "hparams"}
    assert names["learning_rate"] == ["lr", "learning_rate"] and names["batch_size"] == ["bs", "batch_size"]
