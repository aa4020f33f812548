#!/usr/bin/env python3
"""Measurements to 95% of a *confirmed* reference, from a compare.sh JSON: the reference is the best
winner as re-measured side by side (median of its rounds, Sextant's harness), not the single best
measurement of any run (one lucky measurement on a noisy VM makes that unreachable).
Usage: reach.py experiments/results/peers_SHAPE_LAYOUT_TN.json"""
import json
import statistics
import sys

d = json.load(open(sys.argv[1]))
ref = max(statistics.median(v) for v in d["side_by_side"].values())
print(f"# command: experiments/peers/reach.py {sys.argv[1]}")
print(f"# confirmed reference: {ref:.1f} GFLOP/s (best winner re-measured side by side); 95% = {0.95 * ref:.1f}")
print()
print("| method | measurements to 95% of the confirmed reference, per seed | median |")
print("|---|---|---|")
for label, cs in d["curves"].items():
    hits = [next((i + 1 for i, g in enumerate(c) if g >= 0.95 * ref), None) for c in cs]
    got = [h for h in hits if h is not None]
    med = f"{statistics.median(got):.0f} ({len(got)}/{len(hits)} runs)" if got else f"> {d['trials']} (0/{len(hits)})"
    print(f"| {label} | {', '.join(str(h) if h else '-' for h in hits)} | {med} |")
