#!/usr/bin/env bash
# MindSpore Transformers (mindformers 2.1.0) on MindSpore 2.10: mindformers pins an unpublished MindSpore, so it is
# installed --no-deps with the pure-Python packages its callbacks, registry and train cells import.
# Usage: bash scripts/envs/mindformers.sh DIR
set -euo pipefail
DIR=$1
python3 -m venv "$DIR"
PIP="$DIR/bin/python -m pip install -q"
$PIP --upgrade pip
$PIP "mindspore==2.10.0" "tensorboard>=2.14" "protobuf>=3.20" "werkzeug>=2.0" "google-crc32c>=1.5" pytest
$PIP --no-deps "mindformers==2.1.0"
$PIP pyyaml deprecated regex requests jieba rouge_chinese datasets tokenizers sentencepiece tiktoken mindpet \
     tensorboardX
$PIP "numpy<2" "pandas<2.3" "pyarrow<20"
