#!/usr/bin/python3
"""Tuning curves of the replay experiment (replay_strategies --curves FILE.csv) as one PNG:
median over seeds of the best recorded throughput found (fraction of the dataset's best) against
the number of (replayed) measurements, one panel per workload. Debian's python3-matplotlib."""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_replay.py CURVES.csv OUT.png")
    data = defaultdict(lambda: defaultdict(dict))  # workload -> strategy -> seed -> [fractions]
    with open(sys.argv[1]) as f:
        for row in csv.DictReader(f):
            d = data[row["workload"]][row["strategy"]].setdefault(row["seed"], [])
            d.append(float(row["best_fraction"]))
    workloads = sorted(data)
    fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        for s in sorted(data[w]):
            runs = list(data[w][s].values())
            n = max(len(r) for r in runs)
            # A run that stopped early (99% reached) stays at its last value.
            padded = [r + [r[-1]] * (n - len(r)) for r in runs]
            med = [sorted(col)[len(col) // 2] for col in zip(*padded)]
            ax.plot(range(1, n + 1), med, label=s, linewidth=1.5)
        ax.axhline(0.95, color="grey", linestyle=":", linewidth=1)
        ax.set_title(w.replace("gemm:", "").replace(":f32*f32->f32", ""), fontsize=9)
        ax.set_xlabel("replayed measurements")
        ax.set_ylabel("best found / best recorded")
        ax.set_ylim(0.5, 1.01)
        ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Replay of recorded CPU measurements (median over seeds); not new measurements", fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
