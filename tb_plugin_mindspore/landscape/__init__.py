"""Loss-landscape mathematics that needs only numpy: directions, PCA of a training trajectory, projection, grids and
the landscape record format. The MindSpore side (evaluating the loss) is ``tb_mindspore_callbacks.landscape``; the
reading side (routes) is ``tb_plugin_mindspore.answers.landscapes``.

May import: ``io``, ``contract`` (with ``metadata``); numpy.
"""

from .directions import (
    BIAS_BN_OPTIONS,
    NORM_OPTIONS,
    Layout,
    normalize_direction,
    normalize_directions,
    pca_directions,
    project,
    random_directions,
)
from .format import landscape_record, normalize_record
from .grid import auto_extent, axes, format_seconds
from .trajectory import Trajectory

__all__ = [
    "BIAS_BN_OPTIONS", "NORM_OPTIONS", "Layout", "normalize_direction", "normalize_directions", "pca_directions",
    "project", "random_directions", "landscape_record", "normalize_record", "auto_extent", "axes", "format_seconds",
    "Trajectory",
]
