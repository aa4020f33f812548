#!/bin/sh
# Issue #34 items 3-4, live, one machine, same budgets: Sextant's default (glimpse + the shipped
# pretrained model), cold annealing (sa, no pretrained model), Optuna TPE over Sextant's knob space
# (experiments/peers/optuna_tpe.py, each trial through `tune --knobs`: same compiler, harness and
# database) and TVM MetaSchedule (experiments/peers/tvm_metaschedule.py: its own compiler and
# runner, LLVM with this CPU's -mcpu, one core) on one f32 GEMM, TRIALS measurements each, seed-major.
# Then the winners side by side: Sextant's, annealing's and Optuna's re-measured interleaved through
# `tune --knobs` (ROUNDS rounds, one fresh database), with the fastest library measured by tune's own
# final comparison; MetaSchedule's winner is re-timed by TVM with a cache flush (another harness:
# labelled so). Peers that cannot be installed are skipped with one line (setup_venv.sh).
# Since 2026-11-29 also Sextant's default strategy without the pretrained model ("cold"), and the
# best so far against each search's wall time (a second plot and a table at fixed times).
# A convolution (2026-11-29): SHAPE a benchdnn descriptor (mb1ic64ih56oc64kh3ph1) is tuned as
# `--op conv2d` by every method (LAYOUT NHWC: NHWC input and output, HWCF filter; MetaSchedule's
# conv2d_nhwc with an HWIO filter), the libraries' side of the comparison is oneDNN's convolution.
# Usage: experiments/peers/compare.sh [SHAPE] [LAYOUT] [TRIALS] [SEEDS] [TAG]
#   defaults: 1024x1024x1024 NN 64 "1 2 3" (no tag); a conv descriptor's default layout is NHWC
# Output: experiments/results/peers_SHAPE_LAYOUT_TTRIALS[_TAG].{txt,json} (+ .png with matplotlib)
set -e
cd "$(dirname "$0")/../.."
shape=${1:-1024x1024x1024}
case $shape in
  *ic[0-9]*) op=conv2d; layout=${2:-NHWC} ;;
  *) op=gemm; layout=${2:-NN} ;;
esac
trials=${3:-64}
seeds=${4:-1 2 3}
tag=${5:-}
rounds=${ROUNDS:-3}
# Sextant's runs, NAME:STRATEGY:PRETRAINED: the default, the same strategy without the pretrained
# model, and cold annealing (CONFIGS="glimpse:glimpse:default sa:sa:none" for the earlier outputs).
configs=${CONFIGS:-glimpse:glimpse:default cold:glimpse:none sa:sa:none}
tune=build/tools/tune
venv=experiments/peers/.venv
out=experiments/results/peers_${shape}_${layout}_t${trials}${tag:+_$tag}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scripts/build.sh >/dev/null
experiments/peers/setup_venv.sh | tee "$tmp/peers.txt" >&2
py=$venv/bin/python
mcpu=$($tune hw show cpu | sed -n 's/^  LLVM CPU *//p')
stamp() { date -u +%s.%N; }
for s in $seeds; do
  for cfg in $configs; do
    name=${cfg%%:*} rest=${cfg#*:}
    st=${rest%%:*} pre=${rest#*:}
    echo "== sextant $st/$pre seed $s: $(date -u +%T)" >&2
    t0=$(stamp)
    $tune --op $op --shape "$shape" --layout "$layout" --trials "$trials" --seed "$s" --strategy "$st" --pretrained "$pre" \
      --final-rounds 0 -q --report json --db "$tmp/$name-$s.db" > "$tmp/$name-$s.json"
    echo "$t0 $(stamp)" > "$tmp/$name-$s.wall"
  done
  if grep -q "peers: optuna" "$tmp/peers.txt"; then
    echo "== optuna seed $s: $(date -u +%T)" >&2
    $py experiments/peers/optuna_tpe.py --tune $tune --op $op --shape "$shape" --layout "$layout" --measurements "$trials" \
      --seed "$s" --db "$tmp/optuna-$s.db" --out "$tmp/optuna-$s.json"
  fi
  if grep -q "peers: apache-tvm" "$tmp/peers.txt"; then
    echo "== metaschedule seed $s: $(date -u +%T)" >&2
    $py experiments/peers/tvm_metaschedule.py --op $op --shape "$shape" --layout "$layout" --trials "$trials" --seed "$s" \
      --mcpu "$mcpu" --tune "$tune" --out "$tmp/ms-$s.json" 2> "$tmp/ms-$s.log" || echo "metaschedule seed $s failed: $(tail -1 "$tmp/ms-$s.log")" >&2
  fi
done
# Winners side by side, interleaved, one database; the libraries from tune's own final comparison.
echo "== side by side: $(date -u +%T)" >&2
/usr/bin/python3 experiments/peers/winners.py "$tmp" "$seeds" > "$tmp/winners.txt"
for r in $(seq 1 $rounds); do
  while read -r label knobs; do
    $tune --op $op --shape "$shape" --layout "$layout" --knobs "$knobs" -q --report json --db "$tmp/side.db" > "$tmp/side-$label-$r.json" || true
  done < "$tmp/winners.txt"
done
$tune --op $op --shape "$shape" --layout "$layout" --trials 1 --final-rounds $rounds -q --report json --db "$tmp/lib.db" > "$tmp/lib.json"
machine="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (LLVM $mcpu), $(nproc) vCPUs, 1 thread; $(date -u +%Y-%m-%d)"
/usr/bin/python3 experiments/peers/summary.py "$tmp" "$seeds" "$shape" "$layout" "$trials" "$machine" \
  "experiments/peers/compare.sh $shape $layout $trials \"$seeds\" $tag" "$out"
cat "$out.txt"
