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
build/experiments/replay_strategies datasets/cpu/replay_*.jsonl.gz --seeds 10 --budget 256 --batch 16 \
  --curves "$out/replay_strategies.csv" --json "$out/replay_strategies.json" "$@" | tee "$out/replay_strategies.txt"
/usr/bin/python3 experiments/plot_replay.py "$out/replay_strategies.csv" "$out/replay_strategies.png"
echo "plot: $out/replay_strategies.png"
