#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "sextant/common/strings.h"
#include "sextant/costmodel/model.h"
#include "sextant/search/strategy.h"

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
      : random_(seed), rng_(seed ^ 0x9e3779b97f4a7c15ull), ctx_(std::move(ctx)), model_(ctx_.num_features, opts(seed)) {
    // Warm start from the model saved by an earlier run next to the database.
    if (!ctx_.model_path.empty() && std::filesystem::exists(ctx_.model_path)) {
      auto loaded = CostModel::load(ctx_.model_path);
      if (loaded && loaded->numFeatures() == ctx_.num_features) {
        model_ = std::move(*loaded);
        warm_started_ = true;
      } else {
        notes_ = "ignored the saved model " + ctx_.model_path + " (" +
                 (loaded ? "other features" : loaded.error()) + "); ";
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
    auto pred = model_.predict(xs);
    std::vector<size_t> order(pool.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pred[a].mean > pred[b].mean; });
    // Epsilon-greedy: most of the batch by predicted throughput, at least one pick at random.
    const size_t explore = n >= 2 ? std::max<size_t>(1, size_t(std::lround(double(n) * kEpsilon))) : 0;
    const size_t greedy = n - explore;
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
    r += std::to_string(skipped_) + " candidates skipped as predicted to fail (p > 0.5), " +
         std::to_string(checked_) + " of them measured as a check (" + std::to_string(checked_failed_) + " failed)";
    if (!save_error_.empty()) r += "; " + save_error_;
    return r;
  }

 private:
  static CostModelOptions opts(uint64_t seed) {
    CostModelOptions o;
    o.seed = seed;
    return o;
  }
  static constexpr size_t kPoolFactor = 32, kMinSamples = 16;
  static constexpr double kEpsilon = 0.05;
  static constexpr float kSkipAbove = 0.5f;
  static constexpr int64_t kCheckEvery = 20;  // one measured check per 20 skips
  RandomSearch random_;
  std::mt19937_64 rng_;
  StrategyContext ctx_;
  CostModel model_;
  std::vector<Sample> data_;
  bool warm_started_ = false;
  int64_t skipped_ = 0, next_check_ = 1, checked_ = 0, checked_failed_ = 0;
  std::unordered_set<uint64_t> checks_;
  std::string notes_, save_error_;
};

}  // namespace

std::vector<std::string> strategyNames() { return {"random", "exhaustive", "model"}; }

Result<std::unique_ptr<SearchStrategy>> makeStrategy(const std::string& name, uint64_t seed,
                                                     const StrategyContext& ctx) {
  if (name == "random") return std::unique_ptr<SearchStrategy>(new RandomSearch(seed));
  if (name == "exhaustive") return std::unique_ptr<SearchStrategy>(new ExhaustiveSearch());
  if (name == "model") {
    if (!ctx.features || ctx.num_features <= 0) return Error{"strategy 'model' needs the cost model's features"};
    return std::unique_ptr<SearchStrategy>(new ModelGuidedSearch(seed, ctx));
  }
  return Error{"unknown strategy '" + name + "' (known: " + join(strategyNames(), ", ") + ")"};
}

}  // namespace sextant
