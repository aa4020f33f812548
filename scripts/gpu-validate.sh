#!/usr/bin/env bash
# GPU validation in one command, for a machine with an NVIDIA GPU, the CUDA driver, a C++
# compiler, CMake and Ninja (no package registry, no MLIR, no LibTorch needed):
#
#   scripts/gpu-validate.sh BUNDLE_DIR|SET.tar.gz ... [-o RESULTS_DIR] [--budget S] [--min-time S]
#                           [--runner-args "ARGS"]   (more tune-runner options, e.g. "--warmup 1")
#
# 1. builds tune-runner alone (-DSEXTANT_RUNNER_ONLY=ON; nlohmann-json travels in third_party/),
# 2. records the machine (nvidia-smi, driver, CUDA toolkit) in RESULTS_DIR/device.txt,
# 3. runs the runner's self-test bundles (runtime/selftest: every kernel must get the status its
#    manifest expects: a correct GEMM, a wrong one, a missing symbol, a fault and the restart after
#    it, Sextant's own kernels on sm_90) and the GpuReal tests if GoogleTest is there,
# 4. measures every given bundle against cuBLAS (verified results, all repetitions kept) within the
#    time budget (default 400 s of measurement; kernels not started in time are "skipped"),
# 5. prints one summary table (scripts/gpu_summary.py) and writes it to RESULTS_DIR/summary.txt,
#    every kernel to RESULTS_DIR/kernels.tsv.
# Bundles come from scripts/make-validation-bundles.sh (a .tar.gz of them is unpacked first).
# Exit status: 0 when every self-test expectation held (whatever the candidates measured), 1 if
# not, 2 on bad usage, 3 when no CUDA device was found.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=gpu-validation
budget=400
min_time=0.1
runner_args=""
inputs=()
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --min-time) min_time=$2; shift 2 ;;
    --runner-args) runner_args=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-validate: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) inputs+=("$1"); shift ;;
  esac
done
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
start=$(date +%s)
log() { echo "gpu-validate: $*" | tee -a "$out/validate.log" >&2; }

# Bundles: directories with a manifest.json, or archives of them.
bundles=()
for x in "${inputs[@]}"; do
  if [ -f "$x" ] && [[ "$x" == *.tar.gz || "$x" == *.tgz ]]; then
    dir=$(mktemp -d /tmp/sextant-bundles.XXXXXX)
    tar -xzf "$x" -C "$dir" || { log "cannot unpack $x"; exit 2; }
    while IFS= read -r m; do bundles+=("$(dirname "$m")"); done < <(find "$dir" -name manifest.json | sort)
  elif [ -f "$x/manifest.json" ]; then
    bundles+=("$x")
  else
    log "$x is neither a bundle directory (no manifest.json) nor a .tar.gz of bundles"; exit 2
  fi
done

build=${RUNNER_BUILD:-$root/build-runner}
log "building tune-runner in $build"
# RUNNER_CMAKE_ARGS: more CMake options (the tests use it to hide installed packages).
if ! { cmake -S "$root" -B "$build" -G Ninja -DSEXTANT_RUNNER_ONLY=ON -DCMAKE_BUILD_TYPE=Release ${RUNNER_CMAKE_ARGS:-} \
         && ninja -C "$build"; } >"$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log"; log "the runner did not build (log: $out/build.log)"; exit 2
fi
runner=$build/tools/runner/tune-runner

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "sextant commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "command: $0 ${inputs[*]} -o $out --budget $budget --min-time $min_time --runner-args '$runner_args'"
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv 2>&1
  nvidia-smi 2>&1 | head -n 20
} >"$out/device.txt"
cat "$out/device.txt" >&2

runs=()
for st in generic h100; do
  log "self-test: runtime/selftest/$st"
  "$runner" "$root/runtime/selftest/$st" -o "$out/selftest-$st.json" --min-time 0.05 --min-reps 5 2>>"$out/validate.log"
  rc=$?
  if [ $rc -eq 3 ]; then log "no CUDA device found: nothing measured"; exit 3; fi
  if [ $rc -eq 2 ] && [ "$st" != generic ]; then log "selftest/$st is not for this GPU: skipped"; continue; fi
  runs+=(--run "$root/runtime/selftest/$st" "$out/selftest-$st.json")
done
if [ -x "$build/tests/gpu_runner_tests" ]; then
  log "GpuReal tests"
  "$build/tests/gpu_runner_tests" --gtest_filter='GpuReal*' >>"$out/validate.log" 2>&1 || log "GpuReal tests FAILED (see validate.log)"
fi

for b in "${bundles[@]}"; do
  name=$(basename "$b")
  left=$(( budget - ($(date +%s) - start) ))
  [ $left -lt 10 ] && left=10
  log "measuring $b ($("$runner" "$b" --list | sed -n 2p); time budget ${left}s)"
  "$runner" "$b" -o "$out/$name.results.json" --min-time "$min_time" --min-reps 5 --time-budget "$left" $runner_args \
    >>"$out/validate.log" 2>&1
  runs+=(--run "$b" "$out/$name.results.json")
done

python3 "$root/scripts/gpu_summary.py" "${runs[@]}" --full "$out/kernels.tsv" | tee "$out/summary.txt"
rc=${PIPESTATUS[0]}
log "done in $(( $(date +%s) - start )) s; results in $out"
exit $rc
