#!/usr/bin/env python3
"""Summary of transfer experiment outputs over all held-out workloads, per strategy/variant:
median, geometric mean and worst case of SA-cold's measurements to 95% / the strategy's.

Usage: experiments/transfer_summary.py BASELINE.txt [BASELINE.txt ...] -- RUN.txt[+RUN2.txt] ...
  BASELINE: outputs of a run with sa/cold (experiments/transfer.sh's), which is deterministic (no
  model), so a run of pretrained variants only (e.g. transfer --model-seed 2) is compared with it.
  RUN: one run; '+' joins the parts of one run (e.g. the zen5 and intel outputs).
Per held-out, the ratio is SA-cold's median measurements to 95% / the strategy's (as printed, a
censored '>B' counted as just past the budget), so figures differ slightly from the program's own
summary lines, which use unrounded censored medians. Standard library only.
"""
import math, re, statistics, sys


def table(path):
    rows, w = {}, None
    for line in open(path):
        m = re.match(r"((?:gemm|batch_matmul|conv2d):\S+ @ \S+):", line)
        if m:
            w = m.group(1)
            continue
        if line.startswith("Median") or line.startswith("#"):
            w = None
        m = re.match(r"\s+(\w+/\w+)\s+(\S+)\s+(\S+)\s+(\S+)", line)
        if m and w and not m.group(1).startswith("strategy"):
            v = m.group(3)
            # '>B': not reached within the run's budget B; counted as just past it
            rows[(w, m.group(1))] = float(v[1:]) * 1.0001 if v.startswith(">") else float(v)
    return rows


def main(argv):
    if "--" not in argv or argv.index("--") == 0:
        print(__doc__)
        return 2
    cut = argv.index("--")
    base = {}
    for f in argv[:cut]:
        base.update(table(f))
    for run in argv[cut + 1:]:
        t = {}
        for f in run.split("+"):
            t.update(table(f))
        by = {}
        for (w, s), v in t.items():
            if (w, "sa/cold") in base and v > 0:
                by.setdefault(s, {})[w] = base[(w, "sa/cold")] / v
        print(run)
        for s, d in sorted(by.items()):
            a = list(d.values())
            gm = math.exp(sum(map(math.log, a)) / len(a))
            print("  %-24s %2d held-outs: median %5.2fx  geomean %5.2fx  worst %5.2fx" %
                  (s, len(a), statistics.median(a), gm, min(a)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
