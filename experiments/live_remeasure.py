#!/usr/bin/env python3
"""Issue #34 on a machine whose speed moves (the Intel Cascade Lake VM): the live experiment's
search-time figures are single measurements taken minutes apart, so a slow phase of the machine
can decide which strategy "won". This re-measures what each run found -- the schedule that was
its best after N trials by its own measurements -- call by call against oneDNN
(`tune --knobs K --versus onednn`, the head-to-head's pairing: each schedule and the library in
alternating calls in one process), so that every figure is a ratio a phase cancels out of.

Usage: experiments/live_remeasure.py [--checkpoints 16,32,48] [--rounds 2] [--library onednn]
                                     [--tune build/tools/tune] [--json-out F] live_curves_*.json
Runs whose JSON has no per-trial candidates (before 2026-11-26) give their final best only.
Prints per shape and configuration the median over seeds of the schedule / library ratio at each
checkpoint, and whether the default strategy (glimpse:default) is at least cold annealing (sa:none).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def best_after(curve, keys, n):
    ok = [(g, i) for i, g in enumerate(curve[:n]) if g > 0]
    return keys[max(ok)[1]] if ok else None


def versus(tune, shape, layout, knobs, library, rounds, db):
    cmd = [tune, "--shape", shape, "--layout", layout, "--knobs", knobs, "--versus", library,
           "--final-rounds", str(rounds), "-q", "--report", "json", "--db", db]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"  failed: {' '.join(cmd)}: {r.stderr.strip()[:300]}", file=sys.stderr)
        return None
    v = json.loads(r.stdout).get("versus") or {}
    return v.get("ratio")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--checkpoints", default="16,32,48")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--library", default="onednn")
    ap.add_argument("--tune", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "tune"))
    ap.add_argument("--json-out")
    a = ap.parse_args()
    checkpoints = [int(x) for x in a.checkpoints.split(",")]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "remeasure.db")
        for f in a.files:
            d = json.load(open(f))
            shape, layout = d["shape"], d["layout"]
            res = out.setdefault(f"{shape} {layout}", {})
            cache = {}
            for c, cfg in d["configs"].items():
                per_cp = {}
                for s, curve in enumerate(cfg["curves_gflops"]):
                    keys = (cfg.get("candidates") or [None] * len(cfg["curves_gflops"]))[s]
                    cps = checkpoints if keys else [len(curve)]
                    for n in cps:
                        k = best_after(curve, keys, n) if keys else cfg["best_schedules"][s]
                        if k is None:
                            continue
                        if k not in cache:
                            cache[k] = versus(a.tune, shape, layout, k, a.library, a.rounds, db)
                        if cache[k] is not None:
                            per_cp.setdefault(n, []).append(cache[k])
                res[c] = {str(n): v for n, v in per_cp.items()}
                print(f"{shape} {layout} {c}: " + "; ".join(
                    f"after {n}: {statistics.median(v):.2f}x ({', '.join(f'{x:.2f}' for x in v)})"
                    for n, v in sorted(per_cp.items())), flush=True)
    print()
    print(f"| shape | checkpoint | glimpse:default / {a.library} | sa:none / {a.library} | default >= annealing |")
    print("|---|---|---|---|---|")
    met = total = 0
    for shape, res in out.items():
        g, s = res.get("glimpse:default", {}), res.get("sa:none", {})
        for n in sorted(set(g) & set(s), key=int):
            mg, ms = statistics.median(g[n]), statistics.median(s[n])
            ok = mg >= ms
            met += ok
            total += 1
            print(f"| {shape} | {n} | {mg:.2f}x | {ms:.2f}x | {'yes' if ok else 'no'} |")
    print(f"\ndefault at least annealing (medians over seeds, call-by-call ratios) at {met} of {total} checkpoints")
    if a.json_out:
        json.dump(out, open(a.json_out, "w"), indent=1)


if __name__ == "__main__":
    main()
