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

// GPU candidates: log2 knob values, one-hots for the matrix unit and pipelining, and analytic
// features of the plan on the target: threads, warps, shared memory per block and its share of
// the SM/CU, occupancy estimated from shared memory and threads, waves of blocks over the
// SMs/CUs, arithmetic intensity of the block tile (FLOP per byte staged), per-thread/warp output
// tile, K steps, and the workload (log M, N, K, input bytes). Compile statistics (registers,
// spills) are added when known (-1 otherwise), as the last three features.
struct GpuTargetInfo;
std::vector<std::string> gpuGemmFeatureNames();
std::vector<float> gpuGemmFeatures(const GemmWorkload& w, const Space& space, const Candidate& c,
                                   const GpuTargetInfo& g, int64_t registers = -1, int64_t spill_bytes = -1);

}  // namespace sextant
