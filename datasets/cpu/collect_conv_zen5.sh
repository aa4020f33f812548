#!/usr/bin/env bash
# Records conv2d replay datasets (issue #31: at least 4 convolution datasets of at least 1,000
# candidates for the cost model and the conv transfer experiment): 1,000 uniformly random
# candidates of the direct route per ResNet-50 3x3 layer, one after another; resumable (each
# collection keeps its database beside the output). Measured like collect_zen5.sh (0.05 s per
# candidate, one compile job), on the machine that runs it (its provenance file says which).
# Usage: datasets/cpu/collect_conv_zen5.sh [DESCRIPTOR...]
set -euo pipefail
cd "$(dirname "$0")/../.."
TUNE=${TUNE:-build/tools/tune}
DESCS=("$@")
if [ ${#DESCS[@]} -eq 0 ]; then
  DESCS=(mb1ic64ih56oc64kh3ph1 mb1ic128ih28oc128kh3ph1 mb1ic256ih14oc256kh3ph1 mb1ic128ih56oc128kh3sh2ph1)
fi
mkdir -p datasets/cpu/zen5
for d in "${DESCS[@]}"; do
  out=datasets/cpu/zen5/replay_conv_$d.jsonl.gz
  [ -f "$out" ] && [ -f "$out.provenance.json" ] && { echo "== $d: done already"; continue; }
  echo "== $d: $(date -u +%FT%TZ)"
  "$TUNE" dataset collect --op conv2d --shape "$d" --count 1000 --seed 7 --min-time 0.05 --jobs 1 -o "$out"
done
