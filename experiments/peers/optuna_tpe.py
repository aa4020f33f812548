#!/usr/bin/env python3
"""Issue #34: Optuna's TPE over Sextant's own knob space, one live run.

Every trial is one knob assignment measured through `tune --knobs` (compiled, verified and recorded
exactly as a candidate of a Sextant run, in the same database and harness). Assignments outside the
space (a constraint violated) cost no measurement: Optuna is told they are worth 0 GFLOP/s and
samples again. The run stops after MEASUREMENTS measured trials (or 30x as many proposals).

Sextant's CPU space is conditional where it has the GEMV routes (NT, M <= 16): the knobs gemv_rows,
gemv_k, gemv_kblock and gemv_m apply only when gemv != 0 (gemv_m only on the split-K route, 2), the
GEMM knobs other than tile_n only when gemv = 0; the others sit at their first values (the space's
constraint "GEMV: GEMM knobs at their first values, ..."). TPE is given that structure define-by-run,
as an Optuna user writes a conditional space. Without it, nearly every independent proposal broke the
constraint: 16x4096x11008 NT got no measurement in 18 minutes (2026-11-28).

Usage: optuna_tpe.py --tune build/tools/tune [--op gemm|conv2d] --shape 1024x1024x1024 --layout NN --measurements 64
                     --seed 1 --db runs/optuna-1.db --out runs/optuna-1.json
Output (JSON): the measured trials in order (GFLOP/s, best so far, wall seconds since the start).
"""
import argparse
import json
import subprocess
import sys
import time

try:
    import optuna
except ImportError:
    print("optuna_tpe: optuna is not installed (experiments/peers/setup_venv.sh)", file=sys.stderr)
    sys.exit(3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tune", required=True)
    ap.add_argument("--op", default="gemm", help="gemm or conv2d (a benchdnn descriptor as --shape)")
    ap.add_argument("--shape", required=True)
    ap.add_argument("--layout", default="NN")
    ap.add_argument("--measurements", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--db", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    base = [a.tune, "--op", a.op, "--shape", a.shape, "--layout", a.layout, "--db", a.db]
    space = json.loads(subprocess.run(base + ["--print-space"], check=True, capture_output=True, text=True).stdout)
    knobs = [(k["name"], k["values"]) for k in space["knobs"]]
    t0 = time.monotonic()
    curve, best = [], 0.0

    gemv_only = {"gemv_rows", "gemv_k", "gemv_kblock", "gemv_m"}
    conditional = any(n == "gemv" for n, _ in knobs)

    def propose(trial):
        if not conditional:
            return [(n, trial.suggest_categorical(n, v)) for n, v in knobs]
        g = trial.suggest_categorical("gemv", dict(knobs)["gemv"])
        out = []
        for n, v in knobs:
            if n == "gemv":
                out.append((n, g))
            elif n == "tile_n" or (n in gemv_only and g != 0 and (n != "gemv_m" or g == 2)) or \
                    (n not in gemv_only and g == 0):
                out.append((n, trial.suggest_categorical(n, v)))
            else:
                out.append((n, v[0]))  # not used by this route: its first value, as the space requires
        return out

    def objective(trial):
        nonlocal best
        assign = ",".join(f"{n}={v}" for n, v in propose(trial))
        p = subprocess.run(base + ["--knobs", assign, "--report", "json", "-q"], capture_output=True, text=True)
        if p.returncode == 2 and "not in the space" in p.stderr:
            return 0.0  # outside the space: no measurement
        try:
            r = json.loads(p.stdout)
        except json.JSONDecodeError:
            r = {"status": "error", "gflops": 0.0}
        g = float(r.get("gflops") or 0.0) if r.get("status") == "ok" else 0.0
        best = max(best, g)
        curve.append({"measurement": len(curve) + 1, "gflops": g, "best": best, "status": r.get("status"),
                      "knobs": assign, "wall_s": round(time.monotonic() - t0, 2)})
        return g

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=a.seed))
    proposals = 0
    while len(curve) < a.measurements and proposals < 30 * a.measurements:
        study.optimize(objective, n_trials=1)
        proposals += 1
    top = max(curve, key=lambda c: c["gflops"]) if curve else None
    json.dump({"method": "optuna-tpe", "optuna": optuna.__version__, "op": a.op, "shape": a.shape, "layout": a.layout,
               "seed": a.seed, "space": space["space"], "proposals": proposals, "curve": curve,
               "best_gflops": best, "best_knobs": top["knobs"] if top else None}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
