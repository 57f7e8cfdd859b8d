"""Fixtures of the ``_MS`` reader tests: real MindSpore 2.10 summary files (see ``ms_fixture_lib``)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ms_fixture_lib  # noqa: E402


@pytest.fixture(scope="session")
def ms_fixtures(tmp_path_factory):
    return ms_fixture_lib.ms_fixtures(tmp_path_factory)


@pytest.fixture(scope="session")
def ms_logdir(ms_fixtures):
    return ms_fixture_lib.ms_logdir(ms_fixtures)


@pytest.fixture(scope="session")
def ms_layouts(tmp_path_factory):
    return ms_fixture_lib.ms_layouts(tmp_path_factory)
