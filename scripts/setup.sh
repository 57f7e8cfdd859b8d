#!/usr/bin/env bash
# Sets up everything on a fresh Debian machine: Chromium (browser tests), a virtual environment in .venv with
# the package (editable), MindSpore and the test tools, and the frontend bundle. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Chromium with apt (for the browser tests; about a minute)..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    echo "setup: Chromium installed" >&2
  else
    echo "setup: chromium is missing (the browser tests need it): sudo apt-get install chromium" >&2
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating the virtual environment .venv..." >&2
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip

# The frontend bundle (tb_plugin_mindspore/static/) is built from frontend/ by npm, never committed; it is built while
# pip installs the package (each mostly uses one core), its output shown once both are done.
echo "setup: installing the frontend's packages (npm ci) and building the tab's bundle..." >&2
frontend_log=$(mktemp)
(cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent) > "$frontend_log" 2>&1 &
frontend_pid=$!

# PYTHONWARNINGS: setuptools' editable-install banner ("be careful with folders ... same name as your package")
# is about the callbacks/ folder installed as tb_mindspore_callbacks; nothing to act on.
echo "setup: installing the package with MindSpore, TensorBoard and the test tools into .venv (a few minutes the" \
  "first time)..." >&2
PYTHONWARNINGS=ignore TB_MINDSPORE_SKIP_FRONTEND=1 .venv/bin/python -m pip install -q -e ".[mindspore,test]"
frontend_status=0
wait "$frontend_pid" || frontend_status=$?
cat "$frontend_log"
rm -f "$frontend_log"
if [ "$frontend_status" != 0 ]; then
  echo "setup: building the frontend failed (exit status $frontend_status); see the npm output above" >&2
  exit "$frontend_status"
fi
echo "setup: done (.venv ready; run .venv/bin/tb-mindspore demo)"
