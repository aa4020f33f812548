#!/usr/bin/env bash
# scripts/gpu-validate.sh as far as a machine without a GPU allows: from a copy of the tracked
# tree, with no nlohmann-json package and no GoogleTest visible to CMake (the GPU box has
# neither), the runner-only build succeeds with the vendored headers and the script ends with
# exit 3 and "no CUDA device found", having measured the Vulkan bundle of a set (made with $TUNE)
# on Mesa's lavapipe all the same where this machine has it. Then scripts/gpu_summary.py on
# hand-made results files of the generic self-test bundle: expectations met -> 0, one broken -> 1
# naming the kernel.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/sextant-gpu-validate.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && git ls-files -z | xargs -0 tar -cf - ) | tar -xf - -C "$tmp" 2>/dev/null \
  || (cd "$root" && tar -cf - --exclude=./build --exclude='./build-*' --exclude=./.git .) | tar -xf - -C "$tmp"
# A set: a CUDA bundle (the h100 self-test) and a small Vulkan bundle.
mkdir -p "$tmp/set"
cp -r "$root/runtime/selftest/h100" "$tmp/set/h100"
vulkan=0
if [ -n "${TUNE:-}" ] && "$TUNE" hw show vulkan >/dev/null 2>&1; then
  "$TUNE" bundle --target vulkan --dtype f32 --shape 64x64x64 --random 2 --seed 1 -o "$tmp/set/vulkan-f32" >/dev/null
  vulkan=1
else
  echo "no Vulkan device here (or TUNE unset): the Vulkan half of this test is skipped"
fi
set +e
RUNNER_CMAKE_ARGS="-DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_IGNORE_PREFIX_PATH=/usr -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON" \
  "$tmp/scripts/gpu-validate.sh" "$tmp/set" -o "$tmp/out" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
set -e
cat "$tmp/stderr"
if command -v nvidia-smi >/dev/null && nvidia-smi >/dev/null 2>&1; then
  echo "a GPU is present: the no-device half of this test does not apply"; [ $rc -eq 0 ]
else
  [ $rc -eq 3 ] || { echo "expected exit 3 (no CUDA device), got $rc"; tail -n 30 "$tmp/out/build.log" || true; exit 1; }
  grep -q "no CUDA device found" "$tmp/stderr" "$tmp/out/validate.log"
fi
grep -q "using the vendored copy in third_party/nlohmann_json" "$tmp/out/build.log"
if [ $vulkan -eq 1 ] && ! nvidia-smi >/dev/null 2>&1; then
  # No CUDA device, yet the Vulkan bundle was measured (3 kernels, verified) and summarised.
  python3 - "$tmp/out/vulkan-f32.results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["device"]["vendor"] == "vulkan", r["device"]
st = [k["status"] for k in r["results"]]
assert len(st) == 3 and all(s == "ok" for s in st), st
PY
  grep -q "gemm:NN:64x64x64:f32\*f32->f32" "$tmp/out/summary.txt"
  # The machine's Vulkan devices described for tune --vulkan-device.
  grep -q '"format": "sextant-vulkan-devices"' "$tmp/out/vulkan-devices.json"
  ! grep -q "h100.results.json" "$tmp/out/validate.log"   # no CUDA bundle was attempted
fi
[ -x "$tmp/build-runner/tools/runner/tune-runner" ]
[ -s "$tmp/out/device.txt" ]

# The summary and its expectation check, on results written here (a fixture, not a measurement).
python3 - "$root/runtime/selftest/generic/manifest.json" "$tmp/res.json" "$tmp/bad.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
def result(k, status):
    return {"id": k["id"], "workload": k["workload"], "status": status, "message": "", "times_s": [1e-4],
            "median_s": 1e-4, "cv": 0.01, "gflops": 100.0, "max_abs_err": 1e-6, "checked_entries": 10,
            "resources": None, "loaded": "ptx", "verified": 2}
base = {"format": "sextant-results", "version": 1, "runner": "fixture", "date": "2026-01-01T00:00:00Z",
        "command": "fixture", "host": "none", "options": {}, "notes": [],
        "device": {"vendor": "nvidia", "name": "Fixture GPU", "arch": "sm_90", "driver_version": "13.0",
                   "sm_count": 132, "l2_bytes": 52428800, "memory_bytes": 85000000000},
        "references": [{"workload": m["kernels"][0]["workload"], "peer": "cublas", "status": "ok", "message": "",
                        "times_s": [1e-4], "median_s": 1e-4, "cv": 0.0, "gflops": 200.0, "max_abs_err": 0,
                        "checked_entries": 10}]}
good = dict(base, results=[result(k, k["static"]["expect"]) for k in m["kernels"]])
json.dump(good, open(sys.argv[2], "w"))
bad = dict(base, results=[result(k, "ok") for k in m["kernels"]])
json.dump(bad, open(sys.argv[3], "w"))
PY
python3 "$root/scripts/gpu_summary.py" --run "$root/runtime/selftest/generic" "$tmp/res.json" --full "$tmp/k.tsv" >"$tmp/s1"
grep -q "Fixture GPU" "$tmp/s1"
grep -q "0.50" "$tmp/s1"   # 100 / 200 GFLOP/s against cuBLAS
[ "$(wc -l <"$tmp/k.tsv")" -eq 6 ]
set +e
python3 "$root/scripts/gpu_summary.py" --run "$root/runtime/selftest/generic" "$tmp/bad.json" >"$tmp/s2"
rc=$?
set -e
[ $rc -eq 1 ] || { echo "a broken expectation must fail the summary (got $rc)"; cat "$tmp/s2"; exit 1; }
grep -q "generic/half: expected wrong_result, got ok" "$tmp/s2"
echo "gpu-validate script test: passed"
