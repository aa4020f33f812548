#!/usr/bin/env bash
# Compiles the standard GPU validation set (run here, where MLIR is; measured on a GPU machine by
# scripts/gpu-validate.sh):
#
#   scripts/make-validation-bundles.sh OUT_DIR [--target h100] [--random N] [--shapes S,S,...]
#                                      [--vulkan-shape S | --no-vulkan] [--vulkan-device FILE[:N]]
#
# For each dtype (f16, bf16) one bundle OUT_DIR/TARGET-DTYPE holding, for every shape (default
# 4096^3, 2048^3 and the Llama-2-7B shapes 16x4096x4096 and 4096x11008x4096), the untuned default
# schedule plus N (default 30) seeded random candidates of each route the target has for that
# dtype (mma.sync, wgmma, fma). Kernels ship as the cubin that ptxas analysed plus its PTX.
# Unless --no-vulkan: two Vulkan bundles OUT_DIR/vulkan-f32 and vulkan-f16 (the --vulkan-shape,
# default 2048^3: the default plus N random SPIR-V kernels), the Vulkan headers the runner's
# Vulkan backend builds against (OUT_DIR/vulkan-include) and, where apt can fetch them, Debian's
# Vulkan loader and GL vendor-neutral libraries (OUT_DIR/vulkan-loader/*.deb) for a GPU machine
# that lacks them. The Vulkan space takes the limits of --vulkan-device FILE (a device description:
# RESULTS_DIR/vulkan-devices.json of an earlier gpu-validate.sh run on that machine); without one,
# for h100/h200 datasets/gpu/vulkan-devices-h100.json (read on an H100, 2026-11-28), for other
# NVIDIA targets datasets/gpu/vulkan-devices-nvidia-assumed.json (hand-written, labelled).
# Also writes OUT_DIR/PROVENANCE.json and OUT_DIR.tar.gz (what travels to the GPU machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/make-validation-bundles.sh OUT_DIR [--target T] [--random N] [--shapes S,...]}
shift
target=h100
random=30
shapes=4096x4096x4096,2048x2048x2048,16x4096x4096,4096x11008x4096
dtypes=f16,bf16
vulkan_shape=2048x2048x2048
vulkan_device=""
while [ $# -gt 0 ]; do
  case "$1" in
    --vulkan-shape) vulkan_shape=$2; shift 2 ;;
    --no-vulkan) vulkan_shape=""; shift ;;
    --vulkan-device) vulkan_device=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --random) random=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    --dtypes) dtypes=$2; shift 2 ;;
    *) echo "make-validation-bundles: unknown option $1" >&2; exit 2 ;;
  esac
done
# NVIDIA targets: unless a description is named, the H100's (read there) or the hand-written NVIDIA
# limits (labelled so in the file), not lavapipe's.
case "$target" in
  h100|h200) [ -n "$vulkan_device" ] || vulkan_device=$root/datasets/gpu/vulkan-devices-h100.json ;;
  a100|sm_*) [ -n "$vulkan_device" ] || vulkan_device=$root/datasets/gpu/vulkan-devices-nvidia-assumed.json ;;
esac
tune=${TUNE:-$root/build/tools/tune}
[ -x "$tune" ] || "$root/scripts/build.sh"
# Vulkan cooperative-matrix kernels (f16 on a device that lists the shape) are bundled only when
# validated: Debian's spirv-val predates the extension, the one experiments/vulkan_coop_validate.sh
# installs knows it. Without it they are left out, labelled compile-only.
if [ -z "${SEXTANT_SPIRV_VAL:-}" ] && [ -x "$root/experiments/.venv-spirv/bin/spirv-val" ]; then
  export SEXTANT_SPIRV_VAL="$root/experiments/.venv-spirv/bin/spirv-val"
fi
mkdir -p "$out"
for dtype in ${dtypes//,/ }; do
  for shape in ${shapes//,/ }; do
    "$tune" bundle --target "$target" --dtype "$dtype" --shape "$shape" --random "$random" --seed 1 \
      -o "$out/$target-$dtype"
  done
done
if [ -n "$vulkan_shape" ]; then
  for dtype in f32 f16; do
    "$tune" bundle --target vulkan --dtype "$dtype" --shape "$vulkan_shape" --random "$random" --seed 1 \
      ${vulkan_device:+--vulkan-device "$vulkan_device"} -o "$out/vulkan-$dtype"
  done
  if [ -f /usr/include/vulkan/vulkan.h ]; then
    mkdir -p "$out/vulkan-include/vulkan"
    cp /usr/include/vulkan/*.h "$out/vulkan-include/vulkan/"
    [ -d /usr/include/vk_video ] && cp -r /usr/include/vk_video "$out/vulkan-include/"
  else
    echo "make-validation-bundles: no Vulkan headers here (libvulkan-dev): the GPU machine's runner needs its own" >&2
  fi
  mkdir -p "$out/vulkan-loader"
  # The loader and the GL vendor-neutral libraries NVIDIA's Vulkan driver loads through (without
  # them the loader finds no driver: VK_ERROR_INCOMPATIBLE_DRIVER on an H200 machine, 2026-11-26).
  (cd "$out/vulkan-loader" && apt-get download libvulkan1 libglvnd0 libglx0 libegl1 libgl1 libopengl0 libgles2 >/dev/null 2>&1) \
    || echo "make-validation-bundles: could not fetch the Vulkan loader (.deb): the GPU machine must have libvulkan.so.1" >&2
fi
cat >"$out/PROVENANCE.json" <<JSON
{
  "made_by": "scripts/make-validation-bundles.sh $out --target $target --random $random --shapes $shapes --dtypes $dtypes --vulkan-shape '$vulkan_shape' --vulkan-device '$vulkan_device'",
  "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "sextant_commit": "$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)",
  "tool": "$("$tune" --version)",
  "ptxas": "$( (command -v ptxas >/dev/null && ptxas --version | tail -n 1) || echo none)",
  "host": "$(hostname)"
}
JSON
tar -czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
echo "validation set: $out ($(du -sh "$out" | cut -f1)), archive $out.tar.gz ($(du -sh "$out.tar.gz" | cut -f1))"
