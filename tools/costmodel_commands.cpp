// `tune costmodel`: train a cost model across workloads and machines (issue #11) and evaluate the
// cost model on held-out records.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/common/strings.h"
#include "sextant/costmodel/features.h"
#include "sextant/costmodel/model.h"
#include "sextant/db/database.h"
#include "sextant/hwspec/target.h"
#include "sextant/search/transfer.h"

namespace sextant::cli {

using json = nlohmann::json;

std::string shippedPretrainedPath() {
  if (const char* e = std::getenv("SEXTANT_PRETRAINED"); e && *e) return e;
  return std::string(SEXTANT_SOURCE_DIR) + "/datasets/models/cpu_gemm.costmodel";
}

Result<std::string> resolvePretrained(const std::string& option, std::string* warning) {
  if (option == "none") return std::string();
  const bool shipped = option.empty() || option == "default";
  const std::string path = shipped ? shippedPretrainedPath() : option;
  auto m = loadPretrained(path, int(cpuGemmFeatureNames().size()), kCpuFeatureVersion);
  if (m) return path;
  if (!shipped) return Error{m.error()};
  if (warning) *warning = "no usable pretrained model (" + m.error() + "): the search starts cold";
  return std::string();
}

namespace {
std::string gitCommit() {
  std::string cmd = "git -C '" + std::string(SEXTANT_SOURCE_DIR) + "' rev-parse --short HEAD 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  char buf[64] = {0};
  std::string out = fgets(buf, sizeof buf, p) ? buf : "";
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}
}  // namespace

int cmdModelTrain(const ModelTrainArgs& a) {
  if (a.data.empty()) return fail("model train needs --data FILE (a database or a dataset .jsonl[.gz]), once or more");
  if (a.out.empty()) return fail("model train needs -o FILE");
  if (a.epochs <= 0 || a.max_per_workload <= 0) return fail("--epochs and --max-per-workload must be at least 1");
  std::vector<ReplayDataset> sets;
  for (const auto& f : a.data) {
    auto ds = loadReplayDataset(f);
    if (!ds) return fail(ds.error());
    sets.push_back(std::move(*ds));
  }
  TransferOptions o;
  o.epochs = a.epochs, o.seed = a.seed, o.max_per_workload = size_t(a.max_per_workload);
  // Records of the table's CPUs are described by the table; records of another CPU by this
  // machine's own description when it measured them (cpuOfRecords).
  o.host_llvm_cpu = llvmHostCpuName();
  std::vector<const ReplayWorkload*> use;
  json trained_on = json::array();
  for (size_t i = 0; i < sets.size(); ++i)
    for (const auto& w : sets[i].workloads) {
      const std::string name = replayName(w);
      if (!w.target_key.starts_with("cpu:")) continue;  // GPU records: not this model's features
      bool excluded = false;
      for (const auto& x : a.exclude) excluded |= name.find(x) != std::string::npos;
      if (excluded) {
        printf("left out: %s\n", name.c_str());
        continue;
      }
      use.push_back(&w);
      size_t ok = 0;
      for (const auto& [k, e] : w.by_candidate) ok += e.ok;
      trained_on.push_back({{"file", a.data[i]}, {"workload", w.workload.key()}, {"device", w.device},
                            {"cpu_model", w.cpu_model}, {"records", w.by_candidate.size()}, {"ok", ok},
                            {"best_gflops", w.best_gflops}});
    }
  if (use.empty()) return fail("no CPU records to train on in the given data");
  printf("training the CPU cost model (features v%d) on %zu workloads, %d epochs...\n", kCpuFeatureVersion,
         use.size(), a.epochs);
  fflush(stdout);
  auto t0 = std::chrono::steady_clock::now();
  CostModel m = trainCpuModel(use, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::filesystem::path out(a.out);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  if (auto s = m.save(a.out); !s) return fail(s.error());
  if (auto s = savePrior(priorPathOf(a.out), use); !s) return fail(s.error());
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  json prov{{"model", out.filename().string()},
            {"format", kCostModelFormat},
            {"feature_version", kCpuFeatureVersion},
            {"features", cpuGemmFeatureNames()},
            {"trained_on", trained_on},
            {"labels", "each record's recorded (median-call) GFLOP/s"},
            {"epochs", a.epochs},
            {"seed", a.seed},
            {"max_per_workload", a.max_per_workload},
            {"train_seconds", secs},
            {"host_llvm_cpu", o.host_llvm_cpu},
            {"tool_version", SEXTANT_VERSION},
            {"commit", gitCommit()},
            {"date", date},
            {"command", json::parse(a.args_json)}};
  std::ofstream(a.out + ".provenance.json") << prov.dump(2) << "\n";
  printf("wrote %s (%.1f s of training; provenance: %s.provenance.json; glimpse's prior: %s)\n", a.out.c_str(), secs,
         a.out.c_str(), priorPathOf(a.out).c_str());
  return 0;
}

int cmdModelEval(const ModelEvalArgs& a) {
  if (!a.train_target.empty()) return cmdModelEvalCrossTarget(a);
  auto db = Database::open(a.db, false);
  if (!db) return fail(db.error());
  auto target = resolveTarget(a.target);
  if (!target) return fail(target.error());
  if (target->isGpu()) return cmdModelEvalGpu(a);
  auto recs = db->allRecords(false);
  if (!recs) return fail(recs.error());
  std::map<std::string, std::vector<const RecordRow*>> by_workload;
  for (const auto& r : *recs)
    if (r.target_key == target->key() && r.source == "measured") by_workload[r.workload_key].push_back(&r);
  const HostCpu cpu = cpuForTargetArch(target->arch);
  bool any = false;
  printf("Cost model accuracy on held-out measured records (%s, target %s). Train on a fraction of a workload's\n"
         "records, rank the rest; medians over %d random splits. pick = measured GFLOP/s of the model's top-1 pick\n"
         "among the held-out records / the best held-out GFLOP/s; pick@5: the best of its first five picks (what a\n"
         "tuner measuring them would get) / the best.\n\n",
         a.db.c_str(), target->key().c_str(), a.seeds);
  printf("%-36s %7s %6s %8s %8s %8s %8s %8s\n", "workload", "records", "train", "tau", "top-1", "top-5", "pick",
         "pick@5");
  for (auto& [wkey, rows] : by_workload) {
    auto w = parseWorkloadKey(wkey);
    if (!w) continue;
    Space space = buildCpuGemmSpace(*w, cpu);
    std::vector<Sample> all;
    for (const RecordRow* r : rows) {
      auto c = space.fromKey(r->candidate);
      if (!c || !space.isValid(*c)) continue;
      all.push_back(Sample{cpuGemmFeatures(*w, space, *c, cpu), float(r->gflops), r->status != "ok", 0});
    }
    size_t ok = 0;
    for (auto& s : all) ok += !s.failed;
    if (int(ok) < a.min_records) {
      printf("%-36s %7zu   (fewer than %d successful records: skipped)\n", wkey.c_str(), all.size(), a.min_records);
      continue;
    }
    any = true;
    for (double frac : {0.10, 0.25, 0.50}) {
      std::vector<double> taus, top1, top5, picks, picks5;
      for (int seed = 1; seed <= a.seeds; ++seed) {
        std::vector<Sample> shuffled = all;
        std::mt19937_64 rng{static_cast<uint64_t>(seed)};
        std::shuffle(shuffled.begin(), shuffled.end(), rng);
        size_t ntrain = size_t(double(shuffled.size()) * frac);
        std::vector<Sample> train(shuffled.begin(), shuffled.begin() + long(ntrain));
        std::vector<Sample> test;
        for (size_t i = ntrain; i < shuffled.size(); ++i)
          if (!shuffled[i].failed) test.push_back(shuffled[i]);
        CostModelOptions mo;
        mo.seed = uint64_t(seed);
        if (a.regression_weight >= 0) mo.regression_weight = a.regression_weight;
        if (a.epochs > 0) mo.epochs = a.epochs;
        CostModel m(int(cpuGemmFeatureNames().size()), mo);
        m.fit(train);
        std::vector<std::vector<float>> xs;
        std::vector<double> truth, pred;
        for (auto& s : test) xs.push_back(s.x), truth.push_back(s.gflops);
        auto p = m.predict(xs);
        for (auto& q : p) pred.push_back(q.mean);
        taus.push_back(kendallTau(truth, pred));
        size_t best = size_t(std::max_element(truth.begin(), truth.end()) - truth.begin());
        std::vector<size_t> order(pred.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return pred[x] > pred[y]; });
        top1.push_back(order[0] == best ? 1 : 0);
        top5.push_back(std::find(order.begin(), order.begin() + long(std::min<size_t>(5, order.size())), best) !=
                               order.begin() + long(std::min<size_t>(5, order.size()))
                           ? 1
                           : 0);
        picks.push_back(truth[order[0]] / truth[best]);
        double best5 = 0;  // what a tuner measuring the model's first five would get
        for (size_t i = 0; i < std::min<size_t>(5, order.size()); ++i) best5 = std::max(best5, truth[order[i]]);
        picks5.push_back(best5 / truth[best]);
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
      };
      auto mean = [](const std::vector<double>& v) {
        double s = 0;
        for (double x : v) s += x;
        return v.empty() ? 0 : s / double(v.size());
      };
      printf("%-36s %7zu %5.0f%% %8.3f %8.2f %8.2f %8.3f %8.3f\n", wkey.c_str(), all.size(), 100 * frac,
             median(taus), mean(top1), mean(top5), median(picks), median(picks5));
    }
  }
  if (!any) return fail(a.db + ": no workload of target " + target->key() + " has " + std::to_string(a.min_records) +
                        " successful records to evaluate on (collect some with tune --trials N)");
  // Scoring speed: what one round of model-based search costs (features + ensemble prediction).
  {
    auto w = parseWorkloadKey(by_workload.begin()->first);
    Space space = buildCpuGemmSpace(*w, cpu);
    std::vector<Sample> train;
    std::mt19937_64 rng{1};
    for (int i = 0; i < 200; ++i) train.push_back(Sample{cpuGemmFeatures(*w, space, space.sample(rng), cpu), 1.0f + float(i % 7), false, 0});
    CostModel m(int(cpuGemmFeatureNames().size()));
    m.fit(train);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<float>> xs;
    for (int i = 0; i < 10000; ++i) xs.push_back(cpuGemmFeatures(*w, space, space.sample(rng), cpu));
    auto t1 = std::chrono::steady_clock::now();
    auto p = m.predict(xs);
    auto t2 = std::chrono::steady_clock::now();
    printf("\nscoring 10,000 candidates: %.0f ms (features %.0f ms + 5-member ensemble %.0f ms), measured now\n",
           std::chrono::duration<double, std::milli>(t2 - t0).count(),
           std::chrono::duration<double, std::milli>(t1 - t0).count(),
           std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  printf("\ntop-1 / top-5: fraction of splits where the true best held-out record is the model's first pick /\n"
         "within its first five. Cross-target evaluation needs records of a second target (none on CPU-only machines).\n");
  return 0;
}


}  // namespace sextant::cli
