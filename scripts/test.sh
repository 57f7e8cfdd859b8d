#!/usr/bin/env bash
# Runs the whole test suite after setting everything up (what CI runs).
#   bash scripts/test.sh            everything but the 'long' trials: the optional environments (mindformers,
#                                   MindNLP, PyTorch) are built meanwhile in the background (once: later runs reuse
#                                   them), the test files run in parallel (pytest-xdist, one worker more than cores), then
#                                   the few timing-sensitive tests ('serial' marker) alone
#   bash scripts/test.sh --quick    the edit-test loop: no slow tests, no optional environments, in parallel
#   bash scripts/test.sh ARGS...    pytest ARGS in parallel (e.g. -m long, or a folder)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
# One worker more than there are cores: about a quarter of the tests' wall time is spent waiting (child trainings
# starting, servers reloading, the browser), which a third worker fills on two cores.
workers=${TB_MINDSPORE_TEST_WORKERS:-$(( $(nproc) + 1 ))}
# Python keeps the bytecode of this checkout's modules (git-ignored __pycache__ folders, compiled once after set-up)
# even where the environment says not to: without it every worker, child training and server compiles them again
# from source (collecting the tests: 12 s of CPU in each pytest process instead of 5 s; importing the plugin and the
# callbacks: 0.55 s instead of 0.35 s in every training child and server that imports them).
unset PYTHONDONTWRITEBYTECODE

extras_pid=
if [ $quick = 0 ]; then
  bash scripts/extras.sh > extras.log 2>&1 &
  extras_pid=$!
fi
if [ $quick = 1 ] && [ -x .venv/bin/python ] && [ -f tb_plugin_mindspore/static/index.js ]; then
  :   # set up already: the edit-test loop skips it (rebuild the tab with: cd frontend && npm run build)
else
  bash scripts/setup.sh
  (cd frontend && npm test --silent)
fi
.venv/bin/python -m compileall -q -j 0 tb_plugin_mindspore callbacks tests bench > /dev/null
if [ -n "$extras_pid" ]; then
  wait "$extras_pid" || true
  cat extras.log
fi

pytest=(.venv/bin/python -m pytest -q -rs -n "$workers" --dist worksteal)
if [ $quick = 1 ]; then
  exec "${pytest[@]}" -m "not slow and not long and not serial" tests "$@"
fi
if [ $# -gt 0 ]; then
  exec "${pytest[@]}" "$@"
fi
status=0
"${pytest[@]}" --durations=15 -m "not long and not serial" tests || status=$?
# Only the files that hold serial tests are collected (every file: 12 s of CPU); tests/conftest.py refuses a test
# marked serial where its file does not say pytest.mark.serial.
serial_files=$(grep -rl --include="test_*.py" "pytest.mark.serial" tests | sort)
.venv/bin/python -m pytest -q -rs -p no:xdist --durations=5 -m "serial and not long" $serial_files || status=$?
exit $status
