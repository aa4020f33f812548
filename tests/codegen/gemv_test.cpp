// The GEMV routes of the CPU GEMM space (cpu_route_gemv.cpp): where they exist, their constraints
// against a brute force, defaults and starting points, and kernels compiled and verified against
// the reference.
#include <algorithm>
#include <optional>
#include <gtest/gtest.h>

#include "cpu_compile_helpers.h"

using namespace sextant;
using namespace sextant::test;

// gemv_k's values on a CPU of vw float lanes (K divisible by all): whole vectors, then half of one
// on AVX-512; and the vector registers a step of gk holds per row.
static std::vector<int64_t> gemvKValues(int64_t vw) {
  std::vector<int64_t> v = {vw, 2 * vw, 4 * vw, 8 * vw};
  if (vw >= 16) v.push_back(vw / 2);
  return v;
}
static int64_t vecsOf(int64_t gk, int64_t vw) { return (gk + vw - 1) / vw; }

// The GEMV route (gemv = 1; M = 1, NT): only there, the GEMM knobs at their first values, its
// points against a brute force; kernels verified against the reference at several rows, vector
// widths and K = 176 (11 x 16), on 1 and 2 threads; the default of such a space is a GEMV.
TEST(Compiler, GemvRouteCompilesAndVerifies) {
  const HostCpu cpu = hostCpu();
  const int64_t vw = std::max(4, cpu.f32Lanes());
  const std::vector<int64_t> gks = gemvKValues(vw);
  auto space = [&](int64_t m, int64_t n, int64_t k, Layout l, int threads = 1) {
    GemmWorkload w;
    w.m = m, w.n = n, w.k = k, w.layout = l;
    return buildCpuGemmSpace(w, cpu, threads);
  };
  auto gemvValues = [](const Space& s) {
    int i = s.knobIndex("gemv");  // only spaces with the route have the knob
    return i < 0 ? std::vector<int64_t>{0} : s.knobs()[size_t(i)].values;
  };
  EXPECT_LT(space(1, 128, 256, Layout::NN).knobIndex("gemv"), 0);
  EXPECT_EQ(gemvValues(space(1, 128, 256, Layout::NT)), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(gemvValues(space(1, 128, 256, Layout::NN)), (std::vector<int64_t>{0}));
  // M = 2-16 (issue #35): both GEMV routes; M = 1 only the register-held one.
  EXPECT_EQ(gemvValues(space(2, 128, 256, Layout::NT)), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(gemvValues(space(8, 128, 256, Layout::NT)), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(gemvValues(space(16, 128, 256, Layout::NT)), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(gemvValues(space(17, 128, 256, Layout::NT)), (std::vector<int64_t>{0}));
  EXPECT_EQ(gemvValues(space(4, 128, 256, Layout::NN)), (std::vector<int64_t>{0}));
  EXPECT_EQ(gemvValues(space(1, 128, 147, Layout::NT)), (std::vector<int64_t>{0}));
  Space s = space(1, 256, 512, Layout::NT);
  int64_t in_space = 0, brute = 0;
  for (uint64_t i = 0; i < s.size(); ++i) {
    Candidate c = s.at(i);
    if (s.valueOr(c, "gemv", 0) != 1) continue;
    ++in_space;
    for (const char* k : {"tile_k", "reg_m", "reg_n", "unroll_k", "reg_loop_order", "outer_order", "pack_a"})
      EXPECT_EQ(s.valueOr(c, k, -1), s.knobs()[size_t(s.knobIndex(k))].values.front()) << s.keyOf(c);
  }
  for (int64_t tn : s.knobs()[size_t(s.knobIndex("tile_n"))].values)
    for (int64_t rows : {1, 2, 4, 8})
      for (int64_t gk : gks)
        brute += 512 % gk == 0 && tn % rows == 0 && rows * vecsOf(gk, vw) + vecsOf(gk, vw) <= cpu.vector_registers;
  EXPECT_EQ(in_space, brute);
  {
    GemmWorkload w1;
    w1.m = 1, w1.n = 256, w1.k = 512, w1.layout = Layout::NT;
    EXPECT_EQ(s.valueOr(defaultCpuCandidate(s, w1), "gemv", 0), 1);
    // M = 2-16: the split-K GEMV, K in blocks where A is larger than 32 KiB, K whole where it fits
    // L1.
    GemmWorkload w2 = w1, w4 = w1;
    w2.m = 2, w2.k = 4096, w4.m = 4, w4.k = 4096;
    Space s2 = buildCpuGemmSpace(w2, cpu), s4k = buildCpuGemmSpace(w4, cpu);
    EXPECT_EQ(s2.valueOr(defaultCpuCandidate(s2, w2), "gemv", 0), 2);
    EXPECT_EQ(s2.valueOr(defaultCpuCandidate(s2, w2), "gemv_kblock", -1), 0);
    EXPECT_EQ(s4k.valueOr(defaultCpuCandidate(s4k, w4), "gemv", 0), 2);
    EXPECT_EQ(s4k.valueOr(defaultCpuCandidate(s4k, w4), "gemv_kblock", -1), 512);
    // The other starting point at M = 2-8: the register-held route with K whole (16 of K per step,
    // as many rows of B as the registers hold); none above M = 8.
    auto seeds = cpuSeedCandidates(s4k, w4);
    ASSERT_EQ(seeds.size(), 1u);
    EXPECT_EQ(s4k.valueOr(seeds[0], "gemv", 0), 1);
    EXPECT_EQ(s4k.valueOr(seeds[0], "gemv_kblock", -1), 0);
    EXPECT_EQ(s4k.valueOr(seeds[0], "gemv_k", -1), 16);  // (one AVX-512 vector, two AVX2 ones)
    EXPECT_TRUE(s4k.isValid(seeds[0]));
    ASSERT_EQ(cpuSeedCandidates(s2, w2).size(), 1u);
    EXPECT_EQ(s2.valueOr(cpuSeedCandidates(s2, w2)[0], "gemv", 0), 1);
    // M = 1 on AVX-512: on a CPU that splits 512-bit operations (Zen 4) half-width vectors (8 of
    // K per step) by default and full-width ones the other starting point; on others 32 of K and
    // half-width the other starting point; without AVX-512 32 of K and no other starting point.
    const Candidate d1 = defaultCpuCandidate(s, w1);
    if (vw >= 16) {
      const bool split = splitsWideVectors(hostCpu());
      EXPECT_EQ(s.valueOr(d1, "gemv_k", -1), split ? vw / 2 : 32) << s.keyOf(d1);
      EXPECT_EQ(s.valueOr(d1, "gemv_rows", -1), 8) << s.keyOf(d1);
      auto seeds1 = cpuSeedCandidates(s, w1);
      ASSERT_EQ(seeds1.size(), 1u);
      EXPECT_EQ(s.valueOr(seeds1[0], "gemv", 0), 1);
      EXPECT_EQ(s.valueOr(seeds1[0], "gemv_k", -1), split ? vw : vw / 2);
    } else {
      EXPECT_EQ(s.valueOr(d1, "gemv_k", -1), 32) << s.keyOf(d1);
      EXPECT_TRUE(cpuSeedCandidates(s, w1).empty());
    }
    GemmWorkload w16 = w4;
    w16.m = 16;
    EXPECT_TRUE(cpuSeedCandidates(buildCpuGemmSpace(w16, cpu), w16).empty());
  }

  struct Case {
    int64_t n, k;
    int threads;
    int64_t tile_n, rows, gk;
  };
  // (AVX2's 16 vector registers hold half the partial sums of AVX-512's 32: half as many vectors of K.)
  const int64_t wide = cpu.vector_registers >= 32 ? 2 : 1;
  std::vector<Case> cases = {{256, 512, 1, 64, 8, wide * vw}, {128, 176, 1, 128, 1, vw}, {256, 512, 2, 64, 4, 2 * wide * vw},
                             {96, 256, 1, 32, 2, vw}};
  if (vw >= 16) cases.push_back({256, 512, 1, 256, 8, vw / 2});  // half-width vectors: M = 1's default on AVX-512
  for (const Case& cs : cases) {
    Space sp = space(1, cs.n, cs.k, Layout::NT, cs.threads);
    std::map<std::string, int64_t> want = {{"gemv", 1}, {"tile_n", cs.tile_n}, {"gemv_rows", cs.rows}, {"gemv_k", cs.gk}};
    if (cs.threads > 1) want["threads"] = cs.threads;
    Candidate c = nearestValid(sp, want);
    ASSERT_EQ(sp.valueOr(c, "gemv", 0), 1);
    ASSERT_EQ(sp.valueOr(c, "gemv_rows", 0), cs.rows) << sp.keyOf(c);
    ASSERT_EQ(sp.valueOr(c, "gemv_k", 0), cs.gk) << sp.keyOf(c);
    GemmWorkload w;
    w.m = 1, w.n = cs.n, w.k = cs.k, w.layout = Layout::NT;
    const std::string script = emitCpuGemmSchedule(w, sp, c);
    EXPECT_NE(script.find("tile_reduction_using_for"), std::string::npos);
    // Half-width steps really are 256-bit FMAs.
    expectCompilesAndVerifies(w, script, sp.keyOf(c),
                              "gemv-" + std::to_string(cs.n) + "-" + std::to_string(cs.k) + "-" + std::to_string(cs.threads) + ".so",
                              cs.gk * 2 == vw ? "'vfmadd[0-9a-z]*.*ymm'" : "");
  }
  // M = 2 to 8 (issue #35): all rows of A at once; M x rows partial sums and M rows of A fit the
  // registers (a brute force of the constraint), and the kernels verify.
  Space s4 = space(4, 256, 512, Layout::NT);
  int64_t in4 = 0, brute4 = 0;
  for (uint64_t i = 0; i < s4.size(); ++i) in4 += s4.valueOr(s4.at(i), "gemv", 0) == 1;
  for (int64_t tn : s4.knobs()[size_t(s4.knobIndex("tile_n"))].values)
    for (int64_t rows : {1, 2, 4, 8})
      for (int64_t gk : gks)
        for (int64_t kb : {0, 256})  // K blocks: divisors of K below it, whole gemv_k steps
          brute4 += 512 % gk == 0 && tn % rows == 0 &&
                    4 * rows * vecsOf(gk, vw) + 4 * vecsOf(gk, vw) <= cpu.vector_registers && kb % gk == 0;
  EXPECT_EQ(in4, brute4);
  EXPECT_LT(space(1, 256, 512, Layout::NT).knobIndex("gemv_kblock"), 0) << "M = 1 keeps its space";
  struct SmallM {
    int64_t m, n, k, rows, gk;
    int threads;
    int64_t kblock = 0;
  };
  for (const SmallM& cs : std::vector<SmallM>{{2, 256, 512, 4, wide * vw, 1}, {4, 128, 256, 2, vw, 1},
                                              {8, 128, 176, 1, vw, 1}, {3, 96, 256, 2, vw, 2},
                                              {4, 64, 1024, 2, wide * vw, 1, 256}, {2, 64, 1024, 4, vw, 2, 512}}) {
    Space sp = space(cs.m, cs.n, cs.k, Layout::NT, cs.threads);
    std::map<std::string, int64_t> want = {{"gemv", 1}, {"tile_n", 32}, {"gemv_rows", cs.rows}, {"gemv_k", cs.gk},
                                           {"gemv_kblock", cs.kblock}};
    if (cs.threads > 1) want["threads"] = cs.threads;
    Candidate c = nearestValid(sp, want);
    ASSERT_EQ(sp.valueOr(c, "gemv", 0), 1) << cs.m;
    ASSERT_EQ(sp.valueOr(c, "gemv_rows", 0), cs.rows) << sp.keyOf(c);
    ASSERT_EQ(sp.valueOr(c, "gemv_kblock", 0), cs.kblock) << sp.keyOf(c);
    GemmWorkload w;
    w.m = cs.m, w.n = cs.n, w.k = cs.k, w.layout = Layout::NT;
    const std::string script = emitCpuGemmSchedule(w, sp, c);
    EXPECT_NE(script.find("vector_sizes [" + std::to_string(cs.m) + ", "), std::string::npos) << script;
    expectCompilesAndVerifies(w, script, sp.keyOf(c), "gemv-m" + std::to_string(cs.m) + ".so");
  }
}


// The split-K route (gemv = 2, issue #35): the register constraint (gemv_m x rows partial sums,
// the rows of B and one row of A) and the block's partial sums within 32 KiB against a brute
// force; gemv_m below M only there; kernels at M = 2-16, odd M, K blocks or whole K, 1 and 2
// threads, verified; the partial sums of K blocks are carried (K = 1024 in blocks of 256: a kernel
// that reduced only its last block would fail), and the multiply-adds are FMAs
// (relaxCpuFloatMath: before it the route ran a vmulps and a vaddps per step).
TEST(Compiler, SplitKGemvRouteCompilesAndVerifies) {
  const HostCpu cpu = hostCpu();
  const int64_t vw = std::max(4, cpu.f32Lanes());
  const std::vector<int64_t> gks = gemvKValues(vw);
  auto space = [&](int64_t m, int64_t n, int64_t k, int threads = 1) {
    GemmWorkload w;
    w.m = m, w.n = n, w.k = k, w.layout = Layout::NT;
    return buildCpuGemmSpace(w, cpu, threads);
  };
  {
    Space s8 = space(8, 64, 512);
    int64_t in8 = 0, brute8 = 0;
    for (uint64_t i = 0; i < s8.size(); ++i) {
      Candidate c = s8.at(i);
      if (s8.valueOr(c, "gemv", 0) != 2) {
        EXPECT_EQ(s8.valueOr(c, "gemv_m", -1), 8) << s8.keyOf(c);
        continue;
      }
      ++in8;
    }
    for (int64_t tn : s8.knobs()[size_t(s8.knobIndex("tile_n"))].values)
      for (int64_t rows : {1, 2, 4, 8})
        for (int64_t gk : gks)
          for (int64_t kb : {0, 256})
            for (int64_t gm : {8, 1, 2, 4})
              brute8 += 512 % gk == 0 && tn % rows == 0 && kb % gk == 0 &&
                        gm * rows * vecsOf(gk, vw) + rows * vecsOf(gk, vw) + 1 <= cpu.vector_registers &&
                        8 * tn * gk * 4 <= 32 * 1024;
    EXPECT_EQ(in8, brute8);
    EXPECT_LT(space(1, 64, 512).knobIndex("gemv_m"), 0) << "M = 1 keeps its space";
  }
  struct Case {
    int64_t m, n, k, gm, rows, gk, kblock;
    int threads;
  };
  for (const Case& cs : std::vector<Case>{{8, 64, 1024, 4, 4, vw, 256, 1},
                                          {16, 32, 512, 4, 4, vw, 0, 1},
                                          {2, 64, 1024, 2, 8, vw, 512, 2},
                                          {6, 48, 256, 2, 4, 2 * vw, 0, 1},
                                          {3, 32, 176, 3, 2, vw, 0, 1},
                                          {12, 64, 1024, 4, 2, vw, 256, 2},
                                          {2, 32, 512, 2, 8, std::max<int64_t>(vw / 2, 4), 0, 1}}) {
    if (std::find(gks.begin(), gks.end(), cs.gk) == gks.end()) continue;  // half-width steps: AVX-512 only
    const int64_t vecs = vecsOf(cs.gk, vw);
    if (cs.gm * cs.rows * vecs + cs.rows * vecs + 1 > cpu.vector_registers) continue;  // a CPU with fewer registers
    Space sp = space(cs.m, cs.n, cs.k, cs.threads);
    std::map<std::string, int64_t> want = {{"gemv", 2}, {"tile_n", 16}, {"gemv_m", cs.gm}, {"gemv_rows", cs.rows},
                                           {"gemv_k", cs.gk}, {"gemv_kblock", cs.kblock}};
    if (cs.threads > 1) want["threads"] = cs.threads;
    std::optional<Candidate> c = nearestValid(sp, want);
    for (const auto& [knob, value] : want) ASSERT_EQ(sp.valueOr(*c, knob, -1), value) << knob << " " << sp.keyOf(*c);
    GemmWorkload w;
    w.m = cs.m, w.n = cs.n, w.k = cs.k, w.layout = Layout::NT;
    const std::string script = emitCpuGemmSchedule(w, sp, *c);
    EXPECT_NE(script.find("split_reduction"), std::string::npos);
    EXPECT_NE(script.find("vector_sizes [" + std::to_string(cs.gm) + ", " + std::to_string(cs.rows) + ", 1, "),
              std::string::npos)
        << script;
    expectCompilesAndVerifies(w, script, sp.keyOf(*c), "gemv-split-m" + std::to_string(cs.m) + ".so",
                              cpu.f32Lanes() >= 8 ? "vfmadd" : "");
  }
  // The defaults from M = 2 to 16 are split-K kernels that verify.
  for (int64_t m : {2, 5, 8, 16}) {
    GemmWorkload w;
    w.m = m, w.n = 64, w.k = 2048, w.layout = Layout::NT;
    Space sp = buildCpuGemmSpace(w, cpu);
    Candidate d = defaultCpuCandidate(sp, w);
    ASSERT_EQ(sp.valueOr(d, "gemv", 0), 2) << sp.keyOf(d);
    expectCompilesAndVerifies(w, emitCpuGemmSchedule(w, sp, d), sp.keyOf(d), "gemv-split-default.so");
  }
}
