#!/usr/bin/env bash
# Records the Zen 3 (AVX2 only) replay datasets of issue #34: the first CPU without AVX-512 in the
# training set of the pretrained model. Uniformly random, never-repeated candidates per workload,
# one workload after another; resumable (each collection keeps its database beside the output).
# None of these shapes is one of the live experiments' (768x1536x1024 NN, the GEMMs of issue #34's
# list, the suites), so those stay shapes in no dataset.
# Usage: datasets/cpu/collect_zen3.sh [SHAPE:LAYOUT:COUNT...]   (default: the list below)
set -euo pipefail
cd "$(dirname "$0")/../.."
TUNE=${TUNE:-build/tools/tune}
ITEMS=("$@")
if [ ${#ITEMS[@]} -eq 0 ]; then
  ITEMS=(256x1024x512:NN:800 128x1024x1024:NN:800 784x128x1152:NN:800 64x2048x1024:NN:800
         64x1024x1024:NT:600 16x4096x4096:NT:600 512x512x512:NN:800 256x512x1024:TN:400)
fi
mkdir -p datasets/cpu/zen3
for it in "${ITEMS[@]}"; do
  IFS=: read -r s l n <<<"$it"
  suffix=$([ "$l" = NN ] && echo "" || echo "_$l")
  out=datasets/cpu/zen3/replay_$s$suffix.jsonl.gz
  [ -f "$out" ] && [ -f "$out.provenance.json" ] && { echo "== $s $l: done already"; continue; }
  echo "== $s $l ($n): $(date -u +%FT%TZ)"
  "$TUNE" dataset collect --shape "$s" --layout "$l" --count "$n" --seed 7 --min-time 0.05 --jobs 1 -o "$out"
done
