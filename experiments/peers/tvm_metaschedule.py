#!/usr/bin/env python3
"""Issue #34: TVM MetaSchedule on one f32 GEMM, one live run (its default: evolutionary search,
XGBoost cost model, post-order-apply space), LLVM CPU target with this CPU's -mcpu and one core.

Its LocalRunner times with a cache flush of every argument but the first (EvaluatorConfig
enable_cpu_cache_flush); its records' times, in the order its JSON database file holds them (the
order of the measurements), give the best-so-far curve. The
winner is then re-timed here (time_evaluator, cache flush, 20 repetitions, median) and checked
against numpy: that figure, not the tuner's own, is the one to compare.

Usage: tvm_metaschedule.py --shape 1024x1024x1024 --layout NN --trials 64 --seed 1 --mcpu znver5
                           --out runs/ms-1.json
"""
import argparse
import json
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", required=True)
    ap.add_argument("--layout", default="NN")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mcpu", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    m, n, k = (int(x) for x in a.shape.split("x"))
    flops = 2.0 * m * n * k
    target = tvm.target.Target({"kind": "llvm", "mcpu": a.mcpu, "num-cores": 1})
    mod = tvm.IRModule({"main": gemm(m, n, k, a.layout)})
    runner = ms.runner.LocalRunner(evaluator_config=ms.runner.EvaluatorConfig(
        number=3, repeat=1, min_repeat_ms=100, enable_cpu_cache_flush=True))
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
            secs = [float(s) for s in (json.loads(line)[1][1] or [])]
            g = flops / min(secs) / 1e9 if secs and min(secs) < 1e9 else 0.0
            best = max(best, g)
            curve.append({"measurement": i + 1, "gflops": round(g, 3), "best": round(best, 3)})
        sch = ms.tir_integration.compile_tir(db, mod, target)
        lib = tvm.compile(sch.mod, target=target)
        lib = lib.mod if hasattr(lib, "mod") else lib  # an Executable in TVM 0.27: its runtime module
    rng = np.random.default_rng(42)
    sa = (k, m) if a.layout == "TN" else (m, k)
    sb = (n, k) if a.layout == "NT" else (k, n)
    an, bn = rng.standard_normal(sa, dtype=np.float32), rng.standard_normal(sb, dtype=np.float32)
    dev = tvm.cpu(0)
    ta, tb, tc = tvm.runtime.tensor(an, dev), tvm.runtime.tensor(bn, dev), tvm.runtime.tensor(np.zeros((m, n), np.float32), dev)
    lib["main"](ta, tb, tc)
    want = (an.T if a.layout == "TN" else an) @ (bn.T if a.layout == "NT" else bn)
    err = float(np.max(np.abs(tc.numpy() - want)))
    ev = lib.time_evaluator("main", dev, number=1, repeat=20, f_preproc="cache_flush_cpu_non_first_arg")
    times = sorted(ev(ta, tb, tc).results)
    median = times[len(times) // 2]
    json.dump({"method": "tvm-metaschedule", "tvm": tvm.__version__, "shape": a.shape, "layout": a.layout,
               "seed": a.seed, "mcpu": a.mcpu, "trials": a.trials, "tune_wall_s": round(tune_s, 1), "curve": curve,
               "best_gflops_in_tuning": best, "winner_retimed_gflops": flops / median / 1e9,
               "winner_max_abs_err": err}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
