// Paired measurements (the head-to-head call by call): two kernels timed in alternating calls in
// one process, after both were verified; the library side through sextant-libref.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sextant/codegen/workload.h"
#include "sextant/runtime/cpu_runner.h"
#include "sextant/runtime/libraries.h"

using namespace sextant;
using json = nlohmann::json;

namespace {
GemmProblem problem(int64_t m, int64_t n, int64_t k) {
  GemmWorkload w;
  w.m = m, w.n = n, w.k = k;
  auto p = GemmProblem::create(w);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error());
  return std::move(*p);
}
MeasureOptions quick() {
  MeasureOptions o;
  o.min_reps = 6;
  o.max_reps = 8;
  o.min_time_s = 0.0;
  o.timeout_s = 10;
  return o;
}
std::string kernel(const char* mode) { return std::string(KERNEL_DIR) + "/kernel_" + mode + ".so"; }
const CpuLibrary* openblas() {
  for (const CpuLibrary& l : cpuLibraries())
    if (l.name == "openblas" && l.available) return &l;
  return nullptr;
}
}  // namespace

// Verification first (one call each), then the timed calls in pairs of alternating order: 1 2, 2 1,
// 1 2, ... so that neither always runs right after the other; both get as many repetitions.
TEST(PairedMeasurement, CallsAlternateAfterBothAreVerified) {
  auto p = problem(64, 48, 32);
  std::string order;
  KernelFn one = [&](float* a, float* b, float* c) { order += '1', p.runBlas(a, b, c); };
  KernelFn two = [&](float* a, float* b, float* c) { order += '2', p.runBlas(a, b, c); };
  json j = json::parse(measurePairHere(p, one, two, quick()));
  ASSERT_EQ(j["first"]["status"], "ok") << j;
  ASSERT_EQ(j["second"]["status"], "ok") << j;
  EXPECT_EQ(order, "12" "122112211221");
  EXPECT_EQ(j["first"]["times"].size(), 6u);
  EXPECT_EQ(j["second"]["times"].size(), 6u);
}

// A kernel that does twice the work is about twice as slow in every pair: the ratios of the pairs
// say so (this checks the pairing, not a speed: the bounds are wide).
TEST(PairedMeasurement, PairRatiosSeeTwiceTheWork) {
  auto p = problem(256, 256, 256);
  KernelFn once = [&](float* a, float* b, float* c) { p.runBlas(a, b, c); };
  KernelFn twice = [&](float* a, float* b, float* c) { p.runBlas(a, b, c), p.runBlas(a, b, c); };
  MeasureOptions o = quick();
  o.min_reps = o.max_reps = 21;
  json j = json::parse(measurePairHere(p, once, twice, o));
  auto t1 = j["first"]["times"].get<std::vector<double>>(), t2 = j["second"]["times"].get<std::vector<double>>();
  ASSERT_EQ(t1.size(), t2.size());
  std::vector<double> r;
  for (size_t i = 0; i < t1.size(); ++i) r.push_back(t2[i] / t1[i]);
  std::sort(r.begin(), r.end());
  EXPECT_GT(r[r.size() / 2], 1.3);
  EXPECT_LT(r[r.size() / 2], 3.0);
}

// When one fails verification neither is timed, and the other says why it was not measured.
TEST(PairedMeasurement, AWrongKernelTimesNeither) {
  auto p = problem(32, 48, 16);
  KernelFn right = [&](float* a, float* b, float* c) { p.runBlas(a, b, c); };
  KernelFn wrong = [&](float* a, float* b, float* c) { p.runBlas(a, b, c), c[5] += 1; };
  json j = json::parse(measurePairHere(p, wrong, right, quick()));
  EXPECT_EQ(j["first"]["status"], "wrong_result");
  EXPECT_EQ(j["second"]["status"], "load_error");
  EXPECT_NE(j["second"]["message"].get<std::string>().find("not measured"), std::string::npos) << j;
  EXPECT_FALSE(j["first"].contains("times") && !j["first"]["times"].empty());
}

