"""Trainers' configuration text summaries read as hyperparameters: the texts as mindformers' Trainer writes them
(Python's ``str()`` of each top-level value) and as Hugging Face's TensorBoard callback writes them (JSON), one name
per hyperparameter, the one the configuration's own settings give."""

from tb_plugin_mindspore.contract import hparam_names
from tb_plugin_mindspore.sources import config_texts as ct

MINDFORMERS, HF = ct.WRITERS

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


def test_mindformers_configuration_under_the_names_that_win():
    tags = {s + ct.TAG_SUFFIX for s in SECTIONS}
    assert ct.writer_of(tags) is MINDFORMERS and ct.config_tags(MINDFORMERS, tags) == sorted(tags)
    hp = ct.hyperparameters(MINDFORMERS, SECTIONS)
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


def test_hugging_face_training_arguments_and_model_configuration():
    tags = {"args/text_summary", "model_config/text_summary", "train/loss", "notes/text_summary"}
    assert ct.writer_of(tags) is HF
    assert ct.config_tags(HF, tags) == ["args/text_summary", "model_config/text_summary"]
    hp = ct.hyperparameters(HF, {
        "args": '{\n  "output_dir": "out",\n  "per_device_train_batch_size": 4,\n  "per_gpu_train_batch_size": null,'
                '\n  "learning_rate": 5e-05,\n  "num_train_epochs": 3.0,\n  "max_steps": 8,\n  "warmup_ratio": 0.0,'
                '\n  "lr_scheduler_type": "linear",\n  "optim": "adamw_torch",\n  "seed": 42,\n  "fp16": false\n}',
        "model_config": '{\n  "hidden_size": 32,\n  "num_hidden_layers": 2,\n  "num_attention_heads": 2\n}',
    })
    assert hp == {"args.per_device_train_batch_size": 4, "args.learning_rate": 5e-05, "args.num_train_epochs": 3.0,
                  "args.max_steps": 8, "args.warmup_ratio": 0.0, "args.lr_scheduler_type": "linear",
                  "args.optim": "adamw_torch", "args.seed": 42, "model_config.hidden_size": 32,
                  "model_config.num_hidden_layers": 2, "model_config.num_attention_heads": 2}
    assert ct.writer_of({"notes/text_summary"}) is None


def test_texts_are_literals_or_stay_text_and_only_their_tags_count():
    assert ct.parse_text(b"{'a': [1, 2]}") == {"a": [1, 2]}
    assert ct.parse_text(b'{"a": true, "b": null}') == {"a": True, "b": None}
    assert ct.parse_text("__import__('os').getcwd()") == "__import__('os').getcwd()"    # never evaluated
    assert ct.parse_text(b"path/to/model_dir") == "path/to/model_dir"
    assert ct.section_of("lr_schedule/text_summary") == "lr_schedule"
    assert ct.section_of("a/b/text_summary") is None and ct.section_of("lr_schedule") is None
    assert ct.hyperparameters(MINDFORMERS, {"runner_config": b"{'batch_size': }"}) == {}   # damaged: nothing, no error


def test_a_section_holding_objects_gives_its_literal_pairs():
    # mindformers' Trainer writes its optimizer with its parameter groups' Parameter objects and the schedule cell.
    text = ("{'type': 'AdamW', 'betas': [0.9, 0.95], 'eps': 1e-08, 'weight_decay': 0.05, 'params': [{'weight_decay': "
            "0.05, 'params': [Parameter (name=hidden.weight, shape=(16, 8), dtype=Float32, requires_grad=True)]}, "
            "{'weight_decay': 0.0, 'params': [Parameter (name=hidden.bias, shape=(16,), dtype=Float32, "
            "requires_grad=True)]}], 'learning_rate': PolynomialWithWarmUpLR()}")
    assert ct.parse_text(text) == {"type": "AdamW", "eps": 1e-08, "weight_decay": 0.05}
    assert ct.hyperparameters(MINDFORMERS, {"optimizer": text}) == {"optimizer.type": "AdamW",
                                                                     "optimizer.weight_decay": 0.05}
