#include "sextant/search/transfer.h"

#include <algorithm>
#include <random>

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
    if (other_machines_only && w->device == held.device) continue;
    out.push_back(w);
  }
  return out;
}

std::vector<PriorRecord> priorFromReplay(const std::vector<const ReplayWorkload*>& data) {
  std::vector<PriorRecord> prior;
  for (const ReplayWorkload* w : data) {
    if (w->best_gflops <= 0) continue;
    for (const auto& [key, e] : w->by_candidate) {
      if (!e.ok) continue;
      PriorRecord p;
      for (const auto& kv : split(key, ',')) {
        auto eq = kv.find('=');
        if (eq != std::string::npos) p.knobs[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
      }
      p.score = e.gflops / w->best_gflops;
      prior.push_back(std::move(p));
    }
  }
  return prior;
}

}  // namespace sextant
