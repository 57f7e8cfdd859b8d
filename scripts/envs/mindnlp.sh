#!/usr/bin/env bash
# MindNLP 0.5.1 (Hugging Face-style models on MindSpore): it pins mindspore<=2.7 and fails to import on 2.10, so it
# gets MindSpore 2.7.0, installed --no-deps with the transformers stack it was released against.
# Usage: bash scripts/envs/mindnlp.sh DIR
set -euo pipefail
DIR=$1
python3 -m venv "$DIR"
PIP="$DIR/bin/python -m pip install -q"
$PIP --upgrade pip
$PIP "mindspore==2.7.0" "tensorboard>=2.14" "protobuf>=3.20" "werkzeug>=2.0" "google-crc32c>=1.5" pytest
$PIP --no-deps "mindnlp==0.5.1" "transformers==4.57.1" "diffusers==0.35.2" "accelerate==1.11.0"
$PIP addict ml-dtypes tqdm requests ftfy sentencepiece tokenizers huggingface_hub safetensors regex pyyaml \
     filelock packaging psutil tensorboardX
# The transformers stack above pulls versions built for numpy 2 / newer hubs: ml-dtypes 0.5+ fails to import on
# numpy 1 (mindtorch imports it), transformers 4.57 needs huggingface_hub < 1.0 and tokenizers <= 0.23.0.
$PIP "numpy<2" "ml-dtypes<0.5" "huggingface_hub<1.0" "tokenizers<0.23.1"
