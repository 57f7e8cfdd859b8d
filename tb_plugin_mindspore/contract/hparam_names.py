"""The one table of hyperparameter names: each hyperparameter under one canonical name, whatever wrote it.

The same hyperparameter arrives under several names: ``make_run_dir``'s short keys (``lr``, ``bs``, ``h``), the
keys people give ``hparams=`` (``learning_rate``, ``batch_size``, ``hidden``), MindSpore's lineage
(``learning_rate``, ``batch_size``, ``epoch``), mindformers' YAML config (``runner_config.batch_size``,
``model.model_config.hidden_size``), TensorBoard HParams summaries. The ``run_info`` route shows each under its
canonical name (with the names it came as and its source), so grouping runs by a hyperparameter or comparing two
runs works across all of them.

What is recorded next to the hyperparameters but is not one (the final loss, metrics, file paths, the saved model's
size) is not offered as a hyperparameter: :func:`is_hyperparameter`. It stays in the lineage, shown as it is.

Names are matched case-insensitively with ``-`` and spaces read as ``_``, first whole, then by their last dotted
part (``optimizer.weight_decay`` -> ``weight_decay``). Imports only the standard library.
"""

import re

# Canonical name -> the names it comes as (canonical first). Sources: our demo and README (make_run_dir's keys),
# MindSpore's TrainLineage hyper_parameters (learning_rate, epoch, batch_size, optimizer, loss_function,
# device_num, parallel_mode), mindformers' config keys (its ``optimizer.type`` and ``lr_schedule.type`` name the
# optimizer and the schedule), Hugging Face TrainingArguments' names.
CANONICAL = {
    "learning_rate": ("learning_rate", "lr", "base_lr", "peak_lr", "max_lr", "init_lr", "learning_rates"),
    "batch_size": ("batch_size", "bs", "batch", "per_batch_size", "train_batch_size", "global_batch_size",
                   "per_device_train_batch_size", "micro_batch_size"),
    "hidden_size": ("hidden_size", "h", "hidden", "hidden_dim", "d_model", "dim", "embed_dim", "n_embd"),
    "num_layers": ("num_layers", "layers", "n_layers", "num_hidden_layers", "n_layer", "depth"),
    "num_heads": ("num_heads", "heads", "n_heads", "n_head", "num_attention_heads"),
    "seq_length": ("seq_length", "seq", "seq_len", "max_seq_length", "max_position_embeddings", "context_length"),
    "epochs": ("epochs", "epoch", "num_epochs", "epoch_num", "num_train_epochs"),
    "steps": ("steps", "train_steps", "max_steps", "total_steps", "num_steps"),
    "warmup": ("warmup", "warmup_steps", "num_warmup_steps", "warmup_iters", "warmup_ratio"),
    "weight_decay": ("weight_decay", "wd"),
    "clip_grad_norm": ("clip_grad_norm", "clip", "grad_clip", "max_grad_norm", "clip_norm", "gradient_clipping"),
    "optimizer": ("optimizer", "optim", "opt", "optimizer.type"),
    "lr_schedule": ("lr_schedule", "lr_scheduler", "lr_scheduler_type", "lr_schedule.type"),
    "loss_function": ("loss_function", "loss_fn"),
    "dropout": ("dropout", "dropout_rate", "hidden_dropout", "hidden_dropout_rate"),
    "momentum": ("momentum",),
    "seed": ("seed", "random_seed"),
    "device_num": ("device_num", "world_size", "num_devices", "n_gpu"),
}

# Recorded beside the hyperparameters, not hyperparameters: results (the final loss, metrics), where files are, the
# saved model's size.
RESULTS = ("loss", "final_loss", "accuracy", "acc", "model_size", "eval_loss", "val_loss")
_NOT_HPARAM = re.compile(r"(^|[._/])(path|paths|dir|file)$|_path$|_dir$|^(metric|metrics|eval|valid|validation)[/.]",
                         re.I)

_ALIAS = {alias: canonical for canonical, aliases in CANONICAL.items() for alias in aliases}


def _key(name):
    return re.sub(r"[-\s]+", "_", str(name).strip()).lower()


def canonical_name(name):
    """The canonical name of a hyperparameter name (``"lr"`` -> ``"learning_rate"``); an unknown name as it is."""
    key = _key(name)
    if key in _ALIAS:
        return _ALIAS[key]
    last = key.rsplit(".", 1)[-1]
    if last in _ALIAS:
        return _ALIAS[last]
    return str(name)


def is_hyperparameter(name):
    """False for what is recorded beside the hyperparameters but is a result or a path (``loss``, ``model_path``,
    ``model_size``, ``metric/accuracy``, ``train_dataset_path``)."""
    key = _key(name)
    return key not in RESULTS and key.rsplit(".", 1)[-1] not in RESULTS and not _NOT_HPARAM.search(key)


def merge(sources):
    """Merges ``[(source, {name: value})]`` (in the order they win) into ``(hparams, origin, names)``:
    ``{canonical: value}``, ``{canonical: source}`` and ``{canonical: [names as given, ...]}``; a hyperparameter
    named twice keeps the first value. Results and paths are left out."""
    hparams, origin, names = {}, {}, {}
    for source, values in sources:
        for name, value in (values or {}).items():
            name = str(name)
            if not is_hyperparameter(name):
                continue
            canonical = canonical_name(name)
            if canonical not in hparams:
                hparams[canonical] = value
                origin[canonical] = source
            given = names.setdefault(canonical, [])
            if name not in given:
                given.append(name)
    return hparams, origin, names
