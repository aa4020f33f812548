// oneDNN's matmul primitive (rank 2 for a GEMM, rank 3 for a batched matmul, the operands' strides
// as the workload stores them), loaded with dlopen like the other reference libraries: the
// reference issue #31 asks for (dnnl_sgemm has no batch), also a contender for plain GEMMs.
#pragma once

#include <functional>
#include <string>

#include "sextant/codegen/workload.h"

namespace sextant::libref {

struct OnednnMatmul {
  std::function<void(const float*, const float*, float*)> kernel;  // empty: unavailable
  std::string impl;   // the implementation oneDNN picked (e.g. "brg:avx512_core")
  std::string error;  // why unavailable
};

// `dnnl`: a dlopen handle of libdnnl (threads already set). Creates the primitive for `w` once.
OnednnMatmul makeOnednnMatmul(void* dnnl, const GemmWorkload& w);
// oneDNN's convolution for a conv2d workload (onednn_conv.cpp): NHWC source and destination, the
// weights reordered from HWCF once (outside the timed calls); `kernel` as above.
OnednnMatmul makeOnednnConv(void* dnnl, const GemmWorkload& w);
// Whether this build has oneDNN's headers (the primitive is declared through them).
bool onednnMatmulBuilt();

}  // namespace sextant::libref
