"""Loss landscapes and sharpness of a MindSpore network while (or after) it trains.

Holds: ``callback.py`` (``LandscapeCallback``), ``settings.py`` (``LandscapeSettings``, every option validated when
built), ``evaluation.py`` (the fixed evaluation subset and the compiled eval-mode loss), ``compute.py`` (directions,
grid and points: ``compute_landscape``, ``interpolate``, ``landscape_from_checkpoint``), ``run.py`` (Ctrl-C,
progress, writing the record), ``dist.py`` (the grid split across ``msrun`` workers), ``sharpness.py``
(``SharpnessCallback`` / ``SharpnessProbe``: the Hessian's top eigenvalue and trace). The maths without MindSpore
is ``tb_plugin_mindspore.landscape``.

May import: ``..common``; ``tb_plugin_mindspore``'s ``io``, ``contract``, ``landscape`` and ``writing`` layers; never
``..recorders`` (a sibling).
"""

from .callback import (  # noqa: F401
    METHODS, TAG_PREFIX, EvalData, LandscapeCallback, LandscapeInterrupted, LandscapeJob, LandscapeResult,
    LandscapeSettings, LossEvaluator, check_eval_data, compute_landscape, interpolate, landscape_from_checkpoint,
    resolve_loss_network,
)

__all__ = [
    "LandscapeCallback", "LandscapeInterrupted", "LandscapeResult", "LandscapeSettings", "LandscapeJob", "EvalData",
    "LossEvaluator", "compute_landscape", "interpolate", "landscape_from_checkpoint", "METHODS", "TAG_PREFIX",
]
