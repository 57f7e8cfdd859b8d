#!/usr/bin/env bash
# PyTorch (CPU build) with Hugging Face transformers: the reference side of `tb-mindspore compare` and the
# transformers TrainerCallback. Usage: bash scripts/envs/torch.sh DIR
set -euo pipefail
DIR=$1
python3 -m venv "$DIR"
PIP="$DIR/bin/python -m pip install -q"
$PIP --upgrade pip
$PIP "torch==2.13.0"
$PIP "transformers>=4.46,<5" "accelerate>=1.0" "tensorboard>=2.14" "numpy<2" "protobuf>=3.20" "werkzeug>=2.0" \
     "google-crc32c>=1.5" tensorboardX pytest
