// The GPU routes: the shared lowering pipeline builder (NVVM -> PTX, ROCDL -> HSACO), one GEMM
// kernel (compileGpuGemm: NVIDIA tensor-core and FMA schedules, AMD) and a whole module
// (compileModuleGpu). The AMD code-object steps are in compiler_amd.cpp.
#include "compiler_internal.h"

#include <cstdlib>
#include <map>
#include <optional>

#include "llvm/Support/FileSystem.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"

namespace sextant {
namespace {

// memref.multibuffer wants memref.alloc, alloca_to_global wants memref.alloca: workgroup-space
// allocations become allocas (and later static shared memory / LDS globals).
void workgroupAllocsToAllocas(mlir::ModuleOp mod) {
  std::vector<mlir::memref::AllocOp> allocs;
  mod.walk([&](mlir::memref::AllocOp a) {
    auto space = llvm::dyn_cast_or_null<mlir::gpu::AddressSpaceAttr>(a.getType().getMemorySpace());
    if (space && space.getValue() == mlir::gpu::AddressSpace::Workgroup) allocs.push_back(a);
  });
  for (auto a : allocs) {
    mlir::OpBuilder b(a);
    auto alloca = mlir::memref::AllocaOp::create(b, a.getLoc(), a.getType(), a.getDynamicSizes(), a.getSymbolOperands(),
                                                 a.getAlignmentAttr());
    std::vector<mlir::Operation*> deallocs;
    for (mlir::Operation* u : a->getUsers())
      if (llvm::isa<mlir::memref::DeallocOp>(u)) deallocs.push_back(u);
    for (auto* d : deallocs) d->erase();
    a.replaceAllUsesWith(alloca.getResult());
    a.erase();
  }
}

// The pipeliner assumes one cp.async commit group per iteration and waits for depth-1 pending
// groups; the copies of A and B form one group each (a barrier separates them), so the exact
// steady-state count is groups_per_iteration * (depth - 1). Returns groups per iteration.
int64_t fixAsyncWaitCounts(mlir::ModuleOp mod, int64_t depth) {
  int64_t groups = 0;
  mod.walk([&](mlir::scf::ForOp loop) {
    int64_t g = 0;
    std::vector<mlir::Operation*> waits;
    for (mlir::Operation& op : loop.getBody()->getOperations()) {
      auto n = op.getName().getStringRef();
      if (n == "nvgpu.device_async_create_group") ++g;
      if (n == "nvgpu.device_async_wait") waits.push_back(&op);
    }
    if (g == 0 || waits.empty()) return;
    groups = std::max(groups, g);
    auto i32 = mlir::IntegerType::get(mod.getContext(), 32);
    for (auto* w : waits) w->setAttr("numGroups", mlir::IntegerAttr::get(i32, g * (depth - 1)));
  });
  return groups;
}

constexpr const char* kCanonicalizeFuncs = R"(module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f { transform.apply_patterns.canonicalization } : !transform.any_op
    transform.yield
  }
})";

constexpr const char* kAllocaToGlobal = R"(module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %allocas = transform.structured.match ops{["memref.alloca"]} in %f : (!transform.any_op) -> !transform.op<"memref.alloca">
    %gg, %glob = transform.memref.alloca_to_global %allocas : (!transform.op<"memref.alloca">) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
})";

std::optional<int64_t> constantIndex(mlir::Value v) {
  if (auto c = v.getDefiningOp<mlir::arith::ConstantIndexOp>()) return c.value();
  if (auto c = v.getDefiningOp<mlir::arith::ConstantOp>())
    if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(c.getValue())) return i.getInt();
  return std::nullopt;
}

