"""``TrainerMonitor``: a ``transformers`` ``TrainerCallback`` that records a Hugging Face-style ``Trainer`` (PyTorch,
or MindNLP's on MindSpore) in the MindSpore callbacks' data contract::

    from tb_mindspore_callbacks.torch_style import TrainerMonitor

    trainer = Trainer(model=model, args=args, train_dataset=ds, callbacks=[TrainerMonitor(run_dir, debug="all")])
    trainer.train()

What it reads, and where from:

* the loss of every step: the model's own output (``outputs.loss``, a forward hook, training mode only; the mean
  over the micro-batches of a step with gradient accumulation); the Trainer's logged ``loss`` where the model
  returns none;
* the gradients: at the end of each backward pass (before the Trainer clips them) on PyTorch; at
  ``on_pre_optimizer_step`` (after clipping, said in the run information) elsewhere;
* the applied learning rate from the optimizer's ``param_groups`` just before its step; the update ratio around it
  (``on_pre_optimizer_step`` / ``on_optimizer_step``, transformers >= 4.41);
* the Trainer's evaluation logs (``eval_loss`` -> ``diagnostic/eval_loss``, ``eval_<metric>`` ->
  ``diagnostic/eval/<metric>``) and its closing summary (``train_runtime``, ...) into the run information.

Importing this module imports ``transformers`` (not MindSpore).
"""

import logging
import math

from transformers import TrainerCallback

from tb_plugin_mindspore import metadata

from .monitor import GradTap
from .params import ModuleParams
from .recording import Recording, RecordSettings

__all__ = ["TrainerMonitor", "loss_of_output", "eval_tag"]

logger = logging.getLogger("tb_mindspore_callbacks")

# Evaluation log keys that are bookkeeping, not metrics.
_EVAL_BOOKKEEPING = ("runtime", "samples_per_second", "steps_per_second", "epoch")
# The Trainer's closing log keys, kept in the run information.
_SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos", "train_loss")


def loss_of_output(output):
    """The loss a model's forward returned (``ModelOutput.loss``, ``{"loss": ...}``), or None."""
    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, dict):
        loss = output.get("loss")
    return loss


def eval_tag(key):
    """Our tag for a Trainer evaluation log key (``eval_loss`` -> ``diagnostic/eval_loss``, ``eval_accuracy`` ->
    ``diagnostic/eval/accuracy``), or None for bookkeeping and non-evaluation keys."""
    if not key.startswith("eval_"):
        return None
    name = key[len("eval_"):]
    if not name or name.endswith(_EVAL_BOOKKEEPING):
        return None
    return metadata.EVAL_LOSS if name == "loss" else metadata.EVAL_METRIC_PREFIX + name


