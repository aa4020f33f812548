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

namespace sextant {
namespace {

// Uniform random sampling without replacement over the valid candidates.
class RandomSearch : public SearchStrategy {
 public:
  explicit RandomSearch(uint64_t seed) : rng_(seed) {}
  std::string name() const override { return "random"; }
  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    std::vector<Candidate> out;
    std::unordered_set<uint64_t> taken;
    const uint64_t untried = space.size() > tried.size() ? space.size() - tried.size() : 0;
    n = size_t(std::min<uint64_t>(n, untried));
    if (n == 0) return out;
    if (tried.size() * 2 < space.size()) {
      // Mostly unexplored: rejection sampling is uniform and cheap.
      while (out.size() < n) {
        Candidate c = space.sample(rng_);
        uint64_t id = space.encode(c);
        if (tried.count(id) || !taken.insert(id).second) continue;
        out.push_back(std::move(c));
      }
      return out;
    }
    // Mostly explored: draw from the list of what is left.
    std::vector<uint64_t> left;
    for (uint64_t i = 0; i < space.size(); ++i) {
      uint64_t id = space.encode(space.at(i));
      if (!tried.count(id)) left.push_back(i);
    }
    for (size_t i = 0; i < n && !left.empty(); ++i) {
      std::uniform_int_distribution<size_t> d(0, left.size() - 1);
      size_t j = d(rng_);
      out.push_back(space.at(left[j]));
      left[j] = left.back();
      left.pop_back();
    }
    return out;
  }

