#!/usr/bin/env bash
# Issue #32's scheduler goal: does the gradient-based task scheduler reach round-robin's final
# estimated latency (sum of weight x best latency) with at most 60% of its trials? Both from fresh
# databases, the same budget, seeds and strategy, on one zoo model; the estimate after every round
# is read from tune model's progress lines.
#
#   experiments/models/scheduler_ab.sh [--model resnet50] [--per-task 32] [--seeds "1 2"] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=resnet50 per_task=32 seeds="1" out=""
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --per-task) per_task=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "scheduler_ab: unknown argument $1"; exit 2 ;;
  esac
done
out=${out:-$root/experiments/results/scheduler_ab_${model}.txt}
zoo=${SEXTANT_ZOO:-/tmp/sextant-zoo}
[ -f "$zoo/$model.onnx" ] || /usr/bin/python3 "$root/experiments/models/make_zoo.py" "$zoo" "$model" 2>/dev/null
work=$(mktemp -d /tmp/sextant-sched.XXXXXX)
for seed in $seeds; do
  for s in gradient round-robin; do
    echo "== $model seed $seed scheduler $s" >&2
    "$root/build/tools/tune" model "$zoo/$model.onnx" --db "$work/$s-$seed.db" -o "$work/$s-$seed.so" \
      --per-task "$per_task" --scheduler "$s" --seed "$seed" --report json --model-min-time 2 \
      > "$work/$s-$seed.json" 2> "$work/$s-$seed.log"
  done
done
python3 - "$work" "$model" "$seeds" "$per_task" "$out" "$(lscpu | sed -n 's/^Model name: *//p')" <<'PY'
import json, re, sys, time
work, model, seeds, per_task, out, cpu = sys.argv[1:7]
j0 = json.load(open(f"{work}/gradient-{seeds.split()[0]}.json"))
lines = [f"# experiments/models/scheduler_ab.sh --model {model} --per-task {per_task} --seeds \"{seeds}\"",
         f"# machine: {cpu} (LLVM {j0['device']}, machine {j0['machine']}); {time.strftime('%Y-%m-%d')}; 1 thread; "
         "estimate = sum of weight x best latency (ms)",
         f"{'seed':>4} {'budget':>6} {'rr final':>9} {'gradient final':>14} {'gradient reaches rr final at':>28} "
         f"{'share':>6} {'measured rr':>11} {'measured gradient':>17}"]
for seed in seeds.split():
    curves, final = {}, {}
    for s in ("gradient", "round-robin"):
        c = []
        for l in open(f"{work}/{s}-{seed}.log"):
            m = re.match(r"\[(\d+)/(\d+)\] round .*\| estimate ([0-9.]+) ms", l)
            if m:
                c.append((int(m.group(1)), float(m.group(3))))
        curves[s] = c
        final[s] = json.load(open(f"{work}/{s}-{seed}.json"))
    budget = final["gradient"]["budget"]
    rr = curves["round-robin"][-1][1]
    reach = next((t for t, e in curves["gradient"] if e <= rr), None)
    lines.append(f"{seed:>4} {budget:>6} {rr:>9.2f} {curves['gradient'][-1][1]:>14.2f} "
                 f"{(str(reach) + ' trials') if reach else 'not within the budget':>28} "
                 f"{(f'{100 * reach / budget:.0f}%') if reach else '-':>6} "
                 f"{final['round-robin']['measured_tuned_s'] * 1e3:>11.2f} {final['gradient']['measured_tuned_s'] * 1e3:>17.2f}")
    lines.append("#   estimate after warm-up and every 10% of the budget (gradient / round-robin): " + ", ".join(
        f"{int(budget * k / 10)}: " + "/".join(
            f"{next((e for t, e in reversed(curves[s]) if t <= budget * k / 10), float('nan')):.2f}"
            for s in ("gradient", "round-robin")) for k in range(2, 11, 2)))
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print(text, end="")
PY
