#!/usr/bin/env python3
"""compare.sh helper: the tables (and a plot) of one peers comparison.

Per method: the median over seeds of the best measured GFLOP/s after 16 / 32 / TRIALS measurements,
the measurements needed to reach 95% of the best any run found (the reference), and the wall time of
the search (compile and measurement included). Then the winners side by side: Sextant-harness
re-measurements (median of the rounds), the fastest library from tune's final comparison, and
MetaSchedule's winner re-timed by TVM (another harness)."""
import json
import os
import sqlite3
import statistics
import sys
from datetime import datetime

tmp, seeds, shape, layout, trials, machine, command, out = sys.argv[1:]
seeds, trials = seeds.split(), int(trials)


def ts(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp()


# Per method and seed: each measurement's GFLOP/s in order (curves), the search's wall time (walls)
# and each measurement's seconds since the search began (stamps): Sextant's from the records'
# created_at (written when the batch of 16 is committed, so a batch counts at its end; whole
# seconds, taken at the end of the second: never earlier than the truth), Optuna's from its
# own clock, MetaSchedule's spread evenly over its wall time (its records carry no time; labelled).
curves, walls, stamps = {}, {}, {}
MS, TPE = "TVM MetaSchedule (its harness)", "optuna TPE (Sextant's knobs)"
for s in seeds:
    for st, label in (("glimpse", "sextant default (glimpse + pretrained)"),
                      ("cold", "sextant glimpse, no pretrained model"), ("sa", "cold annealing (sa)")):
        db = os.path.join(tmp, f"{st}-{s}.db")
        if not os.path.exists(db):
            continue
        rows = sqlite3.connect(db).execute("SELECT gflops, status, created_at FROM records ORDER BY id").fetchall()
        g = [r[0] if r[1] == "ok" and r[0] else 0.0 for r in rows]
        curves.setdefault(label, []).append(g)
        t0, t1 = (float(x) for x in open(os.path.join(tmp, f"{st}-{s}.wall")).read().split())
        walls.setdefault(label, []).append(t1 - t0)
        # created_at is truncated to the second: the end of that second, never earlier than the truth.
        stamps.setdefault(label, []).append([min(t1, ts(r[2]) + 1) - t0 for r in rows])
    js = os.path.join(tmp, f"optuna-{s}.json")
    if os.path.exists(js):
        d = json.load(open(js))
        curves.setdefault(TPE, []).append([c["gflops"] for c in d["curve"]])
        walls.setdefault(TPE, []).append(d["curve"][-1]["wall_s"] if d["curve"] else 0)
        stamps.setdefault(TPE, []).append([c["wall_s"] for c in d["curve"]])
    js = os.path.join(tmp, f"ms-{s}.json")
    if os.path.exists(js):
        d = json.load(open(js))
        n = len(d["curve"])
        curves.setdefault(MS, []).append([c["gflops"] for c in d["curve"]])
        walls.setdefault(MS, []).append(d["tune_wall_s"])
        stamps.setdefault(MS, []).append([d["tune_wall_s"] * (i + 1) / n for i in range(n)])


def best_by(label, i, t):
    """Best GFLOP/s of run i of a method measured within t seconds of its start."""
    return max((g for g, x in zip(curves[label][i], stamps[label][i]) if x <= t), default=0.0)

ref = max((max(c) for cs in curves.values() for c in cs if c), default=0.0)


def best_after(c, n):
    return max(c[:n]) if c[:n] else 0.0


def to95(c):
    for i, g in enumerate(c):
        if g >= 0.95 * ref:
            return i + 1
    return None


side = {}
for f in sorted(os.listdir(tmp)):
    if f.startswith("side-") and f.endswith(".json"):
        label = f[5:-5].rsplit("-", 1)[0]
        try:
            d = json.load(open(os.path.join(tmp, f)))
            if d.get("status") == "ok":
                side.setdefault(label, []).append(d["gflops"])
        except (json.JSONDecodeError, KeyError):
            pass
confirmed = max((statistics.median(v) for v in side.values()), default=0.0)


def to95c(c):
    for i, g in enumerate(c):
        if confirmed and g >= 0.95 * confirmed:
            return i + 1
    return None


lines = [f"# command: {command}", f"# machine: {machine}",
         f"# {shape} {layout} f32, {trials} measurements per run, seeds {' '.join(seeds)}; reference best = "
         f"{ref:.1f} GFLOP/s (the best any run measured; MetaSchedule's figures come from its own runner)",
         f"# confirmed reference = {confirmed:.1f} GFLOP/s (the best winner re-measured side by side, below)", "",
         "| method | best after 16 | after 32 | after %d | to 95%% of the reference (median; runs that got there) | to 95%% of the confirmed reference | search wall time (median) |" % trials,
         "|---|---|---|---|---|---|---|"]
for label, cs in curves.items():
    med = lambda n: statistics.median(best_after(c, n) for c in cs)
    hits = [to95(c) for c in cs]
    got = [h for h in hits if h is not None]
    hit = f"{statistics.median(got):.0f} ({len(got)}/{len(cs)})" if got else f"> {trials} (0/{len(cs)})"
    chits = [to95c(c) for c in cs]
    cgot = [h for h in chits if h is not None]
    chit = f"{statistics.median(cgot):.0f} ({len(cgot)}/{len(cs)})" if cgot else f"> {trials} (0/{len(cs)})"
    lines.append(f"| {label} | {med(16):.1f} | {med(32):.1f} | {med(trials):.1f} | {hit} | {chit} | {statistics.median(walls[label]):.0f} s |")

times = [10, 20, 30, 60, 120, 240]
lines += ["", "Best so far against the search's wall time (median over seeds, GFLOP/s; compile and measurement "
          "included; MetaSchedule's measurements spread evenly over its wall time):", "",
          "| method | " + " | ".join(f"after {t} s" for t in times) + " |", "|---|" + "---|" * len(times)]
for label in curves:
    lines.append(f"| {label} | " + " | ".join(
        f"{statistics.median(best_by(label, i, t) for i in range(len(curves[label]))):.1f}" for t in times) + " |")

lines += ["", "Winners side by side (GFLOP/s, median over the rounds; Sextant's harness unless said):", "",
          "| run | winner re-measured |", "|---|---|"]
for label, gs in side.items():
    lines.append(f"| {label} | {statistics.median(gs):.1f} |")
for s in seeds:
    js = os.path.join(tmp, f"ms-{s}.json")
    if os.path.exists(js):
        d = json.load(open(js))
        lines.append(f"| metaschedule-{s} (re-timed by TVM, cache flush; max error {d['winner_max_abs_err']:.1e}) | "
                     f"{d['winner_retimed_gflops']:.1f} |")
lib = json.load(open(os.path.join(tmp, "lib.json")))
for l in lib.get("libraries", []):
    if l.get("status") == "ok":
        lines.append(f"| {l['description']}{' (fastest)' if l.get('fastest') else ''} | {l['gflops']:.1f} |")
text = "\n".join(lines) + "\n"
open(out + ".txt", "w").write(text)
json.dump({"shape": shape, "layout": layout, "trials": trials, "seeds": seeds, "machine": machine,
           "reference_best_gflops": ref, "curves": curves, "wall_s": walls, "stamps_s": stamps, "side_by_side": side,
           "libraries": lib.get("libraries", [])}, open(out + ".json", "w"), indent=1)
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, aw) = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, cs in curves.items():
        n = max(len(c) for c in cs)
        med = [statistics.median(best_after(c, i + 1) for c in cs) for i in range(n)]
        ax.plot(range(1, n + 1), med, label=label)
        end = max(walls[label] + [1.0])
        grid = [end ** (j / 200) for j in range(201)]
        aw.plot(grid, [statistics.median(best_by(label, i, t) for i in range(len(cs))) for t in grid], label=label)
    ax.set_xlabel("measurements")
    ax.set_ylabel("best so far, GFLOP/s (median over seeds)")
    aw.set_xlabel("search wall time, s (MetaSchedule's spread evenly)")
    aw.set_xscale("log")
    fig.suptitle(f"{shape} {layout} f32, 1 thread: {machine.split(';')[0]}", fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=110)
except ImportError:
    pass
