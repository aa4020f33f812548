#!/usr/bin/env python3
"""The GPU search's first proposals against the whole space, on shapes in no training data.

Reads the bundles experiments/gpu_search_heldout.sh made (OUT/space-D-S: every wgmma schedule of
the shape plus the untuned default; OUT/search-D-S-sN: the default strategy's first proposals,
seed N, made from the training dataset alone) and the results tune-runner wrote for them on a GPU
(RESULTS/NAME.results.json), and prints one table per shape: cuBLAS in each run, the whole
space's best and the default's rank in it, and per seed the best after 1, 4, 8 and all proposals,
the trials to reach 95% of the best measured for the shape, and the ratio to cuBLAS in the same
run. Proposal order is the bundle's kernel order (the order the search proposed them).
Standard library only.
"""
import argparse
import json
import os
import statistics
import sys


def load(bundle, results):
    m = json.load(open(os.path.join(bundle, "manifest.json")))
    r = json.load(open(results))
    by_id = {x["id"]: x for x in r["results"]}
    kernels = []
    for k in m["kernels"]:
        x = by_id.get(k["id"])
        role = k.get("static", {}).get("role", "")
        status = x["status"] if x else "not_run"
        g = x["gflops"] if x and status == "ok" else None
        kernels.append({"id": k["id"], "knobs": k.get("knobs", {}), "role": role, "status": status, "gflops": g})
    refs = [x["gflops"] for x in r["references"] if x["status"] == "ok"]
    return {"workload": m["workloads"][0]["key"], "kernels": kernels, "cublas": refs[0] if refs else None,
            "device": r["device"]["name"], "date": r["date"]}


def knob_text(k):
    keys = ["block_m", "block_n", "block_k", "warp_m", "pipeline", "warp_specialize", "mma"]
    return ",".join(f"{x}={k[x]}" for x in keys if x in k)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="the bundles' directory (gpu_search_heldout.sh make OUT)")
    ap.add_argument("results", nargs="+", help="directories of NAME.results.json (later ones win)")
    a = ap.parse_args()
    runs = {}
    for name in sorted(os.listdir(a.out)):
        b = os.path.join(a.out, name)
        if not os.path.isfile(os.path.join(b, "manifest.json")):
            continue
        res = None
        for d in a.results:
            f = os.path.join(d, name + ".results.json")
            if os.path.isfile(f):
                res = f
        if res:
            runs[name] = load(b, res)
        else:
            print(f"{name}: no results", file=sys.stderr)
    shapes = sorted({n.split("-", 1)[1].rsplit("-s", 1)[0] if n.startswith("search-") else n.split("-", 1)[1]
                     for n in runs})
    devices = sorted({r["device"] for r in runs.values()})
    print(f"device: {', '.join(devices)}; results of {min(r['date'] for r in runs.values())[:10]}")
    for shape in shapes:
        space = runs.get("space-" + shape)
        searches = sorted((n, r) for n, r in runs.items() if n.startswith("search-" + shape + "-s"))
        every = [k["gflops"] for r in runs.values() if r["workload"] == (space or searches[0][1])["workload"]
                 for k in r["kernels"] if k["gflops"]]
        best_all = max(every) if every else 0
        wl = (space or searches[0][1])["workload"]
        cub = [r["cublas"] for r in runs.values() if r["workload"] == wl and r["cublas"]]
        print(f"\n== {wl}")
        print(f"cuBLAS, each run: {' '.join(f'{c / 1e3:.1f}' for c in cub)} TFLOP/s "
              f"(median {statistics.median(cub) / 1e3:.1f}; ratios below are to the same run's cuBLAS)")
        print(f"best measured for the shape, any bundle: {best_all / 1e3:.1f} TFLOP/s")
        if space:
            ok = sorted((k for k in space["kernels"] if k["gflops"]), key=lambda k: -k["gflops"])
            d = [k for k in space["kernels"] if k["role"] == "default"]
            rank = next((i + 1 for i, k in enumerate(ok) if d and k["id"] == d[0]["id"]), None)
            print(f"whole space: {len(ok)} of its {len(space['kernels'])} schedules measured (the default among them), "
                  f"best {ok[0]['gflops'] / 1e3:.1f} ({ok[0]['gflops'] / space['cublas']:.2f}x cuBLAS; "
                  f"{knob_text(ok[0]['knobs'])})" if ok else "whole space: nothing measured")
            if d and d[0]["gflops"]:
                print(f"the untuned default: {d[0]['gflops'] / 1e3:.1f} ({d[0]['gflops'] / space['cublas']:.2f}x cuBLAS), "
                      f"rank {rank} of {len(ok)} measured")
        if searches:
            print(f"{'seed':<6}{'#1':>8}{'best@4':>9}{'best@8':>9}{'best@all':>10}{'proposals':>11}"
                  f"{'to 95%':>8}{'vs cuBLAS':>11}{'vs default':>12}")
            for name, r in searches:
                g = [k["gflops"] or 0 for k in r["kernels"]]
                best = lambda n: max(g[:n]) if g[:n] else 0
                to95 = next((i + 1 for i, _ in enumerate(g) if best(i + 1) >= 0.95 * best_all), None)
                not_run = sum(1 for k in r["kernels"] if k["status"] != "ok")
                print(f"{name.rsplit('-', 1)[1]:<6}{g[0] / 1e3:8.1f}{best(4) / 1e3:9.1f}{best(8) / 1e3:9.1f}"
                      f"{best(len(g)) / 1e3:10.1f}{len(g):>8}{f' ({not_run} not ok)' if not_run else '':>3}"
                      f"{to95 if to95 else '-':>8}{best(len(g)) / r['cublas']:10.2f}x{best(len(g)) / g[0]:11.2f}x")
    print("\nTFLOP/s (median of each kernel's repetitions); #1 is the search's first proposal (the untuned default).")


if __name__ == "__main__":
    main()
