// Issue #34: a pretrained start must only help. A synthetic family where the prior and the
// pretrained cost model are deliberately wrong (they rank a region far from the optimum best, as
// the shipped model ranked unroll_k 4-8 on a shape whose good schedules all have unroll_k 1): the
// default strategy must still find the optimum about as soon as cold annealing does.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>
#include <random>
#include <unistd.h>

#include "spaces.h"

#include "sextant/costmodel/model.h"
#include "sextant/search/strategy.h"

using namespace sextant;

namespace {

struct Family {
  Space space = testing_spaces::syntheticSpace();
  Candidate optimum, decoy;
  // Throughput falls off smoothly with the distance (in knob steps) from a peak.
  static double peaked(const Candidate& c, const Candidate& at) {
    double d = 0;
    for (size_t i = 0; i < c.size(); ++i) d += double((c[i] - at[i]) * (c[i] - at[i]));
    return 100.0 / (1.0 + d);
  }
  // With a decoy hill (issue #34's top check): the decoy region is good but lower than the peak.
  double decoy_height = 0;
  double truth(const Candidate& c) const { return std::max(peaked(c, optimum), decoy_height * peaked(c, decoy)); }
  Family() {
    optimum = space.at(space.size() / 3);
    // The decoy: every knob as far from the optimum's value as it goes, snapped to a valid point.
    std::map<std::string, int64_t> far;
    for (size_t k = 0; k < space.knobs().size(); ++k) {
      const auto& v = space.knobs()[k].values;
      far[space.knobs()[k].name] = v[size_t(optimum[k]) < v.size() / 2 ? v.size() - 1 : 0];
    }
    decoy = nearestValid(space, far);
  }
};

// The best found after each round of 16 measurements, for `rounds` rounds. With `first`, the first
// round measures it beside the strategy's 15 (as the tuner measures the untuned default).
std::vector<double> curve(const Family& f, const std::string& strategy, uint64_t seed, const StrategyContext& ctx,
                          int rounds, const Candidate* first = nullptr, std::string* report = nullptr) {
  auto st = makeStrategy(strategy, seed, ctx);
  EXPECT_TRUE(st.ok()) << st.error();
  std::unordered_set<uint64_t> tried;
  if (first) tried.insert(f.space.encode(*first));
  std::vector<double> best;
  double b = 0;
  for (int r = 0; r < rounds; ++r) {
    auto batch = (*st)->propose(f.space, tried, first && r == 0 ? 15 : 16);
    if (first && r == 0) batch.insert(batch.begin(), *first);
    std::vector<Observation> obs;
    for (auto& c : batch) {
      tried.insert(f.space.encode(c));
      obs.push_back({c, true, f.truth(c)});
      b = std::max(b, f.truth(c));
    }
    (*st)->observe(f.space, obs);
    best.push_back(b);
  }
  if (getenv("SEXTANT_TEST_VERBOSE")) std::cout << strategy << " seed " << seed << ": " << (*st)->report() << "\n";
  if (report) *report = (*st)->report();
  return best;
}


// The first round (of 16 measurements) after which the optimum has been found; rounds + 1 if never.
int roundsToOptimum(const std::vector<double>& best) {
  for (size_t r = 0; r < best.size(); ++r)
    if (best[r] >= 100.0) return int(r) + 1;
  return int(best.size()) + 1;
}

int median(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A context whose pretrained model learnt a peak at `at` (600 random points labelled by it) and
// whose prior's best records all sit there; the model file is removed with the object.
struct Transferred {
  StrategyContext ctx;
  std::string path;
  Transferred(const Family& f, const Candidate& at, const std::string& name) {
    ctx = testing_spaces::indexFeatures(f.space);
    path = (std::filesystem::temp_directory_path() /
            ("sextant-" + name + "-" + std::to_string(getpid()) + ".costmodel"))
               .string();
    CostModelOptions o;
    o.feature_version = ctx.feature_version;
    CostModel m(ctx.num_features, o);
    std::mt19937_64 rng(3);
    std::vector<Sample> data;
    while (data.size() < 600) {
      Candidate c = f.space.at(rng() % f.space.size());
      data.push_back({ctx.features(c), float(Family::peaked(c, at)), false, 0, 1});
    }
    m.fit(data);
    EXPECT_TRUE(m.save(path).ok());
    ctx.pretrained_path = path;
    for (int i = 0; i < 40; ++i) {
      PriorRecord p;
      for (size_t k = 0; k < f.space.knobs().size(); ++k)
        p.knobs[f.space.knobs()[k].name] = f.space.knobs()[k].values[size_t(at[k])];
      p.score = 1.0, p.weight = 1.0, p.workload = "";
      ctx.prior.push_back(p);
    }
  }
  ~Transferred() { std::filesystem::remove(path); }
};

}  // namespace

// Wrong: the pretrained model and the prior peak at the decoy. The default strategy notices after
// its first plan (its predictions rank the measurements no better than chance), drops both and
// goes on cold: it finds the optimum at most one plan (16 measurements) later than cold annealing
// (median over 5 seeds). Before issue #34 it needed 7 plans against annealing's 4.
TEST(RobustTransfer, AWrongPriorAndPretrainedModelCostAtMostOnePlanAgainstColdAnnealing) {
  Family f;
  Transferred wrong(f, f.decoy, "wrong");
  const StrategyContext cold = testing_spaces::indexFeatures(f.space);
  const int rounds = 12;  // 192 measurements
  std::vector<int> gl, sa;
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    auto a = curve(f, "sa", seed, cold, rounds);
    auto g = curve(f, "glimpse", seed, wrong.ctx, rounds);
    sa.push_back(roundsToOptimum(a));
    gl.push_back(roundsToOptimum(g));
    std::cout << "[ seed " << seed << " ] plans to the optimum: glimpse (wrong start) " << gl.back() << ", sa (cold) "
              << sa.back() << "\n";
  }
  EXPECT_LE(median(gl), median(sa) + 1);
}

