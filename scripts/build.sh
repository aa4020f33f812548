#!/usr/bin/env bash
# Configures and builds Sextant into ./build (Release, Ninja, ccache when present).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
# Two cores: two compile jobs. The MLIR-facing sources are few; LibTorch is only in one test.
ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
