"""One validated settings object for loss landscapes: every option is checked when it is built, so a typo fails at
construction (``ValueError`` / ``TypeError`` with a one-line message), never after an epoch of training."""

import dataclasses
from typing import Any, Callable, Optional

import numpy as np

from tb_plugin_mindspore.landscape import directions as dirs
from tb_plugin_mindspore.landscape import grid as gridlib

__all__ = ["LandscapeSettings", "METHODS", "TAG_PREFIX", "DEFAULT_GRID", "DEFAULT_EXTENT", "DEFAULT_ALPHAS"]

METHODS = ("random", "pca", "interpolation")
TAG_PREFIX = "landscape/"
DEFAULT_GRID = 21
DEFAULT_EXTENT = 1.0
DEFAULT_ALPHAS = np.linspace(-0.5, 1.5, 41)


def _optional_count(value, name):
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
        raise ValueError("%s must be None or an int >= 1, got %r" % (name, value))


def _optional_callable(value, name):
    if value is not None and not callable(value):
        raise TypeError("%s must be None or a callable, got %s" % (name, type(value).__name__))


def _check_alphas(alphas):
    if alphas is None:
        return
    try:
        a = np.asarray(alphas, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("alphas must be a 1-D sequence of at least 2 finite numbers, got %r" % (alphas,))
    if a.ndim != 1 or a.size < 2 or not np.all(np.isfinite(a)):
        raise ValueError("alphas must be a 1-D sequence of at least 2 finite numbers, got %r" % (alphas,))


def _check_extent(extent, name, allow_auto=False):
    if extent is None or (allow_auto and extent == "auto"):
        return
    if isinstance(extent, str):
        raise ValueError("%s must be a number, (ex, ey) or (xmin, xmax, ymin, ymax)%s, got %r"
                         % (name, ' or "auto"' if allow_auto else "", extent))
    try:
        gridlib.extent_box(extent)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number, (ex, ey) or (xmin, xmax, ymin, ymax) with min < max, got %r"
                         % (name, extent))


@dataclasses.dataclass(frozen=True)
class LandscapeSettings:
    """How a landscape is computed (the same for every method and every time it is computed).

    grid: points per axis, an int or ``(nx, ny)`` (2..1024). extent: the random plane's half-width ``e`` (grid
    ``-e..e``), ``(ex, ey)`` or ``(xmin, xmax, ymin, ymax)`` in units of the directions (None: 1.0). pca_extent: the
    same for the PCA plane, or ``"auto"`` (the projected path plus a 20 % margin). seed, norm (``"filter"`` |
    ``"layer"`` | ``"none"``), bias_bn (``"ignore"`` | ``"include"``): random directions. alphas: interpolation
    coefficients (None: -0.5..1.5). num_samples, num_batches, eval_batch_size: the evaluation subset. log (None:
    silent), progress, estimate: messages. on_point: ``f(index, a, b, loss)`` after each point.
    """

    grid: Any = DEFAULT_GRID
    extent: Any = None
    pca_extent: Any = "auto"
    seed: int = 0
    norm: str = "filter"
    bias_bn: str = "ignore"
    alphas: Any = None
    num_samples: Optional[int] = None
    num_batches: Optional[int] = None
    eval_batch_size: Optional[int] = None
    log: Optional[Callable] = print
    progress: bool = True
    estimate: bool = True
    on_point: Optional[Callable] = None

    def __post_init__(self):
        gridlib.grid_shape(self.grid)
        _check_extent(self.extent, "extent")
        _check_extent(self.pca_extent, "pca_extent", allow_auto=True)
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError("seed must be an int >= 0, got %r" % (self.seed,))
        dirs._check(self.norm, self.bias_bn)
        _check_alphas(self.alphas)
        for name in ("num_samples", "num_batches", "eval_batch_size"):
            _optional_count(getattr(self, name), name)
        _optional_callable(self.log, "log")
        _optional_callable(self.on_point, "on_point")
        for name in ("progress", "estimate"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError("%s must be True or False, got %r" % (name, getattr(self, name)))

    @classmethod
    def fields(cls):
        """The names of the settings (keyword arguments that :meth:`from_kwargs` takes)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_kwargs(cls, settings=None, **kwargs):
        """``settings`` (or the defaults) with ``kwargs`` replacing fields; unknown names raise ``TypeError``."""
        unknown = sorted(set(kwargs) - set(cls.fields()))
        if unknown:
            raise TypeError("unknown landscape setting(s): %s (known: %s)" % (", ".join(unknown),
                                                                            ", ".join(cls.fields())))
        base = settings if settings is not None else cls()
        if not isinstance(base, cls):
            raise TypeError("settings must be a LandscapeSettings, got %s" % type(base).__name__)
        return dataclasses.replace(base, **kwargs) if kwargs else base

    def say(self, text):
        """Sends ``text`` to ``log`` (nothing when it is None)."""
        if self.log is not None:
            self.log(text)

    def data_options(self):
        """Keyword arguments of ``EvalData.take``."""
        return {"num_samples": self.num_samples, "num_batches": self.num_batches, "batch_size": self.eval_batch_size}

    def box(self, method, coords=None):
        """``(xmin, xmax, ymin, ymax)`` of the random plane, or of the PCA plane around the projected path."""
        if method == "pca":
            return gridlib.auto_extent(coords) if self.pca_extent == "auto" else gridlib.extent_box(self.pca_extent)
        return gridlib.extent_box(DEFAULT_EXTENT if self.extent is None else self.extent)

    def interpolation_alphas(self):
        """The alphas of an interpolation: given, or -0.5..1.5 always through both end points."""
        if self.alphas is not None:
            return np.asarray(self.alphas, dtype=np.float64)
        if self.grid == DEFAULT_GRID:
            return DEFAULT_ALPHAS
        n = gridlib.grid_shape(self.grid)[0]
        return np.union1d(np.linspace(-0.5, 1.5, n), [0.0, 1.0])
