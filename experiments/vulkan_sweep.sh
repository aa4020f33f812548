#!/bin/sh
# Issue #33's goal sweep: random candidates of the Vulkan GEMM space on three f32 shapes (square, not
# a power of two, NT), one f16 shape and two batched matmuls (attention's Q.K^T, NT, and P.V, NN),
# each compiled to SPIR-V, validated by spirv-val, run on a Vulkan device under
# the Khronos validation layer (SEXTANT_VULKAN_VALIDATION=1: any message fails the kernel) and
# verified against the CPU reference, through the real CLI path (tune --target vulkan --measure
# device: isolated compilation, a bundle, tune-runner). On Mesa's lavapipe the timings are a
# CPU-emulated device's: they verify kernels and measure no GPU.
# Usage: experiments/vulkan_sweep.sh [TRIALS] [TARGET] [TAG]   defaults: 64 vulkan lavapipe
# Output: experiments/results/vulkan_sweep_TAG.txt (this command line, the device, per shape the
#         statuses and every failure's candidate and message).
set -e
cd "$(dirname "$0")/.."
trials=${1:-64}
target=${2:-vulkan}
tag=${3:-lavapipe}
tune=${TUNE:-build/tools/tune}
out=experiments/results/vulkan_sweep_$tag.txt
db=$(mktemp -d)/sweep.db
export SEXTANT_VULKAN_VALIDATION=1
# Cold shader compiles in the driver, as on a fresh machine (lavapipe compiles at the first dispatch).
export MESA_SHADER_CACHE_DISABLE=true
{
  echo "# command: experiments/vulkan_sweep.sh $trials $target $tag   ($(date -u +%F), commit $(git rev-parse --short HEAD))"
  echo "# strategy random, fresh database, validation layer on, Mesa shader cache off; the device:"
  "$tune" hw show vulkan | sed 's/^/#   /'
  for sl in gemm:128x128x128:NN:f32 gemm:192x160x96:NN:f32 gemm:64x256x128:NT:f32 gemm:128x128x64:NN:f16 \
            batch_matmul:4x64x128x64:NT:f32 batch_matmul:4x64x64x128:NN:f32; do
    op=${sl%%:*} sl=${sl#*:}
    shape=${sl%%:*} rest=${sl#*:}
    layout=${rest%%:*} dtype=${rest#*:}
    echo
    echo "== $op $shape $layout $dtype"
    "$tune" --op "$op" --shape "$shape" --layout "$layout" --dtype "$dtype" --target "$target" --measure device --strategy random \
      --trials "$trials" --db "$db" --quiet 2>&1 | grep -v '^$' || true
  done
  echo
  echo "== every record that is not ok (candidate | status | message)"
  sqlite3 -separator ' | ' "$db" "select candidate, status, substr(replace(message, char(10), ' '), 1, 300) from records where status != 'ok'"
  echo
  echo "== totals per workload"
  sqlite3 -separator ' | ' "$db" "select w.key, r.status, count(*) from records r join workloads w on r.workload_id = w.id group by 1, 2"
} > "$out"
cat "$out"
