#!/usr/bin/env bash
# Regenerates the pretrained CPU cost model shipped with the tool from the committed datasets
# (issue #11): datasets/models/cpu_gemm.costmodel and its provenance. About a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
args=()
# replay_[0-9]*: the GEMM datasets (zen5/replay_conv_* are convolutions, issue #31: not trained on yet)
# zen3/: the AVX2 machine's (issue #34: the first CPU without AVX-512 in the training data)
for f in datasets/cpu/replay_*.jsonl.gz datasets/cpu/zen5/replay_[0-9]*.jsonl.gz datasets/cpu/zen4/replay_*.jsonl.gz \
         datasets/cpu/zen3/replay_*.jsonl.gz; do args+=(--data "$f"); done
build/tools/tune costmodel train "${args[@]}" --epochs 300 --seed 1 -o datasets/models/cpu_gemm.costmodel
