#!/bin/sh
# Issue #5's experiment in one command: every strategy on the committed CPU replay datasets,
# 10 seeds, then the tuning-curve plot. Results: experiments/results/replay_strategies.{txt,json,csv,png}.
# Usage: experiments/replay_strategies.sh [extra replay_strategies options, e.g. --seeds 3]
set -e
cd "$(dirname "$0")/.."
scripts/setup.sh --with-plots >/dev/null
scripts/build.sh >/dev/null
out=experiments/results
mkdir -p "$out"
# Extra options make a variant: its results go to files of their own (replay_strategies_variant.*),
# never over the committed main results.
name=replay_strategies
[ $# -gt 0 ] && name=replay_strategies_variant
{
  echo "# command: experiments/replay_strategies.sh $*"
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) vCPUs; $(date -u +%Y-%m-%d)"
  build/experiments/replay_strategies datasets/cpu/replay_*.jsonl.gz --seeds 10 --budget 256 --batch 16 \
    --curves "$out/$name.csv" --json "$out/$name.json" "$@"
} | tee "$out/$name.txt"
/usr/bin/python3 experiments/plot_replay.py "$out/$name.csv" "$out/$name.png"
echo "plot: $out/$name.png"
