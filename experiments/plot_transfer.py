#!/usr/bin/python3
"""Tuning curves of the transfer experiment (transfer --curves FILE.csv) as one PNG: median over
seeds of the best recorded throughput found (fraction of the held-out workload's best) against the
number of (replayed) measurements, one panel per held-out workload, each strategy with and without
the pretrained model. Debian's python3-matplotlib."""
import csv
import math
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_transfer.py CURVES.csv OUT.png")
    data = defaultdict(lambda: defaultdict(dict))  # workload -> strategy/variant -> seed -> [fractions]
    with open(sys.argv[1]) as f:
        for row in csv.DictReader(f):
            key = row["strategy"] + "/" + row["variant"]
            data[row["workload"]][key].setdefault(row["seed"], []).append(float(row["best_fraction"]))
    workloads = sorted(data)
    cols = min(4, len(workloads))
    rows = math.ceil(len(workloads) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False)
    styles = {"cold": "-", "pretrained": "--", "cross": ":"}
    colors = {}
    for i, w in enumerate(workloads):
        ax = axes[i // cols][i % cols]
        for key in sorted(data[w]):
            strategy, variant = key.split("/")
            colors.setdefault(strategy, "C%d" % len(colors))
            runs = list(data[w][key].values())
            n = max(len(r) for r in runs)
            padded = [r + [r[-1]] * (n - len(r)) for r in runs]  # stopped at 99%: flat after
            med = [sorted(col)[len(col) // 2] for col in zip(*padded)]
            ax.plot(range(1, n + 1), med, styles.get(variant, "-"), color=colors[strategy], label=key, linewidth=1.3)
        ax.axhline(0.95, color="grey", linestyle=":", linewidth=1)
        ax.set_title(w.replace("gemm:", "").replace(":f32*f32->f32", ""), fontsize=8)
        ax.set_xlabel("replayed measurements", fontsize=8)
        ax.set_ylabel("best found / best recorded", fontsize=8)
        ax.set_ylim(0.5, 1.01)
        ax.set_xscale("log")
        ax.grid(alpha=0.3)
    for j in range(len(workloads), rows * cols):
        axes[j // cols][j % cols].axis("off")
    axes[0][0].legend(fontsize=6)
    fig.suptitle("Leave-one-workload-out transfer: replay of recorded CPU measurements (median over seeds); "
                 "solid: cold, dashed: pretrained, dotted: cross-CPU", fontsize=9)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
