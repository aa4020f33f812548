#include "sextant/codegen/ops.h"

namespace sextant {

const std::vector<OpInfo>& registeredOps() {
  static const std::vector<OpInfo> ops = {
      {OpKind::Gemm, "gemm", "512x512x512", "C[M,N] = A[M,K] * B[K,N] (linalg.matmul); --layout NN, NT, TN", true,
       makeGemmWorkload},
      {OpKind::BatchMatmul, "batch_matmul", "32x256x256x128",
       "C[b,M,N] = A[b,M,K] * B[b,K,N] for b < B (linalg.batch_matmul); --layout NN, NT (attention's Q.K^T), TN",
       false, makeBatchMatmulWorkload},
      {OpKind::Conv2d, "conv2d", "mb1ic64ih56oc64kh3ph1",
       "2-D convolution (linalg.conv_2d_nhwc_hwcf): input NHWC, filter HWCF; strides, padding, dilation; groups 1 and depthwise",
       false, makeConvWorkload},
  };
  return ops;
}

std::string knownOpNames() {
  std::string s;
  for (const OpInfo& op : registeredOps()) s += (s.empty() ? "" : ", ") + std::string(op.name);
  return s;
}

Result<const OpInfo*> findOp(const std::string& name) {
  for (const OpInfo& op : registeredOps())
    if (name == op.name) return &op;
  return Error{"unknown op '" + name + "' (known: " + knownOpNames() + ")"};
}

const OpInfo& opInfo(OpKind kind) {
  for (const OpInfo& op : registeredOps())
    if (op.kind == kind) return op;
  return registeredOps().front();
}

}  // namespace sextant
