#!/bin/sh
# Issue #32: the model peers' virtual environment, experiments only (never the core set-up or CI):
# ONNX Runtime and IREE (compiler + runtime) from PyPI, as ../shared/notes/peers.md runs them.
# PyTorch eager is Debian's python3-torch (run by /usr/bin/python3, not from here). Each peer is
# installed on its own: one that cannot be installed is named in one line and the others go on.
# Usage: experiments/models/setup_venv.sh [VENV]   default experiments/models/.venv
cd "$(dirname "$0")"
venv=${1:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" || { echo "models: cannot make a virtual environment (python3-venv missing?)"; exit 1; }
"$venv/bin/pip" install -q --upgrade pip >/dev/null 2>&1
if "$venv/bin/pip" install -q onnxruntime numpy >/dev/null 2>&1; then
  echo "models: onnxruntime $("$venv/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)')"
else echo "models: onnxruntime could not be installed from PyPI (its column is skipped)"; fi
if "$venv/bin/pip" install -q iree-base-compiler iree-base-runtime onnx numpy >/dev/null 2>&1 &&
   "$venv/bin/python" -c 'import iree.runtime, iree.compiler' >/dev/null 2>&1; then
  echo "models: iree $("$venv/bin/python" -c 'import iree.compiler as c; print(c.version.VERSION if hasattr(c, "version") else "installed")' 2>/dev/null)"
else echo "models: iree-base-compiler / iree-base-runtime could not be installed (its column is skipped)"; fi
