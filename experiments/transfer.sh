#!/bin/sh
# Issue #11's experiment in one command: leave-one-workload-out over every committed CPU replay
# dataset (AMD Zen 5 and Intel Xeon), strategies with and without a pretrained cost model, 10
# seeds, budget 256, then the tuning-curve plot. Two parts:
#   - zen5: the Zen 5 held-outs, every strategy, cold / pretrained (trained on every other workload
#     of both CPUs) / cross (trained on the Intel datasets only; sa, model, evolutionary);
#   - intel: the Intel held-outs, every strategy but random, cold / pretrained / cross (trained on
#     the Zen 5 datasets only; sa, model, evolutionary).
#   - zen4: the Zen 4 held-outs (this VM kind's datasets: the LLM decode projections, NT, and one
#     ResNet shape), every strategy but random, cold / pretrained (trained on every other dataset of
#     all three CPUs) / cross (trained on the Zen 5 and Intel datasets only; sa, model, evolutionary).
#     The zen5 and intel parts do not read the Zen 4 datasets: they predate them, and their cross
#     variant stays "the other vendor's CPU only".
# (Until 2026-11-24 the Intel part ran sa, model, evolutionary only, and two parts "glimpse" and
# "glimpse_intel" ran glimpse beside sa; their last outputs are in git history at commit 61d0f24.)
# Results: experiments/results/transfer_{zen5,intel,zen4}.{txt,json,csv.gz} and transfer.png.
#   - zen3: the Zen 3 held-outs (AVX2 only, issue #34: the first CPU without AVX-512), sa, model and
#     glimpse, cold / pretrained (trained on every other dataset, the other Zen 3 ones included) /
#     cross (trained on the AVX-512 machines' datasets only: the shipped model before 2026-12-04);
#     not in the plot (its own summary: experiments/transfer_summary.py on its output).
#   - conv: the convolution held-outs (issue #31), below.
# Usage: experiments/transfer.sh [--part zen5|intel|zen4|zen3|conv] [--model-seed N] [extra transfer options, e.g. --seeds 3]
set -e
cd "$(dirname "$0")/.."
scripts/setup.sh --with-plots >/dev/null
scripts/build.sh >/dev/null
out=experiments/results
mkdir -p "$out"
part=all
if [ "${1:-}" = "--part" ]; then part=$2; shift 2; fi
# --model-seed N (first or after --part): the pretrained models' training seed; outputs get a
# _seedN suffix. A replay is deterministic given its models, so differences between runs are the
# models': compare strategies over two or more seeds (experiments/transfer_summary.py).
suffix=
if [ "${1:-}" = "--model-seed" ]; then suffix=_seed$2; fi  # the option itself goes on to transfer
# replay_[0-9]*: the GEMM datasets (zen5/replay_conv_* are convolutions, issue #31)
base="datasets/cpu/zen5/replay_[0-9]*.jsonl.gz datasets/cpu/replay_*.jsonl.gz"
run() {  # NAME DATASETS HOLD-OUT STRATEGIES VARIANTS [extra...]
  name=$1 data=$2 hold=$3 strategies=$4 variants=$5
  shift 5
  [ "$part" = all ] || [ "$part" = "$name" ] || return 0
  {
    echo "# command: experiments/transfer.sh $*  (part $name: build/experiments/transfer $data --hold-out '$hold' --strategies $strategies --variants $variants --cross-strategies sa,model,evolutionary --seeds 10 --budget 256 --batch 16 --threads 2 $*)"
    echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (cpu family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), $(nproc) vCPUs; $(date -u +%Y-%m-%d)"
    # shellcheck disable=SC2086 # $data: globs to expand
    build/experiments/transfer $data --hold-out "$hold" \
      --strategies "$strategies" --variants "$variants" --cross-strategies sa,model,evolutionary --seeds 10 \
      --budget 256 --batch 16 --threads 2 --curves "$out/transfer_$name$suffix.csv" --json "$out/transfer_$name$suffix.json" "$@"
  } | tee "$out/transfer_$name$suffix.txt"
  gzip -f "$out/transfer_$name$suffix.csv"  # the curves: several MB as text
}
run zen5 "$base" "@ znver5" random,sa,model,evolutionary,chameleon,glimpse cold,pretrained,cross "$@"
run intel "$base" "@ emeraldrapids" sa,model,evolutionary,chameleon,glimpse cold,pretrained,cross "$@"
run zen4 "$base datasets/cpu/zen4/replay_*.jsonl.gz" "@ znver4" sa,model,evolutionary,chameleon,glimpse \
  cold,pretrained,cross "$@"
run zen3 "$base datasets/cpu/zen4/replay_*.jsonl.gz datasets/cpu/zen3/replay_*.jsonl.gz" "@ znver3" sa,model,glimpse \
  cold,pretrained,cross "$@"
# conv (issue #31): the four Zen 5 convolution datasets held out one at a time, the model trained on
# every other dataset (the GEMMs of all three CPUs and the other convolutions), the default
# strategy (glimpse) and model-based search against cold annealing. Not in the plot below (its
# curves are the GEMM parts'); its own summary: experiments/transfer_summary.py on its output.
run conv "$base datasets/cpu/zen4/replay_*.jsonl.gz datasets/cpu/zen5/replay_conv_*.jsonl.gz" "conv2d:" \
  sa,model,glimpse cold,pretrained "$@"
[ "$part" = all ] || [ "$part" = zen5 ] || [ "$part" = intel ] || [ "$part" = zen4 ] || exit 0
# The plot and the summary need the zen5 and intel parts, and take the zen4 part when it is there
# (a part run alone plots with the others' last outputs).
[ -f "$out/transfer_zen5$suffix.csv.gz" ] && [ -f "$out/transfer_intel$suffix.csv.gz" ] || exit 0
{
  zcat "$out/transfer_zen5$suffix.csv.gz"
  zcat "$out/transfer_intel$suffix.csv.gz" | tail -n +2
  [ ! -f "$out/transfer_zen4$suffix.csv.gz" ] || zcat "$out/transfer_zen4$suffix.csv.gz" | tail -n +2
} > "$out/transfer.csv.tmp"
/usr/bin/python3 experiments/plot_transfer.py "$out/transfer.csv.tmp" "$out/transfer$suffix.png"
rm -f "$out/transfer.csv.tmp"
echo "plot: $out/transfer$suffix.png"
parts="$out/transfer_zen5$suffix.txt $out/transfer_intel$suffix.txt"
[ ! -f "$out/transfer_zen4$suffix.txt" ] || parts="$parts $out/transfer_zen4$suffix.txt"
# shellcheck disable=SC2086 # $parts: a list of files
experiments/transfer_summary.py $parts -- "$(echo $parts | tr ' ' '+')"
