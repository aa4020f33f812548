// oneDNN's primitives as reference kernels (issue #31), loaded with dlopen like the other reference
// libraries: the matmul primitive (rank 2 for a GEMM, rank 3 for a batched matmul, the operands'
// strides as the workload stores them: the batched matmul's reference, dnnl_sgemm having no batch;
// also a contender for plain GEMMs) and the convolution primitive.
#pragma once

#include <functional>
#include <string>

#include "sextant/codegen/workload.h"

namespace sextant::libref {

struct OnednnKernel {
  std::function<void(const float*, const float*, float*)> kernel;  // empty: unavailable
  std::string impl;   // the implementation oneDNN picked (e.g. "brg:avx512_core")
  std::string error;  // why unavailable
};

// `dnnl`: a dlopen handle of libdnnl (threads already set). Creates the primitive for `w` once.
OnednnKernel makeOnednnMatmul(void* dnnl, const GemmWorkload& w);
// oneDNN's convolution for a conv2d workload (onednn_conv.cpp): NHWC source and destination, the
// weights reordered from HWCF (depthwise: HWC) once, outside the timed calls; `kernel` as above.
OnednnKernel makeOnednnConv(void* dnnl, const GemmWorkload& w);
// Whether this build has oneDNN's headers (the primitives are declared through them).
bool onednnPrimitivesBuilt();
inline constexpr const char* kOnednnHeadersMissing = "built without oneDNN's headers (Debian: libdnnl-dev)";

}  // namespace sextant::libref
