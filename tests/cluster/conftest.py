"""Fixtures of the cluster tests: tests/ on the import path (tb_harness, browser helpers)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "frontend")):
    if path not in sys.path:
        sys.path.insert(0, path)
