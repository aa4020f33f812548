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

// Version of the CPU features: a saved model trained on other features is refused. Version 2 adds
// features relative to the workload (tile / size, blocks per core) and the machine (L1d, L2,
// lanes, registers, cores), so that one model serves every shape and CPU. Version 3 adds the
// packing, loop-order and register-tile knobs of issue #14 (pack_b, pack_a, outer_order 1 and 2,
// reg_m 6/12/14, a peeled register loop). Version 4 adds the GEMV route (gemv, its rows and vector
// width; 0 for GEMM schedules).
constexpr int kCpuFeatureVersion = 4;
std::vector<std::string> cpuGemmFeatureNames();
std::vector<float> cpuGemmFeatures(const GemmWorkload& w, const Space& space, const Candidate& c, const HostCpu& cpu);
// The CPU that records measured on `llvm_cpu` (LLVM's host CPU name, the records' `device`)
// describe, as the cost model's features see it: for the CPUs of a small table (the machine kinds
// datasets are recorded on: vector width, registers, L1d, L2 and the L3 a core shares, 2 cores)
// the table's description, whichever machine trains or tunes, so that a record means the same to
// every model; for another CPU, this machine's own description when it is this machine
// (`host_llvm_cpu`), else AVX-512 with default caches.
HostCpu cpuOfRecords(const std::string& llvm_cpu, const std::string& host_llvm_cpu, const HostCpu& host);

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
