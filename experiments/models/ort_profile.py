#!/usr/bin/env python3
"""ONNX Runtime's time op by op on a zoo model (issue #32), in the kinds `tune profile` uses, to set
beside Sextant's per-op profile (tune model --profile, tune profile): which kind of op loses.

  ort_profile.py ZOO_DIR NAME [--threads T] [--min-time S] [--top N] [--json OUT]

Run by experiments/models/setup_venv.sh's environment (onnxruntime). ORT's own profiler
(SessionOptions.enable_profiling): each node's kernel time per call, the median over the calls,
after one warm-up call; ORT fuses a conv with its bias and activation (FusedConv), so a conv row
here holds its epilogue, as Sextant's rows do when the epilogue is fused into the conv's tiles.
"""
import argparse
import collections
import json
import os
import statistics
import tempfile
import time

import numpy as np

from run_peer import ort_session  # the same ONNX Runtime configuration as the benchmark


def kind_of(op, shapes):
    """tune profile's kinds: conv, conv 1x1, depthwise conv, matmul, pooling, elementwise, other."""
    if op in ("Conv", "FusedConv", "NhwcFusedConv") and len(shapes) >= 2 and len(shapes[1]) == 4:
        x, w = shapes[0], shapes[1]
        cin = x[1] if op != "NhwcFusedConv" else x[3]
        if w[1] == 1 and cin > 1:
            return "depthwise conv"
        return "conv 1x1" if w[2] == 1 and w[3] == 1 else "conv"
    if op in ("Gemm", "MatMul", "FusedMatMul", "FusedGemm"):
        return "matmul"
    if "Pool" in op:
        return "pooling"
    if op in ("Add", "Mul", "Sub", "Div", "Relu", "Clip", "Sigmoid", "Erf", "Sum"):
        return "elementwise"
    return "other (" + op + ")"


def flops_of(op, shapes, out_shape):
    """2 x multiply-adds of a convolution or matmul (0: not one)."""
    if op in ("Conv", "FusedConv", "NhwcFusedConv") and len(shapes) >= 2 and out_shape:
        w = shapes[1]
        n = 1
        for d in out_shape:
            n *= d
        return 2.0 * n * w[1] * w[2] * w[3]
    if op in ("Gemm", "MatMul", "FusedMatMul", "FusedGemm") and len(shapes) >= 2 and out_shape:
        n = 1
        for d in out_shape:
            n *= d
        k = shapes[0][-1]
        return 2.0 * n * k
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("zoo")
    ap.add_argument("name")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=2.0)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    import onnxruntime as ort
    path = os.path.join(a.zoo, a.name + ".onnx")
    x_flat = np.fromfile(os.path.join(a.zoo, a.name + ".in0.f32"), np.float32)
    s = ort_session(path, a.threads, os.path.join(tempfile.mkdtemp(), "ort"))
    inp = s.get_inputs()[0]
    x = x_flat.reshape(inp.shape)
    s.run(None, {inp.name: x})
    calls, whole = 0, []
    start = time.perf_counter()
    while calls < 5 or time.perf_counter() - start < a.min_time:
        t0 = time.perf_counter()
        s.run(None, {inp.name: x})
        whole.append(time.perf_counter() - t0)
        calls += 1
    trace = json.load(open(s.end_profiling()))
    per_node = collections.defaultdict(list)
    info = {}
    for e in trace:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        args = e.get("args", {})
        per_node[name].append(e["dur"] * 1e-6)
        if name not in info:
            shapes = [list(d.values())[0] for d in args.get("input_type_shape", [])]
            outs = [list(d.values())[0] for d in args.get("output_type_shape", [])]
            op = args.get("op_name", "?")
            info[name] = (op, shapes, outs[0] if outs else [])
    rows = []
    for name, ts in per_node.items():
        ts = ts[1:] if len(ts) > calls else ts  # the warm-up call's
        op, shapes, out_shape = info[name]
        rows.append({"node": name, "op": op, "kind": kind_of(op, shapes), "s": statistics.median(ts),
                     "flops": flops_of(op, shapes, out_shape),
                     "label": "%s %s <- %s" % (op, "x".join(map(str, out_shape)),
                                               "x".join(map(str, shapes[1])) if len(shapes) > 1 else "")})
    rows.sort(key=lambda r: -r["s"])
    med = statistics.median(whole)
    tot = sum(r["s"] for r in rows)
    kinds = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for r in rows:
        k = kinds[r["kind"]]
        k[0] += 1
        k[1] += r["s"]
        k[2] += r["flops"]
    print("onnxruntime %s, %s, %d thread(s): %.3f ms a call (median of %d profiled calls); the nodes sum to %.3f ms"
          % (ort.__version__, a.name, a.threads, med * 1e3, calls, tot * 1e3))
    print("\n%-16s %5s %10s %7s %16s" % ("kind", "ops", "ms", "share", "rate"))
    for k, (n, t, f) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        rate = "%.1f GFLOP/s" % (f / t / 1e9) if f > 0 and t > 0 else "-"
        print("%-16s %5d %10.3f %6.1f%% %16s" % (k, n, t * 1e3, 100 * t / med, rate))
    print("\n%-4s %10s %7s %16s  %s" % ("#", "ms", "share", "rate", "node"))
    for i, r in enumerate(rows[: a.top]):
        rate = "%.1f GFLOP/s" % (r["flops"] / r["s"] / 1e9) if r["flops"] > 0 and r["s"] > 0 else "-"
        print("%-4d %10.3f %6.1f%% %16s  %s (%s)" % (i + 1, r["s"] * 1e3, 100 * r["s"] / med, rate, r["label"], r["node"]))
    if a.json:
        json.dump({"peer": "ort", "version": ort.__version__, "model": a.name, "threads": a.threads, "whole_s": med,
                   "calls": calls, "nodes": rows,
                   "kinds": [{"kind": k, "ops": v[0], "s": v[1], "flops": v[2]} for k, v in kinds.items()]},
                  open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
