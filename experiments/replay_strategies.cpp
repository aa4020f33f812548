// Replay experiment (issue #5): every search strategy on recorded datasets, >= 10 seeds each.
// Reports the measurements needed to reach 90%, 95% and 99% of each workload's best recorded
// throughput (median and min-max over seeds; ">B" = not reached within the budget B), the
// speed-up in measurements against the AutoTVM-style SA baseline, and writes every tuning curve
// as CSV (for experiments/plot_replay.py).
//
// A replay is not a measurement: each "measurement" is the recorded one of that candidate from
// the dataset (search/replay.h), and the search space is restricted to the recorded candidates.
//
// usage: replay_strategies DATASET... [--seeds N] [--budget N] [--batch N]
//                          [--strategies a,b,...] [--curves FILE.csv] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/common/strings.h"
#include "sextant/costmodel/features.h"
#include "sextant/search/replay.h"
#include "sextant/search/strategy.h"
#include "censored_median.h"

using namespace sextant;
using json = nlohmann::json;

namespace {

struct RunResult {
  std::vector<double> curve;  // best fraction of the optimum after each measurement
  int reach[3] = {0, 0, 0};   // measurements to reach 90/95/99% (0: not reached)
  int64_t misses = 0;
  double seconds = 0;
};

const double kLevels[3] = {0.90, 0.95, 0.99};

double g_acquisition_k = 1.0;  // --acquisition-k (glimpse)
double g_regression_weight = -1;  // --regression-weight (cost model; < 0: its default)
int g_epochs = -1;                // --epochs (cost model; <= 0: its default)

RunResult runOne(const std::string& strategy, uint64_t seed, const Space& space, const ReplayWorkload& data,
                 int budget, int batch, const std::vector<PriorRecord>& prior) {
  RunResult r;
  const HostCpu& cpu = hostCpu();
  StrategyContext ctx;
  ctx.num_features = int(cpuGemmFeatureNames().size());
  ctx.features = [&](const Candidate& c) { return cpuGemmFeatures(data.workload, space, c, cpu); };
  ctx.prior = prior;
  ctx.workload = data.workload.key();
  ctx.acquisition_k = g_acquisition_k;
  ctx.regression_weight = g_regression_weight;
  ctx.epochs = g_epochs;
  auto st = makeStrategy(strategy, seed, ctx);
  if (!st) {
    fprintf(stderr, "%s\n", st.error().c_str());
    exit(2);
  }
  ReplayEvaluator ev(space, data);
  std::unordered_set<uint64_t> tried;
  std::atomic<bool> stop{false};
  double best = 0;
  auto t0 = std::chrono::steady_clock::now();
  int measured = 0;
  while (measured < budget) {
    auto cands = (*st)->propose(space, tried, size_t(std::min(batch, budget - measured)));
    if (cands.empty()) break;
    auto evs = ev.evaluate(cands, stop, nullptr);
    std::vector<Observation> obs;
    for (size_t i = 0; i < cands.size(); ++i) {
      tried.insert(space.encode(cands[i]));
      if (evs[i].status == "replay_miss") continue;  // not a measurement: nothing to learn, no time
      ++measured;
      bool ok = evs[i].status == "ok";
      obs.push_back({cands[i], ok, ok ? evs[i].measurement.gflops : 0});
      if (ok) best = std::max(best, evs[i].measurement.gflops);
      double frac = best / data.best_gflops;
      r.curve.push_back(frac);
      for (int l = 0; l < 3; ++l)
        if (!r.reach[l] && frac >= kLevels[l] - 1e-12) r.reach[l] = measured;
    }
    (*st)->observe(space, obs);
    if (r.reach[2]) break;  // 99% reached: the rest of the curve is flat at >= 0.99
  }
  r.misses = ev.misses();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

using experiments::median;

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  int seeds = 10, budget = 256, batch = 16;
  std::vector<std::string> strategies = {"random", "sa", "evolutionary", "model", "ppo", "sa-sampling", "chameleon",
                                         "glimpse"};
  std::string curves_path, json_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fprintf(stderr, "%s needs a value\n", a.c_str());
        exit(2);
      }
      return argv[++i];
    };
    if (a == "--seeds") seeds = std::stoi(next());
    else if (a == "--budget") budget = std::stoi(next());
    else if (a == "--batch") batch = std::stoi(next());
    else if (a == "--strategies") strategies = split(next(), ',');
    else if (a == "--curves") curves_path = next();
    else if (a == "--json") json_path = next();
    else if (a == "--acquisition-k") g_acquisition_k = std::stod(next());
    else if (a == "--regression-weight") g_regression_weight = std::stod(next());
    else if (a == "--epochs") g_epochs = std::stoi(next());
    else if (a == "--help" || a == "-h") {
      printf("usage: replay_strategies DATASET... [--seeds N] [--budget N] [--batch N] [--strategies a,b] "
             "[--curves FILE.csv] [--json FILE] [--acquisition-k K] [--regression-weight W] [--epochs N]\n");
      return 0;
    } else files.push_back(a);
  }
  if (files.empty()) {
    fprintf(stderr, "usage: replay_strategies DATASET... (see --help)\n");
    return 2;
  }
  std::ofstream curves;
  if (!curves_path.empty()) {
    curves.open(curves_path);
    curves << "workload,strategy,seed,measurement,best_fraction\n";
  }
  json report;
  report["note"] = "replay of recorded measurements (not new measurements); space restricted to the dataset";
  report["seeds"] = seeds, report["budget"] = budget, report["batch"] = batch;
  std::map<std::string, std::vector<double>> ratio95;  // strategy -> per-workload SA/strategy at 95%
  printf("Replay (recorded measurements, not new ones): measurements to reach 90/95/99%% of the best recorded,\n"
         "median [min-max] over %d seeds, budget %d, batch %d. '>B': not reached within the budget.\n",
         seeds, budget, batch);
  std::vector<std::pair<std::string, ReplayWorkload>> all;
  for (const auto& f : files) {
    auto ds = loadReplayDataset(f);
    if (!ds) {
      fprintf(stderr, "error: %s\n", ds.error().c_str());
      return 2;
    }
    for (auto& wd : ds->workloads) all.push_back({f, wd});
  }
  {
    for (const auto& [f, wd0] : all) {
      // Leave-one-out prior for glimpse: every other workload's recorded candidates.
      std::vector<PriorRecord> prior;
      for (const auto& [f2, other] : all) {
        if (other.workload.key() == wd0.workload.key() || other.best_gflops <= 0) continue;
        for (const auto& [key, e] : other.by_candidate) {
          if (!e.ok) continue;
          PriorRecord p;
          for (const auto& kv : split(key, ',')) {
            auto eq = kv.find('=');
            if (eq != std::string::npos) p.knobs[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
          }
          p.score = e.gflops / other.best_gflops;
          prior.push_back(std::move(p));
        }
      }
      Space full = buildCpuGemmSpace(wd0.workload, hostCpu());
      const ReplayWorkload wd = withSpaceKeys(wd0, full);  // records older than a knob read "as before"
      Space space = restrictToDataset(full, wd);
      printf("\n%s (%s): %llu recorded candidates of a space of %llu, best %.1f GFLOP/s\n", wd.workload.key().c_str(),
             f.c_str(), (unsigned long long)space.size(), (unsigned long long)full.size(), wd.best_gflops);
      printf("  %-13s %18s %18s %18s %9s %8s\n", "strategy", "90%", "95%", "99%", "SA/x@95%", "s/run");
      std::map<std::string, double> med95;
      json wj;
      for (const auto& s : strategies) {
        std::vector<double> reach[3], secs;
        for (int seed = 1; seed <= seeds; ++seed) {
          RunResult r = runOne(s, uint64_t(seed), space, wd, budget, batch, prior);
          for (int l = 0; l < 3; ++l) reach[l].push_back(r.reach[l] ? double(r.reach[l]) : double(budget + 1));
          secs.push_back(r.seconds);
          if (curves.is_open())
            for (size_t i = 0; i < r.curve.size(); ++i)
              curves << wd.workload.key() << "," << s << "," << seed << "," << i + 1 << "," << r.curve[i] << "\n";
        }
        auto cell = [&](const std::vector<double>& v) {
          auto fmt = [&](double x) {
            std::string s = x > budget ? ">" : "";  // (appended: GCC 12 warns falsely, -Wrestrict, on ">" + ...)
            s += std::to_string(x > budget ? budget : int(x));
            return s;
          };
          double m = median(v, budget);
          return fmt(m) + " [" + fmt(*std::min_element(v.begin(), v.end())) + "-" +
                 fmt(*std::max_element(v.begin(), v.end())) + "]";
        };
        med95[s] = median(reach[1], budget);
        json sj;
        for (int l = 0; l < 3; ++l) sj["reach_" + std::to_string(int(kLevels[l] * 100))] = reach[l];
        sj["seconds_per_run"] = median(secs);
        wj[s] = sj;
        printf("  %-13s %18s %18s %18s %9s %8.1f\n", s.c_str(), cell(reach[0]).c_str(), cell(reach[1]).c_str(),
               cell(reach[2]).c_str(), "", median(secs));
      }
      if (med95.count("sa"))
        for (auto& [s, m] : med95) {
          double ratio = med95["sa"] / m;
          ratio95[s].push_back(ratio);
          wj[s]["sa_over_this_95"] = ratio;
        }
      printf("  SA/x at 95%% (medians; >1: fewer measurements than SA):");
      for (auto& [s, m] : med95) printf(" %s %.2fx", s.c_str(), med95.count("sa") ? med95["sa"] / m : 0.0);
      printf("\n");
      report["workloads"][wd.workload.key()] = wj;
    }
  }
  if (!ratio95.empty()) {
    printf("\nMedian over workloads of SA's measurements to 95%% / the strategy's (censored at the budget):\n");
    for (auto& [s, v] : ratio95) {
      printf("  %-13s %.2fx\n", s.c_str(), median(v));
      report["median_sa_over_strategy_95"][s] = median(v);
    }
  }
  if (!json_path.empty()) std::ofstream(json_path) << report.dump(2) << "\n";
  return 0;
}
