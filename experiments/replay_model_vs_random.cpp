// Replay experiment: how many measurements a search needs to reach 95% of the best schedule of a
// recorded pool, random order vs model-guided batches (batches of 16: the first random, then the
// 15 best by the cost model's prediction + 1 random, the model refitted after every batch, as in
// `tune --strategy model`). Every "measurement" is a recorded one from the database: this is a
// replay, not a new measurement, and the search is restricted to the recorded candidates.
//
// usage: replay_model_vs_random DB [seeds=10]
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/costmodel/features.h"
#include "sextant/costmodel/model.h"
#include "sextant/db/database.h"
using namespace sextant;
int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: replay_model_vs_random DB [seeds]\n");
    return 2;
  }
  auto db = Database::open(argv[1], false);
  if (!db) {
    fprintf(stderr, "error: %s\n", db.error().c_str());
    return 2;
  }
  auto recs = db->allRecords(false);
  if (!recs) {
    fprintf(stderr, "error: %s\n", recs.error().c_str());
    return 2;
  }
  HostCpu cpu = hostCpu();
  std::map<std::string, std::vector<Sample>> data;
  for (auto& r : *recs) {
    auto w = parseWorkloadKey(r.workload_key);
    if (!w || r.status != "ok" || r.source != "measured") continue;
    Space s = buildCpuGemmSpace(*w, cpu);
    auto c = s.fromKey(r.candidate);
    if (!c || !s.isValid(*c)) continue;
    data[r.workload_key].push_back(Sample{cpuGemmFeatures(*w, s, *c, cpu), float(r.gflops), false, 0});
  }
  printf("Replay of recorded measurements (%s): measurements to reach 95%% of each pool's best,\n"
         "median [min-max] over %d seeds. Not new measurements.\n\n", argv[1], argc > 2 ? atoi(argv[2]) : 10);
  const int seeds = argc > 2 ? atoi(argv[2]) : 10;
  printf("%-36s %6s %20s %20s %8s\n", "workload", "pool", "random", "model", "ratio");
  for (auto& [k, pool] : data) {
    float best = 0;
    for (auto& s : pool) best = std::max(best, s.gflops);
    std::vector<double> rnd, mdl;
    for (int seed = 1; seed <= seeds; ++seed) {
      std::mt19937_64 rng{uint64_t(seed)};
      std::vector<size_t> order(pool.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      size_t r = 0;
      while (pool[order[r]].gflops < 0.95f * best) ++r;
      rnd.push_back(double(r + 1));
      // Model-guided.
      std::vector<bool> used(pool.size(), false);
      std::vector<Sample> measured;
      size_t count = 0;
      bool hit = false;
      size_t next_random = 0;
      CostModelOptions o;
      o.seed = uint64_t(seed);
      CostModel m(int(cpuGemmFeatureNames().size()), o);
      auto take = [&](size_t i) {
        used[i] = true;
        measured.push_back(pool[i]);
        ++count;
        if (pool[i].gflops >= 0.95f * best) hit = true;
      };
      for (int b = 0; b < 16 && !hit; ++b) take(order[next_random++]);
      while (!hit && count < pool.size()) {
        if (measured.size() == 16) m.fit(measured); else m.update(measured);
        std::vector<size_t> cand;
        std::vector<std::vector<float>> xs;
        for (size_t i = 0; i < pool.size(); ++i)
          if (!used[i]) cand.push_back(i), xs.push_back(pool[i].x);
        auto p = m.predict(xs);
        std::vector<size_t> idx(cand.size());
        for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
        std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b2) { return p[a].mean > p[b2].mean; });
        for (size_t j = 0; j < 15 && j < idx.size() && !hit; ++j) take(cand[idx[j]]);
        while (next_random < order.size() && used[order[next_random]]) ++next_random;
        if (!hit && next_random < order.size()) take(order[next_random]);
      }
      mdl.push_back(double(count));
    }
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    };
    auto span = [&](const std::vector<double>& v) {
      char b[64];
      snprintf(b, sizeof b, "%.1f [%.0f-%.0f]", med(v), *std::min_element(v.begin(), v.end()),
               *std::max_element(v.begin(), v.end()));
      return std::string(b);
    };
    printf("%-36s %6zu %20s %20s %7.1fx\n", k.c_str(), pool.size(), span(rnd).c_str(), span(mdl).c_str(),
           med(rnd) / med(mdl));
    fflush(stdout);
  }
}
