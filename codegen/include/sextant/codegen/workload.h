// Workloads: what is tuned. A GEMM C[M,N] = A[M,K] * B[K,N] with static sizes, element types
// and a storage layout for A and B. Knows nothing about schedules or devices.
#pragma once

#include <cstdint>
#include <string>

#include "sextant/common/result.h"

namespace sextant {

enum class DType { F32, F16, BF16 };
const char* dtypeName(DType t);
Result<DType> parseDType(const std::string& s);
int dtypeBytes(DType t);

// NN: A is MxK, B is KxN. NT: B is stored NxK (B transposed). TN: A is stored KxM.
enum class Layout { NN, NT, TN };
const char* layoutName(Layout l);
Result<Layout> parseLayout(const std::string& s);

struct GemmWorkload {
  int64_t m = 0, n = 0, k = 0;
  DType a_type = DType::F32, b_type = DType::F32;
  DType c_type = DType::F32;  // output and accumulation type
  Layout layout = Layout::NN;

  // Canonical key, e.g. "gemm:NN:1024x1024x1024:f32*f32->f32". Used everywhere a workload is
  // stored or looked up; never a hash of IR text.
  std::string key() const;
  std::string shapeString() const;  // "1024x1024x1024"
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  int64_t bytesNeeded() const;      // A + B + C (+ a reference copy of C)
  // The payload: a public function `sextant_gemm(A, B, C)` on memrefs (C interface), whose body
  // is a linalg.fill + linalg.matmul on tensors (destination-passing, bufferized in place).
  std::string payloadMlir() const;

  bool operator==(const GemmWorkload&) const = default;
};

// "MxNxK" with positive integers.
Result<GemmWorkload> parseGemmShape(const std::string& shape);
// A GEMM from command-line pieces: "MxNxK", input dtype (f32, f16, bf16; C is f32), layout.
Result<GemmWorkload> makeGemmWorkload(const std::string& shape, const std::string& dtype, const std::string& layout);
// Parses a key produced by GemmWorkload::key().
Result<GemmWorkload> parseWorkloadKey(const std::string& key);
// Checks sizes against a memory budget (bytes) and the dtypes against what a target supports.
Status validateForMemory(const GemmWorkload& w, int64_t available_bytes);

}  // namespace sextant
