// The only module that uses MLIR: payload + Transform script -> native code. The functions here
// run in whatever process calls them; the tuner calls them inside an isolated child process
// because an LLVM fatal error aborts the process that hits it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sextant/codegen/mfma.h"
#include "sextant/common/result.h"

namespace sextant {

// An op of a profiled network (compileModuleCpu with profile = true): id i in the shared object's
// clock (sextant_profile_read) is profiled_ops[i].
struct ProfiledOp {
  std::string function;  // the function it is in
  std::string op;        // its MLIR name, e.g. linalg.conv_2d_nhwc_hwcf
  std::string kind;      // conv, conv 1x1, depthwise conv, matmul, epilogue, elementwise, pooling,
                         // reduction, pad, fill, copy, other
  std::string label;     // op name and shapes, for a person
  double flops = 0;      // 2 x the iteration space of a contraction or convolution, one per point
                         // of the rest; 0: not static
  int64_t producer = -1;  // an epilogue: the id of the contraction or convolution whose result it
                          // reads (a schedule may fuse that op into it: its time is then here)
  bool nested = false;     // in a private function (called by the network's public ones)
  bool container = false;  // a call of a function whose ops are timed too (its time holds theirs)
  bool fused = false;      // after the schedules its clock times nothing: a later op computes it
};

struct CompileOutcome {
  bool ok = false;
  std::string stage;    // where it failed: parse_payload, parse_schedule, transform, lower,
                        // translate, codegen, link
  std::string message;  // MLIR/LLVM diagnostics
  double seconds = 0;   // wall time of the whole compilation
  int64_t object_bytes = 0;
  std::vector<ProfiledOp> profiled_ops;  // compileModuleCpu with profile: the timed ops, by id
};

// Applies `schedule` (a module with @__transform_main) to `payload`, lowers to LLVM, optimizes
// (O3) for the host CPU's real features and writes a shared object exporting
// `_mlir_ciface_sextant_gemm` to `so_path`.
// threads > 1: the schedule's one scf.forall (the cache-tile loop over M and N) runs on that
// many OpenMP threads (scf-forall-to-parallel, convert-scf-to-openmp; the object links LLVM's
// libomp); 1: a serial kernel, as before.
// A kernel compiled from the payload of a workload with `weights` (workload.h) may read its B
// operand (a convolution's filter) packed in blocks along its last dimension, arranged once by the
// caller outside the timed calls, as a network's constant weights are at compile time: it then
// exports `int64_t sextant_weights_block(void)`, the block b (B stored as [dn / b, d0, ...,
// d(n-1), b] for B of dimensions [d0, ..., dn]); without it B is read as stored.
inline constexpr const char* kWeightsBlockSymbol = "sextant_weights_block";
// The payload function's unit attribute that says its argument 1 is such a weight.
inline constexpr const char* kWeightsAttr = "sextant.weights";
// The unit attribute a CPU GEMM schedule with prefetch_b = 1 puts on its function: after
// bufferization, the register tiles' K loops there prefetch the next B panel (into L2).
inline constexpr const char* kPrefetchBAttr = "sextant.prefetch_b";
// That layout: `rows` rows of `d` values (a weight's dimensions [d0, ..., d(n-1)] flattened, then
// dn = d) stored as d / b blocks, each all rows of b values; what the compiler packs a network's
// constant weights into and the runner stores a weights kernel's B in.
inline void storeInWeightBlocks(const float* src, int64_t rows, int64_t d, int64_t b, float* dst) {
  for (int64_t q = 0; q < d / b; ++q)
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t j = 0; j < b; ++j) *dst++ = src[row * d + q * b + j];
}

CompileOutcome compileCpuGemm(const std::string& payload, const std::string& schedule,
                              const std::string& so_path, int threads = 1);

// Applies a Transform library (entry @__transform_main; empty text: none) to a whole module,
// lowers it for the host CPU, and writes a shared object (or, for a path ending in ".o", an object
// file). Every public function gets a C interface (`_mlir_ciface_NAME`).
// network (tune compile, tune model): the module is a program, not a candidate: chains of
// elementwise linalg.generic ops on tensors (bias, activation, residual add, normalization) are
// fused before the library is applied (linalg-fuse-elementwise-ops; the tunable named ops are left
// alone), the untuned rest is vectorized (compiler_cpu_elementwise.cpp), and a shared object gets
// its own heap for memref.alloc (codegen/model_runtime/model_alloc.c: buffers kept across calls).
// profile (networks): every op that does work in the public functions and in the functions they
// call is timed on each call
// (codegen/model_runtime/model_profile.c: sextant_profile_reset, sextant_profile_read), the ops
// listed in CompileOutcome::profiled_ops.
CompileOutcome compileModuleCpu(const std::string& module, const std::string& library, const std::string& out_path,
                                int threads = 1, bool network = false, bool profile = false);

