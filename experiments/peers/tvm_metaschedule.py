#!/usr/bin/env python3
"""Issue #34: TVM MetaSchedule on one f32 GEMM or 2-D convolution, one live run (its default: evolutionary search,
XGBoost cost model, post-order-apply space), LLVM CPU target with this CPU's -mcpu and one core.

Its LocalRunner times each candidate as Sextant's harness does: single calls (number=1, repeat=3,
min_repeat_ms=0), each after a cache flush of every argument but the first (EvaluatorConfig
enable_cpu_cache_flush: TVM flushes before each repeat, never the first argument, here the input
A); a record's figure is the median of its three calls. Until 2026-11-29 it ran number=3,
min_repeat_ms=100: one flush, then hundreds of calls in a row on warm caches (a 7x7-pixel 1x1
convolution with 4 MB of weights measured 246 GFLOP/s in that runner and 126-139 when its winner
was re-timed cold). Its records' times, in the order its JSON database file holds them (the
order of the measurements), give the best-so-far curve. The
winner is then re-timed here (time_evaluator, cache flush, 20 repetitions, median) and checked
against numpy: that figure, not the tuner's own, is the one to compare.

A convolution (--op conv2d) takes a benchdnn descriptor (mb1ic64ih56oc64kh3ph1) and reads its
dimensions from Sextant's own parser (the workload of `tune --op conv2d --shape X --print-space`,
every field explicit: mb1ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0, dilation 0 = none), so
that MetaSchedule tunes exactly the convolution Sextant does; it is TVM's own conv2d_nhwc (NHWC
input and output, HWIO filter: Sextant's NHWC / HWCF), groups 1. The filter stays in HWIO as
Sextant's measurement reads it (no layout rewrite: tune_tir is given no layout-free buffers).

Usage: tvm_metaschedule.py [--op gemm|conv2d] --shape 1024x1024x1024 --layout NN --trials 64 --seed 1
                           --mcpu znver5 --out runs/ms-1.json [--tune build/tools/tune]
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import tvm
    import tvm.s_tir.meta_schedule as ms
    from tvm import te
except Exception as e:  # noqa: BLE001 - any import failure means: not installed here
    print(f"tvm_metaschedule: apache-tvm is not usable here ({e}); experiments/peers/setup_venv.sh", file=sys.stderr)
    sys.exit(3)


def gemm(m, n, k, layout):
    a = te.placeholder((k, m) if layout == "TN" else (m, k), "float32", name="A")
    b = te.placeholder((n, k) if layout == "NT" else (k, n), "float32", name="B")
    r = te.reduce_axis((0, k), name="k")

    def body(i, j):
        x = a[r, i] if layout == "TN" else a[i, r]
        y = b[j, r] if layout == "NT" else b[r, j]
        return te.sum(x * y, axis=r)

    c = te.compute((m, n), body, name="C")
    return te.create_prim_func([a, b, c]).with_attr("global_symbol", "main")


def conv_desc(text, tune):
    """The convolution as Sextant's own parser reads the descriptor (the workload of `tune --op conv2d
    --shape X --print-space`: every field explicit, benchdnn's defaults filled in, oh / ow computed)."""
    try:
        p = subprocess.run([tune, "--op", "conv2d", "--shape", text, "--print-space"], capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"tvm_metaschedule: cannot run {tune} ({e.strerror}): build first (scripts/build.sh) or pass --tune")
    if p.returncode != 0:
        sys.exit(f"tvm_metaschedule: {(p.stderr.strip() or tune + ' failed').splitlines()[-1]}")
    canonical = json.loads(p.stdout)["workload"].split(":")[2]
    d = {k: int(v) for k, v in re.findall(r"(mb|ic|ih|iw|oc|oh|ow|kh|kw|sh|sw|ph|pw|dh|dw|g)(\d+)", canonical)}
    if d.get("g", 1) != 1:
        sys.exit("tvm_metaschedule: grouped convolutions are not compared here (groups 1 only)")
    return d


def conv2d(d):
    from tvm import topi
    x = te.placeholder((d["mb"], d["ih"], d["iw"], d["ic"]), "float32", name="I")
    w = te.placeholder((d["kh"], d["kw"], d["ic"], d["oc"]), "float32", name="W")
    y = topi.nn.conv2d_nhwc(x, w, (d["sh"], d["sw"]), (d["ph"], d["pw"]), (d["dh"] + 1, d["dw"] + 1))
    return te.create_prim_func([x, w, y]).with_attr("global_symbol", "main")


def conv_ref(xn, wn, d):
    """numpy: the NHWC / HWIO convolution, one filter tap at a time."""
    xp = np.pad(xn, ((0, 0), (d["ph"], d["ph"]), (d["pw"], d["pw"]), (0, 0)))
    out = np.zeros((d["mb"], d["oh"], d["ow"], d["oc"]), np.float64)
    for i in range(d["kh"]):
        for j in range(d["kw"]):
            r0, c0 = i * (d["dh"] + 1), j * (d["dw"] + 1)
            tap = xp[:, r0:r0 + d["sh"] * (d["oh"] - 1) + 1:d["sh"], c0:c0 + d["sw"] * (d["ow"] - 1) + 1:d["sw"], :]
            out += np.tensordot(tap, wn[i, j], axes=([3], [0]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--op", default="gemm", choices=["gemm", "conv2d"])
    ap.add_argument("--shape", required=True)
    ap.add_argument("--layout", default="NN")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mcpu", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tune", default="build/tools/tune", help="conv2d: the tune whose parser reads the descriptor")
    a = ap.parse_args()
    if a.op == "conv2d":
        d = conv_desc(a.shape, a.tune)
        flops = 2.0 * d["mb"] * d["oh"] * d["ow"] * d["oc"] * d["ic"] * d["kh"] * d["kw"]
        func = conv2d(d)
    else:
        m, n, k = (int(x) for x in a.shape.split("x"))
        flops = 2.0 * m * n * k
        func = gemm(m, n, k, a.layout)
    target = tvm.target.Target({"kind": "llvm", "mcpu": a.mcpu, "num-cores": 1})
    mod = tvm.IRModule({"main": func})
    runner = ms.runner.LocalRunner(evaluator_config=ms.runner.EvaluatorConfig(
        number=1, repeat=3, min_repeat_ms=0, enable_cpu_cache_flush=True))
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as work:
        db = ms.tune_tir(mod=mod, target=target, work_dir=work, max_trials_global=a.trials,
                         num_trials_per_iter=16, runner=runner, seed=a.seed, num_tuning_cores=1)
        tune_s = time.monotonic() - t0
        # The JSON database's file holds the records in measurement order (get_all_tuning_records
        # returns them sorted by time, fastest first).
        curve, best = [], 0.0
        lines = open(f"{work}/database_tuning_record.json").read().splitlines()
        for i, line in enumerate(lines):
            secs = sorted(float(s) for s in (json.loads(line)[1][1] or []))
            g = flops / secs[len(secs) // 2] / 1e9 if secs and max(secs) < 1e9 else 0.0
            best = max(best, g)
            curve.append({"measurement": i + 1, "gflops": round(g, 3), "best": round(best, 3)})
        sch = ms.tir_integration.compile_tir(db, mod, target)
        lib = tvm.compile(sch.mod, target=target)
        lib = lib.mod if hasattr(lib, "mod") else lib  # an Executable in TVM 0.27: its runtime module
    rng = np.random.default_rng(42)
    if a.op == "conv2d":
        sa, sb, sc = (d["mb"], d["ih"], d["iw"], d["ic"]), (d["kh"], d["kw"], d["ic"], d["oc"]), (d["mb"], d["oh"], d["ow"], d["oc"])
    else:
        sa = (k, m) if a.layout == "TN" else (m, k)
        sb = (n, k) if a.layout == "NT" else (k, n)
        sc = (m, n)
    an, bn = rng.standard_normal(sa, dtype=np.float32), rng.standard_normal(sb, dtype=np.float32)
    dev = tvm.cpu(0)
    ta, tb, tc = tvm.runtime.tensor(an, dev), tvm.runtime.tensor(bn, dev), tvm.runtime.tensor(np.zeros(sc, np.float32), dev)
    lib["main"](ta, tb, tc)
    if a.op == "conv2d":
        want = conv_ref(an, bn, d)
    else:
        want = (an.T if a.layout == "TN" else an) @ (bn.T if a.layout == "NT" else bn)
    err = float(np.max(np.abs(tc.numpy() - want)))
    ev = lib.time_evaluator("main", dev, number=1, repeat=20, f_preproc="cache_flush_cpu_non_first_arg")
    times = sorted(ev(ta, tb, tc).results)
    median = times[len(times) // 2]
    json.dump({"method": "tvm-metaschedule", "tvm": tvm.__version__, "op": a.op, "shape": a.shape, "layout": a.layout,
               "seed": a.seed, "mcpu": a.mcpu, "trials": a.trials, "tune_wall_s": round(tune_s, 1), "curve": curve,
               "best_gflops_in_tuning": best, "winner_retimed_gflops": flops / median / 1e9,
               "winner_max_abs_err": err,
               # What MetaSchedule found, for a reader to learn from: its schedule's trace and the
               # scheduled TensorIR (since 2026-11-29; the 1,000-trial 128x4096x4096 winner, 1.07x
               # oneDNN across harnesses, was lost for want of it).
               "winner_trace": str(sch.trace) if sch.trace is not None else None,
               "winner_tir": sch.mod.script()}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
