#!/bin/sh
# Issue #11's live check: tune a shape that is in no dataset, 64 trials, with the shipped
# pretrained cost model and without it (--pretrained none), fresh databases, for each seed; one
# table of the best GFLOP/s (confirmed in each run's final comparison: measured, this machine).
# Usage: experiments/live_pretrained.sh [SHAPE] [SEEDS] [STRATEGY]   (default 96x1536x1024, "1 2 3",
#        tune's default strategy); output experiments/results/live_pretrained[_STRATEGY].txt
set -e
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
shape=${1:-96x1536x1024}
seeds=${2:-1 2 3}
strategy=${3:-}
out=experiments/results/live_pretrained${strategy:+_$strategy}.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# command: experiments/live_pretrained.sh $shape \"$seeds\" $strategy"
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) vCPUs; $(date -u +%Y-%m-%d)"
  echo "# tune --shape $shape --trials 64 --seed S ${strategy:+--strategy $strategy }--db FRESH [--pretrained none]; best = the run's best, re-measured in its final comparison with the default and OpenBLAS"
  printf "%-6s %-12s %12s %12s %14s\n" seed pretrained "best GF/s" "default GF/s" "OpenBLAS GF/s"
  for s in $seeds; do
    for p in default none; do
      build/tools/tune --shape "$shape" --trials 64 --seed "$s" --pretrained "$p" ${strategy:+--strategy "$strategy"} \
        --quiet --report json \
        --db "$tmp/$p-$s.db" > "$tmp/$p-$s.json"
      /usr/bin/python3 - "$tmp/$p-$s.json" "$s" "$p" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
g = lambda k: (j.get(k) or {}).get("gflops") or 0
print("%-6s %-12s %12.1f %12.1f %14.1f  %s" % (sys.argv[2], sys.argv[3], g("best"), g("default"), g("reference"),
                                             (j.get("reference") or {}).get("name", "")))
PY
    done
  done
} | tee "$out"
