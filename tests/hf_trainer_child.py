"""Writes what a Hugging Face Trainer run leaves in a logdir (run in the PyTorch environment by the tests of the
Hugging Face vocabulary): ``python hf_trainer_child.py LOGDIR``.

A small BERT-style classifier built from a config (no downloads) trained by transformers' own ``Trainer`` with its
own TensorBoard callback (``report_to=["tensorboard"]``: ``train/loss``, ``train/learning_rate``,
``train/grad_norm``, ``eval/*`` and its bookkeeping), plus the per-layer gradient norms a user logs by hand as
``grad_norm/<named_parameters() name>`` from a ``TrainerCallback``, into ``LOGDIR/hf``.
"""

import os
import sys

import torch
from tensorboardX import SummaryWriter
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

LOGDIR = os.path.join(sys.argv[1], "hf")
STEPS = 8


class Batches(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, 100, (n, 16), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


class LayerGradNorms(TrainerCallback):
    """Per-layer gradient norms logged by hand, as users do: one scalar per parameter."""

    def __init__(self, model):
        self.model = model
        self.writer = SummaryWriter(LOGDIR)

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        for name, p in self.model.named_parameters():
            if p.grad is not None and p.dim() >= 2:
                self.writer.add_scalar("grad_norm/" + name, float(p.grad.norm()), state.global_step + 1)

    def on_train_end(self, args, state, control, **kwargs):
        self.writer.close()


def main():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, num_labels=2)
    model = BertForSequenceClassification(config)
    args = TrainingArguments(output_dir=os.path.join(sys.argv[1], "hf_output"), logging_dir=LOGDIR,
                             report_to=["tensorboard"], per_device_train_batch_size=4, max_steps=STEPS,
                             logging_steps=2, eval_strategy="steps", eval_steps=4, per_device_eval_batch_size=8,
                             save_strategy="no", learning_rate=1e-3, use_cpu=True, disable_tqdm=True)
    trainer = Trainer(model=model, args=args, train_dataset=Batches(32, 0), eval_dataset=Batches(8, 1),
                      callbacks=[LayerGradNorms(model)])
    trainer.train()
    print("done")


if __name__ == "__main__":
    main()
