#!/usr/bin/env bash
# Records the Zen 5 replay datasets of issue #11 (2,000 uniformly random candidates per workload),
# one workload after another; resumable (each collection keeps its database beside the output).
# Usage: datasets/cpu/collect_zen5.sh [SHAPE...]   (default: the eight shapes below)
set -euo pipefail
cd "$(dirname "$0")/../.."
TUNE=${TUNE:-build/tools/tune}
SHAPES=("$@")
if [ ${#SHAPES[@]} -eq 0 ]; then
  # 32x4096x4096 was dropped: flushing its 64 MiB B before every call made it ~50 min here.
  SHAPES=(256x256x256 512x512x512 256x1024x512 128x1024x1024 3136x64x576 784x128x1152 64x2048x1024
          1024x1024x1024)
fi
mkdir -p datasets/cpu/zen5
for s in "${SHAPES[@]}"; do
  out=datasets/cpu/zen5/replay_$s.jsonl.gz
  [ -f "$out" ] && [ -f "$out.provenance.json" ] && { echo "== $s: done already"; continue; }
  echo "== $s: $(date -u +%FT%TZ)"
  "$TUNE" dataset collect --shape "$s" --count 2000 --seed 7 --min-time 0.05 --jobs 1 -o "$out"
done
