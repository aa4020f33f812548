"""Argument types shared by the CPU benchmark scripts (cpu_gemm_vs_blas, suite_vs_blas)."""
import argparse
import os


def thread_count(text):
    """'all' (or 0): every core this process may run on; otherwise a positive number."""
    if text in ("all", "0"):
        return len(os.sched_getaffinity(0))
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of threads or 'all', got '{text}'")
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number of threads >= 1 or 'all', got '{text}'")
    return n
