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
  std::string config;    // openblas_get_config()
  std::string corename;  // the kernel family in use
  int threads = 1;
  std::string describe() const;  // "OpenBLAS 0.3.21 (SkylakeX kernels, 1 thread)"
};

// Loads libopenblas once per process (thread count 1; OPENBLAS_CORETYPE chosen from the host
// ISA unless the user set it).
Result<const OpenBlas*> loadOpenBlas();

}  // namespace sextant
