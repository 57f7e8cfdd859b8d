"""Fixtures of the callback tests. The subfolders mirror the training side's packages (``cells/``, ``recorders/``,
``landscape/``); the adapters' tests (``TrainMonitor``, ``LoopMonitor``, other trainers) and the helpers they all
share (``cb_helpers.py``, ``flight_nets.py``) sit here."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

pytest.importorskip("mindspore")

from cb_helpers import set_mode  # noqa: E402


@pytest.fixture(params=["graph", "pynative"])
def mode(request):
    """Runs the test once in GRAPH_MODE and once in PYNATIVE_MODE."""
    set_mode(request.param)
    yield request.param
    set_mode("graph")
