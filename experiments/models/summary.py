#!/usr/bin/env python3
"""The table, JSON and plot of experiments/models_vs_peers.sh from its JSON lines.

  summary.py RESULTS.jsonl OUT_PREFIX "ARGS" "CPU MODEL"
"""
import json
import sys
import time


def main():
    src, prefix, args, cpu = sys.argv[1:5]
    notes = sys.argv[5:]
    rows = [json.loads(l) for l in open(src) if l.strip()]
    models = []
    for r in rows:
        if r["model"] not in models:
            models.append(r["model"])
    peers = []
    for r in rows:
        if r["peer"] != "sextant" and r["peer"] not in peers:
            peers.append(r["peer"])
    ok = lambda e, big: e is not None and e >= 0 and e <= 1e-3 * big
    first = next((r["sextant"] for r in rows if r["peer"] == "sextant"), {})
    cpu = f"{cpu} (LLVM {first.get('device', '?')}, machine {first.get('machine', '?')})"
    lines = [f"# experiments/models_vs_peers.sh {args}".rstrip(),
             f"# machine: {cpu}; {time.strftime('%Y-%m-%d')}; latency in ms (median of timed calls), batch 1;",
             "# every output checked against PyTorch's (max abs error <= 1e-3 of the largest output: ok; off: not)"]
    head = f"{'model':<14} {'threads':>7} {'sextant':>9} {'untuned':>9} {'estimate':>9} " + \
           " ".join(f"{p:>20}" for p in peers) + f" {'floor':>7} {'vs best peer':>12} {'trials':>6} {'tuning':>7} check"
    lines.append(head)
    table = {}
    for m in models:
        s = next((r for r in rows if r["model"] == m and r["peer"] == "sextant"), None)
        ps = {r["peer"]: r for r in rows if r["model"] == m and r["peer"] != "sextant"}
        j = s["sextant"] if s else {}
        tuned = j.get("measured_tuned_s")
        # A peer that kept more cores busy than its threads while timed (cpu_per_wall, since
        # 2026-12-03: Debian's PyTorch through OpenBLAS's own pool) is not on the same threads:
        # named, and not the best peer.
        over = lambda r: (r.get("cpu_per_wall") or 0) > (r.get("threads") or 1) + 0.3
        best_peer = min((p["median_s"] for p in ps.values()
                         if ok(p.get("max_abs_error"), p.get("max_abs_expected", 0)) and not over(p)), default=None)
        chk = j.get("check") or {}
        checks = ["sextant " + ("ok" if chk.get("ok") else "FAILED")]
        for p, r in ps.items():
            r["output_ok"] = ok(r.get("max_abs_error"), r.get("max_abs_expected", 0))
            r["more_threads"] = over(r)
            checks.append(p + " " + ("ok" if ok(r.get("max_abs_error"), r.get("max_abs_expected", 0)) else "off") +
                          (f" (used {r['cpu_per_wall']:.1f} cores: not compared)" if over(r) else ""))
        fmt = lambda v: f"{v * 1e3:.2f}" if v else "-"
        lines.append(f"{m:<14} {j.get('threads', '-'):>7} {fmt(tuned):>9} {fmt(j.get('measured_untuned_s')):>9} "
                     f"{fmt(j.get('estimate_tuned_s')):>9} " +
                     " ".join(f"{fmt(ps[p]['median_s']) if p in ps else '-':>20}" for p in peers) +
                     f" {fmt(j.get('fma_floor_s')):>7} {(best_peer / tuned if tuned and best_peer else 0):>11.2f}x"
                     f" {j.get('trials', 0):>6} {s['wall_s'] if s else 0:>6}s " + ", ".join(checks))
        table[m] = {"sextant": j, "peers": ps, "best_peer_s": best_peer, "tuning_wall_s": s["wall_s"] if s else None}
    lines.append("# 'estimate': sum of weight x best latency of the tuned ops (the rest of the network is untuned); "
                 "'floor': the network's FLOPs at the FMA peak measured after tuning; 'vs best peer': the fastest "
                 "peer's latency / Sextant's, among peers whose output is ok and that kept no more cores busy than "
                 "their threads (above 1: Sextant is faster)")
    lines += ["# " + n for n in notes]
    text = "\n".join(lines) + "\n"
    open(prefix + ".txt", "w").write(text)
    json.dump({"args": args, "cpu": cpu, "models": table}, open(prefix + ".json", "w"), indent=1)
    print(text, end="")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)")
        return
    names = ["sextant", "untuned"] + peers
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(models), 4))
    w = 0.8 / len(names)
    for k, n in enumerate(names):
        vals = []
        for m in models:
            t = table[m]
            base = t["best_peer_s"] or 1
            v = t["sextant"].get("measured_tuned_s") if n == "sextant" else \
                t["sextant"].get("measured_untuned_s") if n == "untuned" else \
                (t["peers"][n]["median_s"] if n in t["peers"] else None)
            vals.append(base / v if v else 0)
        ax.bar([i + k * w for i in range(len(models))], vals, w, label=n)
    ax.axhline(1, color="k", lw=0.8)
    ax.set_xticks([i + 0.4 - w / 2 for i in range(len(models))])
    ax.set_xticklabels(models)
    ax.set_ylabel("speed relative to the fastest peer")
    ax.set_title(f"{cpu}, {table[models[0]]['sextant'].get('threads', 1)} thread(s), batch 1", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)
    print("plot:", prefix + ".png")


if __name__ == "__main__":
    main()
