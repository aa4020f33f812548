#!/usr/bin/env python3
"""Best-so-far curves of the tuning runs in a Sextant SQLite database (issue #37: "64 trials reach
90% of the final best"): per run, the best measured GFLOP/s after 8, 16, 32, 48, 64 ... trials (in
the order the records were measured), and the first trial that reached 90% and 95% of the run's
final best. Measured during the search (one measurement per candidate), so a curve's last point
can differ from the final comparison's figure. A plot beside it with --plot (matplotlib).

usage: experiments/tuning_curves.py DB [DB ...] [--plot OUT.png]
"""
import argparse
import sqlite3
import sys


def curves(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    runs = con.execute("SELECT r.id, w.key FROM runs r JOIN workloads w ON w.id = r.workload_id ORDER BY r.id").fetchall()
    out = []
    for run_id, key in runs:
        g = [x or 0.0 for (x,) in con.execute(
            "SELECT CASE WHEN status = 'ok' THEN gflops ELSE 0 END FROM records WHERE run_id = ? ORDER BY id", (run_id,))]
        best, curve = 0.0, []
        for x in g:
            best = max(best, x)
            curve.append(best)
        if curve:
            out.append((db, key, curve))
    return out


def first_reaching(curve, level):
    for i, x in enumerate(curve):
        if x >= level * curve[-1]:
            return i + 1
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dbs", nargs="+")
    ap.add_argument("--plot", default=None)
    args = ap.parse_args()
    rows = [c for db in args.dbs for c in curves(db)]
    if not rows:
        sys.exit("error: no tuning runs in " + ", ".join(args.dbs))
    print("command: experiments/tuning_curves.py " + " ".join(sys.argv[1:]))
    marks = [8, 16, 32, 48, 64, 96, 128]
    n = max(len(c) for _, _, c in rows)
    marks = [m for m in marks if m <= n]
    print("| workload | trials | " + " | ".join(f"best after {m}" for m in marks) + " | 90% of final at | 95% at |")
    print("|---|---|" + "---|" * len(marks) + "---|---|")
    for db, key, c in rows:
        cells = [f"{c[min(m, len(c)) - 1]:.1f}" for m in marks]
        print(f"| {key} | {len(c)} | " + " | ".join(cells) + f" | {first_reaching(c, 0.90)} | {first_reaching(c, 0.95)} |")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for db, key, c in rows:
            ax.plot(range(1, len(c) + 1), c, label=key.replace("*bf16->f32", "").replace(":weights", " (w)"))
        ax.set_xlabel("trials (measurements)")
        ax.set_ylabel("best GFLOP/s so far")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
