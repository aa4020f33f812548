// Transfer experiment (issue #11): leave-one-workload-out over recorded CPU datasets. For each
// held-out workload, a cost model is pretrained on every other workload (never on the held-out
// shape, on any machine), and every strategy searches the held-out workload's recorded space
// with and without it (and, with --variants cross, with a model trained only on the other
// machine's datasets). Reports measurements to reach 90/95/99% of the best recorded (median over
// seeds), the wall time to 95% (recorded compile + timed-call seconds of the replayed candidates
// plus the search's own measured time), SA-without-pretraining / strategy at 95%, and the
// pretrained model's Kendall tau on the held-out records before any of them (zero-shot) and after
// fine-tuning on 25% of them.
//
// A replay is not a measurement: each "measurement" is the recorded one of that candidate.
//
// usage: transfer DATASET... [--seeds N] [--budget N] [--batch N] [--strategies a,b]
//                 [--variants cold,pretrained,cross] [--cross-strategies a,b]
//                 [--hold-out SUBSTRING] [--epochs N]
//                 [--mix M] [--threads N] [--model-seed N] [--curves FILE.csv] [--json FILE] [--dump-features FILE.csv]
//                 [--labels fastest|median]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/common/strings.h"
#include "sextant/costmodel/features.h"
#include "sextant/search/replay.h"
#include "sextant/search/strategy.h"
#include "sextant/search/transfer.h"
#include "censored_median.h"

using namespace sextant;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const double kLevels[3] = {0.90, 0.95, 0.99};

struct RunResult {
  std::vector<double> curve;  // best fraction of the optimum after each measurement
  int reach[3] = {0, 0, 0};   // measurements to reach 90/95/99% (0: not reached)
  double wall95 = -1;         // seconds to 95% (-1: not reached)
};

struct Held {
  const ReplayWorkload* w;
  HostCpu cpu;
  Space space;  // restricted to the recorded candidates
};

RunResult runOne(const std::string& strategy, uint64_t seed, const Held& h, int budget, int batch,
                 const std::vector<PriorRecord>& prior, const std::string& pretrained, double mix, bool fastest_call) {
  RunResult r;
  StrategyContext ctx;
  ctx.num_features = int(cpuGemmFeatureNames().size());
  ctx.feature_version = kCpuFeatureVersion;
  ctx.features = [&](const Candidate& c) { return cpuGemmFeatures(h.w->workload, h.space, c, h.cpu); };
  ctx.prior = prior;
  ctx.workload = h.w->workload.key();
  ctx.pretrained_path = pretrained;
  ctx.pretrained_mix = mix;
  auto st = makeStrategy(strategy, seed, ctx);
  if (!st) {
    fprintf(stderr, "%s\n", st.error().c_str());
    exit(2);
  }
  ReplayEvaluator ev(h.space, *h.w);
  std::unordered_set<uint64_t> tried;
  std::atomic<bool> stop{false};
  double best = 0, wall = 0;
  int measured = 0;
  while (measured < budget) {
    auto t0 = Clock::now();
    auto cands = (*st)->propose(h.space, tried, size_t(std::min(batch, budget - measured)));
    wall += std::chrono::duration<double>(Clock::now() - t0).count();
    if (cands.empty()) break;
    auto evs = ev.evaluate(cands, stop, nullptr);
    std::vector<Observation> obs;
    for (size_t i = 0; i < cands.size(); ++i) {
      tried.insert(h.space.encode(cands[i]));
      if (evs[i].status == "replay_miss") continue;
      ++measured;
      const ReplayEntry& e = h.w->by_candidate.at(h.space.keyOf(cands[i]));
      wall += e.compile_s;
      for (double t : e.times_s) wall += t;
      bool ok = evs[i].status == "ok";
      obs.push_back({cands[i], ok, ok ? evs[i].measurement.gflops : 0,
                     ok && fastest_call
                         ? learnedThroughput(h.w->workload.flops(), evs[i].measurement.times_s, evs[i].measurement.gflops)
                         : 0});
      if (ok) best = std::max(best, evs[i].measurement.gflops);
      double frac = best / h.w->best_gflops;
      r.curve.push_back(frac);
      for (int l = 0; l < 3; ++l)
        if (!r.reach[l] && frac >= kLevels[l] - 1e-12) {
          r.reach[l] = measured;
          if (l == 1) r.wall95 = wall;
        }
    }
    auto t1 = Clock::now();
    (*st)->observe(h.space, obs);
    wall += std::chrono::duration<double>(Clock::now() - t1).count();
    if (r.reach[2]) break;  // 99% reached: the rest of the curve is flat at >= 0.99
  }
  return r;
}

