// The measured FMA peak (issue #14): every ISA the CPU runs is measured, the best one is named, and
// no real kernel beats it (OpenBLAS's sgemm, timed here on one thread, stays under it: a peak
// measured too low, e.g. chains bound by FMA latency or spilled, would fail this).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "sextant/runtime/blas.h"
#include "sextant/runtime/fma_peak.h"

using namespace sextant;

TEST(FmaPeak, MeasuresEveryIsaAndNamesTheBest) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "FMA chains are written for x86-64 only";
#endif
  FmaPeak p = measureFmaPeak(1, 0.05, 2);
  ASSERT_FALSE(p.per_isa.empty());
  EXPECT_EQ(p.threads, 1);
  double most = 0;
  for (const auto& [name, g] : p.per_isa) {
    EXPECT_TRUE(name == "avx512" || name == "avx2" || name == "sse") << name;
    EXPECT_GT(g, 1.0) << name;  // any x86-64 core of this century does more than 1 GFLOP/s
    most = std::max(most, g);
  }
  EXPECT_GE(p.gflops * 1.02 + 1e-9, most);  // the named one is within 2% of the fastest
  EXPECT_LE(p.gflops, most);
  EXPECT_TRUE(std::any_of(p.per_isa.begin(), p.per_isa.end(), [&](const auto& e) { return e.first == p.isa; }));
}

TEST(FmaPeak, OpenBlasSgemmStaysUnderIt) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "FMA chains are written for x86-64 only";
#endif
  auto blas = loadOpenBlas();
  if (!blas) GTEST_SKIP() << blas.error();
  const int n = 512;
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n, 0.0f);
  double best_s = 1e9;
  for (int rep = 0; rep < 7; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    (*blas)->sgemm(101 /*row major*/, 111, 111, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    best_s = std::min(best_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  ASSERT_FLOAT_EQ(c[0], 0.5f * 0.25f * n);
  const double blas_g = 2.0 * n * n * n / best_s / 1e9;
  FmaPeak p = measureFmaPeak(1, 0.1, 3);
  EXPECT_LE(blas_g, p.gflops * 1.05) << "OpenBLAS " << blas_g << " GFLOP/s vs a measured peak of " << p.gflops;
  EXPECT_GT(blas_g, p.gflops * 0.1) << "OpenBLAS " << blas_g << " GFLOP/s vs a measured peak of " << p.gflops;
}
