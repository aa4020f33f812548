// Issue #11: adaptive sampling's choice among scored proposals, leave-one-out without leaks, and
// a pretrained model that ranks the first batch of a workload it has never seen.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <set>
#include <unistd.h>

#include "spaces.h"

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/costmodel/features.h"
#include "sextant/search/sampling.h"
#include "sextant/search/transfer.h"

using namespace sextant;

namespace {
Space gridSpace() {
  std::vector<Knob> knobs;
  for (const char* n : {"a", "b", "c"}) {
    Knob k{n, {}, ""};
    for (int v = 0; v < 16; ++v) k.values.push_back(v);
    knobs.push_back(k);
  }
  return Space("grid", knobs, {});
}
// Eight tight groups of proposals (a centre and its six neighbours); group g scores `score(g)`.
void groups(const Space& s, std::vector<Candidate>& props, std::vector<float>& sc, std::map<uint64_t, float>& scored,
            const std::function<float(int)>& score) {
  const int centres[8][3] = {{2, 2, 2}, {2, 13, 2}, {13, 2, 2}, {13, 13, 2}, {2, 2, 13}, {2, 13, 13}, {13, 2, 13}, {13, 13, 13}};
  for (int g = 0; g < 8; ++g)
    for (int d = -1; d <= 6; ++d) {
      Candidate c = {centres[g][0], centres[g][1], centres[g][2]};
      if (d >= 0) c[size_t(d / 2)] += d % 2 ? 1 : -1;
      if (d == 6) continue;
      props.push_back(c), sc.push_back(score(g)), scored[s.encode(c)] = score(g);
    }
}
}  // namespace

TEST(Sampling, ClustersComeInOrderOfTheirBestScore) {
  Space s = gridSpace();
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::vector<Candidate> props;
    std::vector<float> sc;
    std::map<uint64_t, float> scored;
    groups(s, props, sc, scored, [](int g) { return float((g * 5) % 8); });  // best: group 3 (score 7)
    std::mt19937_64 rng(seed);
    SamplerStats st;
    auto out = sampledPlan(s, scored, {}, 2, rng, [](const Candidate&) { return false; }, st);
    ASSERT_EQ(out.size(), 2u);
    // The best group's centre is {13, 13, 2}; the second best (score 6, group 6) {13, 2, 13}.
    auto near = [](const Candidate& c, std::vector<int> centre) {
      int d = 0;
      for (size_t k = 0; k < 3; ++k) d += std::abs(c[k] - centre[k]);
      return d <= 1;
    };
    EXPECT_TRUE(near(out[0], {13, 13, 2})) << "seed " << seed << ": the first cluster kept is not the best-scored";
    // (k-means may split the best group in two: then its second half comes next.)
    EXPECT_TRUE(near(out[1], {13, 2, 13}) || near(out[1], {13, 13, 2})) << "seed " << seed;
  }
}

TEST(Sampling, NegativePredictionsAreKeptOnlyPredictedFailuresAreLeftOut) {
  Space s = gridSpace();
  std::vector<Candidate> props;
  std::vector<float> sc;
  std::map<uint64_t, float> scored;
  // Every regression prediction negative (a model may predict below 0).
  groups(s, props, sc, scored, [](int g) { return -0.5f + 0.01f * float(g); });
  std::set<Candidate> failing;
  for (size_t i = 0; i < props.size(); ++i)
    if (props[i][2] > 7) failing.insert(props[i]);  // groups 4-7 predicted to fail
  std::mt19937_64 rng(1);
  SamplerStats st;
  auto out = sampledPlan(s, scored, {}, 8, rng, [&](const Candidate& c) { return failing.count(c) > 0; }, st);
  ASSERT_FALSE(out.empty()) << "negative predictions are predictions, not failures";
  for (const auto& c : out) EXPECT_LE(c[2], 7) << "a candidate predicted to fail was planned";
}