// A kernel argument that is a TMA tensor map made on the host (the wgmma route): "tmap:" and the
// parameters tune-runner needs for cuTensorMapEncodeTiled, dims and box innermost first:
// "tmap:A:f16:dims=K,M:stride=BYTES:box=64,BM:swizzle=128".
std::optional<std::string> tensorMapArg(mlir::Value v, mlir::func::FuncOp host) {
  auto cast = v.getDefiningOp<mlir::UnrealizedConversionCastOp>();
  if (!cast || cast->getNumOperands() != 1) return std::nullopt;
  auto make = cast->getOperand(0).getDefiningOp<mlir::nvgpu::TmaCreateDescriptorOp>();
  if (!make) return std::nullopt;
  mlir::Value src = make.getTensor();
  if (auto c = src.getDefiningOp<mlir::memref::CastOp>()) src = c.getSource();
  auto ba = llvm::dyn_cast<mlir::BlockArgument>(src);
  auto mt = ba ? llvm::dyn_cast<mlir::MemRefType>(ba.getType()) : mlir::MemRefType();
  if (!ba || ba.getOwner()->getParentOp() != host || ba.getArgNumber() > 1 || !mt || mt.getRank() != 2 ||
      !mt.hasStaticShape())
    return std::nullopt;
  auto box0 = constantIndex(make.getBoxDimensions()[0]), box1 = constantIndex(make.getBoxDimensions()[1]);
  if (!box0 || !box1) return std::nullopt;
  auto desc = make.getTensorMap().getType();
  const int64_t bytes = mt.getElementTypeBitWidth() / 8;
  std::string elem = mt.getElementType().isF16() ? "f16" : mt.getElementType().isBF16() ? "bf16" : "?";
  int64_t swizzle = 0;
  switch (desc.getSwizzle()) {
    case mlir::nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE: swizzle = 0; break;
    case mlir::nvgpu::TensorMapSwizzleKind::SWIZZLE_32B: swizzle = 32; break;
    case mlir::nvgpu::TensorMapSwizzleKind::SWIZZLE_64B: swizzle = 64; break;
    case mlir::nvgpu::TensorMapSwizzleKind::SWIZZLE_128B: swizzle = 128; break;
  }
  return std::string("tmap:") + (ba.getArgNumber() == 0 ? "A" : "B") + ":" + elem +
         ":dims=" + std::to_string(mt.getDimSize(1)) + "," + std::to_string(mt.getDimSize(0)) +
         ":stride=" + std::to_string(mt.getDimSize(1) * bytes) + ":box=" + std::to_string(*box1) + "," +
         std::to_string(*box0) + ":swizzle=" + std::to_string(swizzle);
}

bool hasWgmma(mlir::ModuleOp mod) {
  bool found = false;
  mod.walk([&](mlir::nvgpu::WarpgroupMmaOp) { found = true; });
  return found;
}

}  // namespace

using namespace detail;

// Outlined kernels and their host code to NVVM -> PTX ("isa") or ROCDL -> HSACO (lld 22).
std::string gpuLoweringPipeline(bool nvidia, const std::string& chip, const std::string& features,
                                const std::string& rocm_toolkit, bool outline_first) {
  const std::string start = std::string("builtin.module(") + (outline_first ? kGpuOutlining + std::string(",") : "");
  if (nvidia)
    // gpu-lower-to-nvvm-pipeline (LLVM 22) spelt out, with one change: vector loads and stores
    // inside kernels are lowered first with their vector's alignment (use-vector-alignment). Every
    // vector access of these schedules is naturally aligned (tiles at multiples of the vector
    // length, buffers 256-byte aligned), and without it NVPTX splits a vector<4xf32> access that
    // LLVM thinks 4-byte aligned into four scalar ones.
    return start + "convert-nvgpu-to-nvvm,convert-vector-to-scf,convert-scf-to-cf,convert-nvvm-to-llvm,"
           "convert-func-to-llvm,expand-strided-metadata,nvvm-attach-target{O=2 chip=" + chip + " features=" +
           features + "},lower-affine,convert-arith-to-llvm,convert-index-to-llvm,canonicalize,cse,"
           "gpu.module(convert-vector-to-llvm{use-vector-alignment=true},convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true},"
           "canonicalize,cse,reconcile-unrealized-casts),gpu-to-llvm{use-bare-pointers-for-kernels=true},"
           "gpu-module-to-binary{format=isa},convert-math-to-llvm,canonicalize,cse,reconcile-unrealized-casts)";
  // ../shared/notes/recipes/rocm_pipe.txt, with vector->LLVM inside the GPU module first (the
  // hoisted 2-D C tile) and format=bin through lld 22.
  return start + "convert-vector-to-scf,convert-scf-to-cf,convert-func-to-llvm,expand-strided-metadata,"
         "rocdl-attach-target{chip=" + chip + " O=3},lower-affine,convert-arith-to-llvm,convert-index-to-llvm,"
         "canonicalize,cse,gpu.module(convert-vector-to-llvm,convert-gpu-to-rocdl{chipset=" + chip +
         " use-bare-ptr-memref-call-conv=true runtime=HIP},canonicalize,cse,reconcile-unrealized-casts),"
         "gpu-to-llvm{use-bare-pointers-for-kernels=true},gpu-module-to-binary{format=bin toolkit=" +
         (rocm_toolkit.empty() ? rocmToolkitDir() : rocm_toolkit) + "},reconcile-unrealized-casts)";
}

