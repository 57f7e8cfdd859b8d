"""Trains a tiny BERT-style classifier (built from a config, no download) with Hugging Face's ``Trainer`` and
``TrainerMonitor`` (gradient accumulation, clipping, warm-up, evaluation, Hugging Face's own TensorBoard logs beside
ours), and writes the Trainer's own logs to ``trainer_logs.json`` for the test to compare with what was recorded.
Run in the torch environment: ``python trainer_child.py OUT`` (runs: OUT/ours, OUT/hf)."""

import json
import os
import sys

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

from tb_mindspore_callbacks.torch_style import TrainerMonitor


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, 50, (n, 8), generator=g)
        self.y = (self.x[:, 0] > 25).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.y[i]}


class KeepLogs(TrainerCallback):
    def __init__(self):
        self.logs = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logs.append(dict(logs or {}, step=state.global_step))


def main(out):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=16, num_labels=2)
    model = BertForSequenceClassification(cfg)
    args = TrainingArguments(output_dir=os.path.join(out, "trainer"), max_steps=20, per_device_train_batch_size=4,
                             gradient_accumulation_steps=2, learning_rate=5e-3, warmup_steps=4, max_grad_norm=0.1,
                             logging_steps=5, eval_strategy="steps", eval_steps=10, report_to=["tensorboard"],
                             logging_dir=os.path.join(out, "hf"), save_strategy="no", use_cpu=True,
                             disable_tqdm=True, dataloader_num_workers=0, seed=0)
    keep = KeepLogs()
    monitor = TrainerMonitor(os.path.join(out, "ours"), collect_freq=5, debug="all", debug_freq=10,
                             diagnostic_freq=10)
    Trainer(model=model, args=args, train_dataset=Tokens(160, 1), eval_dataset=Tokens(16, 2),
            callbacks=[keep, monitor]).train()
    with open(os.path.join(out, "trainer_logs.json"), "w") as f:
        json.dump({"logs": keep.logs, "mindspore_imported": "mindspore" in sys.modules}, f)


if __name__ == "__main__":
    main(sys.argv[1])
