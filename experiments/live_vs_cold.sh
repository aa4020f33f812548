#!/bin/sh
# Issue #34 item 2, live: the default strategy (glimpse with the shipped pretrained model) against
# cold annealing (sa, no pretrained model) on shapes in no dataset, one command. For each shape,
# experiments/live_curves.sh runs every configuration on a fresh database per seed (seed-major, 48
# trials, measurements during tuning); experiments/live_vs_cold_summary.py then prints one table:
# per shape, the median over seeds of the best measured after 16 / 32 / 48 trials and the trials to
# 95% of the best any run found, and whether the default is at least annealing at each mark;
# experiments/live_remeasure.py then re-measures each run's best after 16 / 32 / 48 trials call by
# call against oneDNN (the phase-robust verdict on a VM whose speed moves).
# Usage: experiments/live_vs_cold.sh [TRIALS] [SEEDS] [CONFIGS] [TAG]
#   defaults: 48 "1 2 3" "sa:none glimpse:default" live34
# Output: experiments/results/live_curves_SHAPE_LAYOUT_TAG.{txt,json} per shape and
#         experiments/results/live_vs_cold_TAG.txt (the summary, with this command line).
set -e
cd "$(dirname "$0")/.."
trials=${1:-48}
seeds=${2:-1 2 3}
configs=${3:-sa:none glimpse:default}
tag=${4:-live34}
# Shapes in no dataset (datasets/cpu, the transfer experiment's held-outs): square, transformer
# (BERT-base FFN at 384 tokens, both layouts), skinny, conv-shaped (a 28x28 3x3 128->256 layer as
# its implicit GEMM), an LLM projection at 48 tokens.
shapes="768x768x768:NN 384x3072x768:NT 384x768x3072:NN 32x4096x4096:NN 784x256x1152:NN 48x11008x4096:NT"
files=""
for sl in $shapes; do
  shape=${sl%%:*} layout=${sl#*:}
  echo "== $shape $layout: $(date -u +%T)" >&2
  experiments/live_curves.sh "$shape" "$layout" "$trials" "$seeds" "$configs" "$tag" >/dev/null
  files="$files experiments/results/live_curves_${shape}_${layout}_${tag}.json"
done
{
  echo "# command: experiments/live_vs_cold.sh $trials \"$seeds\" \"$configs\" $tag"
  /usr/bin/python3 experiments/live_vs_cold_summary.py $files
  # Since 2026-11-26: what each run had found after 16 / 32 / 48 trials (its best by its own
  # measurements) re-measured call by call against oneDNN, so that the VM's phases cancel out.
  echo
  echo "## Re-measured call by call against oneDNN (experiments/live_remeasure.py $files)"
  /usr/bin/python3 experiments/live_remeasure.py --json-out "experiments/results/live_remeasure_${tag}.json" $files
} > "experiments/results/live_vs_cold_${tag}.txt"
cat "experiments/results/live_vs_cold_${tag}.txt"
