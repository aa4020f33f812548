#!/usr/bin/env bash
# TVM MetaSchedule's winner, Sextant's schedules and the CPU libraries (oneDNN's matmul primitive
# and dnnl_sgemm, OpenBLAS, BLIS) on the same f32 GEMM (NN, or NT: the layout of MetaSchedule's
# run), timed in one process by one harness (one_harness/harness.c): no difference of runner, flush
# or calling convention between the tools' figures; 1 thread (OMP/OPENBLAS/BLIS_NUM_THREADS=1).
# MetaSchedule's kernel is rebuilt from the TensorIR its run kept (tvm_metaschedule.py's
# winner_tir) and compiled by this machine's llc; Sextant's from a database's best (tune compile)
# or from knob assignments (tune --knobs, then tune compile); the libraries through lib_shim.c.
#
# usage: [ROUNDS=3] experiments/peers/ms_vs_sextant.sh MS_RESULT.json MxNxK [DB_OR_KNOBS ...]
#   DB_OR_KNOBS: a Sextant database (its best record of the shape), or KNOB=V,... (one point)
# needs: experiments/peers/setup_venv.sh (TVM), build/tools/tune, llc-22 and a C compiler.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/experiments/peers/one_harness"
[ $# -ge 2 ] || { sed -n 2,13p "$0"; exit 2; }
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
layout=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("layout", "NN"))' "$result")
case $layout in NN) nt=0 ;; NT) nt=1 ;; *) echo "ms_vs_sextant: layout $layout not supported (NN or NT)"; exit 1 ;; esac
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1
work=$(mktemp -d /tmp/ms_vs_sextant.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$py" "$here/ms_kernel.py" "$result" --mcpu "$mcpu" -o "$work/ms.ll"
"$llc" -O3 -mcpu="$mcpu" -relocation-model=pic -filetype=obj "$work/ms.ll" -o "$work/ms.o"
cc -O2 -fPIC -shared -DSX_M="$m" -DSX_N="$n" "$here/ms_shim.c" "$work/ms.o" -o "$work/metaschedule.so"
cc -O2 "$here/harness.c" -o "$work/harness" -ldl
# The libraries, each behind the same interface; one that cannot be built is named, not dropped.
libs=()
lib() {  # NAME FLAGS...
  local name=$1
  shift
  if cc -O2 -fPIC -shared -DSX_M="$m" -DSX_N="$n" -DSX_K="$k" -DSX_NT="$nt" "$here/lib_shim.c" \
    -o "$work/$name.so" -Wl,--no-as-needed "$@" 2>"$work/$name.err"; then
    libs+=("$work/$name.so")
  else
    echo "$name: not measured ($(head -1 "$work/$name.err"))"
  fi
}
lib onednn_matmul -DSHIM_ONEDNN_MATMUL -ldnnl
lib dnnl_sgemm -DSHIM_DNNL_SGEMM -ldnnl
lib openblas -DSHIM_CBLAS -l:libopenblas.so.0
blis=$(ldconfig -p | sed -n 's/.*libblis.so.4 .*=> //p' | head -1)
for arch in skx haswell; do  # BLIS 0.9 picks `generic` on Zen 5; each family a contender
  if [ -z "$blis" ]; then echo "blis_$arch: not measured (no libblis.so.4: Debian libblis-dev)"; continue; fi
  cp "$blis" "$work/libblis_$arch.so"
  lib "blis_$arch" -DSHIM_BLIS -DBLIS_PATH="\"$work/libblis_$arch.so\"" -DBLIS_ARCH="\"$arch\"" -ldl
done

if [ "$nt" = 1 ]; then
  bt="${n}x${k}" maps=' indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]'
else
  bt="${k}x${n}" maps=
fi
cat >"$work/mm.mlir" <<MLIR
func.func @f(%a: tensor<${m}x${k}xf32>, %b: tensor<${bt}xf32>) -> tensor<${m}x${n}xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<${m}x${n}xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<${m}x${n}xf32>) -> tensor<${m}x${n}xf32>
  %r = linalg.matmul${maps} ins(%a, %b : tensor<${m}x${k}xf32>, tensor<${bt}xf32>) outs(%z : tensor<${m}x${n}xf32>) -> tensor<${m}x${n}xf32>
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
    "$tune" --op gemm --shape "$shape" --layout "$layout" --knobs "$s" --db "$db" | tail -1
  fi
  "$tune" compile "$work/mm.mlir" --db "$db" -o "$work/sextant$i.so" | grep -m1 'linalg.matmul' || true
  echo "sextant$i.so: $s"
  objects+=("$work/sextant$i.so")
done
objects+=("${libs[@]}")
echo "machine: $(lscpu | sed -n 's/^Model name: *//p') (LLVM $mcpu), 1 thread; $layout; MetaSchedule: $result"
"$work/harness" $([ "$nt" = 1 ] && echo --nt) "$m" "$n" "$k" "${objects[@]}"
