"""``TorchMonitor``: a plain PyTorch (or torch-style) training loop recorded in the MindSpore callbacks' data
contract, so the tab, ``check`` and ``compare`` read it as they read a MindSpore run::

    from tb_mindspore_callbacks.torch_style import TorchMonitor

    with TorchMonitor(run_dir, model, optimizer, collect_freq=10, debug="all") as mon:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()          # seen by the monitor: gradients before it, weights after it
            mon.step(loss)

With a PyTorch optimizer the monitor hooks ``optimizer.step`` (``register_step_pre_hook`` /
``register_step_post_hook``) and the end of each backward pass (a gradient hook per parameter that queues one
callback at the end of the pass), so the gradient norm is the one before any clipping and the update ratio
measures the optimizer's real step. Optimizers without those hooks (MindNLP's, hand-written ones): call
``mon.update()`` instead of ``optimizer.step()`` (or ``mon.update(fn)`` for your own update), or pass the
gradients to ``mon.step(loss, grads)``.
"""

import logging
import os

from .params import ModuleParams
from .recording import Recording, RecordSettings

__all__ = ["TorchMonitor", "GradTap", "detect_rank"]

logger = logging.getLogger("tb_mindspore_callbacks")


def detect_rank():
    """This process's rank: ``torch.distributed`` when initialised, else ``RANK`` from the launcher, else 0."""
    import sys

    dist = getattr(sys.modules.get("torch"), "distributed", None)
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        pass
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


class GradTap:
    """Calls ``on_grads(grads)`` once at the end of every backward pass that reaches ``params``, with their
    accumulated gradients (before the loop can clip them). PyTorch only (``register_post_accumulate_grad_hook``
    and the autograd engine's end-of-pass callback); :attr:`active` is False where they are missing."""

    def __init__(self, params, on_grads):
        self.params = params
        self.on_grads = on_grads
        self.handles = []
        self._queued = False
        self.active = False
        try:
            import torch

            engine = torch.autograd.Variable._execution_engine
            if not all(hasattr(p, "register_post_accumulate_grad_hook") for p in params):
                return
            self._queue = engine.queue_callback
            self.handles = [p.register_post_accumulate_grad_hook(self._hook) for p in params]
            self.active = bool(self.handles)
        except Exception:
            self.remove()

    def _hook(self, _param):
        if not self._queued:
            self._queued = True
            self._queue(self._end_of_pass)

    def _end_of_pass(self):
        self._queued = False
        self.on_grads([p.grad for p in self.params])

    def remove(self):
        for h in self.handles:
            try:
                h.remove()
            except Exception:
                pass
        self.handles = []
        self.active = False


