// OpenBLAS, the trusted reference (correctness) and the peer (speed) for f32 GEMM on the CPU.
// Loaded at run time so that it can be configured first: single thread, and the kernels that
// match the host's vector ISA. Debian's DYNAMIC_ARCH build falls back to its slowest kernels
// ("Prescott") on CPUs it cannot name, as on the VMs this project runs on, which would make
// every ratio against it flattering.
#pragma once

#include <string>

#include "sextant/common/result.h"

namespace sextant {

struct OpenBlas {
  using Sgemm = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                         const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
  Sgemm sgemm = nullptr;
  // y = alpha * op(A) x + beta * y: the routine OpenBLAS is at its best with for M = 1 (a GEMM
  // with one row of C is a matrix-vector product; its sgemm does not switch to it).
  using Sgemv = void (*)(int order, int trans, int m, int n, float alpha, const float* a, int lda, const float* x,
                         int incx, float beta, float* y, int incy);
  Sgemv sgemv = nullptr;
  // The exact reference of s8 x s8 -> s32 GEMMs (issue #37): small integers in doubles, every sum
  // exact (|C| < 2^53).
  using Dgemm = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, double alpha, const double* a,
                         int lda, const double* b, int ldb, double beta, double* c, int ldc);
  Dgemm dgemm = nullptr;
  std::string config;    // openblas_get_config()
  std::string corename;  // the kernel family in use
  int threads = 1;
  void (*set_threads)(int) = nullptr;  // openblas_set_num_threads (the measuring child uses it)
  // "OpenBLAS 0.3.21 (SkylakeX kernels, 1 thread)"; threads > 0: as it runs with that many.
  std::string describe(int threads = 0) const;
};

// The OpenBLAS kernel family for the host ISA ("SkylakeX", "Haswell"; empty: leave it alone).
std::string openBlasCoreTypeForHost();

// Sets OPENBLAS_NUM_THREADS=1 and OPENBLAS_CORETYPE (unless the user set them) and, if the
// process had to change its environment, re-executes it so that the settings are in place before
// any library is loaded: OpenBLAS reads them once, when it is loaded, and a program that links
// LibTorch loads it before main(). Returns only when no re-execution was needed or it failed.
void configureOpenBlasEnvironment(char** argv);

// The reference is OpenBLAS with the fastest kernels this CPU runs (SkylakeX on any AVX-512 CPU,
// Haswell on AVX2), one thread like the tuned code: configureOpenBlasEnvironment overrides an
// OPENBLAS_CORETYPE preset by the environment (SEXTANT_KEEP_OPENBLAS_CORETYPE=1 keeps it) and
// describe() names what the environment asked for, or warns that the ratio flatters when kept.
// Loads libopenblas once per process (thread count 1; OPENBLAS_CORETYPE chosen from the host
// ISA unless the user set it). Fails if OpenBLAS is not using the requested kernels (it was
// loaded, unconfigured, before this call).
Result<const OpenBlas*> loadOpenBlas();

}  // namespace sextant
