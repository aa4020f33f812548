#!/usr/bin/env bash
# Would the learned cost model have found a GPU shape's best schedule from the other shapes'
# measurements? Leave-one-shape-out over the committed H200 dataset (datasets/gpu/README.md):
#
#   experiments/gpu_costmodel_heldout.sh [OUT]   (default experiments/results/gpu_costmodel_heldout_h200.txt)
#
# No GPU needed: the measurements were made on an NVIDIA H200 on 2026-11-26; this script only
# trains and evaluates the cost model (on this machine's CPU) over them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/experiments/results/gpu_costmodel_heldout_h200.txt}
tune=${TUNE:-$root/build/tools/tune}
[ -x "$tune" ] || "$root/scripts/build.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gunzip -c "$root/datasets/gpu/h200_cuda_2026-11-26.jsonl.gz" >"$work/h200.jsonl"
"$tune" import "$work/h200.jsonl" --db "$work/gpu.db" >/dev/null
{
  echo "# experiments/gpu_costmodel_heldout.sh, $(date -u +%Y-%m-%d), sextant $(git -C "$root" rev-parse --short HEAD)"
  echo "# measurements: NVIDIA H200 (datasets/gpu/h200_cuda_2026-11-26.jsonl.gz); model trained here: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
  echo "# command: tune costmodel eval --target h100 --min-records 20 --db <that dataset>"
  echo
  "$tune" costmodel eval --target h100 --min-records 20 --db "$work/gpu.db" | sed "s|$work/gpu.db|the dataset|"
} | tee "$out"
