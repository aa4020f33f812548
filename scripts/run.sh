#!/usr/bin/env bash
# One command on a fresh machine: install what is missing, build, and run the main job
#   tune --op gemm --target cpu   (default shape, default trials, database ./sextant.db)
# Extra arguments are passed to tune, e.g. scripts/run.sh --shape 1024x1024x1024 --trials 300
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec ./build/tools/tune --op gemm --target cpu "$@"
