#!/usr/bin/env bash
# TVM MetaSchedule's winner and Sextant's schedules of the same f32 NN GEMM, timed in one process
# by one harness (one_harness/harness.c): no difference of runner, flush or calling convention
# between the two tools' figures. MetaSchedule's kernel is rebuilt from the TensorIR its run kept
# (tvm_metaschedule.py's winner_tir) and compiled by this machine's llc; Sextant's from a
# database's best (tune compile) or from knob assignments (tune --knobs, then tune compile).
#
# usage: experiments/peers/ms_vs_sextant.sh MS_RESULT.json MxNxK [DB_OR_KNOBS ...]
#   DB_OR_KNOBS: a Sextant database (its best record of the shape), or KNOB=V,... (one point)
# needs: experiments/peers/setup_venv.sh (TVM), build/tools/tune, llc-22 and a C compiler.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/experiments/peers/one_harness"
[ $# -ge 2 ] || { sed -n 2,12p "$0"; exit 2; }
result=$1 shape=$2
shift 2
IFS=x read -r m n k <<<"$shape"
tune=${TUNE:-$root/build/tools/tune}
py=$root/experiments/peers/.venv/bin/python
llc=$(command -v llc-22 || command -v llc || true)
[ -x "$tune" ] || { echo "ms_vs_sextant: no $tune (scripts/build.sh first)"; exit 1; }
[ -x "$py" ] || { echo "ms_vs_sextant: no TVM venv (experiments/peers/setup_venv.sh first)"; exit 1; }
[ -n "$llc" ] || { echo "ms_vs_sextant: no llc-22 (Debian llvm-22)"; exit 1; }
mcpu=$("$llc" --version | sed -n 's/.*Host CPU: *//p')
work=$(mktemp -d /tmp/ms_vs_sextant.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$py" "$here/ms_kernel.py" "$result" --mcpu "$mcpu" -o "$work/ms.ll"
"$llc" -O3 -mcpu="$mcpu" -relocation-model=pic -filetype=obj "$work/ms.ll" -o "$work/ms.o"
cc -O2 -fPIC -shared -DSX_M="$m" -DSX_N="$n" "$here/ms_shim.c" "$work/ms.o" -o "$work/metaschedule.so"
cc -O2 "$here/harness.c" -o "$work/harness" -ldl

cat >"$work/mm.mlir" <<MLIR
func.func @f(%a: tensor<${m}x${k}xf32>, %b: tensor<${k}x${n}xf32>) -> tensor<${m}x${n}xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<${m}x${n}xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<${m}x${n}xf32>) -> tensor<${m}x${n}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<${m}x${k}xf32>, tensor<${k}x${n}xf32>) outs(%z : tensor<${m}x${n}xf32>) -> tensor<${m}x${n}xf32>
  return %r : tensor<${m}x${n}xf32>
}
MLIR
objects=("$work/metaschedule.so")
i=0
for s in "$@"; do
  i=$((i + 1))
  db=$s
  if [[ $s == *=* ]]; then
    db="$work/point$i.db"
    "$tune" --op gemm --shape "$shape" --knobs "$s" --db "$db" | tail -1
  fi
  "$tune" compile "$work/mm.mlir" --db "$db" -o "$work/sextant$i.so" | grep -m1 'linalg.matmul' || true
  echo "sextant$i.so: $s"
  objects+=("$work/sextant$i.so")
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p') (LLVM $mcpu), 1 thread; MetaSchedule: $result"
"$work/harness" "$m" "$n" "$k" "${objects[@]}"
