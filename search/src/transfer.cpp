#include "sextant/search/transfer.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/common/strings.h"
#include "sextant/costmodel/features.h"
#include "sextant/hwspec/target.h"

namespace sextant {

std::string replayName(const ReplayWorkload& w) {
  return w.workload.key() + " @ " + (w.device.empty() ? "unknown CPU" : w.device);
}

std::vector<Sample> cpuTransferSamples(const std::vector<const ReplayWorkload*>& data, const TransferOptions& o) {
  std::vector<Sample> out;
  std::mt19937_64 rng(o.seed);
  for (size_t g = 0; g < data.size(); ++g) {
    const ReplayWorkload& w = *data[g];
    const HostCpu cpu = cpuOfRecords(w.device, o.host_llvm_cpu, hostCpu());
    // The space of the machine that measured the records (its vector width and registers).
    Space space = buildCpuGemmSpace(w.workload, cpu);
    std::vector<const std::pair<const std::string, ReplayEntry>*> rows;
    for (const auto& kv : w.by_candidate) rows.push_back(&kv);
    if (rows.size() > o.max_per_workload) {
      std::shuffle(rows.begin(), rows.end(), rng);
      rows.resize(o.max_per_workload);
    }
    for (const auto* kv : rows) {
      auto c = space.fromKey(kv->first);
      if (!c || !space.isValid(*c)) continue;
      const ReplayEntry& e = kv->second;
      const double label = o.fastest_call ? learnedThroughput(w.workload.flops(), e.times_s, e.gflops) : e.gflops;
      Sample s{cpuGemmFeatures(w.workload, space, *c, cpu), float(label), !e.ok, int(g)};
      out.push_back(std::move(s));
    }
  }
  return out;
}

CostModel trainCpuModel(const std::vector<const ReplayWorkload*>& data, const TransferOptions& o) {
  CostModelOptions mo;
  mo.seed = o.seed;
  mo.epochs = o.epochs;
  mo.feature_version = kCpuFeatureVersion;
  CostModel m(int(cpuGemmFeatureNames().size()), mo);
  m.fit(cpuTransferSamples(data, o));
  return m;
}

std::vector<const ReplayWorkload*> leaveOneOut(const std::vector<const ReplayWorkload*>& all, const ReplayWorkload& held,
                                               bool other_machines_only) {
  std::vector<const ReplayWorkload*> out;
  for (const ReplayWorkload* w : all) {
    if (w->workload.key() == held.workload.key()) continue;
    // A convolution and its implicit GEMM (the same M, N, K: e.g. 3136x64x576 and ResNet-50's 56x56
    // 3x3 64-channel layer) are the same computation: neither trains a model for the other.
    const GemmWorkload &a = w->workload, &b = held.workload;
    if (a.isConv() != b.isConv() && a.batch == 1 && b.batch == 1 && a.m == b.m && a.n == b.n && a.k == b.k) continue;
    if (other_machines_only && w->device == held.device) continue;
    out.push_back(w);
  }
  return out;
}

namespace {
// "tile_m=128,tile_n=64,..." -> {tile_m: 128, tile_n: 64, ...}
std::map<std::string, int64_t> knobsOfKey(const std::string& key) {
  std::map<std::string, int64_t> knobs;
  for (const auto& kv : split(key, ',')) {
    auto eq = kv.find('=');
    if (eq != std::string::npos) knobs[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
  }
  return knobs;
}
}  // namespace

std::vector<PriorRecord> priorFromReplay(const std::vector<const ReplayWorkload*>& data) {
  std::vector<PriorRecord> prior;
  for (const ReplayWorkload* w : data) {
    if (w->best_gflops <= 0) continue;
    for (const auto& [key, e] : w->by_candidate) {
      if (!e.ok) continue;
      PriorRecord p;
      p.knobs = knobsOfKey(key);
      p.score = e.gflops / w->best_gflops;
      p.workload = w->workload.key();
      prior.push_back(std::move(p));
    }
  }
  return prior;
}

Status savePrior(const std::string& path, const std::vector<const ReplayWorkload*>& data) {
  nlohmann::json recs = nlohmann::json::array();
  for (const ReplayWorkload* w : data) {
    if (w->best_gflops <= 0) continue;
    for (const auto& [key, e] : w->by_candidate) {
      if (!e.ok || e.gflops < 0.9 * w->best_gflops) continue;
      recs.push_back({{"workload", w->workload.key()}, {"device", w->device}, {"knobs", knobsOfKey(key)},
                      {"score", e.gflops / w->best_gflops}});
    }
  }
  std::ofstream f(path);
  f << nlohmann::json{{"format", "sextant-prior"}, {"version", 1}, {"records", recs}}.dump() << "\n";
  if (!f) return Error{path + ": cannot write"};
  return okStatus();
}

Result<std::vector<PriorRecord>> loadPrior(const std::string& path, const std::string& host_device) {
  std::ifstream f(path);
  if (!f) return Error{path + ": cannot read"};
  std::stringstream ss;
  ss << f.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!j.is_object() || j.value("format", "") != "sextant-prior" || !j.contains("records") || !j["records"].is_array())
    return Error{path + ": not a Sextant prior (expected {\"format\": \"sextant-prior\", \"records\": [...]})"};
  if (j.value("version", 0) != 1) return Error{path + ": prior version " + j["version"].dump() + ", this build reads 1"};
  std::vector<PriorRecord> out;
  for (const auto& r : j["records"]) {
    if (!r.is_object() || !r.contains("knobs") || !r["knobs"].is_object() || !r.contains("score") ||
        !r["score"].is_number())
      return Error{path + ": a record without knobs or score: " + r.dump().substr(0, 120)};
    PriorRecord p;
    for (auto& [k, v] : r["knobs"].items())
      if (v.is_number_integer()) p.knobs[k] = v.get<int64_t>();
    p.score = r["score"].get<double>();
    p.workload = r.value("workload", "");
    p.weight = r.value("device", "") == host_device && !host_device.empty() ? 1.0 : 0.5;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace sextant
