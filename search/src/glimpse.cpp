// Glimpse-style search (DAC'22, as we implement it; docs/search.md "glimpse"): a prior over each
// knob's values learnt from other workloads' and targets' tuning data, and the cost model (the
// pretrained one when there is one), used together.
//
//  - The prior: per knob, weighted counts of the values taken by records within 10% of their own
//    workload's best elsewhere (weighted by the similarity of their target's Blueprint and of
//    their workload to this one: workloadSimilarity), +1 smoothing. Knobs are drawn independently
//    from it; invalid draws are rejected. Its relevance is the largest such weight (1: a record of
//    this kind of target on a workload as similar as can be): the prior's share of every draw
//    below is multiplied by it, so a prior of unlike workloads (e.g. only NN records when tuning
//    NT) is barely used. Found by the live check of issue #11: on 16x4096x11008 NT, with only NN
//    records in the prior, glimpse's best after 48 trials was 44 GFLOP/s (median of 5 seeds)
//    against 63 without the prior (experiments/results/live_curves_16x4096x11008_NT_prior_unweighted.txt).
//  - Before the model has data (no pretrained model, fewer than 16 records), plans are drawn from
//    the prior (uniform without prior data).
//  - Afterwards each round ranks a pool of 32 x the batch by the acquisition mean + k * spread.
//    A share youth = mix / (mix + the workload's own successful records) of the pool is drawn
//    from the prior and the rest uniformly, and k falls by the same factor: while the workload's
//    own data is thin the search looks where good schedules were elsewhere and explores where
//    the ensemble disagrees; as its own data grows it becomes the model's greedy ranking of
//    uniform draws. Every candidate one knob away from the 8 best measured joins the pool too
//    (local refinement, which random draws alone cannot do). 5% of each plan (at least one)
//    stays uniformly random.
//
//  - Robust transfer (issue #34): the prior and the pretrained model come from other workloads and
//    can be wrong for this one (the shipped model ranked unroll_k 4-8 first on an NT shape whose
//    good schedules all have unroll_k 1, and the default lost to cold annealing there). While
//    their worth is unknown, a quarter of every plan is uniformly random (a probe to compare with),
//    and each measurement is checked against what the model predicted for it before it was
//    measured: once 12 such pairs rank with Kendall tau below 0.1 (no better than chance), the
//    pretrained model is dropped (refitted cold on the workload's own records) and so is the
//    prior; the prior alone is dropped when what it drew measures worse (median) than the random
//    probes. Trust is established (probing back to 5%) at tau >= 0.3 over 32 pairs.
//    Rank correlation over all measurements is not enough: on 384x3072x768 NT (Intel Cascade
//    Lake) the shipped model ranked its own region well (tau 0.36, "trusted") while every one of
//    its picks measured below the untuned default, and 48 trials ended at the default's speed
//    where cold annealing reached 1.3x it (experiments/results/live_vs_cold_cascadelake.txt). So
//    the top is checked too: once 12 of the model's or the prior's picks are measured and the best
//    of them is below the untuned default, both are dropped, whatever tau says. (Against the
//    random probes' best as well, the check also fired where one lucky probe of 3-4 beat 12 good
//    picks: 3 of the 15 runs on the five other shapes of that experiment, 2026-11-26.)
//
// The earlier version (prior for the first round only, then PPO + adaptive sampling) stalled:
// 2.38x SA's measurements to 95% with the pretrained model where plain model ranking reached
// 8.56x (experiments/results/transfer_zen5.txt); docs/search.md has the comparison.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sextant/codegen/workload.h"
#include "sextant/costmodel/model.h"
#include "strategies_internal.h"

namespace sextant::detail {
namespace {

class GlimpseSearch : public ModelGuidedSearch {
 public:
  GlimpseSearch(uint64_t seed, StrategyContext ctx) : ModelGuidedSearch(seed, std::move(ctx)), prior_rng_(seed * 7919 + 1) {}
  std::string name() const override { return "glimpse"; }

