#!/usr/bin/env bash
# Regenerates the pretrained CPU cost model shipped with the tool from the committed datasets
# (issue #11): datasets/models/cpu_gemm.costmodel and its provenance. About a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
args=()
for f in datasets/cpu/replay_*.jsonl.gz datasets/cpu/zen5/replay_*.jsonl.gz datasets/cpu/zen4/replay_*.jsonl.gz; do args+=(--data "$f"); done
build/tools/tune model train "${args[@]}" --epochs 300 --seed 1 -o datasets/models/cpu_gemm.costmodel
