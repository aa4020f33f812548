#!/bin/sh
# Issue #11's experiment in one command: leave-one-workload-out over every committed CPU replay
# dataset (Intel Xeon and AMD Zen 5), every strategy with and without a pretrained cost model,
# 10 seeds, budget 256, then the tuning-curve plot. Results: experiments/results/transfer.{txt,json,csv,png}.
# Usage: experiments/transfer.sh [extra transfer options, e.g. --seeds 3 --hold-out znver5]
set -e
cd "$(dirname "$0")/.."
scripts/setup.sh --with-plots >/dev/null
scripts/build.sh >/dev/null
out=experiments/results
mkdir -p "$out"
cmd="build/experiments/transfer datasets/cpu/zen5/replay_*.jsonl.gz datasets/cpu/replay_*.jsonl.gz --seeds 10 --budget 256 --batch 16 --threads 2 $*"
{
  echo "# command: experiments/transfer.sh $*  ($cmd)"
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) vCPUs; $(date -u +%Y-%m-%d)"
  # shellcheck disable=SC2086
  build/experiments/transfer datasets/cpu/zen5/replay_*.jsonl.gz datasets/cpu/replay_*.jsonl.gz --seeds 10 \
    --budget 256 --batch 16 --threads 2 --curves "$out/transfer.csv" --json "$out/transfer.json" "$@"
} | tee "$out/transfer.txt"
/usr/bin/python3 experiments/plot_transfer.py "$out/transfer.csv" "$out/transfer.png"
echo "plot: $out/transfer.png"