 private:
  std::mt19937_64 rng_;
};

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

// Random proposals ordered by the learned cost model (the simplest model-based search): each
// round draws a pool of unmeasured candidates, drops those the model thinks will fail, and takes
// the best by predicted throughput, plus a few random ones (epsilon-greedy) so the model keeps
// seeing the rest of the space. Until the model has data it is plain random search.
class ModelGuidedSearch : public SearchStrategy {
 public:
  ModelGuidedSearch(uint64_t seed, StrategyContext ctx)
      : random_(seed), rng_(seed ^ 0x9e3779b97f4a7c15ull), ctx_(std::move(ctx)), model_(ctx_.num_features, opts(seed, ctx_)) {
    // Warm start from the model saved by an earlier run of this workload next to the database;
    // else from the pretrained model (fine-tuned online, blended with a frozen copy of it).
    if (!ctx_.model_path.empty() && std::filesystem::exists(ctx_.model_path)) {
      auto loaded = CostModel::load(ctx_.model_path);
      if (loaded && loaded->numFeatures() == ctx_.num_features && loaded->featureVersion() == ctx_.feature_version) {
        model_ = std::move(*loaded);
        warm_started_ = true;
      } else {
        notes_ = "ignored the saved model " + ctx_.model_path + " (" +
                 (loaded ? "other features" : loaded.error()) + "); ";
      }
    }
    if (!warm_started_ && !ctx_.pretrained_path.empty()) {
      auto a = loadPretrained(ctx_.pretrained_path, ctx_.num_features, ctx_.feature_version);
      auto b = loadPretrained(ctx_.pretrained_path, ctx_.num_features, ctx_.feature_version);
      if (a && b) {
        model_ = std::move(*a);
        prior_model_ = std::make_unique<CostModel>(std::move(*b));
      } else {
        notes_ = "cold start: " + (a ? b.error() : a.error()) + "; ";
      }
    }
  }
  std::string name() const override { return "model"; }

  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    if (!model_.trained()) return random_.propose(space, tried, n);
    auto pool = random_.propose(space, tried, std::max<size_t>(n, kPoolFactor * n));
    if (pool.size() <= n) return pool;
    std::vector<std::vector<float>> xs;
    for (const auto& c : pool) xs.push_back(ctx_.features(c));
    auto pred = predict(xs);
    std::vector<size_t> order(pool.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pred[a].mean > pred[b].mean; });
    // Epsilon-greedy: most of the batch by predicted throughput, at least one pick at random.
    const size_t greedy = n - exploreCount(n);
    std::vector<Candidate> out;
    std::vector<size_t> rest, skipped;
    for (size_t i : order) {
      if (pred[i].p_fail > kSkipAbove) {
        ++skipped_;
        skipped.push_back(i);
        continue;
      }
      if (out.size() < greedy) out.push_back(pool[i]);
      else rest.push_back(i);
    }
    // Now and then, measure a skipped candidate: the only way to know whether skips are right.
    if (!skipped.empty() && out.size() < n && skipped_ >= next_check_) {
      const Candidate& c = pool[skipped[rng_() % skipped.size()]];
      checks_.insert(space.encode(c));
      out.push_back(c);
      next_check_ = skipped_ + kCheckEvery;
    }
    std::shuffle(rest.begin(), rest.end(), rng_);
    for (size_t i = 0; out.size() < n && i < rest.size(); ++i) out.push_back(pool[rest[i]]);
    return out;
  }

  void observe(const Space& space, const std::vector<Observation>& results) override {
    for (const auto& r : results) {
      data_.push_back(Sample{ctx_.features(r.candidate), float(r.gflops), !r.ok, 0});
      if (checks_.erase(space.encode(r.candidate))) {
        ++checked_;
        checked_failed_ += !r.ok;
      }
    }
    size_t ok = 0;
    for (const auto& s : data_) ok += !s.failed;
    own_ok_ = ok;
    if (ok < kMinSamples && !model_.trained()) return;
    if (!model_.trained()) model_.fit(data_);
    else model_.update(data_);
    if (!ctx_.model_path.empty()) {
      auto st = model_.save(ctx_.model_path);
      if (!st && save_error_.empty()) save_error_ = st.error();
    }
  }

  std::string report() const override {
    std::string r = notes_;
    if (warm_started_) r += "warm-started from " + ctx_.model_path + "; ";
    if (prior_model_) r += "started from the pretrained model " + ctx_.pretrained_path + " (fine-tuned online); ";
    r += std::to_string(skipped_) + " candidates skipped as predicted to fail (p > 0.5), " +
         std::to_string(checked_) + " of them measured as a check (" + std::to_string(checked_failed_) + " failed)";
    if (!save_error_.empty()) r += "; " + save_error_;
    return r;
  }

 protected:
  const CostModel& model() const { return model_; }
  // Epsilon-greedy: the share of a plan drawn at random (at least one in plans of two or more).
  static size_t exploreCount(size_t n) {
    return n >= 2 ? std::max<size_t>(1, size_t(std::lround(double(n) * kEpsilon))) : 0;
  }
  // The cost model's predictions; with a pretrained model, a blend of the fine-tuned model and
  // the frozen pretrained one, whose weight mix / (mix + own successful records) falls as the
  // workload's own records grow.
  std::vector<Prediction> predict(const std::vector<std::vector<float>>& xs) const {
    auto p = model_.predict(xs);
    if (!prior_model_) return p;
    const double mix = ctx_.pretrained_mix > 0 ? ctx_.pretrained_mix : 0;
    const float alpha = float(mix / (mix + double(own_ok_) + 1e-9));
    if (alpha <= 0) return p;
    auto q = prior_model_->predict(xs);
    for (size_t i = 0; i < p.size(); ++i) {
      p[i].mean = alpha * q[i].mean + (1 - alpha) * p[i].mean;
      p[i].spread = alpha * q[i].spread + (1 - alpha) * p[i].spread;
      p[i].p_fail = alpha * q[i].p_fail + (1 - alpha) * p[i].p_fail;
    }
    return p;
  }
  // Predicted normalised throughput (mean + k * spread); candidates predicted to fail score -1
  // (a reward floor for the optimisers) and are remembered in predictedFailures(), since a real
  // regression prediction may be negative too.
  std::vector<float> predictedScores(const std::vector<Candidate>& cs) const {
    std::vector<std::vector<float>> xs;
    for (const auto& c : cs) xs.push_back(ctx_.features(c));
    std::vector<float> out;
    auto pred = predict(xs);
    for (size_t i = 0; i < pred.size(); ++i) {
      const auto& q = pred[i];
      if (q.p_fail > kSkipAbove) {
        if (predicted_fail_.size() > 200000) predicted_fail_.clear();  // bounded memory; fails() re-scores
        predicted_fail_.insert(cs[i]);
      }
      out.push_back(q.p_fail > kSkipAbove ? -1.f : q.mean + float(acquisition_k_) * q.spread);
    }
    return out;
  }
  // Whether the model predicts `c` to fail (scoring it first if it has not been scored).
  bool fails(const Candidate& c) const {
    if (predicted_fail_.count(c)) return true;
    predictedScores({c});
    return predicted_fail_.count(c) > 0;
  }
  // Glimpse's acquisition: optimisers maximise mean + k * spread instead of the mean.
  void setAcquisition(double k) { acquisition_k_ = k; }
  const StrategyContext& context() const { return ctx_; }
  // A plan from scored unmeasured points: the best by score, then random untried ones for the
  // exploration share (and for any shortfall).
  std::vector<Candidate> planFrom(const Space& space, const std::map<uint64_t, float>& scored,
                                  const std::unordered_set<uint64_t>& tried, size_t n) {
    std::vector<std::pair<float, uint64_t>> ranked;
    for (const auto& [id, v] : scored) ranked.push_back({v, id});
    std::sort(ranked.begin(), ranked.end(),
              [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    const size_t greedy = n - exploreCount(n);
    std::vector<Candidate> out;
    std::unordered_set<uint64_t> avoid = tried;
    for (size_t i = 0; i < ranked.size() && out.size() < greedy; ++i) {
      out.push_back(space.decode(ranked[i].second));
      avoid.insert(ranked[i].second);
    }
    for (auto& c : random_.propose(space, avoid, n - out.size())) out.push_back(c);
    return out;
  }
  RandomSearch& randomSearch() { return random_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  static CostModelOptions opts(uint64_t seed, const StrategyContext& ctx) {
    CostModelOptions o;
    o.seed = seed;
    if (ctx.regression_weight >= 0) o.regression_weight = ctx.regression_weight;
    if (ctx.epochs > 0) o.epochs = ctx.epochs;
    o.feature_version = ctx.feature_version;
    return o;
  }
  double acquisition_k_ = 0;
  static constexpr size_t kPoolFactor = 32, kMinSamples = 16;
  static constexpr double kEpsilon = 0.05;
  static constexpr float kSkipAbove = 0.5f;
  static constexpr int64_t kCheckEvery = 20;  // one measured check per 20 skips
  RandomSearch random_;
  std::mt19937_64 rng_;
  StrategyContext ctx_;
  CostModel model_;
  std::unique_ptr<CostModel> prior_model_;  // frozen pretrained model (null: none)
  size_t own_ok_ = 0;
  mutable std::set<Candidate> predicted_fail_;
  std::vector<Sample> data_;
  bool warm_started_ = false;
  int64_t skipped_ = 0, next_check_ = 1, checked_ = 0, checked_failed_ = 0;
  std::unordered_set<uint64_t> checks_;
  std::string notes_, save_error_;
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


// Glimpse-style search (DAC'22, as we implement it; README "Search strategies"): the first round
// is drawn from a prior over each knob's values learnt from other workloads' and targets' tuning
// data (the records within 10% of their own best, weighted by the similarity of their target's
// Blueprint), falling back to uniform without such data; later rounds run PPO over the
// acquisition mean + k * ensemble spread, then adaptive sampling.
class GlimpseSearch : public PpoSearch {
 public:
  GlimpseSearch(uint64_t seed, StrategyContext ctx) : PpoSearch(seed, ctx, true), seed_rng_(seed * 7919 + 1) {
    setAcquisition(context().acquisition_k);
  }
  std::string name() const override { return "glimpse"; }
  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    if (model().trained() || context().prior.empty()) return PpoSearch::propose(space, tried, n);
    // Prior: per knob, weighted counts of the values of good records elsewhere (+1 smoothing).
    const auto& knobs = space.knobs();
    std::vector<std::vector<double>> w(knobs.size());
    for (size_t k = 0; k < knobs.size(); ++k) w[k].assign(knobs[k].values.size(), 1.0);
    double used = 0;
    for (const auto& r : context().prior) {
      if (r.score < 0.9) continue;
      used += r.weight;
      for (size_t k = 0; k < knobs.size(); ++k) {
        auto it = r.knobs.find(knobs[k].name);
        if (it == r.knobs.end()) continue;
        for (size_t v = 0; v < knobs[k].values.size(); ++v)
          if (knobs[k].values[v] == it->second) w[k][v] += 10.0 * r.weight;
      }
    }
    ++seeded_rounds_;
    if (used == 0) return PpoSearch::propose(space, tried, n);
    std::vector<Candidate> out;
    std::unordered_set<uint64_t> seen;
    for (int attempt = 0; attempt < 20000 && out.size() < n; ++attempt) {
      Candidate c(knobs.size());
      for (size_t k = 0; k < knobs.size(); ++k) {
        std::discrete_distribution<int> d(w[k].begin(), w[k].end());
        c[k] = d(seed_rng_);
      }
      if (!space.isValid(c)) continue;
      uint64_t id = space.encode(c);
      if (tried.count(id) || !seen.insert(id).second) continue;
      out.push_back(c);
      ++seeded_;
    }
    for (auto& c : randomSearch().propose(space, [&] {
           auto t = tried;
           t.insert(seen.begin(), seen.end());
           return t;
         }(), n - out.size()))
      out.push_back(c);
    return out;
  }
  std::string report() const override {
    return PpoSearch::report() + "; prior-seeded candidates: " + std::to_string(seeded_) +
           (context().prior.empty() ? " (no prior data: uniform)" : "");
  }

 private:
  std::mt19937_64 seed_rng_;
  int seeded_rounds_ = 0;
  int64_t seeded_ = 0;
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
    if (name == "glimpse") return std::unique_ptr<SearchStrategy>(new GlimpseSearch(seed, ctx));
    if (name == "evolutionary") return std::unique_ptr<SearchStrategy>(new EvolutionarySearch(seed, ctx));
    return std::unique_ptr<SearchStrategy>(new ModelGuidedSearch(seed, ctx));
  }
  return Error{"unknown strategy '" + name + "' (known: " + join(strategyNames(), ", ") + ")"};
}

}  // namespace sextant
