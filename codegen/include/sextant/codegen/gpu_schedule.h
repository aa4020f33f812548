// The GPU GEMM schedule space (one builder, specialised per vendor) and its Transform-dialect
// scripts (text only, no MLIR headers).
//
// Every schedule: forall over (block_m x block_n) C tiles mapped to blocks -> for over K in
// block_k chunks -> A and B tiles promoted to shared memory / LDS (copied by all threads with
// copy_bits-wide vector loads) -> the block's C tile split over warps (mma: warp_m x warp_n
// tiles computed with tensor-core mma.sync m16n8k16 via ldmatrix) or over threads (fma:
// thread_m x thread_n outputs per thread, FMA outer products; on sm_90 mma = 2: Hopper warpgroup MMA fed by
// TMA, a kernel of our own written by the pass sextant-wgmma-gemm; on AMD gfx942 the wave tiles of
// f16/bf16 GEMMs are computed with MFMA, knob mma = 1: v_mfma_f32_32x32x8, 2: 16x16x16). On NVIDIA sm_80+ the shared
// buffers can be multi-buffered with a cp.async software pipeline of depth `pipeline`; `swizzle`
// XORs shared-memory addresses against ldmatrix bank conflicts.
//
// Compilation runs in stages (compiler.h: compileGpuGemm): the main script, then (mma) the
// vector-to-nvgpu conversion (AMD: the MFMA rewrite, compiler_mfma.cpp), then (pipeline > 1) the pipelining script, then lowering.
#pragma once

#include <array>
#include <map>
#include <string>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/mfma.h"
#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/hwspec/gpu_target.h"

