#!/usr/bin/env python3
"""Triton's autotuned matmul on the GPU, beside cuBLAS in the same process (a GPU peer of Sextant).

    python3 experiments/peers/triton_gemm.py [--shapes MxNxK,...] [--dtypes f16,bf16] [-o OUT.json]

Runs where PyTorch and Triton are installed with a CUDA GPU (the device machine's image has both;
nothing is installed here). For each shape and input type (NN, row-major, f32 accumulation and an
f32 C, as Sextant's `gemm:NN:MxNxK:f16*f16->f32` workloads) it:
  1. autotunes the matmul kernel of Triton's own tutorial (03-matrix-multiplication) over that
     tutorial's eight CUDA configurations for 16-bit inputs (`triton.autotune`, keyed on M, N, K),
     and times the whole first call: compilation of every configuration plus its benchmark, from a
     cold cache (the on-disk cache is pointed at a fresh folder) -- the "time to a tuned kernel";
  2. checks the tuned kernel's C against an f32 matmul of the same inputs;
  3. times the tuned kernel and cuBLAS (`torch.mm`, f32 output where this PyTorch offers
     out_dtype, else 16-bit output: said in the row) with `triton.testing.do_bench` (L2 cleared
     before every repetition, median).
Figures are this harness's; Sextant's kernels are timed by tune-runner (CUDA events, L2 flushed,
median): compare the two through each harness's cuBLAS ratio, not the raw TFLOP/s.
"""
import argparse
import json
import os
import sys
import tempfile
import time

# A cold cache, so that the autotune time includes compilation.
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-cache-"))

try:
    import torch  # noqa: E402
    import triton  # noqa: E402
    import triton.language as tl  # noqa: E402
except ImportError as e:
    sys.exit(f"triton_gemm: needs PyTorch and Triton (the GPU machine's image has both): {e}")

# The tutorial's CUDA configurations for 16-bit inputs (its get_cuda_autotune_config(), fp8 ones left out).
CONFIGS = [
    triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=8),
    triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=5, num_warps=2),
    triton.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_stages=5, num_warps=2),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc, mask=c_mask)  # f32 C, as Sextant's workloads


def triton_mm(a, b, c):
    M, K = a.shape
    _, N = b.shape
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return c


def cublas_fn(a, b):
    """torch.mm with an f32 C where PyTorch offers it (out_dtype), else its 16-bit C."""
    try:
        torch.mm(a[:16, :16], b[:16, :16], out_dtype=torch.float32)
        return (lambda: torch.mm(a, b, out_dtype=torch.float32)), "f32"
    except (TypeError, RuntimeError):
        return (lambda: torch.mm(a, b)), str(a.dtype).replace("torch.", "")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default="4096x4096x4096,2048x2048x2048,16x4096x4096,4096x11008x4096")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("-o", "--out", help="JSON file for the rows")
    args = p.parse_args()
    shapes = []
    for shape in args.shapes.split(","):
        dims = shape.split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            p.error(f"--shapes: '{shape}' is not MxNxK (three positive integers)")
        shapes.append(tuple(int(d) for d in dims))
    dtypes = args.dtypes.split(",")
    types = {"f16": torch.float16, "bf16": torch.bfloat16}
    for dt in dtypes:
        if dt not in types:
            p.error(f"--dtypes: '{dt}' is not one of f16, bf16")
    if not torch.cuda.is_available():
        print("triton_gemm: no CUDA device: nothing measured", file=sys.stderr)
        return 3
    dev = torch.cuda.get_device_name()
    print(f"triton_gemm: {dev}, torch {torch.__version__}, triton {triton.__version__}, "
          f"cache {os.environ['TRITON_CACHE_DIR']}", flush=True)
    rows = []
    print(f"{'workload':40s} {'tune s':>7s} {'triton TF/s':>11s} {'cuBLAS TF/s':>11s} {'ratio':>6s}  best config / check")
    for dt in dtypes:
        for M, N, K in shapes:
            torch.manual_seed(1)
            a = torch.randn(M, K, device="cuda").to(types[dt])
            b = torch.randn(K, N, device="cuda").to(types[dt])
            c = torch.empty(M, N, device="cuda", dtype=torch.float32)
            torch.cuda.synchronize()
            t = time.perf_counter()
            triton_mm(a, b, c)
            torch.cuda.synchronize()
            tune_s = time.perf_counter() - t
            ref = a.float() @ b.float()
            err = ((c - ref).abs().max() / ref.abs().max()).item()
            ok = err < 1e-2
            flop = 2.0 * M * N * K
            t_tr = triton.testing.do_bench(lambda: triton_mm(a, b, c), return_mode="median")
            fn, c_type = cublas_fn(a, b)
            t_cb = triton.testing.do_bench(fn, return_mode="median")
            best = matmul_kernel.best_config
            row = {
                "workload": f"gemm:NN:{M}x{N}x{K}:{dt}*{dt}->f32", "device": dev,
                "torch": torch.__version__, "triton": triton.__version__,
                "autotune_wall_s": round(tune_s, 3), "configs": len(CONFIGS),
                "triton_ms": t_tr, "triton_tflops": flop / t_tr / 1e9,
                "cublas_ms": t_cb, "cublas_tflops": flop / t_cb / 1e9, "cublas_c": c_type,
                "best_config": str(best), "max_rel_error": err, "correct": ok,
            }
            rows.append(row)
            print(f"{row['workload']:40s} {tune_s:7.1f} {row['triton_tflops']:11.1f} {row['cublas_tflops']:11.1f} "
                  f"{row['triton_tflops'] / row['cublas_tflops']:6.2f}  {best} / "
                  f"{'ok' if ok else 'WRONG'} (rel err {err:.1e}; cuBLAS C {c_type})", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
