#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "sextant/common/strings.h"
#include "sextant/costmodel/model.h"
#include "sextant/search/strategy.h"

#include "sextant/costmodel/ppo.h"
#include "sextant/search/sampling.h"
#include "strategies_internal.h"

namespace sextant {
namespace {

using detail::ModelGuidedSearch;
using detail::RandomSearch;


// Every valid candidate in enumeration order (for small spaces, or to record whole spaces).
class ExhaustiveSearch : public SearchStrategy {
 public:
  std::string name() const override { return "exhaustive"; }
  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    std::vector<Candidate> out;
    for (; next_ < space.size() && out.size() < n; ++next_) {
      Candidate c = space.at(next_);
      if (!tried.count(space.encode(c))) out.push_back(std::move(c));
    }
    return out;
  }

 private:
  uint64_t next_ = 0;
};


// AutoTVM-style search: simulated annealing over the cost model's prediction (not the hardware):
// 128 persistent chains, up to 500 steps per round, temperature 1 -> 0, early stop after 50 steps
// without a better prediction; the plan is the best unmeasured points the chains visited, with
// 5% of it (at least one) drawn at random. Shares the model, its training and its warm start with
// ModelGuidedSearch.
class AnnealingSearch : public ModelGuidedSearch {
 public:
  AnnealingSearch(uint64_t seed, StrategyContext ctx) : ModelGuidedSearch(seed, std::move(ctx)) {}
  std::string name() const override { return "sa"; }

  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    if (!model().trained()) return randomSearch().propose(space, tried, n);
    return planFrom(space, anneal(space, tried), tried, n);
  }

 protected:
  // One annealing round over the model; every unmeasured point seen, with its predicted score.
  std::map<uint64_t, float> anneal(const Space& space, const std::unordered_set<uint64_t>& tried) {
    if (chains_.empty())
      for (int i = 0; i < kChains; ++i) chains_.push_back(space.sample(rng()));
    auto score = [&](const std::vector<Candidate>& cs) { return predictedScores(cs); };
    std::vector<float> cur = score(chains_);
    std::map<uint64_t, float> visited;  // unmeasured points seen, with their predicted score
    auto note = [&](const Candidate& c, float v) {
      uint64_t id = space.encode(c);
      if (!tried.count(id)) visited[id] = v;
    };
    for (size_t i = 0; i < chains_.size(); ++i) note(chains_[i], cur[i]);
    float best = *std::max_element(cur.begin(), cur.end());
    int since_better = 0;
    std::uniform_real_distribution<double> u(0, 1);
    for (int step = 0; step < kSteps && since_better < kEarlyStop; ++step) {
      const double temp = 1.0 - double(step) / kSteps;
      std::vector<Candidate> next = chains_;
      for (auto& c : next) {
        // One knob takes another of its values; an invalid point keeps the chain where it is.
        size_t k = rng()() % c.size();
        size_t nv = space.knobs()[k].values.size();
        if (nv < 2) continue;
        Candidate t = c;
        t[k] = int((size_t(c[k]) + 1 + rng()() % (nv - 1)) % nv);
        if (space.isValid(t)) c = t;
      }
      std::vector<float> ns = score(next);
      bool improved = false;
      for (size_t i = 0; i < next.size(); ++i) {
        note(next[i], ns[i]);
        if (ns[i] > best) best = ns[i], improved = true;
        if (ns[i] >= cur[i] || (temp > 0 && u(rng()) < std::exp((ns[i] - cur[i]) / (temp * kScale))))
          chains_[i] = next[i], cur[i] = ns[i];
      }
      since_better = improved ? 0 : since_better + 1;
    }
    return visited;
  }

 private:
  static constexpr int kChains = 128, kSteps = 500, kEarlyStop = 50;
  static constexpr double kScale = 0.05;  // predicted scores are throughput / best, in [0, ~1]
  std::vector<Candidate> chains_;
};

