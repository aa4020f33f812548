#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include "sextant/runtime/cpu_runner.h"
#include "sextant/runtime/isolation.h"

using namespace sextant;

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
  o.min_reps = 3;
  o.max_reps = 5;
  o.min_time_s = 0.01;
  o.timeout_s = 3;
  return o;
}
std::string kernel(const char* mode) { return std::string(KERNEL_DIR) + "/kernel_" + mode + ".so"; }
}  // namespace

TEST(CpuRunner, CorrectKernelIsMeasuredAndVerified) {
  auto p = problem(48, 40, 32);
  auto m = measureSharedObject(p, kernel("naive"), quick());
  ASSERT_EQ(m.status, MeasureStatus::Ok) << m.message;
  EXPECT_GE(m.times_s.size(), 3u);
  EXPECT_GT(m.median_s, 0);
  EXPECT_GT(m.gflops, 0);
  EXPECT_LT(m.max_abs_err, 1e-3);
}

TEST(CpuRunner, CrashingKernelIsAFailureRecord) {
  auto p = problem(16, 16, 16);
  auto m = measureSharedObject(p, kernel("crash"), quick());
  EXPECT_EQ(m.status, MeasureStatus::Crash);
  EXPECT_NE(m.message.find("SIGSEGV"), std::string::npos) << m.message;
  // The runner (this process) is alive and measures the next candidate.
  EXPECT_EQ(measureSharedObject(p, kernel("naive"), quick()).status, MeasureStatus::Ok);
}

TEST(CpuRunner, HangingKernelTimesOut) {
  auto p = problem(16, 16, 16);
  auto o = quick();
  o.timeout_s = 1;
  auto m = measureSharedObject(p, kernel("hang"), o);
  EXPECT_EQ(m.status, MeasureStatus::Timeout);
  EXPECT_EQ(measureSharedObject(p, kernel("naive"), quick()).status, MeasureStatus::Ok);
}

// Issue #12's fault injection: a measuring child killed with -9, one that hangs, and one that
// allocates past the memory limit (setrlimit) each come back as a failure of their own kind, in
// one sequence, and the runner measures the next candidate as if nothing happened.
TEST(CpuRunner, KilledHungAndOutOfMemoryChildrenAreFailuresAndTheRunGoesOn) {
  auto p = problem(24, 16, 8);
  auto o = quick();
  o.timeout_s = 2;
  o.memory_limit_bytes = 256ll << 20;  // the oom kernel wants 1 GiB
  struct Case {
    const char* mode;
    MeasureStatus want;
    const char* message;
  };
  for (const Case& c : {Case{"naive", MeasureStatus::Ok, ""}, Case{"kill9", MeasureStatus::Crash, "SIGKILL"},
                        Case{"hang", MeasureStatus::Timeout, "timed out"},
                        Case{"oom", MeasureStatus::Crash, "SIGSEGV"}, Case{"naive", MeasureStatus::Ok, ""}}) {
    auto m = measureSharedObject(p, kernel(c.mode), o);
    EXPECT_EQ(m.status, c.want) << c.mode << ": " << m.message;
    EXPECT_NE(m.message.find(c.message), std::string::npos) << c.mode << ": " << m.message;
    EXPECT_EQ(m.times_s.empty(), c.want != MeasureStatus::Ok) << c.mode;
  }
}

TEST(CpuRunner, MemoryLimitBindsOnlyTheChild) {
  // Without a limit the same allocation succeeds (1 GiB on a machine with far more), so the crash
  // above is the limit's doing; the parent's own limit is untouched either way.
  struct rlimit before;
  ASSERT_EQ(getrlimit(RLIMIT_AS, &before), 0);
  auto p = problem(24, 16, 8);
  auto o = quick();
  o.memory_limit_bytes = -1;
  o.timeout_s = 30;
  o.min_reps = o.max_reps = 1;  // each call touches 1 GiB
  if (sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) < (8ll << 30)) GTEST_SKIP() << "less than 8 GiB here";
  auto m = measureSharedObject(p, kernel("oom"), o);
  EXPECT_EQ(m.status, MeasureStatus::Ok) << m.message;
  struct rlimit after;
  ASSERT_EQ(getrlimit(RLIMIT_AS, &after), 0);
  EXPECT_EQ(after.rlim_cur, before.rlim_cur);
  EXPECT_GT(defaultChildMemoryLimit(), 0);
}

// M = 1: the peer is OpenBLAS's sgemv (its best routine for one row of C), in every layout, and
// the reference it computes is the product.
TEST(CpuRunner, OneRowReferenceIsSgemvAndRight) {
  for (Layout l : {Layout::NN, Layout::NT, Layout::TN}) {
    GemmWorkload w;
    w.m = 1, w.n = 40, w.k = 24;
    w.layout = l;
    auto p = GemmProblem::create(w);
    ASSERT_TRUE(p.ok()) << p.error();
    EXPECT_TRUE(p->usesGemv());
    EXPECT_NE(p->referenceName(1).find("sgemv"), std::string::npos);
    for (int64_t j = 0; j < w.n; ++j) {
      double acc = 0;
      for (int64_t l2 = 0; l2 < w.k; ++l2)
        acc += double(p->a()[size_t(l2)]) * (l == Layout::NT ? p->b()[size_t(j * w.k + l2)] : p->b()[size_t(l2 * w.n + j)]);
      EXPECT_NEAR(p->reference()[size_t(j)], acc, 1e-4) << layoutName(l) << " column " << j;
    }
  }
  auto p = problem(1, 40, 24);
  EXPECT_EQ(measureSharedObject(p, kernel("naive"), quick()).status, MeasureStatus::Ok);
  EXPECT_FALSE(problem(2, 40, 24).usesGemv());
}

TEST(CpuRunner, WrongKernelIsCaughtByVerification) {
  auto p = problem(32, 48, 16);
  auto m = measureSharedObject(p, kernel("wrong"), quick());
  EXPECT_EQ(m.status, MeasureStatus::WrongResult);
  EXPECT_NE(m.message.find("C[16][16]"), std::string::npos) << m.message;
  EXPECT_NEAR(m.max_abs_err, 0.5, 1e-3);
  EXPECT_TRUE(m.times_s.empty());
}

TEST(CpuRunner, MissingObjectIsALoadError) {
  auto p = problem(16, 16, 16);
  auto m = measureSharedObject(p, "/nonexistent/kernel.so", quick());
  EXPECT_EQ(m.status, MeasureStatus::LoadError);
}

TEST(CpuRunner, OpenBlasUsesSingleThreadAndNativeKernels) {
  auto p = problem(64, 64, 64);
  EXPECT_EQ(p.blas().threads, 1);
  EXPECT_NE(p.blas().corename, "Prescott") << "OpenBLAS fell back to its slowest kernels";
  auto m = measureOpenBlas(p, quick());
  EXPECT_EQ(m.status, MeasureStatus::Ok) << m.message;
}

TEST(CpuRunner, SummaryStatistics) {
  double med, cv;
  summarize({1, 3, 2, 4}, med, cv);
  EXPECT_DOUBLE_EQ(med, 2.5);
  EXPECT_NEAR(cv, 0.5164, 1e-3);  // sample stddev 1.291 / mean 2.5
}
