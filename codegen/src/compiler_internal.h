// Private to codegen/src/compiler_*.cpp (the MLIR-facing translation units): the helpers that
// more than one lowering route uses. Not installed, not included from anywhere else: it pulls in
// MLIR headers, and a TU with MLIR headers takes 20-40 s to build.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "sextant/codegen/compiler.h"
#include "sextant/codegen/mfma.h"

#ifndef SEXTANT_LLD
#define SEXTANT_LLD "ld.lld"
#endif

namespace sextant::detail {

// Registers passes and LLVM targets, once per process.
void initOnce();
// A context with every dialect, extension and LLVM IR translation, without a thread pool.
std::unique_ptr<mlir::MLIRContext> makeContext();

// Collects diagnostics as text instead of printing them.
struct DiagCollector {
  explicit DiagCollector(mlir::MLIRContext* ctx)
      : handler(ctx, [this](mlir::Diagnostic& d) {
          if (d.getSeverity() == mlir::DiagnosticSeverity::Remark) return mlir::success();
          llvm::raw_string_ostream os(text);
          os << d.getLocation() << ": " << d << "\n";
          for (auto& note : d.getNotes()) os << "  note: " << note << "\n";
          return mlir::success();
        }) {}
  std::string text;
  mlir::ScopedDiagnosticHandler handler;
};

// Ends a compilation: where it stopped, why, and how long it took since construction.
struct Finisher {
  CompileOutcome& out;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  CompileOutcome operator()(const std::string& stage, std::string msg) {
    out.stage = stage;
    out.message = std::move(msg);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }
};

// "+feat1,+feat2,...": the host's enabled CPU features.
std::string hostFeatureString();
// The host's target machine (CPU name and features), PIC, -O3; null with err set on failure.
std::unique_ptr<llvm::TargetMachine> hostTargetMachine(std::string& err);
// Contract on floating-point multiplies/adds and reassoc on vector reductions of a CPU kernel's
// LLVM IR (compiler_cpu_fp.cpp says why); the number of instructions changed.
int relaxCpuFloatMath(llvm::Module& m);
// Runs args[0] (looked up in PATH) with stdout and stderr into out; the exit status, -1 if it
// could not run or did not exit.
int runProgram(const std::vector<std::string>& args, std::string& out);

// Applies a Transform script (entry @__transform_main) to the module.
bool applyScript(mlir::ModuleOp mod, const std::string& script, const char* name, std::string& err,
                 DiagCollector& diags);
// Runs a pass pipeline ("builtin.module(...)" or its inner list) on the module.
bool runPipeline(mlir::ModuleOp mod, const std::string& pipeline, std::string& err, DiagCollector& diags);

// The Vulkan route (compiler_vulkan.cpp), after outlining. compileGpuGemm: the one kernel to
// SPIR-V, written to r.out_path and validated by spirv-val; returns the failed stage ("" on success,
// out.ok set).
std::string lowerKernelToSpirv(mlir::ModuleOp mod, const GpuCompileRequest& r, CompileOutcome& out, std::string& err,
                               DiagCollector& diags);

// compileModuleGpu for Vulkan: the outlined module's kernels to SPIR-V (kernels[i].object), each
// validated by spirv-val, the module written to r.out_path as text; returns the failed stage ("" on
// success, out.ok set).
std::string lowerModuleToSpirv(mlir::ModuleOp mod, const GpuModuleRequest& r, std::vector<GpuModuleKernel>& kernels,
                               CompileOutcome& out, std::string& err, DiagCollector& diags);

// The MFMA route (compiler_mfma.cpp): every wave-level vector.contract of the intrinsic's shape in a
// gpu.launch becomes amdgpu.mfma with per-lane operand loads; false with err if any contract or
// accumulator use is left that the rewrite does not handle.
// Also the pass "sextant-vector-to-mfma{shape=32x32x8|16x16x16}" (registerSextantPasses).
// lds_k_major: LDS operand buffers with K not innermost are stored transposed first.
// lds_pad: elements added to each row of the LDS operand buffers.
bool rewriteContractsToMfma(mlir::Operation* root, const MfmaIntrinsic& mi, std::string& err, bool lds_k_major = false,
                            int64_t lds_pad = 0);

// LDS double buffering for the MFMA route (compiler_lds_pipeline.cpp, knob pipeline = 2): the next
// K tile's global loads before the current tile's MFMAs, stored into the other half of doubled
// LDS buffers, one barrier per iteration; false with err on a loop it does not handle. Also the
// pass "sextant-lds-double-buffer" (registerLdsDoubleBufferPass, called by registerSextantPasses).
bool doubleBufferLds(mlir::Operation* root, std::string& err);
void registerLdsDoubleBufferPass();

// Vulkan cooperative matrices (compiler_vulkan_coop.cpp): in each gpu.launch, reads of a buffer
// the launch zero-filled (C), before any other write of it, become zero constants and the fill's
// stores go, so the accumulators start from zero in registers; how many reads. Also the pass
// "sextant-accumulators-from-zero" (registerAccumulatorsFromZeroPass).
int accumulatorsFromZeroInLaunches(mlir::Operation* root);
// After convert-vector-to-gpu: the zero fragments it hoisted out of a launch copied into it, so
// that outlining does not make them kernel arguments (the pass "sextant-sink-mma-constants").
int sinkMmaConstantsIntoLaunches(mlir::Operation* root);
void registerAccumulatorsFromZeroPass();  // both passes

// bf16 tensor cores on NVIDIA (compiler_bf16_mma.cpp): launches whose contractions read bf16
// retyped to f16 of the same bits and marked (before convert-vector-to-gpu), then their
// nvvm.mma.sync made bf16 (after convert-nvgpu-to-nvvm). Also the passes
// "sextant-bf16-mma-as-f16" and "sextant-nvvm-mma-bf16" (registerBf16MmaPasses).
bool bf16MmaAsF16(mlir::Operation* root, std::string& err);
bool nvvmMmaToBf16(mlir::Operation* root, std::string& err);
void registerBf16MmaPasses();

// Dynamic shared memory (compiler_dynamic_smem.cpp): every workgroup buffer of each gpu.launch
// becomes a view of one extern shared array, the launch's dynamic size set; the largest size.
// Also the pass "sextant-dynamic-shared-memory" (registerDynamicSmemPass).
Result<int64_t> workgroupBuffersToDynamicSharedMemory(mlir::Operation* root);
void registerDynamicSmemPass();

// The Hopper route (compiler_wgmma.cpp, knob mma = 2 on sm_90): a function holding one NN
// linalg.matmul f16/bf16 -> f32 (C = 0, then C += A*B; A, B, C its memref arguments) becomes the
// host side of one kernel (TMA loads into a ring of `stages` 128B-swizzled shared tiles with an
// mbarrier each, wgmma.mma_async, the accumulator stored to C): a gpu.module beside the function,
// the function's body tensor-map creation + gpu.launch_func. Also the pass "sextant-wgmma-gemm"
// (registerWgmmaPass).
struct WgmmaParams {
  int64_t m = 0, n = 0, k = 0;     // read from the function by the rewrite
  std::string elem = "f16";        // f16 or bf16
  int64_t block_m = 128, block_n = 128, wg_m = 128, stages = 3;
  bool warp_specialize = false;    // one more warpgroup issues the TMA loads (full/empty mbarriers)
};
Status checkWgmmaParams(const WgmmaParams& p);
std::string wgmmaModuleText(const WgmmaParams& p, const std::string& fname);
bool rewriteFunctionToWgmma(mlir::Operation* func, const WgmmaParams& opts, std::string& err);
void registerWgmmaPass();
// The passes that rewrite whole GEMM functions (sextant-wgmma-gemm, sextant-amx-gemm): `rewrite` on
// root itself if it is a function, else on each function under it holding a linalg.matmul; an
// error (none such, or rewrite's) is emitted on the op, named after `pass`, and false returned.
bool rewriteMatmulFunctions(mlir::Operation* root, const char* pass,
                            llvm::function_ref<bool(mlir::func::FuncOp, std::string&)> rewrite);

// The AMX route (compiler_cpu_amx.cpp, amx_kernel.h; issue #37): a function holding one bf16 x
// bf16 -> f32 or s8 x s8 -> s32 linalg.matmul (NN or NT; A, B, C its memref arguments) becomes an AMX kernel, marked
// with the unit attribute kAmxAttr (the lowering then runs convert-to-llvm for the tile types). Also
// the pass "sextant-amx-gemm" (registerAmxPass).
inline constexpr const char* kAmxAttr = "sextant.amx";
struct AmxParams;
bool rewriteFunctionToAmx(mlir::func::FuncOp f, const AmxParams& opts, std::string& err);
bool moduleHasAmx(mlir::ModuleOp m);
void registerAmxPass();

// Software prefetch for CPU kernels (compiler_cpu_prefetch.cpp): in the innermost loops with FMAs,
// a memref.prefetch `distance` iterations ahead of each moving vector read (after bufferization,
// before the transfers are lowered); how many were inserted. Also the pass
// "sextant-cpu-prefetch{distance=N}" (registerCpuPrefetchPass).
int64_t insertCpuPrefetches(mlir::Operation* root, int64_t distance);
void registerCpuPrefetchPass();
// The epilogue's reads (a fused bias or residual add: vector reads of memory right after a
// register tile's reduction loop) prefetched before that loop, for the next register tile of the
// loop around it (or for this one); how many prefetches were inserted (compiler_cpu_prefetch.cpp).
int64_t insertEpiloguePrefetches(mlir::Operation* root);
// The prefetch_b knob (cpu_schedule.cpp): in each innermost FMA loop under `root`, each contiguous
// vector read that a loop around it does not move (the register tiles' loop over rows, reusing the
// panel) but a loop further out does (the loop over tile_n blocks) also prefetches its address in
// that outer loop's next iteration (llvm.prefetch `locality`: 2 = L2); how many prefetches.
int64_t insertPanelPrefetches(mlir::Operation* root, int locality);
// compiler_cpu_elementwise.cpp: tiles and vectorizes the elementwise linalg.generic ops on
// tensors of a module (the untuned rest of an imported network); returns how many. threads > 1:
// the ops at a function's top level are first split among the threads (an scf.forall). Constant
// pads become fills of their border and a copy into the interior, vectorized; network = false
// (a kernel's payload): only those.
int vectorizeElementwise(mlir::ModuleOp m, int threads = 1, bool network = true);

// compiler_cpu_profile.cpp: a call of __sextant_prof_begin(i) / __sextant_prof_end(i) around each
// op that does work in the module's public functions (on tensors, before the schedules); the ops.
std::vector<ProfiledOp> instrumentOps(mlir::ModuleOp m);
// After the schedules: marks the ops whose clock now times nothing (fused into another op).
void markEmptyClocks(mlir::ModuleOp m, std::vector<ProfiledOp>& ops);

// compiler_cpu_conv_rows.cpp: the loops over a convolution's filter rows that the schedule marked
// (sextant.filter_rows) skip the rows that fall on the input's zero padding; how many loops were
// narrowed. After the schedule, before the pads are lowered. Also the pass
// "sextant-skip-padding-rows" (registerSkipPaddingRowsPass).
int skipPaddingRows(mlir::Operation* root);
// The attribute skipPaddingRows puts on the reads whose rows it kept inside the input's rows.
constexpr const char* kRowsInInputAttr = "sextant.rows_in_input";
void registerSkipPaddingRowsPass();

// compiler_cpu_pad_reads.cpp: vector reads of a zero tensor.pad (a convolution's padded input,
// through slices) read its source instead, pixel by pixel, clamped and selected against zeros, so
// that the pad (a padded copy of the input) is no longer made; how many pads were removed. After
// skipPaddingRows.
int readThroughZeroPads(mlir::Operation* root);
void registerReadThroughZeroPadsPass();

// compiler_cpu_pack_weights.cpp: slices of dense f32 constants that cut them into blocks along
// their last dimension (a network's filters and weights, by the schedule's tiles) read the
// constant packed at compile time with each block contiguous; how many slices were rewritten.
// Also the pass "sextant-pack-constant-blocks" (registerPackConstantBlocksPass).
int packConstantBlocks(mlir::Operation* root);
void registerPackConstantBlocksPass();
// A kernel whose argument 1 is a weight (its function has the unit attribute kWeightsAttr: the
// workload's `weights`): when every read of it is a block read of one size b, the reads take its
// memory as that weight packed with block b ([dn / b, d0, ..., d(n-1), b]: what
// packConstantBlocks makes of a constant), and the module gets a function kWeightsBlockSymbol
// returning b, which tells the caller to store it so (runtime/src/cpu_runner.cpp). Returns b, or 0
// (nothing changed: the weight is read as stored).
int64_t packWeightArgument(mlir::func::FuncOp f);

// The toolkit prefix for MLIR's ROCDL serializer (compiler_amd.cpp).
std::string rocmToolkitDir();

}  // namespace sextant::detail
