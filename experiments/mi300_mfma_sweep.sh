#!/bin/sh
# Issue #15's sweep without an AMD GPU (none can be reached): 24 random candidates of the default
# gfx942 space for each of f16 NN 4096^3, bf16 NT 1024x4096x4096 and f16 TN 128x11008x4096 (Llama
# shapes), compiled to HSACO bundles (tune --measure bundle: compile + pre-flight, nothing run),
# then each code object disassembled and analysed statically (experiments/mi300_static.py): the
# planned MFMA instruction present and no FMA, registers/AGPRs/LDS/occupancy from the metadata, and
# an ESTIMATE of the K loop's matrix-core share from instruction counts (labelled; not a measurement).
# Results: experiments/results/mi300_mfma_sweep.{txt,json}. Usage: experiments/mi300_mfma_sweep.sh [--trials N]
set -e
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/build.sh >/dev/null
trials=24
if [ "${1:-}" = "--trials" ]; then trials=$2; fi
work=experiments/out/mi300_sweep
rm -rf "$work"
mkdir -p "$work" experiments/results
bundles=""
for spec in "f16 NN 4096x4096x4096" "bf16 NT 1024x4096x4096" "f16 TN 128x11008x4096"; do
  set -- $spec
  name="$1_$2_$3"
  build/tools/tune --target mi300 --dtype "$1" --layout "$2" --shape "$3" --strategy random --seed 1 \
    --trials "$trials" --measure bundle --out "$work/$name" --db "$work/sweep.db" --quiet
  bundles="$bundles $work/$name"
done
status=$(sqlite3 "$work/sweep.db" "select status || ' ' || count(*) from records group by status" | tr '\n' ';')
{
  echo "# command: experiments/mi300_mfma_sweep.sh --trials $trials  (tune --target mi300 --strategy random --seed 1 --measure bundle; experiments/mi300_static.py)"
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (compile only; no AMD GPU); $(date -u +%Y-%m-%d); LLVM $(llvm-config-22 --version)"
  echo "# record statuses: $status"
  /usr/bin/python3 experiments/mi300_static.py $bundles --json experiments/results/mi300_mfma_sweep.json
} | tee experiments/results/mi300_mfma_sweep.txt
