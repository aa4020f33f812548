#include <gtest/gtest.h>

#include "spaces.h"

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/search/strategy.h"

using namespace sextant;

namespace {
Space smallSpace() { return testing_spaces::avx512Space(32, 32, 32); }
}  // namespace

TEST(Strategy, RandomIsDeterministicGivenTheSeed) {
  Space s = smallSpace();
  auto a = makeStrategy("random", 42), b = makeStrategy("random", 42), c = makeStrategy("random", 43);
  std::unordered_set<uint64_t> none;
  auto pa = (*a)->propose(s, none, 20), pb = (*b)->propose(s, none, 20), pc = (*c)->propose(s, none, 20);
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
}

TEST(Strategy, NeverProposesTriedOrDuplicateCandidatesAndExhaustsTheSpace) {
  Space s = smallSpace();
  for (const char* name : {"random", "exhaustive"}) {
    auto st = makeStrategy(name, 5);
    ASSERT_TRUE(st.ok());
    std::unordered_set<uint64_t> tried;
    for (int round = 0; round < 10000; ++round) {
      auto batch = (*st)->propose(s, tried, 17);
      if (batch.empty()) break;
      for (auto& c : batch) {
        ASSERT_TRUE(s.isValid(c));
        ASSERT_TRUE(tried.insert(s.encode(c)).second) << name << ": proposed twice";
      }
    }
    EXPECT_EQ(tried.size(), s.size()) << name;
  }
}

TEST(Strategy, UnknownNameIsAnError) {
  auto st = makeStrategy("annealing-v2", 1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("known: random, exhaustive"), std::string::npos);
}

TEST(Strategy, ModelGuidedSkipsPredictedFailuresAndChecksSomeSkips) {
  Space s = smallSpace();
  StrategyContext ctx;
  ctx.num_features = int(s.knobs().size());
  ctx.features = [&](const Candidate& c) {
    std::vector<float> x;
    for (size_t i = 0; i < c.size(); ++i) x.push_back(float(c[i]) / float(s.knobs()[i].values.size()));
    return x;
  };
  const int reg_m = s.knobIndex("reg_m");
  // Synthetic truth: the largest register tile row count always fails; throughput grows with
  // tile_k.
  auto measure = [&](const Candidate& c) {
    bool fails = s.knobs()[size_t(reg_m)].values[size_t(c[size_t(reg_m)])] >= 8;
    return Observation{c, !fails, fails ? 0.0 : 10.0 + c[2]};
  };
  auto st = makeStrategy("model", 3, ctx);
  ASSERT_TRUE(st.ok()) << st.error();
  std::unordered_set<uint64_t> tried;
  int proposed_failing = 0, proposed = 0;
  for (int round = 0; round < 12; ++round) {
    auto batch = (*st)->propose(s, tried, 16);
    std::vector<Observation> obs;
    for (auto& c : batch) {
      ASSERT_TRUE(tried.insert(s.encode(c)).second);
      obs.push_back(measure(c));
      if (round >= 4) {
        ++proposed;
        proposed_failing += !obs.back().ok;
      }
    }
    (*st)->observe(s, obs);
  }
  std::string report = (*st)->report();
  // Failing candidates are a large share of the space; once trained, the model avoids them
  // except for the occasional check.
  int64_t failing = 0;
  for (uint64_t i = 0; i < s.size(); ++i) failing += !measure(s.at(i)).ok;
  EXPECT_GT(double(failing) / double(s.size()), 0.3);
  EXPECT_LT(double(proposed_failing) / double(proposed), 0.15) << report;
  EXPECT_EQ(report.find("0 candidates skipped"), std::string::npos) << report;
  EXPECT_EQ(report.find(" 0 of them measured"), std::string::npos) << report;
}

namespace {
// Runs a strategy on a synthetic space with a known optimum for at most 12 plans of 16
// measurements (192, under 2% of the space); returns the best throughput found (100 = optimum).
double bestFoundOnSyntheticSpace(const char* strategy) {
  Space s = testing_spaces::syntheticSpace();
  EXPECT_GT(s.size(), 5000u);
  const Candidate optimum = s.at(s.size() / 3);
  // Throughput falls off smoothly with the distance (in knob steps) from the optimum.
  auto gflops = [&](const Candidate& c) {
    double d = 0;
    for (size_t i = 0; i < c.size(); ++i) d += double((c[i] - optimum[i]) * (c[i] - optimum[i]));
    return 100.0 / (1.0 + d);
  };
  StrategyContext ctx;
  ctx.num_features = int(s.knobs().size());
  ctx.features = [&](const Candidate& c) {
    std::vector<float> x;
    for (size_t i = 0; i < c.size(); ++i) x.push_back(float(c[i]));
    return x;
  };
  auto st = makeStrategy(strategy, 11, ctx);
  EXPECT_TRUE(st.ok());
  std::unordered_set<uint64_t> tried;
  double best = 0;
  for (int round = 0; round < 12 && best < 100.0; ++round) {
    auto batch = (*st)->propose(s, tried, 16);
    std::vector<Observation> obs;
    for (auto& c : batch) {
      EXPECT_TRUE(tried.insert(s.encode(c)).second);
      obs.push_back({c, true, gflops(c)});
      best = std::max(best, gflops(c));
    }
    (*st)->observe(s, obs);
  }
  return best;
}
}  // namespace

class ModelBasedOnSyntheticSpace : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelBasedOnSyntheticSpace, FindsTheKnownOptimumWithin192Measurements) {
  EXPECT_DOUBLE_EQ(bestFoundOnSyntheticSpace(GetParam()), 100.0) << GetParam();
}

// The control: uniform random search does not find it in the same budget (with this seed), so
// the test above can fail.
TEST(Strategy, RandomDoesNotFindTheSyntheticOptimumWithin192Measurements) {
  EXPECT_LT(bestFoundOnSyntheticSpace("random"), 100.0);
}

INSTANTIATE_TEST_SUITE_P(Strategies, ModelBasedOnSyntheticSpace, ::testing::Values("sa", "evolutionary", "ppo", "chameleon", "sa-sampling", "glimpse"));

// Determinism given the seed, for the model-based strategies (three rounds of proposals, with the
// same synthetic measurements fed back, are identical across two instances).
TEST(Strategy, ModelBasedStrategiesAreDeterministicGivenTheSeed) {
  Space s = testing_spaces::syntheticSpace();
  StrategyContext ctx = testing_spaces::indexFeatures(s);
  auto gflops = [](const Candidate& c) {
    double g = 10;
    for (size_t i = 0; i < c.size(); ++i) g += double((c[i] * 7 + int(i)) % 5);
    return g;
  };
  for (const char* name : {"sa", "evolutionary", "ppo", "chameleon", "sa-sampling", "glimpse"}) {
    std::vector<std::vector<Candidate>> runs[2];
    for (int r = 0; r < 2; ++r) {
      auto st = makeStrategy(name, 5, ctx);
      ASSERT_TRUE(st.ok());
      std::unordered_set<uint64_t> tried;
      for (int round = 0; round < 3; ++round) {
        auto batch = (*st)->propose(s, tried, 16);
        std::vector<Observation> obs;
        for (auto& c : batch) tried.insert(s.encode(c)), obs.push_back({c, true, gflops(c)});
        (*st)->observe(s, obs);
        runs[r].push_back(batch);
      }
    }
    EXPECT_EQ(runs[0], runs[1]) << name;
  }
}