class TrainerMonitor(TrainerCallback):
    """Records a ``transformers.Trainer`` run (see the module doc). Arguments as for
    :class:`~.monitor.TorchMonitor` (``collect_freq``, ``diagnostic_freq``, ``weight_norms``, ``debug``,
    ``debug_freq``, ``layers_include``, ``layers_exclude``, ``max_layers``, ``hparams``, ``flush_secs``); the model,
    optimizer and scheduler come from the Trainer. ``hparams`` defaults to the Trainer's main arguments (learning
    rate, batch size, schedule, weight decay, warm-up, seed)."""

    def __init__(self, logdir, collect_freq=10, diagnostic_freq=100, weight_norms=True, debug=(), debug_freq=100,
                 layers_include=None, layers_exclude=None, max_layers=64, hparams=None, flush_secs=2.0,
                 max_queue=10000):
        self.settings = RecordSettings(logdir, collect_freq=collect_freq, diagnostic_freq=diagnostic_freq,
                                       weight_norms=weight_norms, debug=debug, debug_freq=debug_freq,
                                       layers_include=layers_include, layers_exclude=layers_exclude,
                                       max_layers=max_layers, hparams=hparams, flush_secs=flush_secs,
                                       max_queue=max_queue)
        self.recording = None
        self._tap = None
        self._forward = None
        self._micro = []
        self._model_loss = False      # the model returned a loss (else the Trainer's logged one is written)
        self._errors = 0

    def _error(self, where):
        self._errors += 1
        if self._errors == 1:
            logger.exception("tb-mindspore: TrainerMonitor failed at %s; training continues", where)

    # -- start -----------------------------------------------------------------------------------------------------
    def on_train_begin(self, args, state, control, model=None, optimizer=None, lr_scheduler=None, **kwargs):
        try:
            self._begin(args, state, model, optimizer, lr_scheduler)
        except Exception:
            self._error("train begin")

    def _begin(self, args, state, model, optimizer, lr_scheduler):
        self._close_run()
        s = self.settings
        if s.hparams is None:
            names = ("learning_rate", "lr_scheduler_type", "per_device_train_batch_size",
                     "gradient_accumulation_steps", "weight_decay", "warmup_steps", "warmup_ratio", "max_grad_norm",
                     "seed")
            values = {n: getattr(args, n, None) for n in names}
            values["lr_scheduler_type"] = str(getattr(values["lr_scheduler_type"], "value",
                                                      values["lr_scheduler_type"]))
            s.hparams = {k: v for k, v in values.items() if v is not None}
        accumulation = max(1, int(getattr(args, "gradient_accumulation_steps", 1) or 1))
        s.batch_size = (int(getattr(args, "per_device_train_batch_size", 1) or 1) * accumulation
                        * max(1, int(getattr(args, "world_size", 1) or 1)))
        writes = bool(state.is_world_process_zero)
        params = ModuleParams(model, optimizer, scheduler=lr_scheduler)
        if writes:
            self._tap = GradTap(params.params, self._on_grads)
            self._forward = model.register_forward_hook(self._on_forward)
        info = {"grad_norm_source": "backward pass, before clipping" if self._tap is not None and self._tap.active
                else "on_pre_optimizer_step (after the Trainer's clipping)",
                "trainer": {"max_steps": getattr(state, "max_steps", None),
                            "num_train_epochs": getattr(args, "num_train_epochs", None),
                            "gradient_accumulation_steps": accumulation,
                            "max_grad_norm": getattr(args, "max_grad_norm", None),
                            "logging_steps": getattr(args, "logging_steps", None)}}
        self.recording = Recording(s, params, entry_point="transformers.Trainer", info=info, writes=writes)
        self.recording.start(step=state.global_step)
        self._micro = []
        self._model_loss = False

    # -- per step --------------------------------------------------------------------------------------------------
    def _on_forward(self, module, _inputs, output):
        if not module.training:
            return
        try:
            loss = loss_of_output(output)
            if loss is not None:
                self._model_loss = True
                self._micro.append(loss.detach() if hasattr(loss, "detach") else loss)
        except Exception:
            self._error("loss")

    def _on_grads(self, grads):
        if self.recording is not None:
            self.recording.grads_ready(grads)

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        if self.recording is not None:
            self.recording.before_update()

    def on_optimizer_step(self, args, state, control, **kwargs):
        if self.recording is not None:
            self.recording.after_update()

    def on_step_end(self, args, state, control, **kwargs):
        rec = self.recording
        if rec is None:
            return
        micro, self._micro = self._micro, []
        loss = None
        try:
            if micro:
                loss = micro[0] if len(micro) == 1 else sum(micro[1:], micro[0]) / len(micro)
        except Exception:
            self._error("loss")
        rec.end_step(loss, step=state.global_step)

    # -- the Trainer's logs ----------------------------------------------------------------------------------------
    def on_log(self, args, state, control, logs=None, **kwargs):
        rec = self.recording
        if rec is None or not logs or rec.writer is None:
            return
        try:
            step = state.global_step
            for key, value in logs.items():
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    continue
                tag = eval_tag(key)
                if tag is not None:
                    rec.scalar(tag, value, step)
                elif key == "loss" and not self._model_loss:
                    rec.scalar(metadata.LOSS, value, step)       # the model returns no loss: the Trainer's mean
            summary = {k: logs[k] for k in _SUMMARY_KEYS if k in logs and _finite(logs[k])}
            if summary:
                rec.info["trainer_summary"] = summary
                rec.writer.run_info(rec.info, step=step)
        except Exception:
            self._error("log")

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        pass     # the Trainer logs the same metrics through on_log

    # -- end -------------------------------------------------------------------------------------------------------
    def on_train_end(self, args, state, control, **kwargs):
        self._close_run()

    def _close_run(self):
        if self._tap is not None:
            self._tap.remove()
            self._tap = None
        if self._forward is not None:
            try:
                self._forward.remove()
            except Exception:
                pass
            self._forward = None
        if self.recording is not None:
            self.recording.end("finished")
            self.recording = None


def _finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
