// Benchmark: the time of one search round over the cost model in a space of ~10^6 candidates —
// one PPO exploration round (128 episodes of up to 500 steps, scored by the real LibTorch
// ensemble) plus adaptive sampling (k-means, synthesis) — and one SA round for comparison.
// Issue #5's bound: PPO + clustering under 2 s on this machine.
//
// usage: bench_search_round [rounds=3]
#include <chrono>
#include <cstdio>
#include <random>

#include "sextant/costmodel/model.h"
#include "sextant/costmodel/ppo.h"
#include "sextant/search/sampling.h"

using namespace sextant;
using clk = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 3;
  // 8 knobs: 6 x 6 x 6 x 6 x 6 x 6 x 4 x 5 = 933,120 candidates, no constraints.
  std::vector<Knob> knobs;
  const int sizes[] = {6, 6, 6, 6, 6, 6, 4, 5};
  for (int i = 0; i < 8; ++i) {
    std::string name = "k";  // (appended: GCC 12 warns falsely, -Wrestrict, on "k" + std::to_string(i))
    name += std::to_string(i);
    Knob k{name, {}, ""};
    for (int v = 0; v < sizes[i]; ++v) k.values.push_back(int64_t(1) << v);
    knobs.push_back(k);
  }
  Space space("bench", knobs, {});
  printf("space: %llu candidates\n", (unsigned long long)space.size());
  // A cost model trained on a synthetic throughput (the timing does not depend on what it learnt).
  auto feats = [&](const Candidate& c) {
    std::vector<float> x;
    for (int v : c) x.push_back(float(v));
    return x;
  };
  std::mt19937_64 rng(1);
  std::vector<Sample> data;
  for (int i = 0; i < 256; ++i) {
    Candidate c = space.sample(rng);
    double g = 0;
    for (size_t k = 0; k < c.size(); ++k) g -= (c[k] - 2.5) * (c[k] - 2.5);
    data.push_back({feats(c), float(100 + g), false, 0});
  }
  CostModelOptions mo;
  CostModel model(8, mo);
  model.fit(data);
  auto score = [&](const std::vector<PpoExplorer::Point>& ps) {
    std::vector<std::vector<float>> xs;
    for (auto& p : ps) xs.push_back(feats(p));
    std::vector<float> out;
    for (auto& q : model.predict(xs)) out.push_back(q.mean);
    return out;
  };
  std::vector<int> ks(sizes, sizes + 8);
  PpoExplorer agent(ks, 7);
  std::unordered_set<uint64_t> tried;
  for (int r = 0; r < rounds; ++r) {
    std::vector<PpoExplorer::Point> starts;
    for (int i = 0; i < 128; ++i) starts.push_back(space.sample(rng));
    auto t0 = clk::now();
    PpoExplorer::RoundStats st;
    auto visits = agent.explore(starts, score, [&](const PpoExplorer::Point& p) { return space.isValid(p); }, &st);
    auto t1 = clk::now();
    std::map<uint64_t, float> best;
    for (auto& v : visits) best[space.encode(v.point)] = v.reward;
    std::vector<std::pair<float, uint64_t>> ranked;
    for (auto& [id, v] : best) ranked.push_back({v, id});
    std::sort(ranked.rbegin(), ranked.rend());
    if (ranked.size() > 512) ranked.resize(512);
    std::vector<Candidate> props;
    std::vector<float> sc;
    for (auto& [v, id] : ranked) props.push_back(space.decode(id)), sc.push_back(v);
    SamplerStats ss;
    auto plan = adaptiveSample(space, props, sc, tried, [](const Candidate&) { return true; }, rng, &ss);
    auto t2 = clk::now();
    double ppo = std::chrono::duration<double>(t1 - t0).count(), km = std::chrono::duration<double>(t2 - t1).count();
    printf("round %d: PPO %.2f s (%d steps scored, trained on %d transitions, mean reward %.3f), "
           "sampling %.3f s (k = %d of %d proposals) -> total %.2f s %s\n",
           r + 1, ppo, st.steps, st.trained_on, st.mean_reward, km, ss.k, ss.proposals, ppo + km,
           ppo + km < 2.0 ? "(< 2 s)" : "(OVER 2 s)");
    for (auto& c : plan) tried.insert(space.encode(c));
  }
  return 0;
}
