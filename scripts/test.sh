#!/usr/bin/env bash
# Runs the whole test suite (slow tests included) after setting everything up.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
(cd frontend && npm test --silent)
exec .venv/bin/python -m pytest -q -rs --durations=15 tests "$@"
