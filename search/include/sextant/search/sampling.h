// Chameleon's adaptive sampling and sample synthesis, as a stage that any optimizer's proposals
// go through: k-means (Eigen) over the proposed candidates, k chosen by the loss-drop rule, one
// synthesized candidate per cluster; duplicates, already-measured and invalid or predicted-invalid
// candidates are replaced by the cluster's best-scored usable member.
//
// Our choices where the paper and its code leave room (also in the README):
// - clustering uses every knob (indices divided by the knob's number of values), not only the two
//   knobs with the most values as in the reference code: our spaces have constraints between all
//   knobs, so a centroid in two knobs says little about a valid point;
// - k sweeps 8, 16, ..., 64 (at most the number of distinct proposals); the sweep stops at the
//   first k whose loss does not drop by 2.5x against the previous k, and the previous k is used
//   (the elbow);
// - k-means++ seeding (best of 5 starts per k), Lloyd iterations until assignments settle (at most 50), deterministic
//   given the seed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <random>
#include <unordered_set>
#include <vector>

#include "sextant/codegen/space.h"

namespace sextant {

struct KMeansResult {
  int k = 0;
  std::vector<std::vector<double>> centroids;
  std::vector<int> assignment;
  double loss = 0;  // sum of squared distances to the assigned centroid
};
KMeansResult kmeans(const std::vector<std::vector<double>>& points, int k, std::mt19937_64& rng, int max_iter = 50);
// The loss-drop rule over k = step, 2*step, ... <= max_k.
KMeansResult chooseKMeans(const std::vector<std::vector<double>>& points, std::mt19937_64& rng, int step = 8,
                          int max_k = 64, double drop = 2.5);

struct SamplerStats {
  int proposals = 0, k = 0, synthesized = 0, replaced = 0, dropped = 0;
};

// Chooses which of `proposals` (with their predicted scores) to measure. `usable(c)` says whether a
// candidate may be measured (valid, not predicted to fail). Never returns a candidate in `tried`
// or twice. One candidate per cluster, the clusters in order of their best-scored member.
std::vector<Candidate> adaptiveSample(const Space& space, const std::vector<Candidate>& proposals,
                                      const std::vector<float>& scores, const std::unordered_set<uint64_t>& tried,
                                      const std::function<bool(const Candidate&)>& usable, std::mt19937_64& rng,
                                      SamplerStats* stats = nullptr);

// Adaptive sampling after an optimizer over the cost model: the optimizer's best 8n unmeasured
// points by predicted score (every score counts, negative ones included; only the points the model
// predicts to fail, `fails`, are left out) are clustered, and one candidate per cluster is kept,
// the best-scored clusters first: at most n measurements per round.
std::vector<Candidate> sampledPlan(const Space& space, const std::map<uint64_t, float>& scored,
                                   const std::unordered_set<uint64_t>& tried, size_t n, std::mt19937_64& rng,
                                   const std::function<bool(const Candidate&)>& fails, SamplerStats& total);
std::string samplerReport(const SamplerStats& s, int rounds);

}  // namespace sextant
