#include <gtest/gtest.h>
#include <set>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/gpu_schedule.h"
#include "test_cpus.h"

using namespace sextant;
using sextant::test::avx512;

namespace {
GemmWorkload gemm(int64_t m, int64_t n, int64_t k) {
  GemmWorkload w;
  w.m = m, w.n = n, w.k = k;
  return w;
}
// Counts valid points by brute force over the raw product.
uint64_t bruteForceSize(const Space& s) {
  uint64_t count = 0;
  for (uint64_t id = 0; id < s.rawSize(); ++id)
    if (s.violations(s.decode(id)).empty()) ++count;
  return count;
}
}  // namespace

TEST(Space, SizeMatchesBruteForceCount) {
  for (auto w : {gemm(1024, 1024, 1024), gemm(128, 4096, 4096), gemm(96, 80, 48), gemm(7, 13, 5)}) {
    Space s = buildCpuGemmSpace(w, avx512());
    EXPECT_GT(s.size(), 0u) << w.key();
    EXPECT_EQ(s.size(), bruteForceSize(s)) << w.key();
    EXPECT_LT(s.size(), s.rawSize()) << "constraints must prune something for " << w.key();
  }
}

TEST(Space, EncodeDecodeRoundTrip) {
  Space s = buildCpuGemmSpace(gemm(512, 512, 512), avx512());
  for (uint64_t i = 0; i < s.size(); i += 7) {
    Candidate c = s.at(i);
    EXPECT_EQ(s.decode(s.encode(c)), c);
    auto back = s.fromKey(s.keyOf(c));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, c);
    auto fromMap = s.fromMap(s.knobMap(c));
    ASSERT_TRUE(fromMap.ok());
    EXPECT_EQ(*fromMap, c);
  }
}

TEST(Space, SamplesNeverViolateConstraintsAndCoverTheSpace) {
  Space s = buildCpuGemmSpace(gemm(256, 512, 128), avx512());
  std::mt19937_64 rng(7);
  std::set<uint64_t> seen;
  const int vw = 16;
  for (int i = 0; i < 20000; ++i) {
    Candidate c = s.sample(rng);
    ASSERT_TRUE(s.isValid(c));
    ASSERT_TRUE(s.violations(c).empty());
    auto m = s.knobMap(c);
    ASSERT_LE(m["reg_m"], m["tile_m"]);  // a remainder is peeled
    ASSERT_EQ(m["tile_n"] % m["reg_n"], 0);
    ASSERT_EQ(m["tile_k"] % m["unroll_k"], 0);
    ASSERT_EQ(256 % m["tile_m"], 0);
    ASSERT_EQ(512 % m["tile_n"], 0);
    ASSERT_EQ(128 % m["tile_k"], 0);
    ASSERT_EQ(m["reg_n"] % vw, 0);
    ASSERT_LE(m["reg_m"] * (m["reg_n"] / vw) + m["reg_n"] / vw, 32);
    seen.insert(s.encode(c));
  }
  // Uniform sampling of 20000 draws reaches most of a space of this size.
  EXPECT_GT(double(seen.size()), 0.8 * double(std::min<uint64_t>(s.size(), 20000)) * 0.6);
}

TEST(Space, InvalidCandidatesAreRejectedWithReasons) {
  Space s = buildCpuGemmSpace(gemm(256, 256, 256), avx512());
  auto c = s.fromMap({{"tile_m", 8}, {"tile_n", 16}, {"tile_k", 16}, {"reg_m", 16}, {"reg_n", 64},
                      {"unroll_k", 1}, {"reg_loop_order", 0}});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(s.isValid(*c));
  auto v = s.violations(*c);
  EXPECT_NE(std::find(v.begin(), v.end(), "reg_m at most tile_m"), v.end());
  EXPECT_NE(std::find(v.begin(), v.end(), "register tile fits the vector registers"), v.end());
  EXPECT_FALSE(s.fromMap({{"tile_m", 3}}).ok());
  EXPECT_FALSE(s.fromKey("tile_m=64,bogus=1").ok());
}