// Registers Sextant's own MLIR passes (sextant-vector-to-mfma) with MLIR's pass registry; done by
// every compilation here, and by sextant-opt (mlir-opt with them).
void registerSextantPasses();

// GPU GEMM compilation, in stages: the main schedule (stage 1), the vector->nvgpu conversion
// (tensor cores), the pipelining schedule, workgroup buffers made static shared memory, kernel
// outlining (the launch is read here, before lowering), then NVVM -> PTX text (format=isa,
// needs no CUDA toolkit) or ROCDL -> gfx942 HSACO code object (linked by ld.lld 22).
struct GpuCompileRequest {
  std::string payload;            // GemmWorkload::payloadMlir()
  std::string schedule;           // emitGpuGemmSchedule
  std::string pipeline_schedule;  // emitGpuPipelineSchedule (may be empty)
  int64_t pipeline_depth = 1;
  bool mma = false;               // NVIDIA: run convert-vector-to-gpu{use-nvgpu}; AMD: the MFMA rewrite
  bool wgmma = false;             // NVIDIA sm_90a: the schedule wrote the whole kernel (sextant-wgmma-gemm)
  MfmaIntrinsic mfma;             // AMD with mma: the intrinsic the contracts become
  bool lds_k_major = false;       // AMD with mma: LDS operands stored with K innermost
  int64_t lds_pad = 0;            // AMD with mma: elements of padding per LDS operand row
  bool swizzle = false;           // run nvgpu-optimize-shared-memory
  bool dynamic_smem = false;      // NVIDIA: workgroup buffers in dynamic shared memory (> 48 KiB)
  bool nvidia = true;             // else AMD (or Vulkan)
  bool vulkan = false;            // SPIR-V for Vulkan (compiler_vulkan.cpp): out_path gets the SPIR-V binary,
                                  // validated by spirv-val
  std::string spirv_target;       // Vulkan: the #spirv.target_env attribute (vulkanTargetEnv)
  int64_t subgroup_size = 0;      // Vulkan: the subgroup size the kernel's pipeline must require (0: none)
  std::string chip;               // sm_90, sm_80, gfx942
  std::string features;           // +ptx80 ...
  std::string out_path;           // the kernel file: PTX text (NVIDIA) or HSACO (AMD)
  std::string rocm_toolkit;       // AMD: a prefix whose llvm/bin/ld.lld is lld 22
  bool keep_ir = false;           // GpuKernelInfo::scheduled_ir (tests: the kernel run on a CPU model)
};
struct GpuKernelInfo {
  std::string name;                 // kernel symbol
  std::vector<std::string> args;    // in launch order: "A", "B", "C" (bare pointers) or "i64:N"
  int64_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int64_t async_groups_per_iteration = 0;  // cp.async commit groups per steady-state iteration
  int64_t dynamic_smem_bytes = 0;          // the launch's dynamic shared memory (0: static only)
  int64_t subgroup_size = 0;               // Vulkan: the subgroup size its pipeline must require (0: the default)
  std::map<std::string, int64_t> stats;    // AMD: code-object metadata (vgpr_count, ...)
  std::string scheduled_ir;                // with keep_ir: the module after every schedule and rewrite,
                                           // before outlining and lowering (gpu.launch in the host function)
};
CompileOutcome compileGpuGemm(const GpuCompileRequest& r, GpuKernelInfo& info);

// gpu.launch bodies outlined into kernels (gpu.module / gpu.func).
inline constexpr const char* kGpuOutlining = "gpu-launch-sink-index-computations,gpu-kernel-outlining";
// The pass pipeline from outlined GPU kernels (outline_first: from gpu.launch ops) to PTX (format
// isa) or HSACO (lld 22 under the prefix rocm_toolkit; empty: a private one), host code included.
std::string gpuLoweringPipeline(bool nvidia, const std::string& chip, const std::string& features,
                                const std::string& rocm_toolkit, bool outline_first);