CompileOutcome compileGpuGemm(const GpuCompileRequest& r, GpuKernelInfo& info) {
  CompileOutcome out;
  Finisher finish{out};
  auto ctx = makeContext();
  DiagCollector diags(ctx.get());
  std::string err;
  auto mod = mlir::parseSourceString<mlir::ModuleOp>(r.payload, ctx.get(), "payload");
  if (!mod) return finish("parse_payload", diags.text);
  if (!applyScript(*mod, r.schedule, "schedule", err, diags)) return finish("transform", err);
  // wgmma (sm_90a): the schedule's sextant-wgmma-gemm wrote the whole kernel (compiler_wgmma.cpp).
  const bool wg = r.wgmma;
  // bf16 contractions are retyped to f16 first (a no-op for f16): compiler_bf16_mma.cpp.
  if (r.mma && r.nvidia && !wg &&
      !runPipeline(*mod, "builtin.module(sextant-bf16-mma-as-f16,convert-vector-to-gpu{use-nvgpu=true},canonicalize,cse)",
                   err, diags))
    return finish("transform", "vector to nvgpu: " + err);
  if (r.mma && r.vulkan) {
    // Cooperative matrices: the accumulators from zero in registers (compiler_vulkan_coop.cpp),
    // then the subgroup's contractions to gpu.subgroup_mma_* (no nvgpu).
    if (accumulatorsFromZeroInLaunches(mod->getOperation()) == 0)
      return finish("transform", "cooperative matrices: no accumulator read of the zero-filled C found");
    if (!runPipeline(*mod, "builtin.module(convert-vector-to-gpu,canonicalize,cse)", err, diags))
      return finish("transform", "vector to cooperative matrices: " + err);
    sinkMmaConstantsIntoLaunches(mod->getOperation());
  } else if (r.mma && !r.nvidia) {
    if (!rewriteContractsToMfma(mod->getOperation(), r.mfma, err, r.lds_k_major, r.lds_pad)) return finish("transform", err);
    if (!runPipeline(*mod, "builtin.module(canonicalize,cse)", err, diags)) return finish("transform", err);
  }
  if (!r.pipeline_schedule.empty() && !wg) {
    if (!applyScript(*mod, r.pipeline_schedule, "pipeline_schedule", err, diags))
      return finish("transform", "pipelining: " + err);
    if (r.pipeline_depth > 1 && !r.nvidia) {
      // AMD (MFMA): no cp.async; LDS double buffering with register prefetch, our own rewrite.
      if (!doubleBufferLds(mod->getOperation(), err)) return finish("transform", err);
      if (!runPipeline(*mod, "builtin.module(canonicalize,cse)", err, diags)) return finish("transform", err);
    } else if (r.pipeline_depth > 1) {
      // Before canonicalization, which folds a one-iteration steady-state loop away.
      info.async_groups_per_iteration = fixAsyncWaitCounts(*mod, r.pipeline_depth);
      if (!applyScript(*mod, kCanonicalizeFuncs, "canonicalize", err, diags)) return finish("transform", err);
    }
  }
  if (r.swizzle && !runPipeline(*mod, "builtin.module(func.func(nvgpu-optimize-shared-memory))", err, diags))
    return finish("transform", "swizzle: " + err);
  if (r.dynamic_smem) {
    auto bytes = workgroupBuffersToDynamicSharedMemory(mod->getOperation());
    if (!bytes.ok()) return finish("transform", bytes.error());
    info.dynamic_smem_bytes = *bytes;
  }
  // Vulkan: workgroup allocations stay memref.alloc, which the SPIR-V conversion makes workgroup variables.
  if (!r.vulkan) {
    workgroupAllocsToAllocas(*mod);
    if (!applyScript(*mod, kAllocaToGlobal, "alloca_to_global", err, diags)) return finish("transform", err);
  }
  bool bf16_mma = false;
  mod->walk([&](mlir::gpu::LaunchOp l) { bf16_mma |= l->hasAttr("sextant.bf16_mma"); });
  if (bf16_mma && !runPipeline(*mod, "builtin.module(convert-nvgpu-to-nvvm,sextant-nvvm-mma-bf16)", err, diags))
    return finish("transform", "bf16 mma.sync: " + err);
  if (r.keep_ir) {
    llvm::raw_string_ostream os(info.scheduled_ir);
    mod->print(os);
  }
  if (!runPipeline(*mod, std::string("builtin.module(") + kGpuOutlining + ",symbol-dce)", err, diags))
    return finish("lower", err);

  if (std::getenv("SEXTANT_DUMP_GPU_IR")) mod->print(llvm::errs());
  // The launch, read before lowering: kernel name, argument order, grid and block sizes.
  std::vector<mlir::gpu::LaunchFuncOp> launches;
  mod->walk([&](mlir::gpu::LaunchFuncOp l) { launches.push_back(l); });
  if (launches.size() != 1)
    return finish("lower", "expected exactly one kernel launch, found " + std::to_string(launches.size()));
  auto launch = launches.front();
  info.name = launch.getKernelName().str();
  info.subgroup_size = r.vulkan ? r.subgroup_size : 0;
  auto host = launch->getParentOfType<mlir::func::FuncOp>();
  for (mlir::Value v : launch.getKernelOperands()) {
    if (auto ba = llvm::dyn_cast<mlir::BlockArgument>(v); ba && ba.getOwner()->getParentOp() == host) {
      static const char* names[] = {"A", "B", "C"};
      if (ba.getArgNumber() > 2) return finish("lower", "unexpected kernel argument");
      info.args.push_back(names[ba.getArgNumber()]);
    } else if (auto c = constantIndex(v)) {
      info.args.push_back("i64:" + std::to_string(*c));
    } else if (auto t = tensorMapArg(v, host)) {
      info.args.push_back(*t);
    } else {
      std::string what;
      llvm::raw_string_ostream os(what);
      if (mlir::Operation* def = v.getDefiningOp()) os << def->getName() << " at " << def->getLoc();
      else os << "a block argument of type " << v.getType();
      return finish("lower", "a kernel argument is neither an operand buffer nor a constant: " + what);
    }
  }
  mlir::Value dims[6] = {launch.getGridSizeX(),  launch.getGridSizeY(),  launch.getGridSizeZ(),
                         launch.getBlockSizeX(), launch.getBlockSizeY(), launch.getBlockSizeZ()};
  for (int i = 0; i < 6; ++i) {
    auto c = constantIndex(dims[i]);
    if (!c) return finish("lower", "launch dimensions are not constants");
    (i < 3 ? info.grid[i] : info.block[i - 3]) = *c;
  }
  if (mlir::Value d = launch.getDynamicSharedMemorySize(); d && info.dynamic_smem_bytes == 0) {
    if (auto c = constantIndex(d)) info.dynamic_smem_bytes = *c;
  }

  if (r.vulkan) {
    const std::string stage = lowerKernelToSpirv(*mod, r, out, err, diags);  // before err is read
    return finish(stage, err);
  }
  const std::string lowering = gpuLoweringPipeline(r.nvidia, r.chip, r.features, r.rocm_toolkit, false);
  // convert-vector-to-llvm reports (harmless) failed attempts on workgroup memrefs: only the
  // pipeline's result decides.
  diags.text.clear();
  if (!runPipeline(*mod, lowering, err, diags)) return finish("codegen", err);
  std::string object;
  mod->walk([&](mlir::gpu::BinaryOp b) {
    for (mlir::Attribute a : b.getObjects())
      if (auto o = llvm::dyn_cast<mlir::gpu::ObjectAttr>(a)) object = o.getObject().str();
  });
  if (object.empty()) return finish("codegen", "no GPU binary was produced");
  if (!r.nvidia) {
    auto md = readAmdgpuMetadata(object);
    if (!md) return finish("codegen", "code object: " + md.error());
    info.stats = *md;
  }
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(r.out_path, ec, llvm::sys::fs::OF_None);
    if (ec) return finish("codegen", "cannot write " + r.out_path + ": " + ec.message());
    os << object;
    out.object_bytes = int64_t(object.size());
  }
  out.ok = true;
  return finish("", "");
}