// Right: the same start peaked at the optimum still helps (probing costs a quarter of the first
// plans, no more): the optimum within the first two plans in every seed.
TEST(RobustTransfer, ARightStartStillHelps) {
  Family f;
  Transferred right(f, f.optimum, "right");
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    auto g = curve(f, "glimpse", seed, right.ctx, 4);
    std::cout << "[ seed " << seed << " ] plans to the optimum with a right start: " << roundsToOptimum(g) << "\n";
    EXPECT_LE(roundsToOptimum(g), 2) << seed;
  }
}

// The top, not only the ranks (found live on Intel Cascade Lake, 384x3072x768 NT): the start
// peaks at a decoy that really is a hill (40% of the optimum's throughput), so its predictions rank
// the measurements well (Kendall tau high: the old check trusted it), but every pick is below the
// untuned default, one knob from the optimum (50%). The default strategy must notice that none of
// its picks beat the default, go cold, and find the optimum within three plans in every seed
// (before the check: 4-5).
TEST(RobustTransfer, PicksThatNeverBeatTheUntunedDefaultDropTheStartWhateverTheRanks) {
  Family f;
  f.decoy_height = 0.4;
  Candidate def;
  for (size_t k = 0; k < f.space.knobs().size() && def.empty(); ++k)
    for (int step : {-1, 1}) {
      Candidate c = f.optimum;
      c[k] += step;
      if (c[k] >= 0 && size_t(c[k]) < f.space.knobs()[k].values.size() && f.space.isValid(c)) {
        def = c;
        break;
      }
    }
  ASSERT_FALSE(def.empty());
  ASSERT_DOUBLE_EQ(f.truth(def), 50.0);
  Transferred wrong(f, f.decoy, "decoy-hill");
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    std::string report;
    auto g = curve(f, "glimpse", seed, wrong.ctx, 4, &def, &report);
    std::cout << "[ seed " << seed << " ] plans to the optimum with a decoy hill: " << roundsToOptimum(g) << "\n";
    EXPECT_NE(report.find("none of its"), std::string::npos) << seed << ": " << report;
    EXPECT_LE(roundsToOptimum(g), 3) << seed << ": " << report;
  }
}
