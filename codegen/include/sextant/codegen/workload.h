// Workloads: what is tuned. A GEMM C[M,N] = A[M,K] * B[K,N], or a batched matmul
// C[b,M,N] = A[b,M,K] * B[b,K,N] (issue #31), with static sizes, element types and a storage
// layout for A and B. Knows nothing about schedules or devices. What differs between the ops (key
// fields, operands, FLOPs, payload, verification) is each op's OpDef (ops.h), which the methods
// below ask.
#pragma once

#include <cstdint>
#include <string>

#include "sextant/codegen/conv.h"
#include "sextant/common/result.h"

namespace sextant {

// S8, S32 (issue #37): signed 8-bit integers multiplied into 32-bit integer sums (s8 x s8 -> s32),
// the CPU's AMX route only.
enum class DType { F32, F16, BF16, S8, S32 };
const char* dtypeName(DType t);  // the key's name: f32, f16, bf16, s8, s32
// The MLIR element type: f32, f16, bf16, i8, i32 (integers are signless in MLIR; linalg's default
// cast extends them as signed).
const char* mlirTypeName(DType t);
Result<DType> parseDType(const std::string& s);  // also i8, i32 for s8, s32
int dtypeBytes(DType t);
inline bool isIntegerType(DType t) { return t == DType::S8 || t == DType::S32; }
// The AMX route's type triples (issue #37): "bf16 x bf16 -> f32" or "s8 x s8 -> s32" when a
// workload has one of them, else nullptr.
struct GemmWorkload;
const char* lowPrecisionTypes(const GemmWorkload& w);
// K values of one AMX tile row (64 bytes) of type t: 32 bf16, 64 s8.
inline int64_t amxTileK(DType t) { return 64 / dtypeBytes(t); }

// NN: A is MxK, B is KxN. NT: B is stored NxK (B transposed). TN: A is stored KxM.
enum class Layout { NN, NT, TN };
const char* layoutName(Layout l);
Result<Layout> parseLayout(const std::string& s);

// The tuned operation. Gemm: linalg.matmul. BatchMatmul: linalg.batch_matmul, `batch` independent
// GEMMs of the same sizes and layout (every operand has a leading batch dimension). Conv2d:
// linalg.conv_2d_nhwc_hwcf (input NHWC, filter HWCF, output NHWC), described by `conv`; m, n, k
// are then its implicit GEMM's (output pixels, output channels, kh*kw*ic), what the GEMM-shaped
// parts of the data flow (cost-model features, tolerances) read.
enum class OpKind { Gemm, BatchMatmul, Conv2d };
const char* opKindName(OpKind op);  // "gemm", "batch_matmul", "conv2d"

// The workload of every op (the name is from when GEMM was the only one).
struct GemmWorkload {
  OpKind op = OpKind::Gemm;
  int64_t batch = 1;  // BatchMatmul: the batch size; Gemm: 1
  ConvDesc conv;      // Conv2d: the problem
  int64_t m = 0, n = 0, k = 0;
  DType a_type = DType::F32, b_type = DType::F32;
  DType c_type = DType::F32;  // output and accumulation type
  Layout layout = Layout::NN;
  // B (a convolution's filter) is a constant weight, as in a network (tune model): the kernel may
  // take it stored in the blocks it reads, arranged once by the caller outside the timed calls, as
  // inference engines and `tune compile` (a network's weights packed at compile time) do. Key
  // suffix ":weights". Gemm and Conv2d only.
  bool weights = false;

  // Canonical key, e.g. "gemm:NN:1024x1024x1024:f32*f32->f32" or
  // "batch_matmul:NT:12x128x128x64:f32*f32->f32" or
  // "conv2d:NHWC:mb1ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0:f32*f32->f32", with
  // ":weights" after it for a workload with `weights`. Used everywhere
  // a workload is stored or looked up; never a hash of IR text.
  std::string key() const;
  std::string shapeString() const;      // "1024x1024x1024", "12x128x128x64" (BxMxNxK)
  std::string gemmShapeString() const;  // "MxNxK" of one batch element
  bool batched() const { return op == OpKind::BatchMatmul; }
  // One batch element: the same workload as a GEMM (what the schedule knobs and the cost model
  // describe; a batched schedule runs it once per batch element).
  GemmWorkload element() const;
  bool isConv() const { return op == OpKind::Conv2d; }
  double flops() const;  // the op's (ops.h)
  int64_t bytesNeeded() const;      // A + B + C (+ a reference copy of C)
  // Elements of A, B and C as stored (the batch included; a convolution's input, filter, output).
  int64_t aElements() const;
  int64_t bElements() const;
  int64_t cElements() const;
  // The payload: a public function `sextant_gemm(A, B, C)` on memrefs (C interface), whose body
  // is a linalg.fill + linalg.matmul (linalg.batch_matmul) on tensors (destination-passing,
  // bufferized in place).
  std::string payloadMlir() const;

  bool operator==(const GemmWorkload&) const = default;
};

// A convolution that is a GEMM as stored (1x1 filter, stride 1, no padding, one group): its payload
// is a linalg.matmul on the collapsed operands, tuned in the GEMM space (convAsGemm: that GEMM, a
// weights GEMM where the convolution has weights).
bool convIsGemm(const GemmWorkload& w);
GemmWorkload convAsGemm(const GemmWorkload& w);

// "MxNxK" with positive integers.
Result<GemmWorkload> parseGemmShape(const std::string& shape);
// "BxMxNxK" with positive integers: a batched matmul.
Result<GemmWorkload> parseBatchMatmulShape(const std::string& shape);
// A GEMM from command-line pieces: "MxNxK", input dtype (f32, f16, bf16; C is f32), layout.
Result<GemmWorkload> makeGemmWorkload(const std::string& shape, const std::string& dtype, const std::string& layout);
// A batched matmul from command-line pieces: "BxMxNxK", dtype, layout.
Result<GemmWorkload> makeBatchMatmulWorkload(const std::string& shape, const std::string& dtype,
                                             const std::string& layout);
// A convolution from command-line pieces: a benchdnn descriptor (conv.h), dtype (f32), layout
// (NHWC, the default; --layout NN, tune's default, means it too).
Result<GemmWorkload> makeConvWorkload(const std::string& desc, const std::string& dtype, const std::string& layout);
// Parses a key produced by GemmWorkload::key().
Result<GemmWorkload> parseWorkloadKey(const std::string& key);
// Checks sizes against a memory budget (bytes) and the dtypes against what a target supports.
Status validateForMemory(const GemmWorkload& w, int64_t available_bytes);

}  // namespace sextant