CompileOutcome compileModuleGpu(const std::string& module, const std::string& library, const GpuModuleRequest& r,
                                std::vector<GpuModuleKernel>& kernels) {
  CompileOutcome out;
  Finisher finish{out};
  auto ctx = makeContext();
  DiagCollector diags(ctx.get());
  std::string err;
  auto mod = mlir::parseSourceString<mlir::ModuleOp>(module, ctx.get(), r.input_name);
  if (!mod) return finish("parse_payload", diags.text);
  if (!library.empty() && !applyScript(*mod, library, "library", err, diags)) return finish("transform", err);
  // Whatever the library did not turn into a kernel would run on the host, on device pointers.
  std::string left;
  mod->walk([&](mlir::Operation* op) {
    if (op->getParentOfType<mlir::gpu::LaunchOp>() || !left.empty()) return;
    bool tensor = false;
    for (mlir::Type t : op->getResultTypes()) tensor |= mlir::isa<mlir::TensorType>(t);
    if (tensor || llvm::isa<mlir::linalg::LinalgDialect>(op->getDialect())) {
      std::string loc;
      llvm::raw_string_ostream os(loc);
      os << op->getLoc();
      left = op->getName().getStringRef().str() + " at " + loc;
    }
  });
  if (!left.empty())
    return finish("transform", "not turned into a GPU kernel (it would run on the host on device memory): " + left);
  if (!runPipeline(*mod, std::string("builtin.module(") + kGpuOutlining + ")", err, diags))
    return finish("lower", err);
  // Kernels as launched (outlined here, or written as kernels by a library: the wgmma route).
  mod->walk([&](mlir::gpu::LaunchFuncOp l) {
    GpuModuleKernel k;
    if (auto fn = l->getParentOfType<mlir::func::FuncOp>()) k.host_function = fn.getSymName().str();
    k.name = l.getKernelModuleName().str() + "::" + l.getKernelName().str();
    mlir::Value dims[6] = {l.getGridSizeX(), l.getGridSizeY(), l.getGridSizeZ(),
                           l.getBlockSizeX(), l.getBlockSizeY(), l.getBlockSizeZ()};
    for (int i = 0; i < 6; ++i) (i < 3 ? k.grid[i] : k.block[i - 3]) = constantIndex(dims[i]).value_or(0);
    kernels.push_back(k);
  });
  if (r.vulkan) {
    const std::string stage = lowerModuleToSpirv(*mod, r, kernels, out, err, diags);  // before err is read
    return finish(stage, err);
  }
  mod->walk([&](mlir::func::FuncOp f) {
    if (f.isPublic() && !f.isExternal()) f->setAttr("llvm.emit_c_interface", mlir::UnitAttr::get(ctx.get()));
  });
  diags.text.clear();
  // wgmma needs the architecture-specific sm_90a (a superset of sm_90).
  const std::string chip = r.nvidia && r.chip == "sm_90" && hasWgmma(*mod) ? "sm_90a" : r.chip;
  if (!runPipeline(*mod, gpuLoweringPipeline(r.nvidia, chip, r.features, r.rocm_toolkit, false), err, diags))
    return finish("codegen", err);
  std::map<std::string, std::string> objects;  // gpu.binary name -> object
  mod->walk([&](mlir::gpu::BinaryOp b) {
    for (mlir::Attribute a : b.getObjects())
      if (auto o = llvm::dyn_cast<mlir::gpu::ObjectAttr>(a)) objects[b.getName().str()] = o.getObject().str();
  });
  for (auto& k : kernels) {
    std::string bin = k.name.substr(0, k.name.find("::"));
    if (!objects.count(bin)) return finish("codegen", "no GPU binary for kernel " + k.name);
    k.object = objects[bin];
    if (!r.nvidia) {
      auto md = readAmdgpuMetadata(k.object);
      if (!md) return finish("codegen", "code object of " + k.name + ": " + md.error());
      k.stats = *md;
    }
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(r.out_path, ec, llvm::sys::fs::OF_None);
  if (ec) return finish("codegen", "cannot write " + r.out_path + ": " + ec.message());
  mod->print(os);
  os.flush();
  out.object_bytes = int64_t(os.tell());
  out.ok = true;
  return finish("", "");
}

}  // namespace sextant
