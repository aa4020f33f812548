// Measured GPU records as cost-model samples (tools/gpu_samples.h).
#include "gpu_samples.h"

#include "sextant/costmodel/features.h"
#include "sextant/hwspec/devices.h"

namespace sextant::cli {

// The GPU target a database target key ("h100:sm_90") names; nullopt for CPU or unknown targets.
std::optional<GpuTargetInfo> gpuTargetOfKey(const std::string& key) {
  auto t = resolveTarget(key.substr(0, key.find(':')));
  if (!t || !t->isGpu()) return std::nullopt;
  auto g = gpuTargetInfo(*t);
  if (!g) return std::nullopt;
  return *g;
}

// The Blueprint embedding of a target's device (zeros if the table lacks it); fitted once.
const std::vector<double>& blueprintOf(const GpuTargetInfo& g) {
  static const Blueprint bp = fitBlueprint(builtinDeviceTable());
  static std::map<std::string, std::vector<double>> cache;  // per datasheet entry ("": none)
  const DeviceSpec* d = datasheetOf(g);
  const std::string key = d ? d->name : "";
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  return cache[key] = d ? bp.embed(*d) : std::vector<double>(bp.components.size(), 0.0);
}

// GPU features of a candidate plus its target's Blueprint (zeros in its place when `blueprint`
// is false: the cross-target comparison without it).
std::vector<float> featuresWithBlueprint(const GemmWorkload& w, const Space& s, const Candidate& c,
                                         const GpuTargetInfo& g, bool blueprint) {
  auto x = gpuGemmFeatures(w, s, c, g);
  for (double e : blueprintOf(g)) x.push_back(blueprint ? float(e) : 0.f);
  return x;
}

// GPU schedule spaces by workload and target, each enumerated once.
const Space& SpaceCache::get(const GemmWorkload& w, const GpuTargetInfo& g) {
  auto key = w.key() + "@" + g.target.key();
  auto it = spaces_.find(key);
  if (it == spaces_.end()) it = spaces_.emplace(key, buildGpuGemmSpace(w, g)).first;
  return it->second;
}

std::map<std::string, std::vector<Sample>> gpuSamples(const std::vector<RecordRow>& recs,
                                                      const std::function<bool(const RecordRow&)>& keep,
                                                      bool blueprint, SpaceCache* shared) {
  std::map<std::string, std::vector<Sample>> out;
  std::map<std::string, int> groups;
  SpaceCache own;
  SpaceCache& spaces = shared ? *shared : own;
  for (const auto& r : recs) {
    if (r.source != "measured" || !keep(r)) continue;
    auto g = gpuTargetOfKey(r.target_key);
    auto w = parseWorkloadKey(r.workload_key);
    if (!g || !w) continue;
    const Space& s = spaces.get(*w, *g);
    auto c = s.fromKey(r.candidate);
    if (!c || !s.isValid(*c)) continue;
    const std::string key = r.workload_key + "@" + r.target_key;
    const int group = int(groups.emplace(key, int(groups.size())).first->second);
    out[key].push_back(Sample{featuresWithBlueprint(*w, s, *c, *g, blueprint), float(r.gflops), r.status != "ok", group});
  }
  return out;
}

}  // namespace sextant::cli