  std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n) override {
    ++rounds_;
    // While the transferred knowledge is on probation, a quarter of the plan is uniform random.
    const size_t probe = probing() ? n / 4 : 0;
    if (!model().trained()) {
      auto out = drawPrior(space, tried, std::min(n - probe, size_t(std::lround(double(n) * relevance(space)))));
      mark(space, out, 'p');
      seeded_ += int64_t(out.size());
      const size_t drawn = out.size();
      fillRandom(space, tried, n, out);
      mark(space, std::vector<Candidate>(out.begin() + long(drawn), out.end()), 'r');
      return out;
    }
    const double young = youth();
    setAcquisition(context().acquisition_k * young);
    const size_t pool_n = kPoolFactor * n;
    auto pool = drawPrior(space, tried, size_t(std::lround(double(pool_n) * young * relevance(space))));
    std::unordered_set<uint64_t> from_prior;
    for (const auto& c : pool) from_prior.insert(space.encode(c));
    fillRandom(space, tried, pool_n, pool);
    addNeighbours(space, tried, pool);
    auto scores = predictedScores(pool);
    std::map<uint64_t, float> scored;
    for (size_t i = 0; i < pool.size(); ++i) scored[space.encode(pool[i])] = scores[i];
    auto plan = planFrom(space, scored, tried, n - probe);
    mark(space, plan, 'm');
    for (const auto& c : plan) seeded_ += from_prior.count(space.encode(c));
    const size_t planned = plan.size();
    fillRandom(space, tried, n, plan);
    mark(space, std::vector<Candidate>(plan.begin() + long(planned), plan.end()), 'r');
    return plan;
  }

  void observe(const Space& space, const std::vector<Observation>& results) override {
    checkTrust(space, results);  // against the predictions made before these measurements
    for (const auto& r : results)
      if (r.ok) best_.push_back({r.gflops, r.candidate});
    std::stable_sort(best_.begin(), best_.end(), [](auto& a, auto& b) { return a.first > b.first; });
    if (best_.size() > kLocal) best_.resize(kLocal);
    ModelGuidedSearch::observe(space, results);
  }

  std::string report() const override {
    std::string trust;
    if (!transferred()) trust = "";
    else if (!distrust_note_.empty()) trust = "; " + distrust_note_;
    else if (!std::isnan(tau_))
      trust = "; the transferred knowledge " + std::string(probing() ? "still on probation" : "trusted") +
              " (Kendall tau " + std::to_string(tau_).substr(0, 5) + " of its predictions over " +
              std::to_string(pred_.size()) + " measurements)";
    return ModelGuidedSearch::report() + trust + "; " + std::to_string(seeded_) + " planned candidates drawn from the prior" +
           (context().prior.empty() ? " (no prior data: uniform)"
                                    : " (relevance " + std::to_string(relevance_).substr(0, 4) + ")") +
           " over " + std::to_string(rounds_) +
           " rounds";
  }

 private:
  static constexpr size_t kPoolFactor = 32, kLocal = 8;
  static constexpr size_t kTrustMin = 12, kTrustEstablished = 32, kTopMin = 12;
  static constexpr double kDistrustBelow = 0.1, kTrustAbove = 0.3;