std::string fmt(const char* f, double v) {
  char b[64];
  snprintf(b, sizeof b, f, v);
  return b;
}

using experiments::median;

// Kendall tau of `model` on the held-out workload's successful records (all, or those not in
// `exclude`), against their recorded throughput.
double tauOn(const CostModel& model, const Held& h, const std::vector<Sample>& test) {
  std::vector<std::vector<float>> xs;
  std::vector<double> truth, pred;
  for (const auto& s : test)
    if (!s.failed) xs.push_back(s.x), truth.push_back(s.gflops);
  for (const auto& p : model.predict(xs)) pred.push_back(p.mean);
  return kendallTau(truth, pred);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  int seeds = 10, budget = 256, batch = 16, threads = 2;
  double mix = 32;
  std::vector<std::string> strategies = {"random", "sa", "model", "evolutionary", "chameleon", "glimpse"};
  std::vector<std::string> variants = {"cold", "pretrained", "cross"};
  std::vector<std::string> cross_strategies;  // empty: every strategy
  std::string hold_out, curves_path, json_path, dump_path;
  TransferOptions to;
  to.host_llvm_cpu = "";
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
    else if (a == "--variants") variants = split(next(), ',');
    else if (a == "--cross-strategies") cross_strategies = split(next(), ',');
    else if (a == "--hold-out") hold_out = next();
    else if (a == "--epochs") to.epochs = std::stoi(next());
    else if (a == "--max-per-workload") to.max_per_workload = size_t(std::stoll(next()));
    else if (a == "--mix") mix = std::stod(next());
    else if (a == "--threads") threads = std::max(1, std::stoi(next()));
    else if (a == "--model-seed") to.seed = std::stoull(next());
    else if (a == "--host-cpu") to.host_llvm_cpu = next();
    else if (a == "--curves") curves_path = next();
    else if (a == "--json") json_path = next();
    else if (a == "--dump-features") dump_path = next();
    else if (a == "--labels") {
      const std::string l = next();
      if (l != "fastest" && l != "median") {
        fprintf(stderr, "--labels takes fastest or median\n");
        return 2;
      }
      to.fastest_call = l == "fastest";
    }
    else if (a == "--help" || a == "-h") {
      printf("usage: transfer DATASET... [--seeds N] [--budget N] [--batch N] [--strategies a,b] "
             "[--variants cold,pretrained,cross] [--cross-strategies a,b] [--hold-out SUBSTRING] [--epochs N] [--max-per-workload N] [--mix M] [--threads N] "
             "[--model-seed N] [--host-cpu LLVM_CPU] [--curves FILE.csv] [--json FILE] [--dump-features FILE.csv] [--labels fastest|median]\n"
             "--dump-features writes every record's features (workload, device, gflops, failed, features) and exits,\n"
             "for trying other learners on the same data. --model-seed: the pretrained models' training seed (default 1).\n"
             "--labels: what the models learn from a record, its recorded\n"
             "median (default, as tune) or its fastest timed call.\n");
      return 0;
    } else files.push_back(a);
  }
  if (files.empty()) {
    fprintf(stderr, "usage: transfer DATASET... (see --help)\n");
    return 2;
  }
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  setCostModelThreads(1);
  std::vector<ReplayDataset> sets;
  std::vector<const ReplayWorkload*> all;
  for (const auto& f : files) {
    auto ds = loadReplayDataset(f);
    if (!ds) {
      fprintf(stderr, "error: %s\n", ds.error().c_str());
      return 2;
    }
    sets.push_back(std::move(*ds));
  }
  for (const auto& s : sets)
    for (const auto& w : s.workloads) all.push_back(&w);
  // Records of the table's CPUs are described by the table (cpuOfRecords); records of another CPU
  // by this machine's own description when it is that CPU (--host-cpu names it; default: this one).
  if (to.host_llvm_cpu.empty()) to.host_llvm_cpu = llvmHostCpuName();

  if (!dump_path.empty()) {
    std::ofstream d(dump_path);
    d << "workload,device,gflops,failed";
    for (const auto& n : cpuGemmFeatureNames()) d << "," << n;
    d << "\n";
    for (const ReplayWorkload* w : all) {
      const std::string name = replayName(*w);
      for (const Sample& s : cpuTransferSamples({w}, to)) {
        d << name << "," << w->device << "," << s.gflops << "," << int(s.failed);
        for (float x : s.x) d << "," << x;
        d << "\n";
      }
    }
    printf("wrote %s\n", dump_path.c_str());
    return 0;
  }
  std::ofstream curves;
  if (!curves_path.empty()) {
    curves.open(curves_path);
    curves << "workload,strategy,variant,seed,measurement,best_fraction\n";
  }
  json report;
  report["note"] = "replay of recorded measurements (not new measurements); leave-one-workload-out";
  report["command"] = [&] {
    std::vector<std::string> v(argv, argv + argc);
    return join(v, " ");
  }();
  report["seeds"] = seeds, report["budget"] = budget, report["batch"] = batch, report["mix"] = mix;
  report["pretrain_epochs"] = to.epochs;
  report["labels"] = to.fastest_call ? "fastest call" : "recorded median";
  printf("Transfer (replay of recorded measurements, not new ones), leave-one-workload-out: measurements to reach\n"
         "90/95/99%% of the best recorded (median over %d seeds, budget %d, batch %d; '>B' not reached), wall time to\n"
         "95%% (recorded compile + timed calls of the replayed candidates + measured search time), SA/x = SA without\n"
         "pretraining / this at 95%%. Variants: cold (no pretrained model), pretrained (trained on every other\n"
         "workload, all machines), cross (trained on the other machine's datasets only).\n",
         seeds, budget, batch);
  std::map<std::string, std::vector<double>> ratio95;  // "strategy/variant" -> per held-out ratio
  std::vector<double> tau0s, tau25s, cold25s, tau0fs, tau25fs, cold25fs;
  const std::string tmpdir = std::filesystem::temp_directory_path() / ("sextant-transfer-" + std::to_string(getpid()));
  std::filesystem::create_directories(tmpdir);
  for (const ReplayWorkload* hw : all) {
    if (!hold_out.empty() && replayName(*hw).find(hold_out) == std::string::npos) continue;
    Held h{hw, cpuOfRecords(hw->device, to.host_llvm_cpu, hostCpu()), Space("", {}, {})};
    const Space full = buildCpuGemmSpace(hw->workload, h.cpu);
    const ReplayWorkload keyed = withSpaceKeys(*hw, full);  // records older than a knob read "as before"
    h.w = &keyed;
    h.space = restrictToDataset(full, keyed);
    printf("\n%s: %llu recorded candidates, best %.1f GFLOP/s\n", replayName(*hw).c_str(),
           (unsigned long long)h.space.size(), hw->best_gflops);
    json wj;
    // Pretrained models of this held-out workload.
    std::map<std::string, std::string> model_file;
    std::map<std::string, std::vector<PriorRecord>> prior;
    for (const std::string v : {"pretrained", "cross"}) {
      if (!has(variants, v)) continue;
      auto train = leaveOneOut(all, *hw, v == "cross");
      if (train.empty()) continue;
      auto t0 = Clock::now();
      setCostModelThreads(threads);  // training uses every thread; the searches run one per thread
      CostModel m = trainCpuModel(train, to);
      setCostModelThreads(1);
      std::string path = tmpdir + "/" + v + ".costmodel";
      if (auto s = m.save(path); !s) {
        fprintf(stderr, "%s\n", s.error().c_str());
        return 2;
      }
      model_file[v] = path;
      prior[v] = priorFromReplay(train);
      std::vector<std::string> names;
      for (auto* t : train) names.push_back(replayName(*t));
      wj[v]["trained_on"] = names;
      wj[v]["train_seconds"] = std::chrono::duration<double>(Clock::now() - t0).count();
      // Zero-shot tau, and tau after fine-tuning on 25% of the held-out records (vs a cold fit).
      TransferOptions one = to;
      // The held-out records labelled by their recorded median and by their fastest call (tau against
      // each); the models fine-tune on the labels --labels chose.
      TransferOptions med_opt = one, fast_opt = one;
      med_opt.fastest_call = false, fast_opt.fastest_call = true;
      const auto own_med = cpuTransferSamples({hw}, med_opt), own_fast = cpuTransferSamples({hw}, fast_opt);
      const auto& own = one.fastest_call ? own_fast : own_med;
      double tau0 = tauOn(m, h, own_med), tau0f = tauOn(m, h, own_fast);
      std::vector<double> t25, c25, t25f, c25f;
      for (uint64_t s = 1; s <= (v == "cross" ? 1u : 3u); ++s) {
        std::vector<size_t> order(own.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::mt19937_64 rng(s);
        std::shuffle(order.begin(), order.end(), rng);
        size_t ntrain = order.size() / 4;
        std::vector<Sample> tr, te_fast, te_med;
        for (size_t i = 0; i < order.size(); ++i)
          if (i < ntrain) tr.push_back(own[order[i]]);
          else te_fast.push_back(own_fast[order[i]]), te_med.push_back(own_med[order[i]]);
        auto ft = loadPretrained(path, int(cpuGemmFeatureNames().size()), kCpuFeatureVersion);
        ft->update(tr);
        t25.push_back(tauOn(*ft, h, te_med)), t25f.push_back(tauOn(*ft, h, te_fast));
        CostModelOptions co;
        co.seed = s;
        CostModel cold(int(cpuGemmFeatureNames().size()), co);
        cold.fit(tr);
        c25.push_back(tauOn(cold, h, te_med)), c25f.push_back(tauOn(cold, h, te_fast));
      }
      printf("  %-10s model: trained on %zu workloads in %.1f s; Kendall tau zero-shot %.3f, after 25%% %.3f "
             "(cold model on the same 25%%: %.3f); against the fastest calls: %.3f, %.3f (%.3f)\n",
             v.c_str(), train.size(), wj[v]["train_seconds"].get<double>(), tau0, median(t25), median(c25), tau0f,
             median(t25f), median(c25f));
      wj[v]["tau_zero_shot"] = tau0, wj[v]["tau_25"] = median(t25), wj[v]["tau_25_cold"] = median(c25);
      wj[v]["tau_fastest_zero_shot"] = tau0f, wj[v]["tau_fastest_25"] = median(t25f),
      wj[v]["tau_fastest_25_cold"] = median(c25f);
      if (v == "pretrained") tau0fs.push_back(tau0f), tau25fs.push_back(median(t25f)), cold25fs.push_back(median(c25f));
      if (v == "pretrained") tau0s.push_back(tau0), tau25s.push_back(median(t25)), cold25s.push_back(median(c25));
    }
    printf("  %-24s %15s %15s %15s %10s %9s\n", "strategy/variant", "90%", "95%", "99%", "s to 95%", "SA/x@95%");
    std::map<std::string, double> med95;
    for (const auto& s : strategies)
      for (const auto& v : variants) {
        if (v != "cold" && (s == "random" || s == "exhaustive" || !model_file.count(v))) continue;
        if (v == "cross" && !cross_strategies.empty() && !has(cross_strategies, s)) continue;
        const std::string name = s + "/" + v;
        std::vector<RunResult> runs(static_cast<size_t>(seeds));
        std::atomic<int> next{0};
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([&] {
            for (int i; (i = next++) < seeds;)
              runs[size_t(i)] = runOne(s, uint64_t(i + 1), h, budget, batch, v == "cold" ? prior["pretrained"] : prior[v],
                                       v == "cold" ? "" : model_file[v], mix, to.fastest_call);
          });
        for (auto& t : pool) t.join();
        std::vector<double> reach[3], wall;
        for (int i = 0; i < seeds; ++i) {
          const RunResult& r = runs[size_t(i)];
          for (int l = 0; l < 3; ++l) reach[l].push_back(r.reach[l] ? double(r.reach[l]) : double(budget + 1));
          wall.push_back(r.wall95 >= 0 ? r.wall95 : 1e9);
          if (curves.is_open())
            for (size_t k = 0; k < r.curve.size(); ++k)
              curves << replayName(*hw) << "," << s << "," << v << "," << i + 1 << "," << k + 1 << "," << r.curve[k]
                     << "\n";
        }
        auto cell = [&](const std::vector<double>& x) {
          double m = median(x, budget);
          return m > budget ? ">" + std::to_string(budget) : fmt("%.0f", m);
        };
        med95[name] = median(reach[1], budget);
        double w95 = median(wall, 1e8);  // 1e9: 95% not reached
        json sj;
        for (int l = 0; l < 3; ++l) sj["reach_" + std::to_string(int(kLevels[l] * 100))] = reach[l];
        sj["wall_to_95_s"] = wall;
        wj["runs"][name] = sj;
        printf("  %-24s %15s %15s %15s %10s", name.c_str(), cell(reach[0]).c_str(), cell(reach[1]).c_str(),
               cell(reach[2]).c_str(), w95 >= 1e9 ? "-" : fmt("%.1f", w95).c_str());
        if (med95.count("sa/cold")) {
          double ratio = med95["sa/cold"] / med95[name];
          ratio95[name].push_back(ratio);
          wj["runs"][name]["sa_cold_over_this_95"] = ratio;
          printf(" %8.2fx", ratio);
        }
        printf("\n");
        fflush(stdout);
      }
    report["held_out"][replayName(*hw)] = wj;
    if (!json_path.empty()) std::ofstream(json_path) << report.dump(2) << "\n";  // as it goes
  }
  std::filesystem::remove_all(tmpdir);
  printf("\nMedian over held-out workloads of SA-without-pretraining's measurements to 95%% / the strategy's\n"
         "(censored at the budget; >1: fewer measurements than SA):\n");
  for (auto& [name, v] : ratio95) {
    printf("  %-24s %6.2fx  (min %.2fx, max %.2fx, %zu workloads)\n", name.c_str(), median(v),
           *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()), v.size());
    report["median_sa_cold_over_strategy_95"][name] = median(v);
  }
  if (!tau0s.empty()) {
    printf("Pretrained model (leave-one-out), median over held-out workloads: Kendall tau zero-shot %.3f, after 25%% "
           "%.3f (cold model on the same 25%%: %.3f)\n",
           median(tau0s), median(tau25s), median(cold25s));
    report["median_tau_zero_shot"] = median(tau0s), report["median_tau_25"] = median(tau25s);
    report["median_tau_25_cold"] = median(cold25s);
    printf("Against the fastest timed call of each record (docs/costmodel.md): zero-shot %.3f, "
           "after 25%% %.3f (cold: %.3f)\n",
           median(tau0fs), median(tau25fs), median(cold25fs));
    report["median_tau_fastest_zero_shot"] = median(tau0fs), report["median_tau_fastest_25"] = median(tau25fs);
    report["median_tau_fastest_25_cold"] = median(cold25fs);
  }
  if (!json_path.empty()) std::ofstream(json_path) << report.dump(2) << "\n";
  return 0;
}
