#!/usr/bin/env bash
# Does the GPU search find a new shape's best schedule in a few proposals, from another machine's
# measurements alone? Three steps, the middle one on a GPU machine:
#
#   experiments/gpu_search_heldout.sh make OUT [--train F.jsonl.gz] [--shapes D:MxNxK,...] [--seeds N] [--trials N]
#   experiments/gpu_search_heldout.sh measure OUT.tar.gz RESULTS [--space-budget S] [--search-budget S]   (GPU machine)
#   experiments/gpu_search_heldout.sh report OUT RESULTS...
#
# make (here, where MLIR is): for each shape (default bf16:4096x4096x14336 and
# f16:8192x28672x8192, in no dataset) the whole wgmma space plus the untuned default
# (OUT/space-D-S, `tune bundle --routes wgmma`), and per seed the default strategy's first
# --trials (16) proposals (OUT/search-D-S-sN, `tune --measure bundle` on a fresh copy of the
# training records: default datasets/gpu/h200_cuda_2026-11-26.jsonl.gz, an H200's), then
# OUT.tar.gz without the databases. Nothing of the shape is measured when the search proposes.
# measure (the GPU machine; CUDA driver, compiler, CMake, Ninja): builds tune-runner alone if
# build-runner/ lacks it and measures every bundle against cuBLAS (verified results) within a
# time budget per bundle (space 45 s, search 15 s by default; `tune-runner --resume` continues).
# report: experiments/gpu_search_heldout.py's table (the search's best after 1, 4, 8 and all
# proposals, trials to 95% of the best measured, ratios to the same run's cuBLAS).
# Run on an H100 on 2026-11-28: experiments/results/gpu_search_heldout_h100.txt (from the
# committed raw results, datasets/gpu/h100_raw_2026-11-28.tar.gz).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
shift || true
case "$cmd" in
  make)
    out=${1:?usage: gpu_search_heldout.sh make OUT [options]}
    shift
    train=$root/datasets/gpu/h200_cuda_2026-11-26.jsonl.gz shapes=bf16:4096x4096x14336,f16:8192x28672x8192 seeds=3 trials=16
    while [ $# -gt 0 ]; do
      case "$1" in
        --train) train=$2; shift 2 ;;
        --shapes) shapes=$2; shift 2 ;;
        --seeds) seeds=$2; shift 2 ;;
        --trials) trials=$2; shift 2 ;;
        *) echo "gpu_search_heldout: unknown option $1" >&2; exit 2 ;;
      esac
    done
    tune=${TUNE:-$root/build/tools/tune}
    [ -x "$tune" ] || "$root/scripts/build.sh"
    mkdir -p "$out"
    (case "$train" in *.gz) gunzip -c "$train" ;; *) cat "$train" ;; esac) >"$out/train.jsonl"
    "$tune" import "$out/train.jsonl" --db "$out/train.db" >/dev/null
    rm -f "$out/train.jsonl"
    for spec in ${shapes//,/ }; do
      d=${spec%%:*} s=${spec#*:}
      "$tune" bundle --target h100 --dtype "$d" --shape "$s" --routes wgmma --random 100000 --seed 1 -o "$out/space-$d-$s" | tail -n 2
      for seed in $(seq 1 "$seeds"); do
        cp "$out/train.db" "$out/search-$d-$s-s$seed.db"
        "$tune" --op gemm --target h100 --dtype "$d" --shape "$s" --trials "$trials" --seed "$seed" --measure bundle \
          --out "$out/search-$d-$s-s$seed" --db "$out/search-$d-$s-s$seed.db" --quiet | tail -n 1
      done
    done
    tar -czf "$out.tar.gz" --exclude='*.db' -C "$(dirname "$out")" "$(basename "$out")"
    echo "bundles: $out, archive $out.tar.gz ($(du -sh "$out.tar.gz" | cut -f1)); next, on the GPU machine: $0 measure $out.tar.gz RESULTS"
    ;;
  measure)
    set +e
    src=${1:?usage: gpu_search_heldout.sh measure OUT.tar.gz RESULTS} res=${2:?RESULTS directory}
    shift 2
    space_budget=45 search_budget=15
    while [ $# -gt 0 ]; do
      case "$1" in
        --space-budget) space_budget=$2; shift 2 ;;
        --search-budget) search_budget=$2; shift 2 ;;
        *) echo "gpu_search_heldout: unknown option $1" >&2; exit 2 ;;
      esac
    done
    mkdir -p "$res"
    dir=$src
    if [ -f "$src" ]; then dir=$(mktemp -d); tar -xzf "$src" -C "$dir"; dir=$(find "$dir" -mindepth 1 -maxdepth 1 -type d | head -n 1); fi
    runner=$root/build-runner/tools/runner/tune-runner
    if [ ! -x "$runner" ]; then
      { cmake -S "$root" -B "$root/build-runner" -G Ninja -DSEXTANT_RUNNER_ONLY=ON -DCMAKE_BUILD_TYPE=Release &&
        ninja -C "$root/build-runner" tune-runner; } >"$res/build.log" 2>&1 || { tail -n 20 "$res/build.log"; exit 2; }
    fi
    for b in "$dir"/space-* "$dir"/search-*; do
      [ -f "$b/manifest.json" ] || continue
      n=$(basename "$b") lim=$search_budget
      case $n in space-*) lim=$space_budget ;; esac
      resume=""
      [ -s "$res/$n.results.json" ] && resume=--resume
      timeout $((lim + 30)) "$runner" "$b" -o "$res/$n.results.json" $resume --min-time 0.1 --min-reps 5 --time-budget "$lim" \
        >"$res/$n.log" 2>&1
      echo "$n: exit $? ($(tail -n 1 "$res/$n.log"))"
    done
    ;;
  report)
    python3 "$root/experiments/gpu_search_heldout.py" "$@"
    ;;
  *)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    [ "$cmd" = -h ] || [ "$cmd" = --help ] || exit 2
    ;;
esac