// A user's module with GPU library schedules applied (library.h), outlined and lowered: the
// module (host code in the LLVM dialect, kernels as gpu.binary objects: PTX or HSACO) is written
// to out_path as MLIR text. Fails if an op with tensors or a linalg op is left outside the
// kernels (it would run on the host, on device memory).
struct GpuModuleRequest {
  bool nvidia = true;
  bool vulkan = false;        // kernels as SPIR-V (validated by spirv-val); the module stays MLIR text with
                              // its gpu.launch_func host code and the spirv.modules
  std::string spirv_target;   // Vulkan: the #spirv.target_env (vulkanTargetEnv)
  std::string chip, features, rocm_toolkit;
  std::string input_name = "input";
  std::string out_path;
};
struct GpuModuleKernel {
  std::string host_function;  // the function that launches it
  std::string name;           // "module::kernel"
  int64_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  std::string object;         // PTX text, HSACO bytes or a SPIR-V binary
  std::map<std::string, int64_t> stats;  // AMD: code-object metadata
};
CompileOutcome compileModuleGpu(const std::string& module, const std::string& library, const GpuModuleRequest& r,
                                std::vector<GpuModuleKernel>& kernels);

// Reads the AMDGPU code-object metadata (NT_AMDGPU_METADATA note) of an HSACO: for the first
// kernel, .vgpr_count, .sgpr_count, .agpr_count, .vgpr_spill_count, .sgpr_spill_count,
// .group_segment_fixed_size (LDS bytes), .private_segment_fixed_size, .wavefront_size,
// .max_flat_workgroup_size (keys without the leading dot), plus "name" in the error if absent.
Result<std::map<std::string, int64_t>> readAmdgpuMetadata(const std::string& hsaco_bytes);

// A GEMM-like op found in a module: linalg.matmul, linalg.batch_matmul, or a linalg.generic
// contraction that is a matmul; and the 2-D convolutions Sextant tunes.
struct FoundOp {
  std::string op_name;   // "linalg.matmul", "linalg.generic", ...
  std::string location;  // "file:line:col"
  bool supported = false;
  std::string reason;    // why not, when unsupported
  int64_t m = 0, n = 0, k = 0, batch = 0;
  std::string a_type, b_type, c_type;  // element types ("f32", "f16", "bf16", ...)
  std::string layout;                  // "NN", "NT", "TN"
  std::string function;                // the enclosing func.func
  bool init_is_fill = false;           // C initialised by a linalg.fill (GPU schedules fuse it)
  bool weights = false;                // B (the filter) is a dense constant: a network's weight
  // A convolution (linalg.conv_2d_nhwc_hwcf, linalg.depthwise_conv_2d_nhwc_hwc; issue #31): its
  // benchdnn descriptor, the padding read from a zero tensor.pad that produces its input (empty for
  // contractions).
  std::string conv;
};
Result<std::vector<FoundOp>> findGemmOps(const std::string& module, const std::string& filename);

// spirv-val on a SPIR-V file (every Vulkan kernel passes it before it may run) with the Vulkan
// environment of the module's SPIR-V version (1.3: vulkan1.1, 1.6: vulkan1.3): ok, or why not (the
// validator's words, or that spirv-val, Debian's spirv-tools, is missing). The validator is
// $SEXTANT_SPIRV_VAL if set (a newer SPIRV-Tools), else spirv-val on the PATH. A cooperative-matrix
// kernel that the validator predates (Debian's SPIRV-Tools 2023.1 does not know
// SPV_KHR_cooperative_matrix) is not validated: that error starts with kSpirvUnchecked.
Status validateSpirvFile(const std::string& path);
inline constexpr const char* kSpirvUnchecked = "compile-only (not validated)";

// Parses and verifies a Transform library; the error carries the diagnostics.
Status validateTransformLibrary(const std::string& library);

// Parses a schedule and returns the `selected` value of every transform.tune.knob in it.
// Fails with the parser's diagnostic for text that does not parse.
Result<std::map<std::string, int64_t>> readScheduleKnobs(const std::string& schedule);

std::string llvmVersion();        // e.g. "22.1.8"
std::string llvmHostCpuName();    // e.g. "sapphirerapids"
std::string llvmHostFeatures();   // "+avx512f,+fma,..." (enabled features only)

}  // namespace sextant