namespace sextant {

Space buildGpuGemmSpace(const GemmWorkload& w, const GpuTargetInfo& g);

// Everything derived from a candidate that the scripts, the launch and the checks need.
struct GpuPlan {
  int64_t block_m = 0, block_n = 0, block_k = 0;
  bool mma = false;                       // matrix units: mma.sync or wgmma (NVIDIA), MFMA (AMD)
  bool wgmma = false;                     // NVIDIA sm_90a, knob mma = 2: TMA + wgmma (compiler_wgmma.cpp);
                                          // block_k 64, `pipeline` TMA stages, warpgroup_m rows per warpgroup
  int64_t warpgroup_m = 0;                // rows of C per consumer warpgroup
  bool warp_specialize = false;           // wgmma: one more warpgroup issues the TMA loads
  MfmaIntrinsic mfma;                     // AMD with mma: the intrinsic (m = 0 otherwise)
  int64_t warp_size = 32;                 // lanes per warp / wave
  int64_t warp_m = 0, warp_n = 0, thread_m = 0, thread_n = 0;
  int64_t copy_bits = 128, pipeline = 1;
  bool promote_a = true, promote_b = true;  // staged in shared / workgroup memory (Vulkan: a knob)
  bool vec4 = false;                      // Vulkan: 1-D vector memory accesses (vec4 buffers where valid)
  bool swizzle = false;
  bool lds_k_major = false;               // MFMA: LDS operands stored with K innermost
  int64_t lds_pad = 0;                    // MFMA: elements of padding per LDS operand row
  int64_t threads = 0;                    // per block
  std::array<int64_t, 3> block_dims{};    // as mapped (x, y, z)
  std::array<int64_t, 3> grid{};          // blocks (x = N tiles, y = M tiles, z = batch elements)
  int64_t batch = 0;                      // a batched matmul's batch size (Vulkan); 0: a GEMM
  std::array<int64_t, 2> copy_tile_a{}, copy_tile_b{};  // per-thread copy tiles (vector sizes)
  std::array<int64_t, 2> fill_tile{};     // per-thread tile of the C initialisation
  int64_t smem_bytes = 0;                 // A + B tiles times pipeline depth
  bool vulkan = false;                    // SPIR-V for Vulkan: workgroup memory is memory space 3, memory
                                          // accesses scalar (compiler_vulkan.cpp says why); with mma:
                                          // cooperative matrices (16x16x16 f16 fragments per subgroup)
  int64_t required_subgroup = 0;          // Vulkan: the subgroup size the pipeline must require (the
                                          // `subgroup` knob, where the device offers a choice); 0: none
  bool dynamic_smem = false;              // NVIDIA, over the 48 KiB ptxas allows statically: the tiles
                                          // live in dynamic shared memory (compiler_dynamic_smem.cpp)
};
// The element types the Vulkan space has: f32, or f16 inputs (where the device has shaderFloat16),
// with f32 results.
bool vulkanSupportsTypes(const GemmWorkload& w);
// The #spirv.target_env attribute (text) of a Vulkan target: SPIR-V 1.3, its resource limits.
std::string vulkanTargetEnv(const GpuTargetInfo& g);
// The same for a cooperative-matrix kernel: SPIR-V 1.6, CooperativeMatrixKHR, the space's shape
// (kVulkanCoopMatrixShape) as the device's property, subgroups of `subgroup` lanes.
std::string vulkanCoopMatrixTargetEnv(const GpuTargetInfo& g, int64_t subgroup);

Result<GpuPlan> planGpuGemm(const GemmWorkload& w, const Space& space, const Candidate& c);
// Whether a GPU GEMM space is the Vulkan flavour (its mma = 1: cooperative matrices).
bool isVulkanSpace(const Space& space);

// A copy of rows x cols elements of elem_bits by `threads` threads with vectors of up to
// align_bits, as transform.structured.gpu.map_copy_to_threads maps it (MLIR's CopyMappingInfo,
// favorPredication = false). Returns the per-thread tile, or an error if the mapping is not
// exact (the op would then predicate or fail).
Result<std::array<int64_t, 2>> gpuCopyTile(int64_t rows, int64_t cols, int64_t elem_bits, int64_t threads,
                                           int64_t align_bits);

// Everything compileGpuGemm needs for candidate c (whose plan is p) but the output path: the
// payload, the stage scripts and the plan's code-generation choices (the one place that copies them).
GpuCompileRequest gpuCompileRequest(const GemmWorkload& w, const Space& space, const Candidate& c, const GpuPlan& p,
                                    const GpuTargetInfo& g);

// The untuned default: 64x64x32 blocks; tensor cores where available with 32x32 warp tiles;
// otherwise 4x4 outputs per thread; 128-bit loads; a 2-stage pipeline where cp.async exists.
// Where the space has wgmma (sm_90, f16/bf16 NN): 128x256 blocks, two 64-row warpgroups, 4 stages
// (the H200 measurements of 2026-11-26). Each: the space's nearest valid point to it.
Candidate defaultGpuCandidate(const Space& space);
// The default for the workload on the target: a Vulkan device's class's IREE configuration
// (vulkan_configs.cpp), else the one above.
Candidate defaultGpuCandidate(const GemmWorkload& w, const Space& space, const GpuTargetInfo& g);
// The valid candidate nearest to `want` (knob name -> value; knobs not named are free).
Candidate nearestGpuCandidate(const Space& space, const std::map<std::string, int64_t>& want);

// IREE's default SPIR-V matmul configurations per device class (its KernelConfig.cpp and
// {Mali,Adreno,AMD,NVIDIA,Apple}Config.cpp): workgroup size, thread tile, and whether A and B go
// through workgroup memory. Sextant's defaults and seeds on Vulkan (issue #33).
struct VulkanVendorConfig {
  std::string device_class;  // nvidia, amd, mali, adreno, apple, cpu, other
  int64_t wg_x = 0, wg_y = 0;            // workgroup size (x: N, y: M)
  int64_t thread_m = 0, thread_n = 0, thread_k = 0;
  bool promote = false;                  // A and B staged in workgroup memory
  int64_t blockM() const { return wg_y * thread_m; }
  int64_t blockN() const { return wg_x * thread_n; }
};
// The class's configuration for inputs of `a_type` (f16 has its own; an unknown class: IREE's fallback).
VulkanVendorConfig vulkanVendorConfig(const std::string& device_class, DType a_type);
const std::vector<std::string>& vulkanDeviceClasses();
// The space's nearest candidate to a configuration (block tile, K tile, thread tile, promotion).
Candidate vulkanConfigCandidate(const Space& space, const VulkanVendorConfig& c);
// Every class's configuration as candidates of the space, the device's own class first, without
// duplicates: the seeds a Vulkan search measures first.
std::vector<Candidate> vulkanVendorSeeds(const GemmWorkload& w, const Space& space, const GpuTargetInfo& g);

// Stage 1: tiling, promotion, vectorisation, mapping to blocks/threads (entry @__transform_main,
// consumes the root). Knob values are recorded as transform.tune.knob ops.
std::string emitGpuGemmSchedule(const GemmWorkload& w, const Space& space, const Candidate& c);
// Stage 3 (pipeline > 1): multi-buffering + cp.async groups + software pipelining; for tensor
// cores without pipelining, the lowering of the copies' transfers alone; otherwise empty.
std::string emitGpuPipelineSchedule(const GpuPlan& p);

// The same schedule as named-sequence bodies of a Transform library (library.h), where one
// matched op is scheduled inside a user's module and no compiler runs between the stages:
// - actions (handle %mm: the matched op): the op-level part of stage 1; marks the op's function
//   with the unit attribute `function_tag`;
// - lowering (handle %func, consumed: the marked function): the function-level part of stage 1;
// - finish (handle %fin, consumed: the same function, matched again): what compileGpuGemm does
//   between and after the scripts (vector -> nvgpu, stage 3, the wait-group counts, the swizzle,
//   workgroup buffers to static shared memory), as registered passes and transforms.
// The kernel is then the one the tuner measured (tests compare the PTX). The function-level
// parts make it one scheduled GEMM per function.
std::string emitGpuLibraryActions(const GemmWorkload& w, const Space& space, const Candidate& c,
                                  const std::string& indent, const std::string& function_tag);
std::string emitGpuLibraryLowering(const GemmWorkload& w, const Space& space, const Candidate& c,
                                   const std::string& indent);
std::string emitGpuLibraryFinish(const GemmWorkload& w, const Space& space, const Candidate& c,
                                 const std::string& indent, bool nvidia);

}  // namespace sextant
