#!/bin/sh
# Issue #34, item 4's longer budgets: TVM MetaSchedule with 1,000 trials (its best after 64, 100,
# 256 and 1,000 measurements from one run's curve: MetaSchedule's search does not depend on the
# budget left, 16 candidates per round either way), set against Sextant's runs of a committed
# compare.sh output of the same shape and layout on the same machine kind (PEERS_JSON): how many
# of Sextant's measurements reached MetaSchedule's best after N. Two harnesses: MetaSchedule's
# figures are its runner's (cache flush) and its winner re-timed by TVM; Sextant's are its own.
# The runs are hours apart, not interleaved: say so beside any figure drawn from here.
# Usage: experiments/peers/ms_long.sh SHAPE LAYOUT TRIALS SEED PEERS_JSON [TAG]
#   e.g. experiments/peers/ms_long.sh 1024x1024x1024 NN 1000 1 experiments/results/peers_1024x1024x1024_NN_t64_zen5.json zen5
# Output: experiments/results/ms_long_SHAPE_LAYOUT_tTRIALS_sSEED[_TAG].{txt,json}
set -e
cd "$(dirname "$0")/../.."
[ $# -ge 5 ] || { echo "usage: experiments/peers/ms_long.sh SHAPE LAYOUT TRIALS SEED PEERS_JSON [TAG]" >&2; exit 2; }
shape=$1 layout=$2 trials=$3 seed=$4 peers=$5 tag=${6:-}
[ -f "$peers" ] || { echo "ms_long: $peers: no such compare.sh output" >&2; exit 2; }
case $shape in *ic[0-9]*) op=conv2d ;; *) op=gemm ;; esac
out=experiments/results/ms_long_${shape}_${layout}_t${trials}_s${seed}${tag:+_$tag}
scripts/build.sh >/dev/null
experiments/peers/setup_venv.sh | tee /dev/stderr | grep -q "peers: apache-tvm" ||
  { echo "ms_long: apache-tvm is not installed here (see above): nothing to run" >&2; exit 3; }
mcpu=$(build/tools/tune hw show cpu | sed -n 's/^  LLVM CPU *//p')
echo "== metaschedule $shape $layout, $trials trials, seed $seed: $(date -u +%T)" >&2
experiments/peers/.venv/bin/python experiments/peers/tvm_metaschedule.py --op $op --shape "$shape" --layout "$layout" \
  --tune build/tools/tune --trials "$trials" --seed "$seed" --mcpu "$mcpu" --out "$out.json"
machine="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (LLVM $mcpu), $(nproc) vCPUs, 1 thread; $(date -u +%Y-%m-%d)"
/usr/bin/python3 - "$out.json" "$peers" "$machine" "experiments/peers/ms_long.sh $*" > "$out.txt" <<'EOF'
import json, statistics, sys
ms, peers, machine, command = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
curve = [c["best"] for c in ms["curve"]]
print(f"# command: {command}\n# machine: {machine}")
print(f"# {ms['shape']} {ms['layout']} f32: TVM MetaSchedule {ms['tvm']}, {len(curve)} measurements, seed {ms['seed']}, "
      f"search wall time {ms['tune_wall_s']:.0f} s; its winner re-timed by TVM {ms['winner_retimed_gflops']:.1f} GFLOP/s "
      f"(max abs error {ms['winner_max_abs_err']:.2g} against numpy)")
print(f"# Sextant's runs: {sys.argv[2]} ({peers['machine']}; {peers['trials']} measurements per run, "
      f"seeds {' '.join(peers['seeds'])}): another hour, the same machine kind, Sextant's own harness\n")
marks = [n for n in (16, 32, 64, 100, 256, 1000) if n <= len(curve)] + ([len(curve)] if len(curve) not in (16, 32, 64, 100, 256, 1000) else [])
print("Each cell: the measurements a run needed to reach MetaSchedule's figure, median over the runs that did (how many did).\n")
print("| MetaSchedule's best after | GFLOP/s | " + " | ".join(k for k in peers["curves"] if "MetaSchedule" not in k) + " |")
print("|---|---|" + "---|" * sum(1 for k in peers["curves"] if "MetaSchedule" not in k))
for n in marks:
    target, cells = curve[n - 1], []
    for label, runs in peers["curves"].items():
        if "MetaSchedule" in label:
            continue
        hits = []
        for run in runs:
            best, at = 0.0, None
            for i, g in enumerate(run):
                best = max(best, g)
                if best >= target:
                    at = i + 1
                    break
            if at:
                hits.append(at)
        cells.append(f"{statistics.median(hits):g} ({len(hits)}/{len(runs)})" if hits else f"> {peers['trials']} (0/{len(runs)})")
    print(f"| {n} | {target:.1f} | " + " | ".join(cells) + " |")
EOF
cat "$out.txt"
