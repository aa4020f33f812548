#!/usr/bin/env bash
# Installs every Debian package Sextant needs. Idempotent: it asks apt only for what is missing,
# and runs `apt-get update` at most once per call.
set -euo pipefail

PACKAGES=(
  # build tools
  cmake ninja-build g++ ccache pkg-config
  # LLVM/MLIR 22: libMLIR.so/libLLVM.so, the CMake configs (which check that the tools exist),
  # FileCheck for tests, lld for AMDGPU code objects
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools lld-22
  # cost model
  libtorch-dev
  # reference GEMM (single-thread OpenBLAS), linear algebra for clustering / PCA
  libopenblas-dev libeigen3-dev
  # the other reference libraries of the final comparison (issue #35): oneDNN and BLIS, loaded at
  # run time by sextant-libref (the fastest of the three is the reference)
  libdnnl-dev libblis-dev
  # LLVM's OpenMP runtime, linked into multi-threaded CPU kernels (tune compile --threads)
  libomp-dev
  # schedule database, JSON, command line
  libsqlite3-dev sqlite3 nlohmann-json3-dev libcli11-dev
  # PostgreSQL: the client library (--db postgresql://...), and the server the tests start
  libpq-dev postgresql pkg-config
  # the Vulkan target (issue #33): headers of the runner (libvulkan is loaded at run time), Mesa's
  # lavapipe (a CPU-emulated Vulkan device: kernels run and are verified here), spirv-val (every
  # SPIR-V kernel is validated before it may run), and the validation layer the tests run under
  libvulkan-dev mesa-vulkan-drivers spirv-tools vulkan-validationlayers
  # ONNX models (issue #32): ONNX's protobuf classes for the importer (tune model, tune compile FILE.onnx)
  libonnx-dev libprotobuf-dev
  # tests
  libgtest-dev libgmock-dev
  # experiment scripts
  python3
)
# Plots of the experiment scripts (experiments/replay_strategies.sh asks for them): not needed to
# build or test, so CI does not install them.
# Whole-network peers of experiments/models_vs_peers.sh (issue #32: PyTorch eager, the zoo's ONNX
# export; ONNX Runtime and IREE come from PyPI into the experiment's own venv): likewise not CI's.
for opt in "$@"; do
  case $opt in
    --with-plots) PACKAGES+=(python3-matplotlib) ;;
    --with-models) PACKAGES+=(python3-matplotlib python3-torch python3-torchvision python3-onnx python3-venv) ;;
    *) echo "setup: unknown option '$opt' (known: --with-plots, --with-models)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${#missing[@]} missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
