#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <unistd.h>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/hwspec/gpu_target.h"
#include "sextant/costmodel/features.h"
#include "sextant/costmodel/model.h"

using namespace sextant;

namespace {
// A synthetic "throughput" with interactions, as a function of 6 inputs in [0, 1).
float truth(const std::vector<float>& x) {
  return 10.f + 8.f * x[0] - 6.f * (x[1] - 0.5f) * (x[1] - 0.5f) * 4 + 4.f * x[2] * x[3] + 2.f * std::sin(6 * x[4]);
}
std::vector<Sample> synthetic(int n, uint64_t seed, bool with_failures = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<Sample> out;
  for (int i = 0; i < n; ++i) {
    Sample s;
    for (int k = 0; k < 6; ++k) s.x.push_back(u(rng));
    s.gflops = truth(s.x);
    s.failed = with_failures && s.x[5] > 0.7f;  // failures depend on one input only
    out.push_back(s);
  }
  return out;
}
}  // namespace

TEST(KendallTau, KnownValues) {
  EXPECT_DOUBLE_EQ(kendallTau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendallTau({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_NEAR(kendallTau({1, 2, 3, 4}, {1, 3, 2, 4}), 2.0 / 3.0, 1e-12);
}

TEST(CostModel, LearnsAKnownFunctionWellEnoughToRankHeldOutPoints) {
  auto train = synthetic(400, 1), test = synthetic(300, 2);
  CostModel m(6);
  m.fit(train);
  std::vector<std::vector<float>> xs;
  std::vector<double> truth_v, pred_v;
  for (auto& s : test) xs.push_back(s.x), truth_v.push_back(s.gflops);
  auto p = m.predict(xs);
  for (auto& q : p) pred_v.push_back(q.mean);
  double tau = kendallTau(truth_v, pred_v);
  // An untrained or constant model scores ~0; a linear fit of x0 alone about 0.45.
  std::cout << "held-out Kendall tau " << tau << "\n";
  EXPECT_GT(tau, 0.75) << "Kendall tau on held-out points";
  for (auto& q : p) EXPECT_GE(q.spread, 0.f);
}

TEST(CostModel, OnlineUpdatesImproveAWeakModel) {
  auto all = synthetic(600, 3), test = synthetic(300, 4);
  std::vector<std::vector<float>> xs;
  std::vector<double> tv;
  for (auto& s : test) xs.push_back(s.x), tv.push_back(s.gflops);
  auto tauOf = [&](const CostModel& m) {
    std::vector<double> pv;
    for (auto& q : m.predict(xs)) pv.push_back(q.mean);
    return kendallTau(tv, pv);
  };
  CostModel m(6);
  m.fit(std::vector<Sample>(all.begin(), all.begin() + 20));
  double early = tauOf(m);
  for (int n = 80; n <= 600; n += 60) m.update(std::vector<Sample>(all.begin(), all.begin() + n));
  EXPECT_GT(tauOf(m), early);
  EXPECT_GT(tauOf(m), 0.7);
}

TEST(CostModel, FailureHeadSeparatesFailingRegion) {
  auto train = synthetic(500, 5, true), test = synthetic(300, 6, true);
  CostModel m(6);
  m.fit(train);
  std::vector<std::vector<float>> xs;
  for (auto& s : test) xs.push_back(s.x);
  auto p = m.predict(xs);
  int right = 0;
  for (size_t i = 0; i < test.size(); ++i) right += (p[i].p_fail > 0.5f) == test[i].failed;
  EXPECT_GT(double(right) / double(test.size()), 0.85);
}

TEST(CostModel, SaveLoadRoundTripAndCorruptFiles) {
  auto train = synthetic(200, 7);
  CostModel m(6);
  m.fit(train);
  std::string path = (std::filesystem::temp_directory_path() / ("sextant-model-" + std::to_string(getpid()))).string();
  ASSERT_TRUE(m.save(path).ok());
  auto back = CostModel::load(path);
  ASSERT_TRUE(back.ok()) << back.error();
  std::vector<std::vector<float>> xs;
  for (auto& s : synthetic(50, 8)) xs.push_back(s.x);
  auto a = m.predict(xs), b = back->predict(xs);
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_FLOAT_EQ(a[i].mean, b[i].mean);
    EXPECT_FLOAT_EQ(a[i].p_fail, b[i].p_fail);
  }
  std::ofstream(path) << "garbage";
  auto bad = CostModel::load(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("not a readable cost model"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Features, KnownCandidate) {
  HostCpu cpu;
  cpu.vector_bits = 512;
  cpu.vector_registers = 32;
  cpu.l1d_bytes = 48 << 10;
  cpu.l2_bytes = 2 << 20;
  cpu.l3_bytes = 32 << 20;
  GemmWorkload w;
  w.m = w.n = w.k = 1024;
  Space s = buildCpuGemmSpace(w, cpu);
  auto c = s.fromMap({{"tile_m", 128}, {"tile_n", 512}, {"tile_k", 128}, {"reg_m", 4}, {"reg_n", 64},
                      {"unroll_k", 4}, {"reg_loop_order", 1}});
  ASSERT_TRUE(c.ok());
  auto f = cpuGemmFeatures(w, s, *c, cpu);
  ASSERT_EQ(f.size(), cpuGemmFeatureNames().size());
  EXPECT_FLOAT_EQ(f[0], 7);  // log2 128
  EXPECT_FLOAT_EQ(f[4], 6);  // log2 64
  EXPECT_FLOAT_EQ(f[6], 1);
  EXPECT_FLOAT_EQ(f[12], 16.f / 8.f);       // 4x4 accumulators, 4 + 4 loads per K step
  EXPECT_FLOAT_EQ(f[13], 16.f / 32.f);      // accumulators / registers
  EXPECT_FLOAT_EQ(f[15], std::log2(8.f * 2.f));  // 8 x 2 blocks
  EXPECT_FLOAT_EQ(f[19], 10);               // log2 M
  const size_t v3 = 58;  // version 3: pack_b, pack_a, outer_order=1, =2, reg_m=6, =12, =14, peeled
  ASSERT_EQ(f.size(), v3 + 8 + 3);  // version 4: gemv, its rows, its vectors per row
  EXPECT_EQ(std::vector<float>(f.begin() + v3, f.end()), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  // The loop order changes what runs in parallel (outer_order 2: only the 2 column blocks), pack_a
  // the row of A as read (tile_k = 128 floats: not a multiple of 4 KiB; K = 1024 floats is).
  EXPECT_FLOAT_EQ(f[50], 1);  // row of A is a multiple of 4 KiB
  auto c2 = s.fromMap({{"tile_m", 128}, {"tile_n", 512}, {"tile_k", 128}, {"reg_m", 6}, {"reg_n", 64},
                       {"unroll_k", 4}, {"reg_loop_order", 1}, {"pack_b", 1}, {"pack_a", 1}, {"outer_order", 2}});
  ASSERT_TRUE(c2.ok()) << c2.error();
  auto g = cpuGemmFeatures(w, s, *c2, cpu);
  EXPECT_EQ(std::vector<float>(g.begin() + v3, g.end()), (std::vector<float>{1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0}));
  EXPECT_FLOAT_EQ(g[15], 1);  // log2 2 blocks
  EXPECT_FLOAT_EQ(g[50], 0);
  // Version 4: a GEMV (M = 1, NT): 8 rows of B, 32 elements of K (2 vectors of 16) per step.
  GemmWorkload gv;
  gv.m = 1, gv.n = 4096, gv.k = 4096, gv.layout = Layout::NT;
  Space sg = buildCpuGemmSpace(gv, cpu);
  Candidate cg = nearestValid(sg, {{"gemv", 1}, {"tile_n", 256}, {"gemv_rows", 8}, {"gemv_k", 32}});
  auto h = cpuGemmFeatures(gv, sg, cg, cpu);
  EXPECT_EQ(std::vector<float>(h.end() - 3, h.end()), (std::vector<float>{1, 3, 2}));
}

// Issue #31: a direct-route convolution candidate is featurized as its implicit GEMM (a block of
// tile_oh x tile_ow pixels by tile_f channels, the whole K, register tile reg_ow x reg_f), so the
// knobs are not read positionally as GEMM knobs.
TEST(Features, ConvolutionsAreReadAsTheirImplicitGemm) {
  HostCpu cpu;
  cpu.vector_bits = 512;
  cpu.vector_registers = 32;
  auto w = makeConvWorkload("ic64ih28oc128kh3ph1", "f32", "NHWC");
  ASSERT_TRUE(w.ok()) << w.error();
  Space s = buildCpuGemmSpace(*w, cpu);
  auto c = s.fromMap({{"tile_oh", 4}, {"tile_ow", 28}, {"tile_f", 64}, {"reg_ow", 7}, {"reg_f", 32}, {"tile_c", 4},
                      {"tile_kw", 3}, {"reg_loop_order", 1}});
  ASSERT_TRUE(c.ok()) << c.error();
  auto f = cpuGemmFeatures(*w, s, *c, cpu);
  ASSERT_EQ(f.size(), cpuGemmFeatureNames().size());
  EXPECT_FLOAT_EQ(f[0], std::log2(112.f));      // 4 x 28 output pixels per block
  EXPECT_FLOAT_EQ(f[1], 6);                     // 64 channels
  EXPECT_FLOAT_EQ(f[2], std::log2(576.f));      // K = 3 x 3 x 64, whole
  EXPECT_FLOAT_EQ(f[3], std::log2(7.f));        // reg_ow
  EXPECT_FLOAT_EQ(f[5], std::log2(12.f));       // 3 x 4 reduction elements per step
  EXPECT_FLOAT_EQ(f[6], 1);
  EXPECT_FLOAT_EQ(f[15], std::log2(7.f * 1 * 2));  // 28/4 x 28/28 x 128/64 blocks
  auto c2 = s.fromMap({{"tile_oh", 1}, {"tile_ow", 28}, {"tile_f", 64}, {"reg_ow", 7}, {"reg_f", 32}, {"tile_c", 4},
                       {"tile_kw", 3}, {"reg_loop_order", 1}});
  ASSERT_TRUE(c2.ok());
  EXPECT_NE(cpuGemmFeatures(*w, s, *c2, cpu), f);
}

// Records of the table's machine kinds are described by the table whichever machine trains: the
// Zen 5 records (same CPU model string as the Zen 4 VM) must not take the training host's caches,
// and the table has the L3 a core shares (without it the last-level cache read as the L2, and
// glimpse fell from 8.2x to 2.4x on the Zen 5 held-outs).
TEST(Features, RecordsOfKnownCpusAreDescribedByTheTable) {
  HostCpu host;
  host.l1d_bytes = 32 << 10, host.l2_bytes = 1 << 20, host.l3_bytes = 7 << 20, host.cache_source = "sysfs";
  for (const std::string trainer : {"znver4", "znver5", "emeraldrapids", "x"}) {
    const HostCpu z5 = cpuOfRecords("znver5", trainer, host);
    EXPECT_EQ(z5.l1d_bytes, 48 << 10) << trainer;
    EXPECT_EQ(z5.l2_bytes, 1 << 20);
    EXPECT_EQ(z5.l3_bytes, 32 << 20);
    EXPECT_EQ(z5.lastLevelCacheBytes(), 32 << 20);
    EXPECT_EQ(cpuOfRecords("znver4", trainer, host).l1d_bytes, 32 << 10);
    EXPECT_GT(cpuOfRecords("emeraldrapids", trainer, host).l3_bytes, 2 << 20);
  }
  // A CPU the table does not know describes itself when it is this machine.
  EXPECT_EQ(cpuOfRecords("someday", "someday", host).l3_bytes, 7 << 20);
  EXPECT_EQ(cpuOfRecords("", "znver4", host).l3_bytes, 7 << 20);
  EXPECT_NE(cpuOfRecords("someday", "znver4", host).l3_bytes, 7 << 20);
}

// Issue #11 item 0: a feature constant in the fitted data (the workload's sizes when one workload
// was seen) must not be scaled by 1e-6; another workload's value of it reaches the networks as a
// difference of a few units.
TEST(CostModel, AFeatureConstantInTheFitIsCentredNotBlownUp) {
  auto train = synthetic(300, 11);
  for (auto& s : train) s.x.push_back(9.0f);  // e.g. log2 M of the one workload seen
  CostModel m(7);
  m.fit(train);
  auto probe = synthetic(50, 12);
  std::vector<std::vector<float>> same, other;
  for (auto& s : probe) {
    same.push_back(s.x), same.back().push_back(9.0f);
    other.push_back(s.x), other.back().push_back(10.0f);  // the next workload: log2 M one larger
  }
  auto ps = m.predict(same), po = m.predict(other);
  for (size_t i = 0; i < po.size(); ++i) {
    ASSERT_TRUE(std::isfinite(po[i].mean));
    EXPECT_LT(std::fabs(po[i].mean), 5.f) << "normalised throughput predictions must stay near [0, 1]";
    // Never seen to vary, the feature has no weight yet: the model is neutral about its value.
    EXPECT_FLOAT_EQ(po[i].mean, ps[i].mean);
  }
  // Once the data show its effect, the update learns it.
  auto shifted = synthetic(300, 13);
  for (auto& s : shifted) s.x.push_back(10.0f), s.gflops *= 0.5f, s.group = 0;
  for (auto& s : train) s.group = 0;
  std::vector<Sample> both = train;
  both.insert(both.end(), shifted.begin(), shifted.end());
  m.update(both);
  auto ps2 = m.predict(same), po2 = m.predict(other);
  double lower = 0;
  for (size_t i = 0; i < po2.size(); ++i) lower += po2[i].mean < ps2[i].mean;
  EXPECT_GT(lower, 0.8 * double(po2.size()));
}

TEST(CostModel, RankingPairsComeOnlyFromTheMembersResampleAndStayWithinAGroup) {
  std::vector<int> group = {0, 0, 0, 1, 1, 0, 1};
  std::vector<bool> ok = {true, true, true, true, true, true, false};
  std::vector<int64_t> rows = {0, 0, 2, 5, 3, 4, 6};  // rows 1 is not in the resample; 6 failed
  auto pairs = rankingPairs(rows, group, ok, 3);
  ASSERT_FALSE(pairs.empty());
  for (auto [pa, pb] : pairs) {
    ASSERT_LT(size_t(pa), rows.size());
    ASSERT_LT(size_t(pb), rows.size());
    const int64_t a = rows[size_t(pa)], b = rows[size_t(pb)];
    EXPECT_NE(a, 1) << "row 1 is not in this member's resample";
    EXPECT_NE(b, 1);
    EXPECT_NE(a, 6) << "failed rows carry no throughput order";
    EXPECT_NE(b, 6);
    EXPECT_EQ(group[size_t(a)], group[size_t(b)]);
    EXPECT_NE(a, b);
  }
}

TEST(CostModel, SavedModelKeepsItsFeatureVersionAndMismatchesAreRefused) {
  auto train = synthetic(200, 21);
  CostModelOptions o;
  o.feature_version = 7;
  CostModel m(6, o);
  m.fit(train);
  const std::string dir = std::filesystem::temp_directory_path() / ("sextant-pretrained-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/m.costmodel";
  ASSERT_TRUE(m.save(path));
  auto back = loadPretrained(path, 6, 7);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->featureVersion(), 7);
  auto p1 = m.predict({train[0].x, train[1].x}), p2 = back->predict({train[0].x, train[1].x});
  for (size_t i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(p1[i].mean, p2[i].mean);
  auto wrong_version = loadPretrained(path, 6, 8);
  ASSERT_FALSE(wrong_version);
  EXPECT_NE(wrong_version.error().find(path), std::string::npos);
  EXPECT_NE(wrong_version.error().find("version 7"), std::string::npos) << wrong_version.error();
  EXPECT_FALSE(loadPretrained(path, 5, 7)) << "other number of features";
  auto missing = loadPretrained(dir + "/none.costmodel", 6, 7);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("none.costmodel"), std::string::npos);
  std::ofstream(dir + "/junk.costmodel") << "not a model";
  EXPECT_FALSE(loadPretrained(dir + "/junk.costmodel", 6, 7));
  std::filesystem::remove_all(dir);
}

TEST(CostModel, FineTuningMovesPredictionsTowardTheNewWorkload) {
  // Pretrained on one workload; the new one ranks by the opposite of its first input.
  auto old_w = synthetic(400, 31);
  CostModel m(6);
  m.fit(old_w);
  std::vector<Sample> new_w = synthetic(400, 32);
  for (auto& s : new_w) s.gflops = 10.f + 8.f * (1 - s.x[0]) + 2.f * s.x[2];
  std::vector<Sample> tune(new_w.begin(), new_w.begin() + 100), test(new_w.begin() + 100, new_w.end());
  auto tau = [&](const CostModel& model) {
    std::vector<std::vector<float>> xs;
    std::vector<double> t, p;
    for (auto& s : test) xs.push_back(s.x), t.push_back(s.gflops);
    for (auto& q : model.predict(xs)) p.push_back(q.mean);
    return kendallTau(t, p);
  };
  const double before = tau(m);
  m.update(tune);
  m.update(tune);
  const double after = tau(m);
  std::cout << "tau on the new workload before fine-tuning " << before << ", after " << after << "\n";
  EXPECT_LT(before, 0.0);
  EXPECT_GT(after, before + 0.5);
}

// GPU features: one per name, and the MFMA choices (intrinsic, LDS layout, LDS padding) each move
// their own feature, so that a model can tell the four variants of one tiling apart.
TEST(GpuFeatures, MfmaKnobsAreVisibleToTheModel) {
  auto g = gpuTargetInfo(*resolveTarget("mi300"));
  ASSERT_TRUE(g.ok());
  auto w = *parseWorkloadKey("gemm:NN:1024x1024x1024:f16*f16->f32");
  Space s = buildGpuGemmSpace(w, *g);
  const std::string base = "block_m=64,block_n=64,block_k=32,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,"
                           "pipeline=1,swizzle=0";
  auto f = [&](const std::string& extra) {
    auto c = s.fromKey(base + "," + extra);
    EXPECT_TRUE(c.ok()) << c.error();
    return gpuGemmFeatures(w, s, *c, *g, 96, 0);
  };
  const auto names = gpuGemmFeatureNames();
  auto at = [&](const std::vector<float>& v, const std::string& n) {
    return v[std::find(names.begin(), names.end(), n) - names.begin()];
  };
  auto plain = f("mma=1,lds_k_major=0,lds_pad=0");
  ASSERT_EQ(plain.size(), names.size());
  EXPECT_EQ(at(plain, "mfma_16x16x16"), 0.f);
  EXPECT_EQ(at(f("mma=2,lds_k_major=0,lds_pad=0"), "mfma_16x16x16"), 1.f);
  EXPECT_EQ(at(f("mma=1,lds_k_major=1,lds_pad=0"), "lds_k_major"), 1.f);
  EXPECT_EQ(at(f("mma=1,lds_k_major=0,lds_pad=1"), "lds_pad"), 1.f);
  EXPECT_EQ(at(plain, "lds_k_major") + at(plain, "lds_pad"), 0.f);
}

TEST(LearnedThroughput, IsTheFastestCallsOrTheMedianWithoutTimes) {
  // 2 GFLOP in calls of 0.2, 0.1 and 0.4 s: the fastest call is 20 GFLOP/s.
  EXPECT_NEAR(learnedThroughput(2e9, {0.2, 0.1, 0.4}, 10.0), 20.0, 1e-9);
  EXPECT_EQ(learnedThroughput(2e9, {}, 10.0), 10.0);
  EXPECT_EQ(learnedThroughput(2e9, {0.0, -1.0}, 10.0), 10.0);  // no usable time
  EXPECT_NEAR(learnedThroughput(2e9, {0.0, 0.5}, 10.0), 4.0, 1e-9);
}