namespace {
ReplayWorkload fakeReplay(int64_t m, int64_t n, int64_t k, const std::string& device) {
  ReplayWorkload w;
  w.workload.m = m, w.workload.n = n, w.workload.k = k;
  w.device = device;
  w.target_key = "cpu:x86_64-avx512";
  return w;
}
// A synthetic family: throughput depends on the register tile and K depth the same way for every
// shape (best: reg_m 8, two vectors per row, tile_k 128).
double synthetic(const Space& s, const Candidate& c) {
  auto v = s.values(c);
  double g = 100.0 * (1 - 0.15 * std::fabs(std::log2(double(v[3])) - 3)) * (1 - 0.3 * std::fabs(double(v[4]) / 16 - 2)) *
             (v[2] == 128 ? 1.0 : 0.7);
  return std::max(1.0, g);
}
void fill(ReplayWorkload& w, const HostCpu& cpu) {
  Space s = buildCpuGemmSpace(w.workload, cpu);
  for (uint64_t i = 0; i < s.size(); ++i) {
    Candidate c = s.at(i);
    double g = synthetic(s, c);
    w.by_candidate[s.keyOf(c)] = ReplayEntry{true, g, {w.workload.flops() / (g * 1e9)}, 0.1};
    w.best_gflops = std::max(w.best_gflops, g);
  }
}
}  // namespace

TEST(Transfer, LeaveOneOutNeverLeaksTheHeldOutWorkload) {
  ReplayWorkload a1 = fakeReplay(256, 256, 256, "znver5"), a2 = fakeReplay(256, 256, 256, "emeraldrapids"),
                 b = fakeReplay(512, 512, 512, "znver5"), c = fakeReplay(128, 1024, 1024, "emeraldrapids");
  std::vector<const ReplayWorkload*> all = {&a1, &a2, &b, &c};
  auto loo = leaveOneOut(all, a1, false);
  for (auto* w : loo) EXPECT_NE(w->workload.key(), a1.workload.key()) << "held-out shape leaked (other machine)";
  EXPECT_EQ(loo.size(), 2u);
  auto cross = leaveOneOut(all, a1, true);
  ASSERT_EQ(cross.size(), 1u);
  EXPECT_EQ(cross[0], &c);
  for (auto* w : cross) EXPECT_NE(w->device, a1.device);
  // A convolution held out: its implicit GEMM (3136x64x576 for the 56x56 3x3 64-channel layer)
  // trains nothing, on any machine; another GEMM does. And the other way round.
  ReplayWorkload conv = fakeReplay(1, 1, 1, "znver5"), implicit = fakeReplay(3136, 64, 576, "emeraldrapids");
  auto cw = makeConvWorkload("mb1ic64ih56oc64kh3ph1", "f32", "NHWC");
  ASSERT_TRUE(cw.ok());
  conv.workload = *cw;
  std::vector<const ReplayWorkload*> with_conv = {&conv, &implicit, &b};
  auto lc = leaveOneOut(with_conv, conv, false);
  ASSERT_EQ(lc.size(), 1u);
  EXPECT_EQ(lc[0], &b);
  auto lg = leaveOneOut(with_conv, implicit, false);
  ASSERT_EQ(lg.size(), 1u);
  EXPECT_EQ(lg[0], &b);
}

TEST(Transfer, SamplesLearnTheMedianUnlessToldToUseTheFastestCall) {
  const HostCpu cpu = cpuOfRecords("", "", hostCpu());
  ReplayWorkload w = fakeReplay(256, 256, 256, "");
  Space s = buildCpuGemmSpace(w.workload, cpu);
  const double f = w.workload.flops();
  // Recorded median 10 GFLOP/s; its calls took 5, 10 and 20 GFLOP/s worth of time.
  w.by_candidate[s.keyOf(s.at(0))] = ReplayEntry{true, 10.0, {f / 10e9, f / 20e9, f / 5e9}, 0.1};
  w.by_candidate[s.keyOf(s.at(1))] = ReplayEntry{true, 7.0, {}, 0.1};  // no times: the median
  TransferOptions o;
  auto med = cpuTransferSamples({&w}, o);
  o.fastest_call = true;
  auto fast = cpuTransferSamples({&w}, o);
  ASSERT_EQ(fast.size(), 2u);
  ASSERT_EQ(med.size(), 2u);
  std::vector<float> fl = {fast[0].gflops, fast[1].gflops}, ml = {med[0].gflops, med[1].gflops};
  std::sort(fl.begin(), fl.end()), std::sort(ml.begin(), ml.end());
  EXPECT_NEAR(fl[0], 7.0, 1e-4);
  EXPECT_NEAR(fl[1], 20.0, 1e-3);
  EXPECT_NEAR(ml[0], 7.0, 1e-4);
  EXPECT_NEAR(ml[1], 10.0, 1e-4);
}

