#!/usr/bin/env python3
"""Issue #34: Optuna's TPE over Sextant's own knob space, one live run.

Every trial is one knob assignment measured through `tune --knobs` (compiled, verified and recorded
exactly as a candidate of a Sextant run, in the same database and harness). Assignments outside the
space (a constraint violated) cost no measurement: Optuna is told they are worth 0 GFLOP/s and
samples again. The run stops after MEASUREMENTS measured trials (or 30x as many proposals).

Usage: optuna_tpe.py --tune build/tools/tune --shape 1024x1024x1024 --layout NN --measurements 64
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
    ap.add_argument("--shape", required=True)
    ap.add_argument("--layout", default="NN")
    ap.add_argument("--measurements", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--db", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    base = [a.tune, "--op", "gemm", "--shape", a.shape, "--layout", a.layout, "--db", a.db]
    space = json.loads(subprocess.run(base + ["--print-space"], check=True, capture_output=True, text=True).stdout)
    knobs = [(k["name"], k["values"]) for k in space["knobs"]]
    t0 = time.monotonic()
    curve, best = [], 0.0

    def objective(trial):
        nonlocal best
        assign = ",".join(f"{n}={trial.suggest_categorical(n, v)}" for n, v in knobs)
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
    json.dump({"method": "optuna-tpe", "optuna": optuna.__version__, "shape": a.shape, "layout": a.layout,
               "seed": a.seed, "space": space["space"], "proposals": proposals, "curve": curve,
               "best_gflops": best, "best_knobs": top["knobs"] if top else None}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
