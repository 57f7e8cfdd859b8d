#!/usr/bin/env bash
# Builds the optional environments that the tests of other trainers use (mindformers, MindNLP, PyTorch), once:
# each lives in a cache folder named after a hash of its recipe (scripts/envs/NAME.sh), so a run with an unchanged
# recipe reuses it and a changed recipe builds a new one. Usage: bash scripts/extras.sh [NAME ...] (default: all).
# The cache folder is TB_MINDSPORE_ENVS, else ~/.cache/tb-plugin-mindspore/envs. tests/extras.py finds them the same
# way; a test whose environment is missing skips and says which command builds it.
set -euo pipefail
cd "$(dirname "$0")/.."
ENVS=${TB_MINDSPORE_ENVS:-$HOME/.cache/tb-plugin-mindspore/envs}
mkdir -p "$ENVS"
names=("$@")
[ ${#names[@]} -gt 0 ] || names=($(cd scripts/envs && ls *.sh | sed 's/\.sh$//'))
for name in "${names[@]}"; do
  recipe=scripts/envs/$name.sh
  [ -f "$recipe" ] || { echo "extras: no recipe $recipe" >&2; exit 2; }
  hash=$(sha256sum "$recipe" | cut -c1-12)
  dir=$ENVS/$name-$hash
  if [ -f "$dir/.ready" ]; then
    echo "extras: $name ready ($dir)"
    continue
  fi
  echo "extras: building $name into $dir (once; later runs reuse it)"
  rm -rf "$dir.tmp"
  start=$(date +%s)
  if bash "$recipe" "$dir.tmp" > "$ENVS/$name-$hash.log" 2>&1; then
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    # venvs keep absolute paths in their scripts: rebuild the python link after the move is not needed (python is
    # a link to the base interpreter); scripts are called as "$dir/bin/python -m ...".
    touch "$dir/.ready"
    echo "extras: $name built in $(( $(date +%s) - start )) s"
  else
    echo "extras: building $name failed (log: $ENVS/$name-$hash.log); its tests will skip" >&2
    tail -20 "$ENVS/$name-$hash.log" >&2
  fi
done
