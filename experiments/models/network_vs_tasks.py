#!/usr/bin/env python3
"""Each tuned op of a network beside its task (issue #32): the time `tune profile` measured for
the op's calls in the network against its task's best measured latency in the database that
`tune model` tuned it in, per task, the largest loss first. Where the network is slower than its
tasks says what the task measurement leaves out (an epilogue's reads, operands that are not in
the state the tuner measured them in).

  experiments/models/network_vs_tasks.py PROFILE.json DB

PROFILE.json: `tune profile OUT.so --report json`; DB: the SQLite database of `tune model`.
Matrix products match `gemm:NN:MxNxK`, dense convolutions `conv2d:NHWC:...`; other ops (depthwise,
grouped, batched) are listed as unmatched. For GEMMs it also says whether the winner computes a
fused epilogue on its register tiles (the whole K in them, nothing packed) or as a second pass.
"""
import collections
import json
import re
import sqlite3
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: network_vs_tasks.py PROFILE.json DB")
    prof, db = sys.argv[1], sys.argv[2]
    try:
        ops = json.load(open(prof))["ops"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("network_vs_tasks: %s is not the JSON of `tune profile --report json` (%s)" % (prof, e))
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        con.execute("select 1 from records limit 1")
    except sqlite3.Error as e:
        sys.exit("network_vs_tasks: %s is not a Sextant database (%s)" % (db, e))
    # Each task's fastest record: its latency (ms) and its knobs (the fastest last: it stays).
    best, knobs = {}, {}
    for key, ms, k in con.execute("select w.key, r.median_s * 1e3, r.knobs from records r join workloads w on w.id = r.workload_id "
                                  "where r.status = 'ok' and r.median_s > 0 order by r.median_s desc"):
        best[key], knobs[key] = ms, json.loads(k)

    def in_registers(key):
        """A GEMM whose epilogue runs on its register tiles (docs/models.md): the whole K in them
        (tile_k = K, the fill fused) and nothing packed; otherwise the epilogue is a second pass over
        each block. '-' for other ops."""
        k = knobs.get(key, {})
        m = re.match(r"gemm:NN:(\d+)x(\d+)x(\d+):", key)
        if not m or "tile_k" not in k:
            return "-"
        whole = k["tile_k"] == int(m[3]) and not k.get("pack_a") and not k.get("pack_b") and not k.get("gemv")
        return "yes" if whole else "no (tile_k %d of %s%s)" % (k["tile_k"], m[3], ", packed" if k.get("pack_a") or k.get("pack_b") else "")

    def task_of(label):
        m = re.search(r"linalg\.matmul -> (\d+)x(\d+) <- (\d+)x(\d+)", label)
        if m:
            prefix = "gemm:NN:%sx%sx%s:" % (m[1], m[2], m[3])
            return next((k for k in best if k.startswith(prefix)), prefix + "?")
        m = re.search(r"conv_2d_nhwc_hwcf -> 1x(\d+)x(\d+)x(\d+) <- (\d+)x(\d+)x(\d+)x(\d+)( stride (\d+))?", label)
        if m:
            oh, ow, oc, kh, ic, s = int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[6]), int(m[9] or 1)
            want = "ic%dih%d" % (ic, oh * s), "oc%doh%dow%dkh%d" % (oc, oh, ow, kh), "sh%d" % s
            return next((k for k in best if k.startswith("conv2d:") and all(p in k for p in want)), None)
        return None

    groups = collections.defaultdict(list)
    unmatched = 0.0
    for op in ops:
        if op.get("kind") not in ("matmul", "conv"):
            continue
        key = task_of(op["label"])
        if key in best:
            groups[key].append(op["s"] * 1e3)
        else:
            unmatched += op["s"] * 1e3
    rows = []
    for key, each in groups.items():
        net, task = sum(each), len(each) * best[key]
        rows.append((net - task, key, each, net, task))
    rows.sort(reverse=True)
    print("%-72s %4s %9s %9s %8s  %-24s %s" % ("task", "ops", "net ms", "tasks ms", "loss", "epilogue in registers",
                                                "each op in the network (ms)"))
    for loss, key, each, net, task in rows:
        print("%-72s %4d %9.3f %9.3f %+8.3f  %-24s %s" % (key[:72], len(each), net, task, loss, in_registers(key),
                                                       " ".join("%.3f" % e for e in sorted(each, reverse=True))))
    net = sum(r[3] for r in rows)
    task = sum(r[4] for r in rows)
    print("%-72s %4s %9.3f %9.3f %+8.3f" % ("all matched ops", "", net, task, net - task))
    if unmatched:
        print("ops without a matching task (depthwise, grouped, batched): %.3f ms" % unmatched)


if __name__ == "__main__":
    main()
