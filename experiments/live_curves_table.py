#!/usr/bin/env python3
"""The table of experiments/live_curves.sh from its JSON (curves of measured GFLOP/s per trial).

Usage: live_curves_table.py RESULT.json   (prints the table; the shell script saves it as RESULT.txt)
"""
import json
import statistics
import sys

j = json.load(open(sys.argv[1]))
trials, best = j["trials"], j["reference_best_gflops"]
levels = (0.90, 0.95, 0.99)
marks = sorted({m for m in (16, 32, trials) if m <= trials})


def reach(curve, level):
    for i, x in enumerate(curve):
        if x >= level * best:
            return i + 1
    return None


def med_reach(xs):  # censored median: a run that never reached the level counts as trials + 1
    v = sorted(x if x is not None else trials + 1 for x in xs)
    n = len(v)
    m = v[n // 2] if n % 2 or v[n // 2] > trials else (v[n // 2 - 1] + v[n // 2]) / 2
    return ">%d" % trials if m > trials else "%g" % m


def best_after(curve, t):
    return max([x for x in curve[:t] if x] or [0.0])


seeds = " ".join(str(s) for s in j["seeds"])
print(f"Live tuning of gemm {j['layout']} {j['shape']} f32 (measured, a fresh database per run, {trials} trials,")
print(f"seeds {seeds}; the first trial of every run is the untuned default). Median over seeds of the best")
print("measured after 16 / 32 / all trials; trials to reach 90/95/99% of the reference best, the best")
print(f"measurement of any run below ({best:.1f} GFLOP/s; '>T': not reached, censored median).")
print()
print("| strategy | pretrained | " + " | ".join(f"best after {m}" for m in marks) + " | 90% | 95% | 99% | final bests per seed |")
print("|---|---|" + "---|" * (len(marks) + 4))
for c, r in j["configs"].items():
    st, pre = c.split(":")
    curves = r["curves_gflops"]
    cols = [f"{statistics.median(best_after(g, m) for g in curves):.1f}" for m in marks]
    cols += [med_reach([reach(g, l) for g in curves]) for l in levels]
    cols.append(" ".join(f"{best_after(g, trials):.0f}" for g in curves))
    print(f"| {st} | {pre} | " + " | ".join(cols) + " |")
