#!/usr/bin/env bash
# Issue #32's end-to-end benchmark: every model of the zoo (experiments/models/make_zoo.py: ResNet-50,
# MobileNetV2, a BERT-base encoder layer, a TinyLlama-sized decoder block at prefill 128 and decode 1)
# tuned and compiled by `tune model`, against PyTorch eager (Debian's python3-torch), ONNX Runtime and
# IREE (PyPI, experiments/models/setup_venv.sh; a peer that is not installed is skipped and named),
# measured in the same run on the same threads; every output checked against PyTorch's.
#
#   experiments/models_vs_peers.sh [--threads T] [--per-task N] [--seed S] [--out PREFIX] [MODEL ...]
#
# Writes PREFIX.txt (table), PREFIX.json (every figure) and PREFIX.png (plot, if matplotlib).
# Default PREFIX: experiments/results/models_vs_peers_t<T>. Databases in /tmp (fresh each run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
threads=1 per_task=32 seed=1 out="" models=()
args="$*"  # the command line, for the table's header
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --per-task) per_task=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;  # tune model's --seed (the search's; several seeds for a headline)
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(resnet50 mobilenet_v2 bert_layer llama_prefill llama_decode)
out=${out:-$root/experiments/results/models_vs_peers_t$threads}
tune=$root/build/tools/tune
[ -x "$tune" ] || { echo "models_vs_peers: build first (scripts/build.sh)"; exit 1; }
zoo=${SEXTANT_ZOO:-/tmp/sextant-zoo}
work=$(mktemp -d /tmp/sextant-models.XXXXXX)
venv=$root/experiments/models/.venv
/usr/bin/python3 -c 'import torch, torchvision, onnx' 2>/dev/null || "$root/scripts/setup.sh" --with-models >&2
/usr/bin/python3 -c 'import torch, torchvision, onnx' 2>/dev/null ||
  { echo "models_vs_peers: needs Debian's python3-torch python3-torchvision python3-onnx (scripts/setup.sh --with-models)"; exit 1; }
[ -x "$venv/bin/python" ] || "$root/experiments/models/setup_venv.sh"
jsonl=$work/results.jsonl
: > "$jsonl"
for m in "${models[@]}"; do
  [ -f "$zoo/$m.onnx" ] || /usr/bin/python3 "$root/experiments/models/make_zoo.py" "$zoo" "$m" 2>/dev/null
  echo "== $m: tune model (budget $per_task trials per task, $threads thread(s))" >&2
  start=$(date +%s)
  "$tune" model "$zoo/$m.onnx" --db "$work/$m.db" -o "$work/$m.so" --per-task "$per_task" --threads "$threads" --seed "$seed" \
    --check "$zoo/$m" --report json > "$work/$m.sextant.json"
  python3 - "$work/$m.sextant.json" "$m" "$(( $(date +%s) - start ))" >> "$jsonl" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(json.dumps({"peer": "sextant", "model": sys.argv[2], "sextant": j, "wall_s": int(sys.argv[3])}))
PY
  echo "== $m: peers" >&2
  /usr/bin/python3 "$root/experiments/models/torch_eager.py" "$zoo" "$m" --threads "$threads" 2>/dev/null >> "$jsonl" ||
    echo "models_vs_peers: PyTorch eager failed on $m" >&2
  case $m in resnet50|mobilenet_v2)
    /usr/bin/python3 "$root/experiments/models/torch_eager.py" "$zoo" "$m" --threads "$threads" --channels-last \
      2>/dev/null >> "$jsonl" || true ;;
  esac
  "$venv/bin/python" "$root/experiments/models/run_peer.py" ort "$zoo" "$m" --threads "$threads" >> "$jsonl" 2>/dev/null ||
    echo "models_vs_peers: ONNX Runtime not run on $m" >&2
  "$venv/bin/python" "$root/experiments/models/run_peer.py" iree "$zoo" "$m" --threads "$threads" \
    --work "$work/iree" >> "$jsonl" 2>/dev/null || echo "models_vs_peers: IREE not run on $m" >&2
done
py=python3
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && py=/usr/bin/python3  # the plot
cp "$jsonl" "$out.jsonl"
$py "$root/experiments/models/summary.py" "$jsonl" "$out" "$args" "$(lscpu | sed -n 's/^Model name: *//p')"
