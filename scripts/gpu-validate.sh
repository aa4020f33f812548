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
#    time budget (default 400 s of measurement; kernels not started in time are "skipped"); Vulkan
#    bundles on the machine's Vulkan device (its own loader, or the one the set carries; the NVIDIA
#    driver's ICD when nothing else is named), also where no CUDA device was found; the Vulkan
#    devices are described in RESULTS_DIR/vulkan-devices.json (tune --vulkan-device compiles for them),
# 5. prints one summary table (scripts/gpu_summary.py) and writes it to RESULTS_DIR/summary.txt,
#    every kernel to RESULTS_DIR/kernels.tsv.
# Bundles come from scripts/make-validation-bundles.sh (a .tar.gz of them is unpacked first); the
# Vulkan headers it packs (vulkan-include/) give the runner its Vulkan backend.
# Exit status: 0 when every self-test expectation held (whatever the candidates measured), 1 if
# not, 2 on bad usage, 3 when no CUDA device was found (Vulkan bundles are still measured).
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

# Bundles: directories with a manifest.json, or archives of them (a set's directory too).
bundles=()
vk_include="" vk_loader=""
addSet() {  # the set directory $1: its bundles, its Vulkan headers and loader
  while IFS= read -r m; do bundles+=("$(dirname "$m")"); done < <(find "$1" -name manifest.json | sort)
  local inc deb
  inc=$(find "$1" -maxdepth 2 -type d -name vulkan-include | head -n 1)
  deb=$(find "$1" -maxdepth 3 -path '*vulkan-loader/libvulkan1_*.deb' | head -n 1)
  [ -n "$inc" ] && vk_include=$inc
  [ -n "$deb" ] && vk_loader=$(dirname "$deb")
  return 0
}
for x in "${inputs[@]}"; do
  if [ -f "$x" ] && [[ "$x" == *.tar.gz || "$x" == *.tgz ]]; then
    dir=$(mktemp -d /tmp/sextant-bundles.XXXXXX)
    tar -xzf "$x" -C "$dir" || { log "cannot unpack $x"; exit 2; }
    addSet "$dir"
  elif [ -f "$x/manifest.json" ]; then
    bundles+=("$x")
  elif [ -d "$x" ] && [ -n "$(find "$x" -maxdepth 2 -name manifest.json | head -n 1)" ]; then
    addSet "$x"
  else
    log "$x is neither a bundle directory (no manifest.json), a set of them, nor a .tar.gz of bundles"; exit 2
  fi
done
isVulkan() { grep -q '"vendor": *"vulkan"' "$1/manifest.json"; }

build=${RUNNER_BUILD:-$root/build-runner}
log "building tune-runner in $build"
# RUNNER_CMAKE_ARGS: more CMake options (the tests use it to hide installed packages).
# The Vulkan backend needs the Vulkan headers: the machine's, else the set's (CMake reads CXXFLAGS
# when it first configures the build directory).
if [ -n "$vk_include" ] && ! echo '#include <vulkan/vulkan.h>' | ${CXX:-c++} -x c++ -fsyntax-only - >/dev/null 2>&1; then
  log "the Vulkan headers come from $vk_include"
  export CXXFLAGS="${CXXFLAGS:-} -isystem $vk_include"
fi
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
cuda=1
for st in generic h100; do
  log "self-test: runtime/selftest/$st"
  "$runner" "$root/runtime/selftest/$st" -o "$out/selftest-$st.json" --min-time 0.05 --min-reps 5 2>>"$out/validate.log"
  rc=$?
  if [ $rc -eq 3 ]; then log "no CUDA device found: no CUDA kernel measured"; cuda=0; break; fi
  if [ $rc -eq 2 ] && [ "$st" != generic ]; then log "selftest/$st is not for this GPU: skipped"; continue; fi
  runs+=(--run "$root/runtime/selftest/$st" "$out/selftest-$st.json")
done
if [ $cuda -eq 1 ] && [ -x "$build/tests/gpu_runner_tests" ]; then
  log "GpuReal tests"
  "$build/tests/gpu_runner_tests" --gtest_filter='GpuReal*' >>"$out/validate.log" 2>&1 || log "GpuReal tests FAILED (see validate.log)"
fi

# Vulkan: the machine's loader and GL vendor-neutral libraries (NVIDIA's driver loads through
# libGLX), else the set's, unpacked beside the results (not over /) and put on the library path;
# the NVIDIA driver's ICD where the environment names none.
vulkanSetup() {
  local have=1
  for lib in libvulkan.so.1 libGLX.so.0 libGLdispatch.so.0; do ldconfig -p 2>/dev/null | grep -q "$lib" || have=0; done
  if [ $have -eq 0 ] && [ -n "$vk_loader" ]; then
    for d in "$vk_loader"/*.deb; do dpkg -x "$d" "$out/vulkan-loader"; done
    local lib
    lib=$(dirname "$(find "$out/vulkan-loader" -name 'libvulkan.so.1' | head -n 1)")
    if [ "$lib" != . ]; then
      export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$lib"
      ldconfig -p 2>/dev/null | grep -q libvulkan.so.1 || export SEXTANT_VULKAN_LIB=${SEXTANT_VULKAN_LIB:-$lib/libvulkan.so.1}
    fi
    log "Vulkan loader and GL libraries from the set: ${lib}"
  fi
  local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f $icd ]; then export VK_DRIVER_FILES=$icd; log "Vulkan driver: $icd"; fi
}
vk_ready=0
for b in "${bundles[@]}"; do
  name=$(basename "$b")
  if isVulkan "$b"; then
    if [ $vk_ready -eq 0 ]; then
      vulkanSetup
      vk_ready=1
      # The machine's Vulkan devices, as the description tune --vulkan-device compiles for (next time).
      "$runner" --describe-vulkan >"$out/vulkan-devices.json" 2>>"$out/validate.log" \
        && log "Vulkan devices described in $out/vulkan-devices.json (tune --vulkan-device)"
    fi
  elif [ $cuda -eq 0 ]; then
    continue
  fi
  left=$(( budget - ($(date +%s) - start) ))
  [ $left -lt 10 ] && left=10
  log "measuring $b ($("$runner" "$b" --list | sed -n 2p); time budget ${left}s)"
  "$runner" "$b" -o "$out/$name.results.json" --min-time "$min_time" --min-reps 5 --time-budget "$left" $runner_args \
    >>"$out/validate.log" 2>&1
  brc=$?
  if [ ! -s "$out/$name.results.json" ]; then log "$name: nothing measured (tune-runner exit $brc; see validate.log)"; continue; fi
  runs+=(--run "$b" "$out/$name.results.json")
done

rc=0
if [ ${#runs[@]} -gt 0 ]; then
  python3 "$root/scripts/gpu_summary.py" "${runs[@]}" --full "$out/kernels.tsv" | tee "$out/summary.txt"
  rc=${PIPESTATUS[0]}
fi
log "done in $(( $(date +%s) - start )) s; results in $out"
[ $cuda -eq 0 ] && exit 3
exit $rc
