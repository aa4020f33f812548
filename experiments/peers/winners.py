#!/usr/bin/env python3
"""compare.sh helper: each run's winner as "LABEL KNOBS" lines (Sextant runs from their databases,
Optuna from its JSON), for the side-by-side re-measurement through `tune --knobs`."""
import json
import os
import sqlite3
import sys

tmp, seeds = sys.argv[1], sys.argv[2].split()
for s in seeds:
    for st in ("glimpse", "cold", "sa"):
        db = os.path.join(tmp, f"{st}-{s}.db")
        if os.path.exists(db):
            row = sqlite3.connect(db).execute(
                "SELECT candidate FROM records WHERE status='ok' ORDER BY gflops DESC LIMIT 1").fetchone()
            if row:
                print(f"{st}-{s} {row[0]}")
    js = os.path.join(tmp, f"optuna-{s}.json")
    if os.path.exists(js):
        best = json.load(open(js)).get("best_knobs")
        if best:
            print(f"optuna-{s} {best}")
