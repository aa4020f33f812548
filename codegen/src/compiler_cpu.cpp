// The CPU route: a payload and its schedule to a shared object (or an object file) for the host.
#include "compiler_internal.h"

#include <unistd.h>

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"

namespace sextant {
namespace {

// Bufferize in place (destination passing), lower everything to the LLVM dialect. Transfers are
// fully unrolled to 1-D: left as loops they go through stack allocas inside the K loop.
// threads > 1 (docs/notes-cpu-space-research.md): the forall becomes an scf.parallel after
// bufferization, then omp.parallel + omp.wsloop; memref lowering runs before scf-to-cf (the loop
// bodies sit in single-block memref.alloca_scope regions), and the omp ops become __kmpc_* calls
// in the LLVM IR translation.
// Two parts: bufferization, then (after stridedCopiesToLoops) the lowering to the LLVM dialect.
std::string cpuBufferization() {
  return "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
         // Buffers allocated in a loop (pack_b's panel, once per K chunk) are allocated once
         // before it instead; not out of the forall (one buffer per block and thread).
         "func.func(buffer-loop-hoisting),buffer-deallocation-pipeline,convert-bufferization-to-memref,cse";
}

// generic_alloc: memref.alloc / dealloc call _mlir_memref_to_llvm_alloc / free (a network's own
// heap, codegen/model_runtime/model_alloc.c) instead of malloc / free.
// amx: the module holds AMX kernels (compiler_cpu_amx.cpp), serial: their !amx.tile values cross
// branches after scf-to-cf, which only convert-to-llvm's type conversion (the AMX dialect's
// interface included) legalizes; an explicit list fails on them ("failed to legalize operation
// 'cf.br'", ../shared/notes/amx.md).
std::string cpuLowering(int threads, int64_t prefetch = 0, bool generic_alloc = false, bool amx = false) {
  const std::string finalize =
      generic_alloc ? "finalize-memref-to-llvm{use-generic-functions=true}," : "finalize-memref-to-llvm,";
  const bool omp = threads > 1;
  // With threads, the kernel's scf.parallel loops become omp.parallel + omp.wsloop first.
  if (amx)
    return std::string("scf-forall-to-for,convert-linalg-to-loops,func.func(lower-vector-multi-reduction),"
                       "convert-vector-to-scf{full-unroll=true},expand-strided-metadata,lower-affine,") +
           // (With OpenMP the memref lowering runs before scf-to-cf, as below: alloca_scope bodies.)
           (omp ? "convert-scf-to-openmp{num-threads=" + std::to_string(threads) +
                      "},convert-vector-to-llvm{enable-amx=true}," + finalize + "convert-scf-to-cf,"
                : "convert-scf-to-cf,convert-vector-to-llvm{enable-amx=true}," + finalize) +
           "convert-math-to-llvm,convert-math-to-libm,convert-to-llvm," + (omp ? "convert-openmp-to-llvm," : "") +
           "reconcile-unrealized-casts";
  return std::string() +
         // The schedule's prefetch distance (compiler_cpu_prefetch.cpp), on memrefs, before the
         // transfers are lowered.
         (prefetch > 0 ? "sextant-cpu-prefetch{distance=" + std::to_string(prefetch) + "}," : std::string()) +
         (omp ? "scf-forall-to-parallel," : "scf-forall-to-for,") +
         "convert-linalg-to-loops,func.func(lower-vector-multi-reduction),convert-vector-to-scf{full-unroll=true},expand-strided-metadata,lower-affine," +
         (omp ? "convert-scf-to-openmp{num-threads=" + std::to_string(threads) +
                    "},convert-vector-to-llvm," + finalize + "convert-scf-to-cf,"
              : "convert-scf-to-cf,convert-vector-to-llvm," + finalize) +
         // Math in imported models (exp, erf, tanh, rsqrt, ...): LLVM intrinsics where there are
         // some, libm calls (erff, tanhf) for the rest.
         "convert-math-to-llvm,convert-math-to-libm,"
         "convert-func-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-index-to-llvm,convert-ub-to-llvm," +
         (omp ? "convert-openmp-to-llvm," : "") + "reconcile-unrealized-casts";
}

// Copies between strided views (bufferization makes them for the accumulators of peeled register
// tiles, e.g. tile_m 16 with reg_m 12: a 12 x 16 and a 4 x 16 tile of C) would become calls to
// MLIR's runtime function `memrefCopy`, which our shared objects do not link ("undefined symbol:
// memrefCopy" when loaded, issue #35): they become linalg.copy, lowered to loops below.
// Contiguous copies stay (they become memcpy).
void stridedCopiesToLoops(mlir::ModuleOp m) {
  llvm::SmallVector<mlir::memref::CopyOp> strided, self;
  m.walk([&](mlir::memref::CopyOp c) {
    // A copy of a view onto itself (an in-place tile written back: CSE made the two views one).
    if (c.getSource() == c.getTarget()) {
      self.push_back(c);
      return;
    }
    auto src = llvm::dyn_cast<mlir::MemRefType>(c.getSource().getType());
    auto dst = llvm::dyn_cast<mlir::MemRefType>(c.getTarget().getType());
    if (!src || !dst) return;
    if (mlir::memref::isStaticShapeAndContiguousRowMajor(src) && mlir::memref::isStaticShapeAndContiguousRowMajor(dst))
      return;
    strided.push_back(c);
  });
  for (mlir::memref::CopyOp c : self) c.erase();
  for (mlir::memref::CopyOp c : strided) {
    mlir::OpBuilder b(c);
    mlir::linalg::CopyOp::create(b, c.getLoc(), mlir::ValueRange{c.getSource()}, mlir::ValueRange{c.getTarget()});
    c.erase();
  }
}

}  // namespace

using namespace detail;

CompileOutcome compileCpuGemm(const std::string& payload, const std::string& schedule,
                              const std::string& so_path, int threads) {
  return compileModuleCpu(payload, schedule, so_path, threads);
}

CompileOutcome compileModuleCpu(const std::string& payload, const std::string& schedule,
                                const std::string& so_path, int threads, bool network, bool profile) {
  CompileOutcome out;
  Finisher finish{out};
  if (threads < 1) return finish("lower", "threads must be at least 1");
  auto ctx = makeContext();
  DiagCollector diags(ctx.get());

  auto payloadMod = mlir::parseSourceString<mlir::ModuleOp>(payload, ctx.get(), "payload");
  if (!payloadMod) return finish("parse_payload", diags.text);
  if (network) {
    mlir::PassManager fuse(ctx.get());
    if (mlir::failed(mlir::parsePassPipeline("func.func(linalg-fuse-elementwise-ops),cse", fuse)) ||
        mlir::failed(fuse.run(*payloadMod)))
      return finish("lower", "fusing elementwise ops: " + diags.text);
  }
  if (profile) {
    if (std::string(SEXTANT_MODEL_PROFILE_OBJ).empty()) return finish("link", "this build has no profiling runtime");
    out.profiled_ops = instrumentOps(*payloadMod);
  }
  if (!schedule.empty()) {
    auto schedMod = mlir::parseSourceString<mlir::ModuleOp>(schedule, ctx.get(), "schedule");
    if (!schedMod) return finish("parse_schedule", diags.text);
    auto entry = mlir::transform::detail::findTransformEntryPoint(payloadMod->getOperation(), *schedMod,
                                                                  "__transform_main");
    if (!entry) return finish("parse_schedule", diags.text + "no @__transform_main in the schedule");
    mlir::transform::TransformOptions topts;
    if (mlir::failed(mlir::transform::applyTransformNamedSequence(payloadMod->getOperation(), entry,
                                                                    *schedMod, topts)))
      return finish("transform", diags.text);
  }
  // Threads asked for by the schedule (the CPU space's "threads" knob annotates its forall).
  payloadMod->walk([&](mlir::Operation* op) {
    if (auto n = op->getAttrOfType<mlir::IntegerAttr>("sextant.num_threads"))
      threads = std::max(threads, int(std::min<int64_t>(n.getInt(), 1024)));
  });
  // Convolutions skip the filter rows on their input's zero padding (before the pads are lowered);
  // constant weights read in blocks are packed at compile time, each block contiguous.
  skipPaddingRows(*payloadMod);
  readThroughZeroPads(*payloadMod);
  packConstantBlocks(*payloadMod);
  {
    llvm::SmallVector<mlir::func::FuncOp> weighted;
    payloadMod->walk([&](mlir::func::FuncOp f) {
      if (f->hasAttr(kWeightsAttr)) weighted.push_back(f);
    });
    for (mlir::func::FuncOp f : weighted) packWeightArgument(f);
  }
  // (SEXTANT_DUMP_CPU_IR: the module after the schedule and these rewrites, on stderr.)
  if (std::getenv("SEXTANT_DUMP_CPU_IR")) payloadMod->print(llvm::errs());
  // The untuned rest runs on as many threads as the tuned ops (without libomp, below, neither does).
  // A kernel's own padding (a convolution's tensor.pad) vectorized in every compile; the rest of a
  // network only in networks.
  vectorizeElementwise(*payloadMod, threads, network);
  if (profile) markEmptyClocks(*payloadMod, out.profiled_ops);
  // A prefetch distance asked for by the schedule (the CPU space's "prefetch" knob annotates the
  // GEMM's function).
  int64_t prefetch = 0;
  payloadMod->walk([&](mlir::Operation* op) {
    if (auto n = op->getAttrOfType<mlir::IntegerAttr>("sextant.prefetch_distance"))
      prefetch = std::max<int64_t>(prefetch, std::min<int64_t>(n.getInt(), 64));
  });
  if (threads > 1 && std::string(SEXTANT_LIBOMP).empty())
    return finish("link", "multi-threaded CPU code needs LLVM's OpenMP runtime (libomp), which was not found "
                          "when Sextant was configured (Debian: libomp-dev)");
  // C interfaces for every public function with a body, so callers need no MLIR descriptors ABI
  // beyond the memref structs.
  payloadMod->walk([&](mlir::func::FuncOp f) {
    if (f.isPublic() && !f.isExternal()) f->setAttr("llvm.emit_c_interface", mlir::UnitAttr::get(ctx.get()));
  });

  mlir::PassManager bufferize(ctx.get());
  if (mlir::failed(mlir::parsePassPipeline(cpuBufferization(), bufferize)))
    return finish("lower", "internal error: bad pass pipeline\n" + diags.text);
  if (mlir::failed(bufferize.run(*payloadMod))) return finish("lower", diags.text);
  stridedCopiesToLoops(*payloadMod);
  if (network) insertEpiloguePrefetches(*payloadMod);
  // prefetch_b schedules (cpu_schedule.cpp): the next B panel prefetched in their functions' K loops.
  payloadMod->walk([&](mlir::func::FuncOp f) {
    if (f->hasAttr(kPrefetchBAttr)) insertPanelPrefetches(f, /*locality=*/2);
  });
  mlir::PassManager pm(ctx.get());
  // A network compiled to a shared object gets its own heap (an object file keeps malloc / free: its
  // user links it).
  const bool object_only = so_path.size() > 2 && so_path.compare(so_path.size() - 2, 2, ".o") == 0;
  const bool own_heap = network && !object_only && std::string(SEXTANT_MODEL_ALLOC_OBJ).size() > 0;
  const bool amx = moduleHasAmx(*payloadMod);
  if (mlir::failed(mlir::parsePassPipeline(cpuLowering(threads, prefetch, own_heap, amx), pm)))
    return finish("lower", "internal error: bad pass pipeline\n" + diags.text);
  if (mlir::failed(pm.run(*payloadMod))) return finish("lower", diags.text);

  llvm::LLVMContext llctx;
  auto llmod = mlir::translateModuleToLLVMIR(*payloadMod, llctx, "sextant_gemm");
  if (!llmod) return finish("translate", diags.text);

  std::string err;
  auto tm = hostTargetMachine(err);
  if (!tm) return finish("codegen", "no host target machine: " + err);
  relaxCpuFloatMath(*llmod);
  llmod->setDataLayout(tm->createDataLayout());
  llmod->setTargetTriple(tm->getTargetTriple());
  auto opt = mlir::makeOptimizingTransformer(3, 0, tm.get());
  if (auto e = opt(llmod.get())) {
    llvm::raw_string_ostream os(err);
    os << e;
    return finish("codegen", "LLVM optimization failed: " + err);
  }
  // (SEXTANT_DUMP_LLVM_IR: the optimized LLVM IR that becomes machine code, on stderr.)
  if (std::getenv("SEXTANT_DUMP_LLVM_IR")) llmod->print(llvm::errs(), nullptr);

  std::string obj_path = object_only ? so_path : so_path + ".o";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(obj_path, ec, llvm::sys::fs::OF_None);
    if (ec) return finish("codegen", "cannot write " + obj_path + ": " + ec.message());
    llvm::legacy::PassManager cg;
    if (tm->addPassesToEmitFile(cg, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      return finish("codegen", "the target cannot emit object files");
    cg.run(*llmod);
    os.flush();
    out.object_bytes = int64_t(os.tell());
  }
  if (object_only) {
    out.ok = true;
    return finish("", "");
  }
  std::string link_out;
  std::vector<std::string> link = {SEXTANT_LLD, "-shared", "--no-undefined-version", "-o", so_path, obj_path};
  if (threads > 1) link.push_back(SEXTANT_LIBOMP);  // DT_NEEDED: the runner dlopens with RTLD_LOCAL
  if (own_heap) link.push_back(SEXTANT_MODEL_ALLOC_OBJ);
  if (profile) link.push_back(SEXTANT_MODEL_PROFILE_OBJ);
  // libm where the code calls it (a network's expf, erff): a C program that dlopens the object
  // may not have it loaded ("undefined symbol: expf").
  if (std::string(SEXTANT_LIBM).size() > 0) link.insert(link.end(), {"--as-needed", SEXTANT_LIBM});
  int rc = runProgram(link, link_out);
  unlink(obj_path.c_str());
  if (rc != 0) return finish("link", "ld.lld failed: " + link_out);
  out.ok = true;
  return finish("", "");
}

}  // namespace sextant
