#!/usr/bin/python3
"""PyTorch eager (Debian's python3-torch 1.13) on one zoo model (issue #32): the module of
make_zoo.py rebuilt with the same seed, T threads, median and min latency (s) over at least
--min-time seconds after a warm-up call, and the max abs error against NAME.out0.f32; one JSON line.
Optionally channels_last for the CNNs (--channels-last), as PyTorch users tune it.

  torch_eager.py ZOO_DIR NAME --threads T [--min-time S] [--channels-last]
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("zoo")
    ap.add_argument("name")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=2.0)
    ap.add_argument("--channels-last", action="store_true")
    a = ap.parse_args()
    # Debian's PyTorch calls OpenBLAS for its matmuls, and OpenBLAS's own thread pool ignores
    # torch.set_num_threads: with set_num_threads(1) alone, the BERT layer ran on both cores of the
    # Zen 4 VM (16.0 ms, 25.7 ms on one; 2026-12-03), so until then the "1 thread" PyTorch column of
    # models_vs_peers was a 2-thread figure wherever OpenBLAS did the work. Set before NumPy or
    # torch loads OpenBLAS (it reads the variable once, when loaded; NumPy loads it too), hence the
    # imports here.
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[v] = str(a.threads)
    import numpy as np
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_zoo
    from run_peer import timed  # the other peers' timing loop, with the cores kept busy
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    make, shape = make_zoo.models()[a.name]
    m = make().eval()
    x = torch.from_numpy(np.fromfile(os.path.join(a.zoo, a.name + ".in0.f32"), np.float32).reshape(shape))
    if a.channels_last:
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    want = np.fromfile(os.path.join(a.zoo, a.name + ".out0.f32"), np.float32)
    with torch.no_grad():
        y = m(x).numpy().reshape(-1)
        median_s, min_s, calls, cpu_per_wall = timed(lambda: m(x), a.min_time)
    print(json.dumps({"peer": "pytorch" + ("-channels-last" if a.channels_last else ""), "model": a.name,
                      "threads": a.threads, "version": torch.__version__,
                      "max_abs_error": float(np.abs(y - want).max()), "max_abs_expected": float(np.abs(want).max()),
                      "median_s": median_s, "min_s": min_s, "calls": calls,
                      "cpu_per_wall": cpu_per_wall}), flush=True)


if __name__ == "__main__":
    main()