TEST(Space, KnobsListTheirValuesAndFingerprintIsStable) {
  Space a = buildCpuGemmSpace(gemm(1024, 1024, 1024), avx512());
  Space b = buildCpuGemmSpace(gemm(1024, 1024, 1024), avx512());
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_NE(a.fingerprint(), buildCpuGemmSpace(gemm(96, 1024, 1024), avx512()).fingerprint());
  ASSERT_EQ(a.knobs().size(), 10u);
  EXPECT_EQ(a.knobs()[0].name, "tile_m");
  EXPECT_EQ(a.knobs()[7].name, "pack_b");
  EXPECT_EQ(a.knobs()[7].values, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(a.knobs()[8].name, "outer_order");
  EXPECT_EQ(a.knobs()[8].values, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(a.knobs()[9].name, "pack_a");
  EXPECT_EQ(a.knobs()[4].values, (std::vector<int64_t>{16, 32, 64}));
}

TEST(Space, ContainsTheKnownFastSchedule) {
  // The hand-written schedule at OpenBLAS speed (shared notes: 128/512/128, 4x64, K unroll 4).
  Space s = buildCpuGemmSpace(gemm(1024, 1024, 1024), avx512());
  auto c = s.fromMap({{"tile_m", 128}, {"tile_n", 512}, {"tile_k", 128}, {"reg_m", 4}, {"reg_n", 64},
                      {"unroll_k", 4}, {"reg_loop_order", 1}});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(s.isValid(*c));
}

TEST(Space, NeighboursDifferInOneKnobByOneStep) {
  Space s = buildCpuGemmSpace(gemm(512, 512, 512), avx512());
  Candidate c = s.at(s.size() / 2);
  auto ns = s.neighbours(c);
  EXPECT_FALSE(ns.empty());
  for (auto& n : ns) {
    EXPECT_TRUE(s.isValid(n));
    int diff = 0;
    for (size_t i = 0; i < c.size(); ++i) diff += std::abs(n[i] - c[i]);
    EXPECT_EQ(diff, 1);
  }
}

TEST(Space, DefaultCandidateIsValid) {
  for (auto w : {gemm(1024, 1024, 1024), gemm(7, 13, 5), gemm(128, 4096, 4096)}) {
    Space s = buildCpuGemmSpace(w, avx512());
    EXPECT_TRUE(s.isValid(defaultCpuCandidate(s, w))) << w.key();
  }
}

// The gfx942 MFMA space: the constraint solver against brute force over the raw product, and
// every valid point checked against the MFMA rules stated independently here (whole intrinsic
// tiles per wave, 1-8 waves of 64 lanes, LDS within the CU's 64 KiB, only matrix-core candidates
// for f16/bf16).
TEST(Space, Gfx942MfmaSpaceMatchesBruteForceAndTheRules) {
  auto g = gpuTargetInfo(*resolveTarget("mi300"));
  ASSERT_TRUE(g.ok());
  int64_t pipelined = 0;
  for (const char* key : {"gemm:NN:512x512x256:f16*f16->f32", "gemm:NT:128x1024x512:bf16*bf16->f32",
                          "gemm:TN:32x2048x256:f16*f16->f32"}) {
    auto w = *parseWorkloadKey(key);
    Space s = buildGpuGemmSpace(w, *g);
    ASSERT_GT(s.size(), 0u) << key;
    EXPECT_EQ(s.size(), bruteForceSize(s)) << key;
    for (uint64_t i = 0; i < s.size(); ++i) {
      auto p = planGpuGemm(w, s, s.at(i));
      ASSERT_TRUE(p.ok());
      ASSERT_TRUE(p->mma) << key;
      const int64_t im = p->mfma.m, in = p->mfma.n;
      ASSERT_TRUE((im == 32 && in == 32 && p->mfma.k == 8) || (im == 16 && in == 16 && p->mfma.k == 16));
      EXPECT_EQ(p->warp_m % im, 0);
      EXPECT_EQ(p->warp_n % in, 0);
      const int64_t waves = (p->block_m / p->warp_m) * (p->block_n / p->warp_n);
      EXPECT_TRUE(waves >= 1 && waves <= 8);
      EXPECT_EQ(p->threads, 64 * waves);
      EXPECT_LE(p->smem_bytes, 64 * 1024);
      EXPECT_EQ(p->block_k % p->mfma.k, 0);
      // Double-buffered LDS: both halves within the 64 KiB, at least two K steps.
      ASSERT_TRUE(p->pipeline == 1 || p->pipeline == 2);
      if (p->pipeline == 2) {
        EXPECT_GE(w.k / p->block_k, 2);
      }
      pipelined += p->pipeline == 2;
    }
    EXPECT_GT(pipelined, 0) << key;
    pipelined = 0;
  }
  // f32 keeps the FMA route, single-buffered.
  auto f32 = *parseWorkloadKey("gemm:NN:512x512x256:f32*f32->f32");
  Space s = buildGpuGemmSpace(f32, *g);
  for (uint64_t i = 0; i < s.size(); ++i) EXPECT_EQ(planGpuGemm(f32, s, s.at(i))->pipeline, 1);
}

// Records and datasets from before a knob existed read as its "as before" value; a required knob
// that is missing is still an error, and so is an unknown one.
TEST(Space, RecordsWithoutANewerKnobReadAsBefore) {
  Space s = buildCpuGemmSpace(gemm(1024, 1024, 1024), avx512());
  const std::string old_key = "tile_m=128,tile_n=128,tile_k=512,reg_m=8,reg_n=32,unroll_k=1,reg_loop_order=0";
  auto c = s.fromKey(old_key);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(s.knobMap(*c).at("pack_b"), 0);
  EXPECT_EQ(s.knobMap(*c).at("outer_order"), 0);
  EXPECT_EQ(s.knobMap(*c).at("pack_a"), 0);
  EXPECT_EQ(s.keyOf(*c), old_key + ",pack_b=0,outer_order=0,pack_a=0");
  // A record of the pack_b era (before outer_order and pack_a) keeps its pack_b.
  auto packed = s.fromKey(old_key + ",pack_b=1");
  ASSERT_TRUE(packed.ok()) << packed.error();
  EXPECT_EQ(s.keyOf(*packed), old_key + ",pack_b=1,outer_order=0,pack_a=0");
  auto missing = s.fromKey("tile_m=128,tile_n=128,tile_k=512,reg_m=8,reg_n=32,unroll_k=1");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("reg_loop_order"), std::string::npos);
  EXPECT_FALSE(s.fromKey(old_key + ",prefetch=2").ok());
  // B stored transposed (NT): pack_b = 1 is the transposed-B route (issue #31); old NT records
  // (no pack_b, read in place) read as pack_b = 0.
  GemmWorkload nt = gemm(256, 256, 256);
  nt.layout = Layout::NT;
  Space t = buildCpuGemmSpace(nt, avx512());
  EXPECT_EQ(t.knobs()[t.knobIndex("pack_b")].values, (std::vector<int64_t>{0, 1}));
  auto old_nt = t.fromKey("tile_m=128,tile_n=128,tile_k=256,reg_m=8,reg_n=32,unroll_k=1,reg_loop_order=0");
  ASSERT_TRUE(old_nt.ok()) << old_nt.error();
  EXPECT_EQ(t.knobMap(*old_nt).at("pack_b"), 0);
  EXPECT_EQ(t.knobs()[t.knobIndex("pack_a")].values, (std::vector<int64_t>{0, 1}));
  // A stored transposed (TN): no A packing.
  GemmWorkload tn = gemm(256, 256, 256);
  tn.layout = Layout::TN;
  Space u = buildCpuGemmSpace(tn, avx512());
  EXPECT_EQ(u.knobs()[u.knobIndex("pack_a")].values, std::vector<int64_t>{0});
}

// The threaded CPU space: the solver against brute force, and every valid point gives each thread
// a forall iteration, counted here from the loop order's definition (outer_order 0: m and n
// blocks, 1: m blocks, 2: n blocks).
TEST(Space, ThreadedCpuSpaceMatchesBruteForceAndGivesEveryThreadABlock) {
  for (auto w : {gemm(256, 128, 64), gemm(64, 1024, 96), gemm(1024, 64, 32)}) {
    Space s = buildCpuGemmSpace(w, avx512(), 2);
    ASSERT_GT(s.size(), 0u) << w.key();
    EXPECT_EQ(s.size(), bruteForceSize(s)) << w.key();
    bool orders[3] = {false, false, false};
    for (uint64_t i = 0; i < s.size(); ++i) {
      auto k = s.knobMap(s.at(i));
      const int64_t bm = w.m / k.at("tile_m"), bn = w.n / k.at("tile_n");
      const int64_t blocks = k.at("outer_order") == 0 ? bm * bn : k.at("outer_order") == 1 ? bm : bn;
      EXPECT_GE(blocks, 2) << s.keyOf(s.at(i));
      orders[k.at("outer_order")] = true;
    }
    EXPECT_TRUE(orders[0] && orders[1] && orders[2]) << w.key();
  }
}
