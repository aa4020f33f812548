// Measured GPU records as cost-model samples (GPU features plus the device's Blueprint), shared by
// `tune --target <gpu> --measure predicted`, `tune import-results` and `tune costmodel eval`.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sextant/codegen/gpu_schedule.h"
#include "sextant/costmodel/model.h"
#include "sextant/db/database.h"

namespace sextant::cli {

// The GPU target a database target key ("h100:sm_90") names; nullopt for CPU or unknown targets.
std::optional<GpuTargetInfo> gpuTargetOfKey(const std::string& key);

// The Blueprint embedding of a target's device (datasheetOf: a Vulkan device by its reported name;
// zeros if the table lacks it); fitted once.
const std::vector<double>& blueprintOf(const GpuTargetInfo& g);

// GPU features of a candidate plus its target's Blueprint (zeros in its place when `blueprint`
// is false: the cross-target comparison without it).
std::vector<float> featuresWithBlueprint(const GemmWorkload& w, const Space& s, const Candidate& c,
                                         const GpuTargetInfo& g, bool blueprint = true);

// GPU schedule spaces by workload and target, each enumerated once.
class SpaceCache {
 public:
  const Space& get(const GemmWorkload& w, const GpuTargetInfo& g);

 private:
  std::map<std::string, Space> spaces_;
};

// The measured GPU records that `keep` selects, as cost-model samples (features plus Blueprint),
// grouped by workload and target ("workload@target"). Records whose candidate is not a valid point
// of this version's space are left out. `spaces`: where the spaces are built (a caller that needs
// them afterwards passes its own).
std::map<std::string, std::vector<Sample>> gpuSamples(const std::vector<RecordRow>& recs,
                                                      const std::function<bool(const RecordRow&)>& keep,
                                                      bool blueprint, SpaceCache* spaces = nullptr);

}  // namespace sextant::cli
