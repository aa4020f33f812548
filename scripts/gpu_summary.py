#!/usr/bin/env python3
"""Summarises tune-runner results files against their bundles (standard library only).

  gpu_summary.py --run BUNDLE_DIR RESULTS.json [--run ...] [--full FILE] [--json FILE]

Prints, per workload: the cuBLAS reference, the untuned default, the best kernel of each route,
and how many kernels ended in each status; --full writes every kernel (GFLOP/s, ratio to cuBLAS,
max error, registers, shared memory, what was loaded). Kernels whose manifest entry says what
status to expect (static.expect, the self-test bundles) are checked: exit status 1 if one differs.
"""
import argparse
import json
import os
import sys


def load(bundle, results):
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    with open(results) as f:
        res = json.load(f)
    return manifest, res


def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)


def known(v):
    return None if v is None or v < 0 else v


def rows_of(manifest, res):
    kernels = {k["id"]: k for k in manifest["kernels"]}
    refs = {r["workload"]: r for r in res.get("references", []) if r["status"] == "ok"}
    out = []
    for r in res["results"]:
        k = kernels.get(r["id"], {})
        st = k.get("static", {})
        ref = refs.get(r["workload"])
        pre = st.get("resources", {})
        drv = r.get("resources") or {}
        out.append({
            "id": r["id"], "workload": r["workload"], "status": r["status"], "message": r["message"],
            "route": st.get("route", "-"), "role": st.get("role", "-"), "expect": st.get("expect"),
            "gflops": r["gflops"] if r["status"] == "ok" else None,
            "cublas": ref["gflops"] if ref else None,
            "ratio": r["gflops"] / ref["gflops"] if ref and r["status"] == "ok" and ref["gflops"] > 0 else None,
            "max_abs_err": r["max_abs_err"] if r.get("checked_entries") else None,
            "cv": r["cv"] if r["status"] == "ok" else None,
            # -1: not known (a Vulkan driver reports no registers or shared memory per pipeline)
            "registers": known(drv.get("registers", pre.get("registers"))),
            "smem": known(drv.get("static_shared_bytes", pre.get("smem_bytes"))),
            "spill": pre.get("spill_bytes"),
            "loaded": r.get("loaded", ""), "verified": r.get("verified", 0),
            "knobs": k.get("knobs", {}),
        })
    return out, refs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", nargs=2, action="append", metavar=("BUNDLE_DIR", "RESULTS"), required=True)
    ap.add_argument("--full", help="write every kernel's row to this file")
    ap.add_argument("--json", help="write the rows as JSON to this file")
    a = ap.parse_args()

    all_rows, failures, device = [], [], None
    for bundle, results in a.run:
        if not os.path.exists(results):
            print(f"{results}: missing (the runner wrote nothing: no device, or it did not start)")
            failures.append(results)
            continue
        manifest, res = load(bundle, results)
        device = device or res.get("device")
        rows, refs = rows_of(manifest, res)
        for r in rows:
            r["bundle"] = os.path.basename(os.path.normpath(bundle))
            if r["expect"] is not None and r["expect"] != r["status"]:
                failures.append(f"{r['bundle']}/{r['id']}: expected {r['expect']}, got {r['status']}: {r['message'][:200]}")
        all_rows += rows

    if device:
        print(f"device: {device['name']} ({device['arch']}, {device['sm_count']} SMs, driver {device['driver_version']})")
    by_w = {}
    for r in all_rows:
        by_w.setdefault((r["bundle"], r["workload"]), []).append(r)
    hdr = f"  {'kernel':<22} {'route':<9} {'role':<8} {'status':<13} {'GFLOP/s':>10} {'cuBLAS':>10} {'ratio':>6} {'max err':>9} {'regs':>5} {'smem':>7}"
    for (bundle, w), rows in by_w.items():
        print(f"\n{bundle}: {w}")
        print(hdr)
        cub = next((r["cublas"] for r in rows if r["cublas"]), None)
        picks = [r for r in rows if r["role"] == "default" or r["expect"] is not None]
        for route in sorted({r["route"] for r in rows}):
            ok = [r for r in rows if r["route"] == route and r["gflops"]]
            if ok:
                best = max(ok, key=lambda r: r["gflops"])
                if best not in picks:
                    picks.append(best)
        for r in picks:
            role = r["role"] if r["role"] != "random" else "best"
            print(f"  {r['id']:<22} {r['route']:<9} {role:<8} {r['status']:<13} {fmt(r['gflops']):>10} {fmt(cub):>10} "
                  f"{fmt(r['ratio'], '{:.2f}'):>6} {fmt(r['max_abs_err'], '{:.1e}'):>9} {fmt(r['registers'], '{}'):>5} "
                  f"{fmt(r['smem'], '{}'):>7}")
        counts = {}
        for r in rows:
            counts.setdefault(r["route"], {}).setdefault(r["status"], 0)
            counts[r["route"]][r["status"]] += 1
        for route, c in sorted(counts.items()):
            print(f"  {route}: " + ", ".join(f"{n} {s}" for s, n in sorted(c.items())))
        bad = [r for r in rows if r["status"] not in ("ok", "skipped") and r["expect"] is None]
        for r in bad[:5]:
            print(f"    {r['id']} {r['status']}: {r['message'][:160]}")

    if a.full:
        with open(a.full, "w") as f:
            f.write("bundle\tworkload\tid\troute\trole\tstatus\tgflops\tcublas\tratio\tcv\tmax_abs_err\tregisters\tsmem\tspill\tloaded\tverified\tknobs\tmessage\n")
            for r in all_rows:
                f.write("\t".join(str(x) for x in [r["bundle"], r["workload"], r["id"], r["route"], r["role"], r["status"],
                                                  fmt(r["gflops"]), fmt(r["cublas"]), fmt(r["ratio"], "{:.3f}"),
                                                  fmt(r["cv"], "{:.3f}"), fmt(r["max_abs_err"], "{:.2e}"), r["registers"],
                                                  r["smem"], r["spill"], r["loaded"], r["verified"],
                                                  json.dumps(r["knobs"], sort_keys=True), r["message"][:300]]) + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(all_rows, f, indent=1)
    if failures:
        print("\nFAILED expectations:")
        for x in failures:
            print("  " + x)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
