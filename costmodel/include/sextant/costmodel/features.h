// Features of a candidate for the cost model: the knob values (log-scaled), analytic features
// derived from them (tile footprints per cache level, arithmetic intensity of the register tile,
// register and vector use, block counts) and the workload. MLIR-free, LibTorch-free.
#pragma once

#include <string>
#include <vector>

#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/hwspec/target.h"

namespace sextant {

std::vector<std::string> cpuGemmFeatureNames();
std::vector<float> cpuGemmFeatures(const GemmWorkload& w, const Space& space, const Candidate& c, const HostCpu& cpu);

}  // namespace sextant
