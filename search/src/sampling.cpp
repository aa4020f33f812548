#include "sextant/search/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <Eigen/Dense>

namespace sextant {

KMeansResult kmeans(const std::vector<std::vector<double>>& pts, int k, std::mt19937_64& rng, int max_iter) {
  KMeansResult r;
  const int n = int(pts.size());
  if (n == 0 || k <= 0) return r;
  const int d = int(pts[0].size());
  k = std::min(k, n);
  Eigen::MatrixXd X(n, d);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < d; ++j) X(i, j) = pts[size_t(i)][size_t(j)];
  // k-means++ seeding.
  Eigen::MatrixXd C(k, d);
  std::uniform_int_distribution<int> pick(0, n - 1);
  C.row(0) = X.row(pick(rng));
  Eigen::VectorXd dist = (X.rowwise() - C.row(0)).rowwise().squaredNorm();
  for (int c = 1; c < k; ++c) {
    double total = dist.sum();
    int chosen = 0;
    if (total <= 0) {
      chosen = pick(rng);
    } else {
      double u = std::uniform_real_distribution<double>(0, total)(rng), acc = 0;
      for (int i = 0; i < n; ++i)
        if ((acc += dist(i)) >= u) {
          chosen = i;
          break;
        }
    }
    C.row(c) = X.row(chosen);
    dist = dist.cwiseMin((X.rowwise() - C.row(c)).rowwise().squaredNorm());
  }
  std::vector<int> assign(size_t(n), -1);
  for (int it = 0; it < max_iter; ++it) {
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      Eigen::Index best;
      (C.rowwise() - X.row(i)).rowwise().squaredNorm().minCoeff(&best);
      if (assign[size_t(i)] != int(best)) assign[size_t(i)] = int(best), changed = true;
    }
    if (!changed) break;
    Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(k, d);
    Eigen::VectorXd cnt = Eigen::VectorXd::Zero(k);
    for (int i = 0; i < n; ++i) sum.row(assign[size_t(i)]) += X.row(i), cnt(assign[size_t(i)]) += 1;
    for (int c = 0; c < k; ++c)
      if (cnt(c) > 0) C.row(c) = sum.row(c) / cnt(c);
  }
  r.k = k;
  r.assignment = assign;
  r.loss = 0;
  for (int i = 0; i < n; ++i) r.loss += (X.row(i) - C.row(assign[size_t(i)])).squaredNorm();
  for (int c = 0; c < k; ++c) r.centroids.push_back(std::vector<double>(C.row(c).data(), C.row(c).data() + d));
  // C is column-major: copy row by row explicitly.
  for (int c = 0; c < k; ++c)
    for (int j = 0; j < d; ++j) r.centroids[size_t(c)][size_t(j)] = C(c, j);
  return r;
}

KMeansResult chooseKMeans(const std::vector<std::vector<double>>& pts, std::mt19937_64& rng, int step, int max_k,
                          double drop) {
  const int n = int(pts.size());
  KMeansResult prev;
  for (int k = step; k <= max_k; k += step) {
    if (k > n) break;
    // Best of five k-means++ starts: a single start often stops in a local minimum, which would
    // fake a "big drop" at the next k.
    KMeansResult cur = kmeans(pts, k, rng);
    for (int rep = 1; rep < 5; ++rep) {
      KMeansResult again = kmeans(pts, k, rng);
      if (again.loss < cur.loss) cur = std::move(again);
    }
    if (prev.k > 0 && !(cur.loss * drop < prev.loss)) return prev;  // the elbow: the last big drop
    prev = std::move(cur);
    if (prev.loss <= 1e-12) return prev;
  }
  if (prev.k == 0) prev = kmeans(pts, std::max(1, std::min(n, step)), rng);
  return prev;
}

