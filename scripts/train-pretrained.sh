#!/usr/bin/env bash
# Regenerates the pretrained CPU cost model shipped with the tool from the committed datasets
# (issue #11): datasets/models/cpu_gemm.costmodel and its provenance. About a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
args=()
# replay_[0-9]*: the GEMM datasets (zen5/replay_conv_* are convolutions, issue #31: not trained on yet)
for f in datasets/cpu/replay_*.jsonl.gz datasets/cpu/zen5/replay_[0-9]*.jsonl.gz datasets/cpu/zen4/replay_*.jsonl.gz; do args+=(--data "$f"); done
build/tools/tune costmodel train "${args[@]}" --epochs 300 --seed 1 -o datasets/models/cpu_gemm.costmodel
