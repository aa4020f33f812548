#!/usr/bin/env python3
"""Test-retest of a recorded dataset: how well can *any* cost model rank its records?

Re-measures a random sample of a replay dataset's successful candidates (each recorded schedule,
measured again with `tune --schedule`, in two passes over the sample), and prints Kendall tau
between the recorded throughput and each pass, and between the two passes. A model's tau is
computed against the recorded values, so the recorded values' own repeatability bounds it: a
model that knew each candidate's true mean throughput would score about
    tau_ceiling = (2/pi) * asin(sqrt(sin(pi/2 * tau_retest)))
against one noisy measurement (Greiner's relation tau = (2/pi) asin(rho) for a bivariate normal
in log throughput, with rho(true, one run) = sqrt(rho(run, run))). That ceiling is an ESTIMATE
under a normal-noise assumption, printed as such; the taus are measured.

Usage: experiments/retest.py DATASET.jsonl.gz [--count 200] [--seed 1] [--min-time 0.05]
           [--tune build/tools/tune] [--csv OUT.csv]
Standard library only. Runs on this machine; nothing else should run meanwhile.
"""
import argparse, gzip, json, math, os, random, subprocess, sys, tempfile, time


def kendall_tau(a, b):
    """Kendall's tau-b (ties in either list count as neither concordant nor discordant)."""
    n, conc, disc, ta, tb = len(a), 0, 0, 0, 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ta += 1
            elif db == 0:
                tb += 1
            elif (da > 0) == (db > 0):
                conc += 1
            else:
                disc += 1
    den = math.sqrt((conc + disc + ta) * (conc + disc + tb))
    return (conc - disc) / den if den else 0.0


def ceiling(tau_retest):
    s = math.sin(math.pi / 2 * max(tau_retest, 0.0))
    return 2 / math.pi * math.asin(math.sqrt(s))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.05)
    ap.add_argument("--tune", default="build/tools/tune")
    ap.add_argument("--csv")
    a = ap.parse_args()

    recs = []
    with gzip.open(a.dataset, "rt") if a.dataset.endswith(".gz") else open(a.dataset) as f:
        for i, line in enumerate(f):
            d = json.loads(line)
            if i == 0 or "schedule" not in d:
                continue
            if d.get("status", "ok") == "ok" and d.get("gflops", 0) > 0:
                recs.append(d)
    if not recs:
        sys.exit(f"error: {a.dataset} holds no successful records")
    w = recs[0]["workload"]
    wl, shape, layout = w["key"], f"{w['m']}x{w['n']}x{w['k']}", w["layout"]
    random.Random(a.seed).shuffle(recs)
    recs = recs[: a.count]
    tmp = tempfile.mkdtemp(prefix="sextant-retest-")
    db = os.path.join(tmp, "retest.db")
    passes = [[], []]
    t0 = time.time()
    for p in range(2):
        for i, r in enumerate(recs):
            path = os.path.join(tmp, "s.mlir")
            with open(path, "w") as f:
                f.write(r["schedule"])
            cmd = [a.tune, "--schedule", path, "--shape", shape, "--layout", layout, "--db", db,
                   "--min-time", str(a.min_time), "--final-rounds", "0", "--report", "json", "-q"]
            out = subprocess.run(cmd, capture_output=True, text=True)
            try:
                g = json.loads(out.stdout)["gflops"] if out.returncode == 0 else 0.0
            except (ValueError, KeyError):
                g = 0.0
            passes[p].append(g)
            done = p * len(recs) + i + 1
            el = time.time() - t0
            print(f"\r  pass {p + 1}/2, {i + 1}/{len(recs)}  ({el:.0f} s, ETA {el / done * (2 * len(recs) - done):.0f} s)",
                  end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    keep = [i for i in range(len(recs)) if passes[0][i] > 0 and passes[1][i] > 0]
    rec = [recs[i]["gflops"] for i in keep]
    p1 = [passes[0][i] for i in keep]
    p2 = [passes[1][i] for i in keep]
    t_r1, t_r2, t_12 = kendall_tau(rec, p1), kendall_tau(rec, p2), kendall_tau(p1, p2)
    rel = sorted(abs(x / y - 1) for x, y in zip(p1, rec))
    cv = sorted(recs[i].get("cv", 0) for i in keep)
    prov = a.dataset + ".provenance.json"
    recorded_on = ""
    if os.path.exists(prov):
        with open(prov) as f:
            pj = json.load(f)
        recorded_on = f" recorded on {pj.get('cpu_model', '?')} ({pj.get('llvm_host_cpu', '?')})"
    here = [l.strip() for l in subprocess.run([a.tune, "hw", "show", "cpu"], capture_output=True, text=True).stdout.splitlines() if "LLVM CPU" in l or "model" in l]
    print(f"{os.path.basename(a.dataset)} ({wl}{recorded_on}): {len(keep)} of {len(recs)} re-measured twice here "
          f"({', '.join(' '.join(l.split()) for l in here)}; min-time {a.min_time} s, {time.strftime('%Y-%m-%d')}, {time.time() - t0:.0f} s)")
    print(f"  Kendall tau recorded vs pass 1: {t_r1:.3f}, recorded vs pass 2: {t_r2:.3f}, pass 1 vs pass 2: {t_12:.3f}")
    print(f"  |pass 1 / recorded - 1|: median {rel[len(rel) // 2]:.1%}, 90th percentile {rel[int(len(rel) * 0.9)]:.1%}; "
          f"recorded in-run cv median {cv[len(cv) // 2]:.1%}")
    other_cpu = os.path.exists(prov) and pj.get("llvm_host_cpu") and not any(
        pj["llvm_host_cpu"] in line for line in here if "LLVM CPU" in line)
    if other_cpu:
        print(f"  NOTE: recorded on {pj['llvm_host_cpu']}, re-measured on another CPU: 'recorded vs pass' mixes the "
              "two CPUs' differences with noise; 'pass vs pass' is this CPU's repeatability")
    print(f"  ceiling of a model's tau against one run's records (ESTIMATE, normal noise): "
          f"{ceiling(t_12):.3f} (from pass vs pass), {ceiling((t_r1 + t_r2) / 2):.3f} (from recorded vs re-measured)")
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("candidate,recorded_gflops,pass1_gflops,pass2_gflops\n")
            for i in keep:
                f.write(f"\"{recs[i]['candidate']}\",{recs[i]['gflops']},{passes[0][i]},{passes[1][i]}\n")


if __name__ == "__main__":
    main()
