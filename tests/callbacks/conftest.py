"""Fixtures of the callback tests."""

import pytest

pytest.importorskip("mindspore")

from cb_helpers import set_mode  # noqa: E402


@pytest.fixture(params=["graph", "pynative"])
def mode(request):
    """Runs the test once in GRAPH_MODE and once in PYNATIVE_MODE."""
    set_mode(request.param)
    yield request.param
    set_mode("graph")