std::vector<Candidate> adaptiveSample(const Space& space, const std::vector<Candidate>& proposals,
                                      const std::vector<float>& scores, const std::unordered_set<uint64_t>& tried,
                                      const std::function<bool(const Candidate&)>& usable, std::mt19937_64& rng,
                                      SamplerStats* stats) {
  SamplerStats st;
  std::vector<Candidate> out;
  // Distinct, unmeasured proposals.
  std::vector<Candidate> cand;
  std::vector<float> sc;
  std::unordered_set<uint64_t> seen;
  for (size_t i = 0; i < proposals.size(); ++i) {
    uint64_t id = space.encode(proposals[i]);
    if (tried.count(id) || !seen.insert(id).second) continue;
    cand.push_back(proposals[i]);
    sc.push_back(i < scores.size() ? scores[i] : 0.f);
  }
  st.proposals = int(cand.size());
  if (cand.empty()) {
    if (stats) *stats = st;
    return out;
  }
  const auto& knobs = space.knobs();
  std::vector<std::vector<double>> pts;
  for (const auto& c : cand) {
    std::vector<double> p;
    for (size_t k = 0; k < c.size(); ++k) p.push_back(double(c[k]) / double(std::max<size_t>(1, knobs[k].values.size())));
    pts.push_back(p);
  }
  KMeansResult km = chooseKMeans(pts, rng);
  st.k = km.k;
  // Clusters in order of their best member's score, so that a caller keeping the first n keeps
  // the most promising clusters (cluster indices carry no order).
  std::vector<float> cluster_best(size_t(km.k), -std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < cand.size(); ++i)
    cluster_best[size_t(km.assignment[i])] = std::max(cluster_best[size_t(km.assignment[i])], sc[i]);
  std::vector<int> cluster_order(size_t(km.k));
  for (int c = 0; c < km.k; ++c) cluster_order[size_t(c)] = c;
  std::stable_sort(cluster_order.begin(), cluster_order.end(),
                   [&](int a, int b) { return cluster_best[size_t(a)] > cluster_best[size_t(b)]; });
  std::unordered_set<uint64_t> taken;
  for (int c : cluster_order) {
    // The synthesized candidate: the centroid, rounded to each knob's nearest value index.
    Candidate s(knobs.size());
    for (size_t k = 0; k < knobs.size(); ++k) {
      double idx = km.centroids[size_t(c)][k] * double(knobs[k].values.size());
      s[k] = std::clamp(int(std::lround(idx)), 0, int(knobs[k].values.size()) - 1);
    }
    auto ok = [&](const Candidate& x) {
      if (!space.isValid(x)) return false;
      uint64_t id = space.encode(x);
      return !tried.count(id) && !taken.count(id) && usable(x);
    };
    if (ok(s)) {
      ++st.synthesized;
    } else {
      // Replace it by the best-scored usable member of its cluster.
      int best = -1;
      for (size_t i = 0; i < cand.size(); ++i)
        if (km.assignment[i] == c && ok(cand[i]) && (best < 0 || sc[i] > sc[size_t(best)])) best = int(i);
      if (best < 0) {
        ++st.dropped;
        continue;
      }
      s = cand[size_t(best)];
      ++st.replaced;
    }
    taken.insert(space.encode(s));
    out.push_back(s);
  }
  if (stats) *stats = st;
  return out;
}

std::vector<Candidate> sampledPlan(const Space& space, const std::map<uint64_t, float>& scored,
                                   const std::unordered_set<uint64_t>& tried, size_t n, std::mt19937_64& rng,
                                   const std::function<bool(const Candidate&)>& fails, SamplerStats& total) {
  std::vector<std::pair<float, uint64_t>> ranked;
  for (const auto& [id, v] : scored)
    if (!tried.count(id) && !fails(space.decode(id))) ranked.push_back({v, id});
  std::sort(ranked.begin(), ranked.end(),
            [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  if (ranked.size() > 8 * n) ranked.resize(8 * n);
  std::vector<Candidate> props;
  std::vector<float> sc;
  for (auto& [v, id] : ranked) props.push_back(space.decode(id)), sc.push_back(v);
  SamplerStats st;
  auto usable = [&](const Candidate& c) { return !fails(c); };
  auto out = adaptiveSample(space, props, sc, tried, usable, rng, &st);
  if (out.size() > n) out.resize(n);  // adaptiveSample lists the best-scored clusters first
  total.proposals += st.proposals, total.k += st.k, total.synthesized += st.synthesized;
  total.replaced += st.replaced, total.dropped += st.dropped;
  return out;
}

std::string samplerReport(const SamplerStats& s, int rounds) {
  if (!rounds) return "";
  return "; adaptive sampling: " + std::to_string(rounds) + " rounds, mean k " +
         std::to_string(s.k / std::max(1, rounds)) + ", " + std::to_string(s.synthesized) + " synthesized, " +
         std::to_string(s.replaced) + " replaced by cluster members, " + std::to_string(s.dropped) + " clusters dropped";
}

}  // namespace sextant
