#!/usr/bin/env bash
# Configures and builds Sextant into ./build (Release, Ninja, ccache when present). Quiet unless
# something fails: the full log is in build/build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"
LOG="$BUILD_DIR/build.log"
echo "build: configuring and compiling into $BUILD_DIR (log: $LOG)..."
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  if ! cmake -G Ninja -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >"$LOG" 2>&1; then
    tail -n 40 "$LOG"; echo "build: cmake failed (full log: $LOG)" >&2; exit 1
  fi
fi
# Two cores: two compile jobs. The MLIR- and LibTorch-facing sources are one file each.
if ! ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}" >>"$LOG" 2>&1; then
  grep -E "error|FAILED" -A6 "$LOG" | head -n 60; echo "build: compilation failed (full log: $LOG)" >&2; exit 1
fi
echo "build: done"
