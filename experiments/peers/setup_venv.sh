#!/bin/sh
# Issue #34 item 3: the peers' virtual environment, experiments only (never the core set-up or CI):
# Optuna (TPE) and TVM MetaSchedule with the pins ../shared/notes/peers.md found necessary
# (apache-tvm 0.27.0.post1 with apache-tvm-ffi 0.1.14.post1: 0.1.15 crashes in save_json; xgboost for
# MetaSchedule's default cost model, cloudpickle and psutil for its runner). Each peer is installed on
# its own: one that cannot be installed is named in one line and the others go on.
# Usage: experiments/peers/setup_venv.sh [VENV]   default experiments/peers/.venv
cd "$(dirname "$0")"
venv=${1:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" || { echo "peers: cannot make a virtual environment (python3-venv missing?)"; exit 1; }
"$venv/bin/pip" install -q --upgrade pip >/dev/null 2>&1
if "$venv/bin/pip" install -q optuna numpy >/dev/null 2>&1; then echo "peers: optuna $("$venv/bin/python" -c 'import optuna; print(optuna.__version__)')"
else echo "peers: optuna could not be installed from PyPI (the Optuna comparison is skipped)"; fi
if "$venv/bin/pip" install -q "apache-tvm==0.27.0.post1" "apache-tvm-ffi==0.1.14.post1" xgboost cloudpickle psutil numpy >/dev/null 2>&1 &&
   "$venv/bin/python" -c 'import tvm.s_tir.meta_schedule' >/dev/null 2>&1; then
  echo "peers: apache-tvm $("$venv/bin/python" -c 'import tvm; print(tvm.__version__)') (MetaSchedule)"
else echo "peers: apache-tvm 0.27.0.post1 could not be installed or imported (the MetaSchedule comparison is skipped)"; fi