class TorchMonitor:
    """Records a PyTorch / torch-style training loop (see the module doc).

    Args:
      logdir: the run folder (e.g. from ``make_run_dir``).
      model: the model (``named_parameters()`` names the layers: ``encoder.layers.0.linear1.weight``).
      optimizer: its torch-style optimizer (``param_groups`` give the applied LR per group), or None.
      collect_freq: core points every N steps (loss, gradient norm, LR, step time with interval statistics).
      diagnostic_freq: weight norms every N steps (default 100; ``weight_norms=False`` turns them off).
      debug: ``"all"`` or a subset of ``["update_ratio", "layer_grad_norm"]``, every ``debug_freq`` steps.
      layers_include / layers_exclude / max_layers: which parameters are layers (default: 2 or more dimensions).
      param_names / params / lr / scheduler: see :class:`~.params.ModuleParams` (models or optimizers without the
        torch API).
      hook: hook ``optimizer.step`` and the backward pass (default True where PyTorch offers it).
      hparams, batch_size, rank, flush_secs, max_queue: as for ``LoopMonitor``. Only rank 0 writes.

    Misuse raises ValueError at construction, never during training.
    """

    def __init__(self, logdir, model=None, optimizer=None, collect_freq=10, diagnostic_freq=100, weight_norms=True,
                 debug=(), debug_freq=100, layers_include=None, layers_exclude=None, max_layers=64,
                 param_names=None, params=None, lr=None, scheduler=None, hook=True, hparams=None, batch_size=None,
                 rank=None, flush_secs=2.0, max_queue=10000):
        self.settings = RecordSettings(logdir, collect_freq=collect_freq, diagnostic_freq=diagnostic_freq,
                                       weight_norms=weight_norms, debug=debug, debug_freq=debug_freq,
                                       layers_include=layers_include, layers_exclude=layers_exclude,
                                       max_layers=max_layers, hparams=hparams, batch_size=batch_size, rank=rank,
                                       flush_secs=flush_secs, max_queue=max_queue)
        self.params = ModuleParams(model, optimizer, param_names=param_names, params=params, lr=lr,
                                   scheduler=scheduler)
        self.optimizer = optimizer
        self.rank = detect_rank() if rank is None else rank
        self._hooks = []
        self._tap = None
        hooked = False
        if hook and optimizer is not None and self.rank == 0 and hasattr(optimizer, "register_step_pre_hook"):
            self._hooks = [optimizer.register_step_pre_hook(self._pre_hook),
                           optimizer.register_step_post_hook(self._post_hook)]
            hooked = True
            self._tap = GradTap(self.params.params, self._on_grads)
        self._hooked = hooked
        grad_source = ("backward pass, before clipping" if self._tap is not None and self._tap.active else
                       "optimizer step (after any clipping)" if hooked else "given to step() or .grad at step()")
        self.recording = Recording(self.settings, self.params, entry_point="loop",
                                   info={"grad_norm_source": grad_source, "optimizer_hooked": hooked},
                                   writes=self.rank == 0)
        self._closed = False

    # -- hooks -----------------------------------------------------------------------------------------------------
    def _on_grads(self, grads):
        self.recording.grads_ready(grads)

    def _pre_hook(self, _optimizer, _args, _kwargs):
        if not self.recording.started:
            self.recording.start()
        self.recording.before_update()

    def _post_hook(self, _optimizer, _args, _kwargs):
        self.recording.after_update()

    # -- the loop's calls ------------------------------------------------------------------------------------------
    @property
    def step_num(self):
        """Steps recorded so far."""
        return self.recording.step

    def update(self, fn=None, grads=None):
        """Runs ``optimizer.step()`` (or ``fn()``: your own update) with the gradients' norms taken before and the
        update ratio around it; for optimizers the monitor could not hook."""
        rec = self.recording
        if not rec.started:
            rec.start()
        if self._hooked and fn is None:
            return self.optimizer.step()       # the hooks do the rest
        try:
            rec.before_update(grads)
        except Exception:
            rec.error("update")
        out = fn() if fn is not None else self.optimizer.step()
        try:
            rec.after_update()
        except Exception:
            rec.error("update")
        return out

    def step(self, loss, grads=None, step=None):
        """Records one training step (after the optimizer's update) with its loss; ``grads``: the gradients in the
        order of ``named_parameters()`` when they are not in ``.grad``. Returns True (training goes on)."""
        if self._closed:
            raise RuntimeError("TorchMonitor is closed")
        rec = self.recording
        if grads is None and rec._norms_step != (rec.step + 1 if step is None else step) and rec.writes:
            grads = [getattr(p, "grad", None) for p in self.params.params]
        rec.end_step(loss, step=step, grads=grads)
        return True

    def scalar(self, tag, value, step=None):
        """Writes any other scalar (your evaluation: ``diagnostic/eval_loss``, ``diagnostic/eval/accuracy``)."""
        self.recording.scalar(tag, value, step)

    def close(self, status="finished", reason=""):
        """Writes the final points and the run end marker, removes the hooks and closes the file (twice is fine)."""
        if self._closed:
            return
        self._closed = True
        for h in self._hooks:
            try:
                h.remove()
            except Exception:
                pass
        if self._tap is not None:
            self._tap.remove()
        self.recording.end(status, reason)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.close("interrupted" if issubclass(exc_type, KeyboardInterrupt) else "failed",
                       "%s: %s" % (exc_type.__name__, str(exc)[:200]))
