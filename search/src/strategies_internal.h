// Private to search/src: the strategies other strategies build on (uniform random sampling and
// the cost-model-guided base), shared by strategies.cpp and the strategies in files of their own.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <unordered_set>

#include "sextant/costmodel/model.h"
#include "sextant/search/strategy.h"

namespace sextant::detail {

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

// Random proposals ordered by the learned cost model (the simplest model-based search): each
// round draws a pool of unmeasured candidates, drops those the model thinks will fail, and takes
// the best by predicted throughput, plus a few random ones (epsilon-greedy) so the model keeps
// seeing the rest of the space. Until the model has data it is plain random search.
class ModelGuidedSearch : public SearchStrategy {
 public:
  ModelGuidedSearch(uint64_t seed, StrategyContext ctx)
      : random_(seed), rng_(seed ^ 0x9e3779b97f4a7c15ull), ctx_(std::move(ctx)), model_(ctx_.num_features, opts(seed, ctx_)),
        seed_(seed) {
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
      data_.push_back(Sample{ctx_.features(r.candidate), float(r.learned_gflops > 0 ? r.learned_gflops : r.gflops), !r.ok, 0});
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
  // The weight of what came from elsewhere (the pretrained model's blend weight) given the
  // workload's own successful records: mix / (mix + own), 1 before any record.
  double youth() const {
    const double mix = ctx_.pretrained_mix > 0 ? ctx_.pretrained_mix : 0;
    return mix > 0 ? mix / (mix + double(own_ok_)) : 0.0;
  }
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
  // Issue #34: the pretrained model misranks this workload. Its frozen blend is dropped and the
  // model is fitted again from scratch on the workload's own records (a cold model from now on).
  void distrustPretrained() {
    if (!prior_model_ && !usedPretrained()) return;
    prior_model_.reset();
    distrusted_ = true;
    model_ = CostModel(ctx_.num_features, opts(seed_, ctx_));
    size_t ok = 0;
    for (const auto& s : data_) ok += !s.failed;
    if (ok >= kMinSamples) model_.fit(data_);
  }
  bool usedPretrained() const { return !ctx_.pretrained_path.empty() && !warm_started_; }
  bool pretrainedDistrusted() const { return distrusted_; }
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
  uint64_t seed_ = 0;
  bool distrusted_ = false;  // distrustPretrained() was called
  size_t own_ok_ = 0;
  mutable std::set<Candidate> predicted_fail_;
  std::vector<Sample> data_;
  bool warm_started_ = false;
  int64_t skipped_ = 0, next_check_ = 1, checked_ = 0, checked_failed_ = 0;
  std::unordered_set<uint64_t> checks_;
  std::string notes_, save_error_;
};

// Glimpse (glimpse.cpp).
std::unique_ptr<SearchStrategy> makeGlimpseSearch(uint64_t seed, const StrategyContext& ctx);

}  // namespace sextant::detail
