// Measures GEMM kernels on the host CPU. Every measurement runs in an isolated child process
// (see isolation.h): a crash, a hang or a wrong result becomes a failure record.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sextant/codegen/workload.h"
#include "sextant/common/result.h"
#include "sextant/runtime/blas.h"

namespace sextant {

struct MeasureOptions {
  int warmup = 1;            // untimed calls before timing (the first one is also verified)
  int min_reps = 5;          // timed repetitions, at least
  int max_reps = 100;        // and at most
  double min_time_s = 0.2;   // keep repeating until the timed calls add up to this
  bool flush_cache = true;   // evict A, B and C from all caches before each repetition
  int64_t flush_bytes = 0;   // 0: clflush the operands (x86); else write a buffer of this size
  double timeout_s = 30;     // per candidate, the whole child included
  // Address space the measuring child may map beyond what it inherits (setrlimit): a candidate
  // allocating past it crashes there and is recorded as a failure. 0: half the physical memory;
  // < 0: no limit.
  long long memory_limit_bytes = 0;
  int blas_threads = 1;  // measureOpenBlas: OpenBLAS threads (the same as the tuned kernels')
  double rtol = 1e-3;        // |c - ref| <= atol + rtol * |ref|
  double atol_per_k = 1e-5;  // atol = atol_per_k * K (inputs are uniform in [-1, 1])
};

enum class MeasureStatus { Ok, WrongResult, Crash, Timeout, LoadError };
const char* measureStatusName(MeasureStatus s);  // "ok", "wrong_result", "crash", ...

struct Measurement {
  MeasureStatus status = MeasureStatus::Crash;
  std::string message;
  std::vector<double> times_s;  // every timed repetition
  double median_s = 0;
  double cv = 0;                // coefficient of variation of the repetitions
  double max_abs_err = 0;
  double gflops = 0;            // from the median
  size_t also_evicted_bytes = 0;  // memory besides A, B, C evicted before each call (evictWithOperands)
  bool ok() const { return status == MeasureStatus::Ok; }
};

// Inputs generated once per workload from a seed (a batched matmul: every operand with the batch
// outermost), and the reference output computed once with OpenBLAS. Lives in the parent; children read it (fork shares the pages copy-on-write).
class GemmProblem {
 public:
  static Result<GemmProblem> create(const GemmWorkload& w, uint64_t seed = 42);
  const GemmWorkload& workload() const { return w_; }
  uint64_t seed() const { return seed_; }
  const OpenBlas& blas() const { return *blas_; }
  // M = 1: the reference (and the peer's speed) is cblas_sgemv, OpenBLAS's best routine there.
  bool usesGemv() const { return w_.m == 1 && !w_.isConv() && blas_->sgemv; }
  std::string referenceName(int threads) const {
    return blas_->describe(threads) + (usesGemv() ? ", cblas_sgemv: M = 1" : "");
  }
  const std::vector<float>& a() const { return a_; }
  const std::vector<float>& b() const { return b_; }
  const std::vector<float>& reference() const { return ref_; }
  // Runs OpenBLAS on (a, b) into c with this workload's layout (a batched matmul: once per batch
  // element; a convolution: the direct loops of the reference, accumulated in double).
  void runBlas(const float* a, const float* b, float* c) const;

 private:
  void runBlasElement(const float* a, const float* b, float* c) const;
  GemmWorkload w_;
  uint64_t seed_ = 42;
  const OpenBlas* blas_ = nullptr;
  std::vector<float> a_, b_, ref_;
};

// A kernel called on (A, B, C) with the problem's row-major operands.
using KernelFn = std::function<void(float*, float*, float*)>;

// The kernel of a compiled candidate, a shared object exporting `_mlir_ciface_sextant_gemm`, loaded
// into this process (its operands passed as MLIR memref descriptors of the workload's shapes);
// null with `error` set when it cannot be loaded.
KernelFn loadSharedObjectKernel(const GemmWorkload& w, const std::string& so_path, std::string& error);
// A compiled candidate, measured in an isolated child.
Measurement measureSharedObject(const GemmProblem& p, const std::string& so_path, const MeasureOptions& o);
// The OpenBLAS peer, through the same harness (isolation, flush, repetitions).
Measurement measureOpenBlas(const GemmProblem& p, const MeasureOptions& o);

// The measurement itself, in the calling process (a measuring child, or sextant-libref): calls
// `kernel` once and verifies C against the reference, then times repetitions with the operands
// evicted from the caches before each. Returns the measurement as JSON text (status, times,
// max_abs_err, message), which measurementFromChild reads back.
std::string measureKernelHere(const GemmProblem& p, const KernelFn& kernel, const MeasureOptions& o);
// Two kernels measured call by call in alternating order (1 2, 2 1, ...) after both were verified:
// repetition i of each is a pair taken back to back, so that their ratio is not moved by a change
// of the machine's speed that lasts longer than a call (a neighbour's load on a VM). Until both
// have min_reps repetitions and min_time_s in all (max_reps pairs at most). Returns
// {"first": ..., "second": ...}, each as measureKernelHere's JSON; when one fails verification
// neither is timed. pairFromChild reads it back.
std::string measurePairHere(const GemmProblem& p, const KernelFn& first, const KernelFn& second,
                            const MeasureOptions& o);
struct ChildOutcome;
// A measuring child's outcome (its JSON, or how it died) as a Measurement of workload `w`.
Measurement measurementFromChild(const ChildOutcome& co, const GemmWorkload& w);
// A measuring child's outcome of measurePairHere: {first, second} (a failed child fails both).
std::pair<Measurement, Measurement> pairFromChild(const ChildOutcome& co, const GemmWorkload& w);

// Memory a kernel reads besides A, B and C that stays across calls: a library's own copy of the
// weights in its layout (oneDNN's reordered convolution weights, made once as an inference engine
// does). Registered by the kernel (on its first, verified call), it is evicted with the operands
// before each timed call of this process, so that every contender starts each call from the same
// cold caches (a 2-9 MB weight copy left in L2/L3 made oneDNN look up to 1.4x faster on the
// 7x7-pixel layers than the same data read from memory). Measurements report the bytes as
// "also_evicted_bytes".
void evictWithOperands(const void* data, size_t bytes);
// The memory goes away (its owner's destructor): no longer evicted.
void forgetEvicted(const void* data);
// Bytes registered with evictWithOperands in this process so far.
size_t alsoEvictedBytes();

// Median and coefficient of variation of a sample.
void summarize(const std::vector<double>& times, double& median, double& cv);

}  // namespace sextant
