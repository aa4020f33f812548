#!/usr/bin/env python3
"""One peer on one zoo model (issue #32): ONNX Runtime or IREE, run by the virtual environment of
setup_venv.sh. Prints one JSON line: peer, version, threads, median and min latency (s) over at least
--min-time seconds after a warm-up call, and the max abs error against NAME.out0.f32 (PyTorch's).

  run_peer.py ort|iree ZOO_DIR NAME --threads T [--min-time S] [--work DIR]

IREE as ../shared/notes/peers.md runs it: iree-import-onnx (opset 17), iree-compile for llvm-cpu with
the host CPU, the local-sync driver for 1 thread and local-task with T workers otherwise.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def timed(fn, min_time):
    """Median and min latency, calls, and the cores kept busy meanwhile (process CPU time / wall)."""
    fn()
    times = []
    start, cpu0 = time.perf_counter(), time.process_time()
    while len(times) < 5 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    cpu_per_wall = (time.process_time() - cpu0) / (time.perf_counter() - start)
    return statistics.median(times), min(times), len(times), cpu_per_wall


def ort_session(path, threads, profile_prefix=None):
    """ONNX Runtime as every script here runs it: the CPU provider, `threads` intra-op threads, one
    inter-op thread, every graph optimization; with profile_prefix its profiler on."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("peer", choices=["ort", "iree"])
    ap.add_argument("zoo")
    ap.add_argument("name")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=2.0)
    ap.add_argument("--work", default="/tmp/sextant-models-iree")
    a = ap.parse_args()
    path = os.path.join(a.zoo, a.name + ".onnx")
    want = np.fromfile(os.path.join(a.zoo, a.name + ".out0.f32"), np.float32)
    x_flat = np.fromfile(os.path.join(a.zoo, a.name + ".in0.f32"), np.float32)
    out = {"peer": a.peer, "model": a.name, "threads": a.threads}
    if a.peer == "ort":
        import onnxruntime as ort
        s = ort_session(path, a.threads)
        inp = s.get_inputs()[0]
        x = x_flat.reshape(inp.shape)
        run = lambda: s.run(None, {inp.name: x})[0]
        out["version"] = "onnxruntime " + ort.__version__
    else:
        import iree.compiler as ic
        import iree.runtime as rt
        os.makedirs(a.work, exist_ok=True)
        mlir = os.path.join(a.work, a.name + ".mlir")
        vmfb = os.path.join(a.work, a.name + ".vmfb")
        bindir = os.path.dirname(sys.executable)
        subprocess.run([os.path.join(bindir, "iree-import-onnx"), path, "--opset-version", "17", "-o", mlir],
                       check=True, capture_output=True)
        subprocess.run([os.path.join(bindir, "iree-compile"), mlir, "--iree-hal-target-device=local",
                        "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host",
                        "-o", vmfb], check=True, capture_output=True)
        # local-sync: the calling thread only; local-task: a worker per core (this machine's 2 for 2).
        cfg = rt.Config("local-sync" if a.threads == 1 else "local-task")
        ctx = rt.SystemContext(config=cfg)
        with open(vmfb, "rb") as f:
            vm = rt.VmModule.copy_buffer(ctx.instance, f.read())
        ctx.add_vm_module(vm)
        fname = [n for n in vm.function_names if not n.startswith("__") and "$async" not in n][0]
        f = ctx.modules[vm.name][fname]
        import onnx
        shape = [d.dim_value for d in onnx.load(path, load_external_data=False).graph.input[0].type.tensor_type.shape.dim]
        x = x_flat.reshape(shape)
        run = lambda: np.asarray(f(x))
        from importlib.metadata import version
        out["version"] = "iree-base-runtime " + version("iree-base-runtime")
    y = np.asarray(run()).reshape(-1)
    out["max_abs_error"] = float(np.abs(y - want).max())
    out["max_abs_expected"] = float(np.abs(want).max())
    med, mn, n, cpu = timed(run, a.min_time)
    out.update({"median_s": med, "min_s": mn, "calls": n, "cpu_per_wall": cpu})
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