// Memory a kernel keeps besides the operands (a library's reordered weights) is evicted with them
// before each timed call once the kernel registers it, and the measurement says how much; memory
// forgotten by its owner is not touched again (the buffer is freed right after: a clflush of it
// would fault).
TEST(PairedMeasurement, RegisteredMemoryIsEvictedWithTheOperands) {
  auto p = problem(32, 48, 16);
  auto copy = std::make_unique<std::vector<float>>(1 << 16, 1.0f);
  const size_t bytes = copy->size() * sizeof(float);
  const size_t before = alsoEvictedBytes();
  bool registered = false;
  KernelFn with_copy = [&](float* a, float* b, float* c) {
    if (!registered) evictWithOperands(copy->data(), bytes), registered = true;
    p.runBlas(a, b, c);
    c[0] += (*copy)[7] - 1.0f;  // reads its copy on every call
  };
  json j = json::parse(measureKernelHere(p, with_copy, quick()));
  ASSERT_EQ(j["status"], "ok") << j;
  EXPECT_EQ(j.value("also_evicted_bytes", size_t(0)), before + bytes) << j;
  forgetEvicted(copy->data());
  copy.reset();
  EXPECT_EQ(alsoEvictedBytes(), before);
  KernelFn plain = [&](float* a, float* b, float* c) { p.runBlas(a, b, c); };
  json k = json::parse(measureKernelHere(p, plain, quick()));
  ASSERT_EQ(k["status"], "ok") << k;
  EXPECT_EQ(k.value("also_evicted_bytes", size_t(0)), before) << k;
}

// oneDNN's convolution reorders its weights once into a copy of its own: sextant-libref evicts that
// copy with the operands before each timed call (a copy left warm in L2/L3 while the tuned kernel's
// weights come from memory made oneDNN up to 1.4x faster on 7x7-pixel layers).
TEST(PairedMeasurement, OnednnConvolutionWeightsAreEvictedToo) {
  const CpuLibrary* conv = nullptr;
  for (const CpuLibrary& l : cpuLibraries())
    if (l.name == "onednn" && l.config == "conv" && l.available) conv = &l;
  if (!conv) GTEST_SKIP() << "oneDNN's convolution primitive is not available here (libdnnl-dev): nothing to check";
  auto w = makeConvWorkload("mb1ic64ih7oc96kh3ph1", "f32", "NHWC");
  ASSERT_TRUE(w.ok()) << w.error();
  auto p = GemmProblem::create(*w);
  ASSERT_TRUE(p.ok()) << p.error();
  Measurement m = measureLibrary(*p, *conv, quick());
  ASSERT_TRUE(m.ok()) << m.message;
  // 3 x 3 x 64 x 96 floats, in whatever blocked layout oneDNN picked (at least that many bytes).
  EXPECT_GE(m.also_evicted_bytes, size_t(3 * 3 * 64 * 96 * 4));
  EXPECT_NE(conv->describe(1, false, false).find("evicted"), std::string::npos);
}

// The library side: sextant-libref measures OpenBLAS and a compiled kernel (a shared object with
// the candidates' entry point) call by call; broken kernels fail as they do alone.
TEST(PairedMeasurement, LibraryAgainstACompiledKernel) {
  const CpuLibrary* lib = openblas();
  if (!lib) GTEST_SKIP() << "sextant-libref or OpenBLAS is not available here: the paired library measurement cannot run";
  auto p = problem(48, 40, 32);
  auto [k, l] = measureLibraryPaired(p, *lib, kernel("naive"), quick());
  ASSERT_TRUE(k.ok()) << k.message;
  ASSERT_TRUE(l.ok()) << l.message;
  EXPECT_EQ(k.times_s.size(), l.times_s.size());
  EXPECT_GE(k.times_s.size(), 6u);
  EXPECT_LT(k.max_abs_err, 1e-3);

  auto [kw, lw] = measureLibraryPaired(p, *lib, kernel("wrong"), quick());
  EXPECT_EQ(kw.status, MeasureStatus::WrongResult);
  EXPECT_EQ(lw.status, MeasureStatus::LoadError);
  auto [kc, lc] = measureLibraryPaired(p, *lib, kernel("crash"), quick());
  EXPECT_EQ(kc.status, MeasureStatus::Crash);
  EXPECT_EQ(lc.status, MeasureStatus::Crash);
  auto [km, lm] = measureLibraryPaired(p, *lib, "/nonexistent/kernel.so", quick());
  EXPECT_EQ(km.status, MeasureStatus::LoadError);
  EXPECT_EQ(lm.status, MeasureStatus::LoadError);
  // More than one thread: refused (two OpenMP runtimes in one process), the rounds are used instead.
  MeasureOptions two = quick();
  two.blas_threads = 2;
  auto [k2, l2] = measureLibraryPaired(p, *lib, kernel("naive"), two);
  EXPECT_EQ(k2.status, MeasureStatus::LoadError);
}