// Ansor/MetaSchedule-style search: evolution over the cost model's prediction. A population of
// 512 (the best measured candidates seed it, the rest random) evolves for 4 generations:
// parents by tournament on predicted throughput, uniform crossover of knob values, then with
// probability 0.85 one knob mutated; invalid children are replaced by their parent. The plan is
// the best unmeasured candidates seen, plus 5% (at least one) at random.
class EvolutionarySearch : public ModelGuidedSearch {
 public:
  EvolutionarySearch(uint64_t seed, StrategyContext ctx) : ModelGuidedSearch(seed, std::move(ctx)) {}
  std::string name() const override { return "evolutionary"; }

  void observe(const Space& space, const std::vector<Observation>& results) override {
    for (const auto& r : results)
      if (r.ok) measured_.push_back({r.gflops, r.candidate});
    std::sort(measured_.begin(), measured_.end(), [](auto& a, auto& b) { return a.first > b.first; });
    if (measured_.size() > kPopulation / 4) measured_.resize(kPopulation / 4);
    ModelGuidedSearch::observe(space, results);
  }

  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    if (!model().trained()) return randomSearch().propose(space, tried, n);
    auto score = [&](const std::vector<Candidate>& cs) { return predictedScores(cs); };
    std::vector<Candidate> pop;
    for (auto& [g, c] : measured_) pop.push_back(c);
    while (pop.size() < kPopulation) pop.push_back(space.sample(rng()));
    std::vector<float> fit = score(pop);
    std::map<uint64_t, float> seen;
    auto note = [&](const std::vector<Candidate>& cs, const std::vector<float>& f) {
      for (size_t i = 0; i < cs.size(); ++i) {
        uint64_t id = space.encode(cs[i]);
        if (!tried.count(id)) seen[id] = f[i];
      }
    };
    note(pop, fit);
    std::uniform_real_distribution<double> u(0, 1);
    auto tournament = [&]() -> size_t {
      size_t a = rng()() % pop.size(), b = rng()() % pop.size();
      return fit[a] >= fit[b] ? a : b;
    };
    for (int gen = 0; gen < kGenerations; ++gen) {
      std::vector<Candidate> next;
      while (next.size() < kPopulation) {
        const Candidate& p1 = pop[tournament()];
        const Candidate& p2 = pop[tournament()];
        Candidate child = p1;
        for (size_t k = 0; k < child.size(); ++k)
          if (rng()() & 1) child[k] = p2[k];
        if (u(rng()) < kMutation) {
          size_t k = rng()() % child.size();
          child[k] = int(rng()() % space.knobs()[k].values.size());
        }
        next.push_back(space.isValid(child) ? child : p1);
      }
      pop = std::move(next);
      fit = score(pop);
      note(pop, fit);
    }
    return planFrom(space, seen, tried, n);
  }

 private:
  static constexpr size_t kPopulation = 512;
  static constexpr int kGenerations = 4;
  static constexpr double kMutation = 0.85;
  std::vector<std::pair<double, Candidate>> measured_;  // best measured, seeds the population
};


// SA over the model, then adaptive sampling ("sa-sampling": the sampling stage alone).
class AnnealingSamplingSearch : public AnnealingSearch {
 public:
  AnnealingSamplingSearch(uint64_t seed, StrategyContext ctx) : AnnealingSearch(seed, std::move(ctx)) {}
  std::string name() const override { return "sa-sampling"; }
  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    if (!model().trained()) return randomSearch().propose(space, tried, n);
    auto scored = anneal(space, tried);
    auto out = sampledPlan(space, scored, tried, n, rng(), [&](const Candidate& c) { return fails(c); }, stats_);
    ++rounds_;
    return out.empty() ? randomSearch().propose(space, tried, n) : out;
  }
  std::string report() const override { return AnnealingSearch::report() + samplerReport(stats_, rounds_); }

 private:
  SamplerStats stats_;
  int rounds_ = 0;
};

