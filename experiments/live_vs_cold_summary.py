#!/usr/bin/env python3
"""One table over several experiments/live_curves.sh outputs (issue #34 item 2): per shape and
configuration, the median over seeds of the best measured after 16 / 32 / all trials and of the
trials to 95% of the best any run of that shape found (censored: '>T' when the median run never got
there), then whether the default (glimpse:default) is at least cold annealing (sa:none) at each mark.
Then the same verdict on a figure that a machine's slow and fast phases move less (since 2026-11-26,
for the Intel Cascade Lake VM, whose timings move 2x within minutes): each run's best after T
divided by its own first trial, the untuned default (the same schedule in every run, measured at
the start of that run), median over seeds.

Usage: live_vs_cold_summary.py RESULT.json [RESULT.json ...]   (files of one shape and layout are merged)
"""
import json
import statistics
import sys


def best_after(curve, t):
    return max([x for x in curve[:t] if x] or [0.0])


def reach(curve, level):
    for i, x in enumerate(curve):
        if x >= level:
            return i + 1
    return None


def med_reach(xs, trials):
    v = sorted(x if x is not None else trials + 1 for x in xs)
    m = statistics.median(v)
    return m, (">%d" % trials if m > trials else "%g" % m)


# Files of the same shape and layout (configurations run at different times, e.g. glimpse:none after
# the default and annealing) are merged: their configurations side by side, the reference best the
# largest of theirs.
merged, machine = {}, None
for path in sys.argv[1:]:
    j = json.load(open(path))
    machine = machine or j.get("machine")
    key = (j["shape"], j["layout"])
    if key not in merged:
        merged[key] = j
        continue
    m = merged[key]
    if m["trials"] != j["trials"]:
        sys.exit(f"{path}: {j['trials']} trials, the other file of {key[0]} {key[1]} has {m['trials']}")
    m["reference_best_gflops"] = max(m["reference_best_gflops"], j["reference_best_gflops"])
    for c, r in j["configs"].items():
        m["configs"].setdefault(c, r)

rows, verdicts, norm = [], [], []
for j in merged.values():
    trials, top = j["trials"], j["reference_best_gflops"]
    marks = sorted({m for m in (16, 32, trials) if m <= trials})
    meds, rel = {}, {}
    for c, r in j["configs"].items():
        curves = r["curves_gflops"]
        b = [statistics.median(best_after(g, m) for g in curves) for m in marks]
        if all(g and g[0] for g in curves):
            rel[c] = [statistics.median(best_after(g, m) / g[0] for g in curves) for m in marks]
        r95, r95s = med_reach([reach(g, 0.95 * top) for g in curves], trials)
        meds[c] = (b, r95)
        rows.append((f"{j['shape']} {j['layout']}", c, b, r95s, top, len(curves)))
    if "glimpse:default" in meds and "sa:none" in meds:
        d, s = meds["glimpse:default"], meds["sa:none"]
        ok = [dd >= ss for dd, ss in zip(d[0], s[0])]
        verdicts.append((f"{j['shape']} {j['layout']}", ok, marks, d[1], s[1]))
    if "glimpse:default" in rel and "sa:none" in rel:
        others = {c: v for c, v in rel.items() if c not in ("glimpse:default", "sa:none")}
        norm.append((f"{j['shape']} {j['layout']}", marks, rel["glimpse:default"], rel["sa:none"], others))

print(f"# machine: {machine}")
print("Live tuning, f32 GEMM, fresh database per run; median over seeds of the best measured (GFLOP/s) after")
print("16 / 32 / 48 trials, and the trials to 95% of the best any run of the shape found.")
print()
print("| shape | strategy:pretrained | best after 16 | after 32 | after 48 | trials to 95% | best of any run | seeds |")
print("|---|---|---|---|---|---|---|---|")
for shape, c, b, r95, top, n in rows:
    print(f"| {shape} | {c} | " + " | ".join(f"{x:.1f}" for x in b) + f" | {r95} | {top:.1f} | {n} |")
print()
print("Default (glimpse:default) at least cold annealing (sa:none), median best after 16 / 32 / 48:")
held = 0
for shape, ok, marks, d95, s95 in verdicts:
    held += all(ok)
    print(f"  {shape}: " + " ".join(f"{m}:{'yes' if o else 'NO'}" for m, o in zip(marks, ok)) +
          f"; trials to 95%: default {d95 if d95 <= 48 else '>48'}, annealing {s95 if s95 <= 48 else '>48'}")
print(f"goal (every shape, every mark) met on {held} of {len(verdicts)} shapes")

if norm:
    print()
    print("Best after 16 / 32 / 48 trials over the run's own untuned default (first trial), median over seeds:")
    held = 0
    for shape, marks, d, a, others in norm:
        ok = [dd >= aa for dd, aa in zip(d, a)]
        held += all(ok)
        print(f"  {shape}: default " + " / ".join(f"{x:.2f}" for x in d) + ", annealing " +
              " / ".join(f"{x:.2f}" for x in a) + "; default at least annealing: " +
              " ".join(f"{m}:{'yes' if o else 'NO'}" for m, o in zip(marks, ok)))
        for c, v in sorted(others.items()):
            print(f"    {c}: " + " / ".join(f"{x:.2f}" for x in v))
    print(f"goal on this figure met on {held} of {len(norm)} shapes")
