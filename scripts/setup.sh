#!/usr/bin/env bash
# Sets up everything on a fresh Debian machine: Chromium (browser tests), a virtual environment in .venv with
# the package (editable), MindSpore and the test tools, and the frontend bundle. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "setup: chromium is missing (the browser tests need it): sudo apt-get install chromium" >&2
  fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip

# The frontend bundle (tb_plugin_mindspore/static/) is built from frontend/ by npm, never committed.
(cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)

# PYTHONWARNINGS: setuptools' editable-install banner ("be careful with folders ... same name as your package")
# is about the callbacks/ folder installed as tb_mindspore_callbacks; nothing to act on.
PYTHONWARNINGS=ignore TB_MINDSPORE_SKIP_FRONTEND=1 .venv/bin/python -m pip install -q -e ".[mindspore,test]"
echo "setup: done (.venv ready; run .venv/bin/tb-mindspore demo)"
