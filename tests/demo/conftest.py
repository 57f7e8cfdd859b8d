"""The tests of what a newcomer sees first: the real ``tb-mindspore demo``'s output, the tab over its logdir and the
report of it (the demo's run is the session fixture ``demo_run`` of tests/conftest.py, shared with tests/health)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.join(os.path.dirname(HERE), "frontend")):
    if path not in sys.path:
        sys.path.insert(0, path)

BIN = os.path.join(os.path.dirname(sys.executable), "tb-mindspore")
