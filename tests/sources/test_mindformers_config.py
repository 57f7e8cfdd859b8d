"""mindformers' configuration text summaries read as hyperparameters: the texts as its Trainer writes them (Python's
``str()`` of each top-level value), one name per hyperparameter, the one mindformers' own settings give."""

from tb_plugin_mindspore.contract import hparam_names
from tb_plugin_mindspore.sources import mindformers_config as mc

# As mindformers 2.1.0's write_args_to_tensorboard writes a shipped configuration (tag <key>/text_summary).
SECTIONS = {
    "seed": b"0",
    "output_dir": b"./output",
    "use_parallel": b"True",
    "load_checkpoint": b"",
    "runner_config": b"{'epochs': None, 'batch_size': 4, 'sink_mode': False, 'sink_size': 1, "
                     b"'gradient_accumulation_steps': 1}",
    "train_dataset": b"{'data_loader': {'type': 'BlendedMegatronDatasetDataLoader', 'config': {'seed': 1234, "
                     b"'seq_length': 4096}}, 'batch_size': 8}",
    "parallel_config": b"{'data_parallel': 2, 'model_parallel': 2, 'pipeline_stage': 2}",
    "lr_schedule": b"{'type': 'CosineWithWarmUpLR', 'learning_rate': 1e-06, 'lr_end': 1e-06, 'warmup_ratio': 0}",
    "optimizer": b"{'type': 'AdamW', 'betas': [0.9, 0.999], 'eps': 1e-06, 'weight_decay': 0.01}",
    "model": b"{'model_config': {'hidden_size': 512, 'num_layers': 4, 'num_heads': 8, 'compute_dtype': 'bfloat16'}}",
    "callbacks": b"[{'type': 'MFLossMonitor'}]",
}


def test_the_configuration_s_hyperparameters_under_the_names_that_win():
    hp = mc.hyperparameters(SECTIONS)
    assert hp == {
        "seed": 0,                                   # the top-level seed, not the data loader's
        "runner_config.batch_size": 4,               # the runner's, not the dataset's
        "lr_schedule.type": "CosineWithWarmUpLR",
        "lr_schedule.learning_rate": 1e-06,
        "lr_schedule.warmup_ratio": 0,
        "optimizer.type": "AdamW",
        "optimizer.weight_decay": 0.01,
        "model.model_config.hidden_size": 512,
        "model.model_config.num_layers": 4,
        "model.model_config.num_heads": 8,
        "train_dataset.data_loader.config.seq_length": 4096,
    }
    merged, origin, names = hparam_names.merge((("mindformers_config", hp),))
    assert merged["learning_rate"] == 1e-06 and merged["optimizer"] == "AdamW" and merged["lr_schedule"] == \
        "CosineWithWarmUpLR" and merged["hidden_size"] == 512 and merged["batch_size"] == 4
    assert names["batch_size"] == ["runner_config.batch_size"] and set(origin.values()) == {"mindformers_config"}


def test_texts_are_literals_or_stay_text_and_only_its_tags_count():
    assert mc.parse_text(b"{'a': [1, 2]}") == {"a": [1, 2]}
    assert mc.parse_text("__import__('os').getcwd()") == "__import__('os').getcwd()"    # never evaluated
    assert mc.parse_text(b"path/to/model_dir") == "path/to/model_dir"
    assert mc.section_of("lr_schedule/text_summary") == "lr_schedule"
    assert mc.section_of("a/b/text_summary") is None and mc.section_of("lr_schedule") is None
    assert mc.is_config_run({"runner_config/text_summary", "seed/text_summary"})
    assert not mc.is_config_run({"notes/text_summary"})
    assert mc.hyperparameters({"runner_config": b"{'batch_size': }"}) == {}    # damaged text: nothing, no error


def test_a_section_holding_objects_gives_its_literal_pairs():
    # The Trainer's optimizer section holds its parameter groups' Parameter objects and the schedule cell.
    text = ("{'type': 'AdamW', 'betas': [0.9, 0.95], 'eps': 1e-08, 'weight_decay': 0.05, 'params': [{'weight_decay': "
            "0.05, 'params': [Parameter (name=hidden.weight, shape=(16, 8), dtype=Float32, requires_grad=True)]}, "
            "{'weight_decay': 0.0, 'params': [Parameter (name=hidden.bias, shape=(16,), dtype=Float32, "
            "requires_grad=True)]}], 'learning_rate': PolynomialWithWarmUpLR()}")
    assert mc.parse_text(text) == {"type": "AdamW", "eps": 1e-08, "weight_decay": 0.05}
    assert mc.hyperparameters({"optimizer": text}) == {"optimizer.type": "AdamW", "optimizer.weight_decay": 0.05}