  // Whether anything came from elsewhere (a pretrained model or prior records).
  bool transferred() const { return usedPretrained() || !context().prior.empty(); }
  // Whether the pretrained model or the prior still steers the plans.
  bool stillTransferring() const {
    return (usedPretrained() && !pretrainedDistrusted()) || (!prior_off_ && !context().prior.empty());
  }
  // Transferred knowledge not yet shown to rank this workload's schedules.
  bool probing() const {
    return stillTransferring() && !(pred_.size() >= kTrustEstablished && tau_ >= kTrustAbove);
  }
  void mark(const Space& space, const std::vector<Candidate>& cs, char source) {
    for (const auto& c : cs) source_[space.encode(c)] = source;
  }
  // Compares this batch's measurements with what the model predicted for them and with what the
  // prior drew; drops the pretrained model and the prior when they rank no better than chance.
  void checkTrust(const Space& space, const std::vector<Observation>& results) {
    if (!transferred()) return;
    if (model().trained() && !pretrainedDistrusted()) {
      std::vector<Candidate> cs;
      for (const auto& r : results)
        if (r.ok) cs.push_back(r.candidate);
      if (!cs.empty()) {
        std::vector<std::vector<float>> xs;
        for (const auto& c : cs) xs.push_back(context().features(c));
        auto pred = predict(xs);
        size_t i = 0;
        for (const auto& r : results)
          if (r.ok) pred_.push_back(pred[i++].mean), meas_.push_back(r.gflops);
      }
    }
    for (const auto& r : results) {
      if (!r.ok) continue;
      auto it = source_.find(space.encode(r.candidate));
      const char from = it == source_.end() ? 'u' : it->second;
      if (from == 'p') from_prior_.push_back(r.gflops);
      if (from == 'r') from_random_.push_back(r.gflops);
      // The top: the best of what the transferred knowledge picked against the untuned default
      // (what this run measured without the strategy proposing it: the tuner's first candidate,
      // and its given starting points where there are any, e.g. IREE's on Vulkan). Records of
      // earlier runs (observed before the first plan) are neither. Replays (experiments/transfer)
      // measure no default, so the check does not fire there.
      if (from == 'p' || from == 'm') ++picks_, best_pick_ = std::max(best_pick_, r.gflops);
      else if (from == 'u' && rounds_ > 0) best_default_ = std::max(best_default_, r.gflops);
    }
    const size_t seen = measured_ += results.size();
    if (stillTransferring() && picks_ >= kTopMin && best_pick_ < best_default_) {
      const bool model = usedPretrained() && !pretrainedDistrusted();
      if (model) distrustPretrained();
      prior_off_ = true;
      distrust_note_ = (distrust_note_.empty() ? "" : distrust_note_ + "; then ") + "dropped the " +
                       (model ? "pretrained model and the prior" : "prior") + " after " +
                       std::to_string(seen) + " measurements: none of its " + std::to_string(picks_) +
                       " picks beat the untuned default (or the given starting points; best " + gf(best_pick_) +
                       " against " + gf(best_default_) + " GFLOP/s)" + (model ? "; cold model from then on" : "");
      return;
    }
    if (pred_.size() >= kTrustMin) {
      tau_ = kendallTau(pred_, meas_);
      if (tau_ < kDistrustBelow && !pretrainedDistrusted() && usedPretrained()) {
        distrustPretrained();
        prior_off_ = true;
        distrust_note_ = "dropped the pretrained model and the prior after " + std::to_string(seen) +
                         " measurements: Kendall tau " + std::to_string(tau_).substr(0, 5) + " of its predictions over " +
                         std::to_string(pred_.size()) + " (cold model from then on)";
      }
    }
    if (!prior_off_ && from_prior_.size() >= 6 && from_random_.size() >= 6 && median(from_prior_) < median(from_random_)) {
      prior_off_ = true;
      if (distrust_note_.empty())
        distrust_note_ = "dropped the prior after " + std::to_string(seen) + " measurements: what it drew measured " +
                         "below the random probes (medians)";
    }
  }
  static std::string gf(double g) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", g);
    return b;
  }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
  }

  // Per-knob value weights from the prior records (computed once: the space does not change).
  void buildWeights(const Space& space) {
    if (weights_ready_) return;
    weights_ready_ = true;
    const auto& knobs = space.knobs();
    weights_.resize(knobs.size());
    for (size_t k = 0; k < knobs.size(); ++k) weights_[k].assign(knobs[k].values.size(), 1.0);
    std::map<std::string, double> similarity;  // by workload key: a few workloads, many records
    for (const auto& r : context().prior) {
      if (r.score < 0.9) continue;
      auto sim = similarity.find(r.workload);
      if (sim == similarity.end())
        sim = similarity.emplace(r.workload, workloadSimilarity(r.workload, context().workload)).first;
      const double w = r.weight * sim->second;
      if (w <= 0) continue;
      prior_used_ = true;
      relevance_ = std::max(relevance_, std::min(1.0, w));
      for (size_t k = 0; k < knobs.size(); ++k) {
        auto it = r.knobs.find(knobs[k].name);
        if (it == r.knobs.end()) continue;
        for (size_t v = 0; v < knobs[k].values.size(); ++v)
          if (knobs[k].values[v] == it->second) weights_[k][v] += 10.0 * w;
      }
    }
    for (const auto& w : weights_) dists_.emplace_back(w.begin(), w.end());
  }

  // How much the prior applies to this workload, in [0, 1] (0 without prior data, or once dropped).
  double relevance(const Space& space) {
    if (context().prior.empty() || prior_off_) return 0;
    buildWeights(space);
    return prior_used_ ? relevance_ : 0;
  }

  // Up to `count` valid, untried, distinct candidates drawn from the prior (none without prior data).
  std::vector<Candidate> drawPrior(const Space& space, const std::unordered_set<uint64_t>& tried, size_t count) {
    std::vector<Candidate> out;
    if (count == 0 || context().prior.empty()) return out;
    buildWeights(space);
    if (!prior_used_) return out;
    std::unordered_set<uint64_t> seen;
    const size_t attempts = 50 * count + 1000;
    for (size_t a = 0; a < attempts && out.size() < count; ++a) {
      Candidate c(dists_.size());
      for (size_t k = 0; k < dists_.size(); ++k) c[k] = dists_[k](prior_rng_);
      if (!space.isValid(c)) continue;
      uint64_t id = space.encode(c);
      if (tried.count(id) || !seen.insert(id).second) continue;
      out.push_back(std::move(c));
    }
    return out;
  }

  // Every valid untried candidate one knob away from the best measured ones (local refinement:
  // a pool of random draws alone cannot close in on an optimum).
  void addNeighbours(const Space& space, const std::unordered_set<uint64_t>& tried, std::vector<Candidate>& pool) {
    std::unordered_set<uint64_t> in;
    for (const auto& c : pool) in.insert(space.encode(c));
    const auto& knobs = space.knobs();
    for (const auto& [g, base] : best_)
      for (size_t k = 0; k < knobs.size(); ++k)
        for (int v = 0; v < int(knobs[k].values.size()); ++v) {
          if (v == base[k]) continue;
          Candidate c = base;
          c[k] = v;
          if (!space.isValid(c)) continue;
          uint64_t id = space.encode(c);
          if (tried.count(id) || !in.insert(id).second) continue;
          pool.push_back(std::move(c));
        }
  }

  // Tops `out` up to `n` with uniform random candidates that are neither tried nor in it.
  void fillRandom(const Space& space, const std::unordered_set<uint64_t>& tried, size_t n, std::vector<Candidate>& out) {
    if (out.size() >= n) return;
    auto avoid = tried;
    for (const auto& c : out) avoid.insert(space.encode(c));
    for (auto& c : randomSearch().propose(space, avoid, n - out.size())) out.push_back(std::move(c));
  }

  std::mt19937_64 prior_rng_;
  bool weights_ready_ = false, prior_used_ = false;
  double relevance_ = 0;
  std::vector<std::vector<double>> weights_;
  std::vector<std::discrete_distribution<int>> dists_;
  std::vector<std::pair<double, Candidate>> best_;  // the best measured, for local refinement
  int64_t seeded_ = 0;
  int rounds_ = 0;
  // Robust transfer: (predicted, measured) of the workload's own measurements, what the prior and
  // the random probes drew measured, and the verdict.
  std::vector<double> pred_, meas_, from_prior_, from_random_;
  std::unordered_map<uint64_t, char> source_;  // 'p' prior, 'r' random probe, 'm' model's pick
  double tau_ = std::nan("");
  size_t measured_ = 0, picks_ = 0;
  double best_pick_ = 0, best_default_ = 0;
  bool prior_off_ = false;
  std::string distrust_note_;
};

}  // namespace

std::unique_ptr<SearchStrategy> makeGlimpseSearch(uint64_t seed, const StrategyContext& ctx) {
  return std::make_unique<GlimpseSearch>(seed, ctx);
}

}  // namespace sextant::detail

namespace sextant {

double workloadSimilarity(const std::string& from, const std::string& to) {
  if (from.empty() || to.empty() || from == to) return 1.0;
  auto a = parseWorkloadKey(from), b = parseWorkloadKey(to);
  if (!a.ok() || !b.ok()) return 1.0;
  double d = std::abs(std::log2(double(a->m) / double(b->m))) + std::abs(std::log2(double(a->n) / double(b->n))) +
             std::abs(std::log2(double(a->k) / double(b->k)));
  double sim = std::exp(-d / 8);
  if (a->layout != b->layout) sim *= 0.1;
  if (a->a_type != b->a_type || a->b_type != b->b_type || a->c_type != b->c_type) sim *= 0.5;
  return sim;
}

}  // namespace sextant
