"""``tb_mindspore_callbacks.landscape_dist`` as the README documents it: the grid split across ``msrun`` workers
now lives in :mod:`tb_mindspore_callbacks.landscape.dist`; this name keeps working."""

from .landscape.dist import *  # noqa: F401,F403
from .landscape.dist import __all__  # noqa: F401
