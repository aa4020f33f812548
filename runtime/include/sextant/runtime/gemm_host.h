// Host side of GPU GEMM measurement, testable without a GPU: f16/bf16 conversions, the inputs
// of a workload (generated once from a seed and stored in the workload's element types), the
// double-precision CPU reference over all or a deterministic sample of C's entries, and the
// tolerance check of a result against it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sextant/codegen/workload.h"
#include "sextant/common/result.h"

namespace sextant {

// IEEE 754 binary16 and bfloat16, round to nearest, ties to even. NaN stays NaN (quiet),
// overflow becomes infinity, f16 underflow goes through the subnormals to (signed) zero.
uint16_t floatToHalfBits(float f);
float halfBitsToFloat(uint16_t h);
uint16_t floatToBf16Bits(float f);
float bf16BitsToFloat(uint16_t h);
// The value `f` takes once stored as `t` (identity for f32).
float roundToDType(float f, DType t);
// Encodes n floats as `t` into out (n * dtypeBytes(t) bytes) and back.
void encodeDType(const float* in, int64_t n, DType t, void* out);
void decodeDType(const void* in, int64_t n, DType t, float* out);

// Which entries of C are checked: all of them when M*N*K <= full_limit, otherwise `samples`
// deterministic pseudo-random entries plus the four corners.
struct CheckPolicy {
  int64_t full_limit = int64_t(1) << 28;
  int64_t samples = 4096;
};

// |c - ref| <= atol + rtol * |ref|.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
// f32 inputs: rtol 1e-3, atol 1e-4 * sqrt(K); f16/bf16 inputs: rtol 1e-2, atol 1e-3 * sqrt(K).
// The reference uses the same rounded inputs, so the tolerance covers only the accumulation
// (order, f32 accumulators) and the rounding of C when C is f16/bf16; see runtime/README.md.
Tolerance defaultTolerance(const GemmWorkload& w);

class GemmHostProblem {
 public:
  // Inputs uniform in [-1, 1] from std::mt19937_64(seed) (A in storage order, then B), rounded
  // to the workload's element types; then the reference.
  static Result<GemmHostProblem> create(const GemmWorkload& w, uint64_t seed = 42, CheckPolicy policy = {});
  // Given inputs in storage order (A: MxK, or KxM for TN; B: KxN, or NxK for NT), rounded to
  // the element types.
  static Result<GemmHostProblem> fromValues(const GemmWorkload& w, const std::vector<float>& a,
                                            const std::vector<float>& b, CheckPolicy policy = {});

  const GemmWorkload& workload() const { return w_; }
  uint64_t seed() const { return seed_; }
  // Device representation of A and B (element type, storage layout).
  const std::vector<uint8_t>& aBytes() const { return a_bytes_; }
  const std::vector<uint8_t>& bBytes() const { return b_bytes_; }
  int64_t cBytes() const { return w_.batch * w_.m * w_.n * dtypeBytes(w_.c_type); }
  // Logical elements A[i][k] and B[k][j] (as stored, i.e. rounded), whatever the layout. A batched
  // matmul's rows are global (row i of batch element i / M: C is (B*M) x N); b() is element 0's.
  float a(int64_t i, int64_t k) const;
  float b(int64_t k, int64_t j) const;
  float bOf(int64_t element, int64_t k, int64_t j) const;
  // sum_k A[i][k] * B[k][j] (B of row i's batch element), accumulated in double.
  double referenceEntry(int64_t i, int64_t j) const;

  bool fullCheck() const { return full_; }
  // Number of checked entries, their row-major indices into C (i * N + j; empty when every entry
  // is checked) and their reference values (in index order).
  int64_t checkedEntries() const { return int64_t(ref_.size()); }
  const std::vector<int64_t>& checkedIndices() const { return idx_; }
  const std::vector<double>& reference() const { return ref_; }
  int64_t checkedIndex(int64_t n) const { return full_ ? n : idx_[size_t(n)]; }

 private:
  void computeReference(const CheckPolicy& policy);
  GemmWorkload w_;
  uint64_t seed_ = 0;
  std::vector<uint8_t> a_bytes_, b_bytes_;
  bool full_ = false;
  std::vector<int64_t> idx_;
  std::vector<double> ref_;
};

struct CheckResult {
  bool ok = false;
  int64_t checked = 0;
  int64_t failures = 0;
  double max_abs_err = 0;  // over the checked entries; 1e300 when one is NaN or infinite
  std::string message;     // empty when ok; else names the first wrong entry
};

// Compares C (device representation: MxN row-major, batch elements one after another, c_type) with the problem's reference.
CheckResult checkGemmResult(const GemmHostProblem& p, const void* c, const Tolerance& t);

}  // namespace sextant
