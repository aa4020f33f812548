"""Writes the LLVM IR of a MetaSchedule winner kept by tvm_metaschedule.py (its `winner_tir`),
compiled by TVM for this CPU (one core), with main_compute_ made global so that ms_shim.c can call
it (it stays fastcc: on x86-64 that passes its four arguments as the C convention does). Run with
experiments/peers/.venv/bin/python.
usage: ms_kernel.py RESULT.json --mcpu znver5 -o ms.ll"""
import argparse
import json
import re

import tvm
from tvm import script

ap = argparse.ArgumentParser()
ap.add_argument("result")
ap.add_argument("--mcpu", required=True)
ap.add_argument("-o", "--out", required=True)
a = ap.parse_args()
d = json.load(open(a.result))
if not d.get("winner_tir"):
    raise SystemExit(f"ms_kernel: {a.result} has no winner_tir (re-run tvm_metaschedule.py)")
lib = tvm.compile(script.from_source(d["winner_tir"]), target=tvm.target.Target({"kind": "llvm", "mcpu": a.mcpu, "num-cores": 1}))
lib = lib.mod if hasattr(lib, "mod") else lib
ir = lib.inspect_source("ll")
ir, n = re.subn(r"define internal fastcc i32 @main_compute_", "define fastcc i32 @main_compute_", ir)
if n != 1:
    raise SystemExit("ms_kernel: no internal main_compute_ in the module (another TVM version?)")
open(a.out, "w").write(ir)