// Chameleon's adaptive exploration: a PPO agent walks the knob space over the cost model
// (costmodel/ppo.h); "ppo" plans the best unmeasured points it visited, "chameleon" sends them
// through adaptive sampling. The agent persists across rounds and keeps learning.
class PpoSearch : public ModelGuidedSearch {
 public:
  PpoSearch(uint64_t seed, StrategyContext ctx, bool sampling)
      : ModelGuidedSearch(seed, std::move(ctx)), seed_(seed), sampling_(sampling) {}
  std::string name() const override { return sampling_ ? "chameleon" : "ppo"; }
  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    if (!model().trained()) return randomSearch().propose(space, tried, n);
    if (!agent_) {
      std::vector<int> sizes;
      for (const auto& k : space.knobs()) sizes.push_back(int(k.values.size()));
      agent_ = std::make_unique<PpoExplorer>(sizes, seed_);
    }
    std::vector<PpoExplorer::Point> starts;
    for (int i = 0; i < kStarts; ++i) starts.push_back(space.sample(rng()));
    auto visits = agent_->explore(
        starts, [&](const std::vector<PpoExplorer::Point>& ps) { return predictedScores(ps); },
        [&](const PpoExplorer::Point& p) { return space.isValid(p); });
    std::map<uint64_t, float> scored;
    for (const auto& v : visits) {
      uint64_t id = space.encode(v.point);
      if (!tried.count(id)) scored[id] = v.reward;
    }
    ++rounds_;
    if (!sampling_) return planFrom(space, scored, tried, n);
    auto out = sampledPlan(space, scored, tried, n, rng(), [&](const Candidate& c) { return fails(c); }, stats_);
    return out.empty() ? planFrom(space, scored, tried, n) : out;
  }
  std::string report() const override {
    return ModelGuidedSearch::report() + "; PPO rounds: " + std::to_string(rounds_) +
           (sampling_ ? samplerReport(stats_, rounds_) : "");
  }

 private:
  static constexpr int kStarts = 128;
  uint64_t seed_;
  bool sampling_;
  std::unique_ptr<PpoExplorer> agent_;
  SamplerStats stats_;
  int rounds_ = 0;
};


}  // namespace

std::vector<std::string> strategyNames() {
  return {"random", "exhaustive", "model", "sa", "evolutionary", "ppo", "chameleon", "sa-sampling", "glimpse"};
}

Result<std::unique_ptr<SearchStrategy>> makeStrategy(const std::string& name, uint64_t seed,
                                                     const StrategyContext& ctx) {
  if (name == "random") return std::unique_ptr<SearchStrategy>(new RandomSearch(seed));
  if (name == "exhaustive") return std::unique_ptr<SearchStrategy>(new ExhaustiveSearch());
  if (name == "model" || name == "sa" || name == "evolutionary" || name == "ppo" || name == "chameleon" ||
      name == "sa-sampling" || name == "glimpse") {
    if (!ctx.features || ctx.num_features <= 0) return Error{"strategy '" + name + "' needs the cost model's features"};
    if (name == "sa") return std::unique_ptr<SearchStrategy>(new AnnealingSearch(seed, ctx));
    if (name == "sa-sampling") return std::unique_ptr<SearchStrategy>(new AnnealingSamplingSearch(seed, ctx));
    if (name == "ppo") return std::unique_ptr<SearchStrategy>(new PpoSearch(seed, ctx, false));
    if (name == "chameleon") return std::unique_ptr<SearchStrategy>(new PpoSearch(seed, ctx, true));
    if (name == "glimpse") return detail::makeGlimpseSearch(seed, ctx);
    if (name == "evolutionary") return std::unique_ptr<SearchStrategy>(new EvolutionarySearch(seed, ctx));
    return std::unique_ptr<SearchStrategy>(new ModelGuidedSearch(seed, ctx));
  }
  return Error{"unknown strategy '" + name + "' (known: " + join(strategyNames(), ", ") + ")"};
}

}  // namespace sextant
