#!/usr/bin/env bash
# Where a network's time goes, Sextant beside ONNX Runtime (issue #32): `tune model --profile`
# (tuned in a fresh database, then compiled again with a clock on each op) and ONNX Runtime's own
# profiler (experiments/models/ort_profile.py), both per kind of op (conv, conv 1x1 / matmul,
# depthwise conv, pad, ...) and per op, the slowest first, on the same machine in one run.
#
#   experiments/models/profile_vs_ort.sh [--threads T] [--per-task N] [--seed S] [--out PREFIX] MODEL
#
# MODEL: a zoo model (experiments/models/make_zoo.py: resnet50, mobilenet_v2, ...). Writes
# PREFIX.txt (both tables, each tuned op's time in the network beside its task's, the command line
# and the machine) and PREFIX.sextant.json /
# PREFIX.ort.json (every op). Default PREFIX: experiments/results/profile_MODEL_t<T>.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
threads=1 per_task=32 seed=1 out="" model=""
args="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --per-task) per_task=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) model=$1; shift ;;
  esac
done
[ -n "$model" ] || { echo "profile_vs_ort: which model? (e.g. mobilenet_v2)"; exit 2; }
out=${out:-$root/experiments/results/profile_${model}_t$threads}
tune=$root/build/tools/tune
[ -x "$tune" ] || { echo "profile_vs_ort: build first (scripts/build.sh)"; exit 1; }
zoo=${SEXTANT_ZOO:-/tmp/sextant-zoo}
venv=$root/experiments/models/.venv
[ -f "$zoo/$model.onnx" ] || /usr/bin/python3 "$root/experiments/models/make_zoo.py" "$zoo" "$model"
[ -x "$venv/bin/python" ] || "$root/experiments/models/setup_venv.sh"
work=$(mktemp -d /tmp/sextant-profile.XXXXXX)
{
  echo "# experiments/models/profile_vs_ort.sh $args"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p') (LLVM $("$tune" hw show cpu 2>/dev/null | sed -n 's/^ *LLVM CPU *//p' | head -1)), $(date -u +%Y-%m-%d), commit $(git -C "$root" rev-parse --short HEAD)"
  echo "# Sextant: tune model --per-task $per_task --seed $seed --threads $threads (fresh database), then the tuned network compiled"
  echo "# again with a clock on each op (tune profile); ONNX Runtime: its profiler (ort_profile.py), kernel times per node."
  echo "# Both profiled runs are slower than unprofiled ones by their clocks; compare kinds and ops, not the totals."
  echo
  echo "## Sextant"
  "$tune" model "$zoo/$model.onnx" --db "$work/$model.db" -o "$work/$model.so" --per-task "$per_task" --seed "$seed" \
    --threads "$threads" --profile -q | sed -n '/^network /,$p'
  "$tune" profile "$work/$model.profiled.so" --report json > "$out.sextant.json"
  echo
  echo "## Sextant: the tuned ops in the network against their tasks (experiments/models/network_vs_tasks.py)"
  /usr/bin/python3 "$root/experiments/models/network_vs_tasks.py" "$out.sextant.json" "$work/$model.db"
  echo
  echo "## ONNX Runtime"
  "$venv/bin/python" "$root/experiments/models/ort_profile.py" "$zoo" "$model" --threads "$threads" --json "$out.ort.json"
} > "$out.txt"
rm -rf "$work"
echo "wrote $out.txt, $out.sextant.json, $out.ort.json"
