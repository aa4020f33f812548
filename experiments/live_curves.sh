#!/bin/sh
# Issue #11, live (measured, not replayed): how many measurements each strategy needs on a shape
# that is in no dataset. Every configuration tunes the shape on a fresh database for each seed;
# the records' order is the order of the measurements, so each run's best-so-far curve is read
# back from its database. The reference best is the best measured in any run of this experiment;
# the table (experiments/live_curves_table.py, from the JSON) gives per configuration the median
# over seeds of the best measured after 16 / 32 / all trials and of the trial at which a run first
# reached 90/95/99% of it. Runs interleave the configurations (seed-major). Measurements during
# tuning (--min-time 0.2 s each), no final re-measurement (--final-rounds 0); one machine, one session.
# Usage: [OP=conv2d] experiments/live_curves.sh [SHAPE] [LAYOUT] [TRIALS] [SEEDS] [CONFIGS] [TAG]
#   defaults: 16x4096x4096 NT 48 "1 2 3" "sa:none model:default glimpse:default evolutionary:default"
#   CONFIGS: STRATEGY:PRETRAINED pairs (PRETRAINED: default = the shipped model, none = cold start,
#   or a model file in the repository's root, named without a slash)
#   OP: the op (default gemm; conv2d takes a benchdnn descriptor as SHAPE and NHWC as LAYOUT)
# Output: experiments/results/live_curves_SHAPE_LAYOUT[_TAG].txt and .json
set -e
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
shape=${1:-16x4096x4096}
layout=${2:-NT}
trials=${3:-48}
seeds=${4:-1 2 3}
configs=${5:-sa:none model:default glimpse:default evolutionary:default}
tag=${6:-}
out=experiments/results/live_curves_${shape}_${layout}${tag:+_$tag}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Seed-major: every configuration runs once per seed before the next seed, so a machine that gets
# slower or faster during the experiment affects all configurations alike (until 2026-11-24 all
# runs of one configuration came first).
for s in $seeds; do
  for c in $configs; do
    st=${c%%:*} pre=${c#*:}
    echo "== $st/$pre seed $s: $(date -u +%T)" >&2
    build/tools/tune --op "${OP:-gemm}" --shape "$shape" --layout "$layout" --trials "$trials" --seed "$s" --strategy "$st" \
      --pretrained "$pre" --final-rounds 0 --quiet --report json --db "$tmp/$st-$pre-$s.db" > "$tmp/$st-$pre-$s.json"
  done
done
machine="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (cpu family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), $(nproc) vCPUs; $(date -u +%Y-%m-%d)"
/usr/bin/python3 - "$tmp" "$out.json" "$shape" "$layout" "$trials" "$seeds" "$configs" "$machine" <<'PY'
import json, os, sqlite3, sys
tmp, out, shape, layout, trials, seeds, configs, machine = sys.argv[1:]
runs, tops, reports, keys = {}, {}, {}, {}
for c in configs.split():
    st, pre = c.split(":")
    for s in seeds.split():
        db = sqlite3.connect(os.path.join(tmp, f"{st}-{pre}-{s}.db"))
        rows = list(db.execute("SELECT gflops, status, candidate FROM records ORDER BY id"))
        runs.setdefault(c, []).append([r[0] if r[1] == "ok" and r[0] else 0.0 for r in rows])
        # each trial's candidate (since 2026-11-26): the best after any number of trials can be
        # re-measured call by call afterwards (experiments/live_remeasure.py)
        keys.setdefault(c, []).append([r[2] for r in rows])
        ok = [r for r in rows if r[1] == "ok" and r[0]]
        # each run's best schedule (since 2026-11-24): which knobs the strategies end on
        tops.setdefault(c, []).append(max(ok)[2] if ok else None)
        # what the strategy says it did (since 2026-11-26: e.g. whether it dropped the transferred knowledge)
        try:
            reports.setdefault(c, []).append(json.load(open(os.path.join(tmp, f"{st}-{pre}-{s}.json"))).get("strategy_report", ""))
        except (OSError, ValueError):
            reports.setdefault(c, []).append("")
best = max(max(g) for rs in runs.values() for g in rs if g)
json.dump({"shape": shape, "layout": layout, "trials": int(trials), "seeds": [int(x) for x in seeds.split()],
           "machine": machine, "reference_best_gflops": best,
           "configs": {c: {"curves_gflops": rs, "best_schedules": tops[c], "strategy_reports": reports[c],
                           "candidates": keys[c]}
                       for c, rs in runs.items()}},
          open(out, "w"), indent=1)
PY
{
  echo "# command: ${OP:+OP=$OP }experiments/live_curves.sh $shape $layout $trials \"$seeds\" \"$configs\" $tag"
  echo "# machine: $machine"
  /usr/bin/python3 experiments/live_curves_table.py "$out.json"
} | tee "$out.txt"
