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

# pip install -e ".[mindspore,test]" with the interpreter $1. PYTHONWARNINGS: setuptools' editable-install banner
# ("be careful with folders ... same name as your package") is about the callbacks/ folder installed as
# tb_mindspore_callbacks; nothing to act on. The frontend is built by npm below, not by pip.
install_package() {
  PYTHONWARNINGS=ignore TB_MINDSPORE_SKIP_FRONTEND=1 "$1" -m pip install -q -e ".[mindspore,test]"
}

# The third-party packages (MindSpore alone is 2.5 GB unpacked: about a minute to install on two cores) go once into
# a base environment in the cache folder (TB_MINDSPORE_ENVS, else ~/.cache/tb-plugin-mindspore/envs, as for
# scripts/extras.sh), named after a hash of setup.py, this script, the interpreter's version and pip's constraints;
# a new checkout's .venv hard-links its files (seconds) instead of unpacking the wheels again. A changed recipe builds
# a new base. TB_MINDSPORE_BASE_ENV=0 installs everything into .venv directly, as before.
ENVS=${TB_MINDSPORE_ENVS:-$HOME/.cache/tb-plugin-mindspore/envs}
if [ ! -x .venv/bin/python ] && [ "${TB_MINDSPORE_BASE_ENV:-1}" != 0 ]; then
  key=$( (cat setup.py scripts/setup.sh; "$PY" --version; cat "${PIP_CONSTRAINT:-/etc/xdg/pip/constraints.txt}" \
    2>/dev/null || true) | sha256sum | cut -c1-12)
  base=$ENVS/base-$key
  if [ ! -f "$base/.ready" ]; then
    echo "setup: installing MindSpore, TensorBoard and the test tools into $base (once; later checkouts link it)..." >&2
    mkdir -p "$ENVS" && rm -rf "$base"
    "$PY" -m venv "$base"
    "$base/bin/python" -m pip install -q --upgrade pip
    # The package's dependencies only: installed with it (editable, so nothing is built), then it is removed.
    install_package "$base/bin/python"
    "$base/bin/python" -m pip uninstall -q -y tb-plugin-mindspore
    touch "$base/.ready"
  fi
  echo "setup: creating the virtual environment .venv from $base..." >&2
  "$PY" -m venv --without-pip .venv
  site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  base_site=$("$base/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  # Hard links where the cache is on the same file system, copies elsewhere; nothing writes into these files in
  # place (pip and Python replace a file by a new one).
  cp -al "$base_site/." "$site/" 2>/dev/null || cp -a "$base_site/." "$site/"
  # The console scripts (tensorboard, pytest, pip...), pointed at .venv's interpreter (files only: pip compiles a
  # script named *.py, such as jmespath's jp.py, into a __pycache__ folder there).
  for script in "$base"/bin/*; do
    target=.venv/bin/$(basename "$script")
    if [ -f "$script" ] && [ ! -e "$target" ] && head -n1 "$script" | grep -q "^#!$base/bin/python"; then
      sed "1s|^#!$base/bin/python|#!$PWD/.venv/bin/python|" "$script" > "$target" && chmod +x "$target"
    fi
  done
elif [ ! -x .venv/bin/python ]; then
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

echo "setup: installing the package with MindSpore, TensorBoard and the test tools into .venv (a few minutes the" \
  "first time)..." >&2
install_package .venv/bin/python
frontend_status=0
wait "$frontend_pid" || frontend_status=$?
cat "$frontend_log"
rm -f "$frontend_log"
if [ "$frontend_status" != 0 ]; then
  echo "setup: building the frontend failed (exit status $frontend_status); see the npm output above" >&2
  exit "$frontend_status"
fi
echo "setup: done (.venv ready; run .venv/bin/tb-mindspore demo)"
