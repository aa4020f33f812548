#!/usr/bin/env python3
"""The transfer experiment's headline as issue #35 asks for it: the DEFAULT strategy (glimpse with
the shipped pretrained model), measurements to reach 95% of the best recorded (not ratios of
censored medians), over every held-out workload, per model seed and the median over the seeds,
against cold AutoTVM-style annealing (sa/cold, which has no model and so no model seed).

usage: experiments/transfer_headline.py --baseline A.txt[,B.txt...] --seed N=RUN.txt[+RUN2.txt...] ...
  baseline: transfer outputs with sa/cold rows; each --seed: the outputs of one model seed's run
  (its parts joined with '+'). A '>B' (not reached within the budget B) stays censored: a median
  that lands on one prints '>B'. Standard library only.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transfer_summary import table  # noqa: E402

DEFAULT = "glimpse/pretrained"
COLD = "sa/cold"


def med(values, budget):
    m = statistics.median(values)
    return f">{budget}" if m > budget else f"{m:g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--seed", action="append", required=True, help="N=RUN.txt[+RUN2.txt]")
    ap.add_argument("--budget", type=int, default=256)
    args = ap.parse_args()
    base = {}
    for f in args.baseline.split(","):
        base.update(table(f))
    print("command: experiments/transfer_headline.py " + " ".join(sys.argv[1:]))
    print(f"measurements to reach 95% of the best recorded (median over 10 search seeds per held-out; budget "
          f"{args.budget}; '>{args.budget}' not reached), default strategy {DEFAULT} against {COLD}")
    per_seed = []
    for spec in args.seed:
        seed, files = spec.split("=", 1)
        run = {}
        for f in files.split("+"):
            run.update(table(f))
        helds = sorted(w for (w, s) in run if s == DEFAULT and (w, COLD) in base)
        ours = [run[(w, DEFAULT)] for w in helds]
        cold = [base[(w, COLD)] for w in helds]
        fewer = sum(o < c for o, c in zip(ours, cold))
        ties = sum(o == c for o, c in zip(ours, cold))
        per_seed.append(statistics.median(ours))
        print()
        print(f"model seed {seed}: {len(helds)} held-out workloads")
        print(f"  {'held-out workload':48} {DEFAULT:>19} {COLD:>8}")
        for w, o, c in zip(helds, ours, cold):
            fmt = lambda x: f">{args.budget}" if x > args.budget else f"{x:g}"
            print(f"  {w:48} {fmt(o):>19} {fmt(c):>8}")
        print(f"  median: {DEFAULT} {med(ours, args.budget)}, {COLD} {med(cold, args.budget)}; "
              f"{DEFAULT} needs fewer measurements on {fewer} of {len(helds)} held-outs ({ties} ties)")
    print()
    print(f"median over the {len(per_seed)} model seeds of the per-seed medians: {DEFAULT} "
          f"{med(per_seed, args.budget)} measurements to 95% (per seed: "
          + ", ".join(f">{args.budget}" if x > args.budget else f"{x:g}" for x in per_seed) + ")")


if __name__ == "__main__":
    main()