TEST(Transfer, AFreshWorkloadsFirstBatchFollowsThePretrainedRanking) {
  // Records of device "" are this machine's (described by hostCpu()), as the training assumes.
  const HostCpu cpu = cpuOfRecords("", "", hostCpu());
  ReplayWorkload w1 = fakeReplay(256, 512, 256, ""), w2 = fakeReplay(512, 256, 512, ""),
                 held = fakeReplay(384, 384, 512, "");
  for (auto* w : {&w1, &w2, &held}) fill(*w, cpu);
  TransferOptions o;
  o.max_per_workload = 600, o.epochs = 150;
  CostModel m = trainCpuModel(leaveOneOut({&w1, &w2, &held}, held, false), o);
  const std::string dir = std::filesystem::temp_directory_path() / ("sextant-transfer-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(m.save(dir + "/p.costmodel"));
  const HostCpu& host = cpu;
  Space space = buildCpuGemmSpace(held.workload, host);
  auto firstBatch = [&](const std::string& pretrained) {
    StrategyContext ctx;
    ctx.num_features = int(cpuGemmFeatureNames().size());
    ctx.feature_version = kCpuFeatureVersion;
    ctx.features = [&](const Candidate& c) { return cpuGemmFeatures(held.workload, space, c, host); };
    ctx.pretrained_path = pretrained;
    auto st = makeStrategy("model", 5, ctx);
    EXPECT_TRUE(st);
    double sum = 0;
    auto batch = (*st)->propose(space, {}, 16);
    for (const auto& c : batch) sum += synthetic(space, c) / held.best_gflops;
    return sum / double(batch.size());
  };
  const double cold = firstBatch(""), warm = firstBatch(dir + "/p.costmodel");
  std::cout << "mean score of the first batch: cold " << cold << ", pretrained " << warm << "\n";
  EXPECT_GT(warm, 0.85) << "the pretrained model's first batch should be near the known best";
  EXPECT_GT(warm, cold + 0.15);
  std::filesystem::remove_all(dir);
}

TEST(Transfer, ShippedPriorKeepsTheRecordsNearTheBestAndWeighsOtherCpusLess) {
  const HostCpu cpu = cpuOfRecords("", "", hostCpu());
  ReplayWorkload a = fakeReplay(256, 512, 256, "znver5"), b = fakeReplay(512, 256, 512, "emeraldrapids");
  for (auto* w : {&a, &b}) fill(*w, cpu);
  size_t near = 0;
  for (auto* w : {&a, &b})
    for (const auto& [k, e] : w->by_candidate) near += e.gflops >= 0.9 * w->best_gflops;
  const std::string path = std::filesystem::temp_directory_path() / ("sextant-prior-" + std::to_string(getpid()) + ".json");
  ASSERT_TRUE(savePrior(path, {&a, &b}));
  auto p = loadPrior(path, "znver5");
  ASSERT_TRUE(p) << p.error();
  ASSERT_EQ(p->size(), near);
  ASSERT_GT(near, 0u);
  size_t heavy = 0;
  for (const auto& r : *p) {
    EXPECT_GE(r.score, 0.9);
    EXPECT_LE(r.score, 1.0);
    EXPECT_FALSE(r.knobs.empty());
    heavy += r.weight == 1.0;
  }
  size_t near_a = 0;
  for (const auto& [k, e] : a.by_candidate) near_a += e.gflops >= 0.9 * a.best_gflops;
  EXPECT_EQ(heavy, near_a) << "records of this machine's CPU weigh 1, the others 0.5";
  // Refusals: not JSON, another format, a record without a score.
  for (const std::string bad : {"not json", R"({"format":"sextant-records","records":[]})",
                                R"({"format":"sextant-prior","version":1,"records":[{"knobs":{}}]})"}) {
    std::ofstream(path) << bad;
    auto r = loadPrior(path, "znver5");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find(path), std::string::npos) << r.error();
  }
  EXPECT_FALSE(loadPrior(path + ".missing", ""));
  std::filesystem::remove(path);
}
