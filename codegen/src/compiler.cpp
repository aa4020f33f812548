// MLIR-facing code lives here and nowhere else (a TU with MLIR headers takes 20-40 s to build).
#include "sextant/codegen/compiler.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <mutex>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/Object/ELFObjectFile.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#ifndef SEXTANT_LLD
#define SEXTANT_LLD "ld.lld"
#endif

extern char** environ;

namespace sextant {
namespace {

// Bufferize in place (destination passing), lower everything to the LLVM dialect. Transfers are
// fully unrolled to 1-D: left as loops they go through stack allocas inside the K loop.
constexpr const char* kCpuLowering =
    "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
    "buffer-deallocation-pipeline,convert-bufferization-to-memref,scf-forall-to-for,"
    "convert-linalg-to-loops,convert-vector-to-scf{full-unroll=true},expand-strided-metadata,"
    "lower-affine,convert-scf-to-cf,convert-vector-to-llvm,finalize-memref-to-llvm,"
    "convert-func-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-index-to-llvm,"
    "convert-ub-to-llvm,reconcile-unrealized-casts";

void initOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::registerAllPasses();
    // The host for CPU code, NVPTX and AMDGPU for GPU code (Debian's LLVM has every target).
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
  });
}

std::unique_ptr<mlir::MLIRContext> makeContext() {
  initOnce();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  // No thread pool: compilations run in forked children and in parallel across processes.
  auto ctx = std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
  ctx->loadAllAvailableDialects();
  return ctx;
}

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

std::string hostFeatureString() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::string out;
  for (auto& f : features) {
    if (!f.second) continue;
    if (!out.empty()) out += ',';
    out += '+';
    out += f.first().str();
  }
  return out;
}

std::unique_ptr<llvm::TargetMachine> hostTargetMachine(std::string& err) {
  initOnce();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) return nullptr;
  llvm::TargetOptions opts;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), hostFeatureString(), opts, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

int runProgram(const std::vector<std::string>& args, std::string& out) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    out = std::string("cannot run ") + args[0] + ": " + strerror(rc);
    return -1;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

CompileOutcome compileCpuGemm(const std::string& payload, const std::string& schedule,
                              const std::string& so_path) {
  return compileModuleCpu(payload, schedule, so_path);
}

CompileOutcome compileModuleCpu(const std::string& payload, const std::string& schedule,
                                const std::string& so_path) {
  CompileOutcome out;
  Finisher finish{out};
  auto ctx = makeContext();
  DiagCollector diags(ctx.get());

  auto payloadMod = mlir::parseSourceString<mlir::ModuleOp>(payload, ctx.get(), "payload");
  if (!payloadMod) return finish("parse_payload", diags.text);
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
  // C interfaces for every public function with a body, so callers need no MLIR descriptors ABI
  // beyond the memref structs.
  payloadMod->walk([&](mlir::func::FuncOp f) {
    if (f.isPublic() && !f.isExternal()) f->setAttr("llvm.emit_c_interface", mlir::UnitAttr::get(ctx.get()));
  });

  mlir::PassManager pm(ctx.get());
  if (mlir::failed(mlir::parsePassPipeline(kCpuLowering, pm)))
    return finish("lower", "internal error: bad pass pipeline\n" + diags.text);
  if (mlir::failed(pm.run(*payloadMod))) return finish("lower", diags.text);

  llvm::LLVMContext llctx;
  auto llmod = mlir::translateModuleToLLVMIR(*payloadMod, llctx, "sextant_gemm");
  if (!llmod) return finish("translate", diags.text);

  std::string err;
  auto tm = hostTargetMachine(err);
  if (!tm) return finish("codegen", "no host target machine: " + err);
  llmod->setDataLayout(tm->createDataLayout());
  llmod->setTargetTriple(tm->getTargetTriple());
  auto opt = mlir::makeOptimizingTransformer(3, 0, tm.get());
  if (auto e = opt(llmod.get())) {
    llvm::raw_string_ostream os(err);
    os << e;
    return finish("codegen", "LLVM optimization failed: " + err);
  }

  const bool object_only = so_path.size() > 2 && so_path.compare(so_path.size() - 2, 2, ".o") == 0;
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
  int rc = runProgram({SEXTANT_LLD, "-shared", "--no-undefined-version", "-o", so_path, obj_path}, link_out);
  unlink(obj_path.c_str());
  if (rc != 0) return finish("link", "ld.lld failed: " + link_out);
  out.ok = true;
  return finish("", "");
}

namespace {

// Applies a Transform script (entry @__transform_main) to the module.
bool applyScript(mlir::ModuleOp mod, const std::string& script, const char* name, std::string& err,
                 DiagCollector& diags) {
  auto sched = mlir::parseSourceString<mlir::ModuleOp>(script, mod.getContext(), name);
  if (!sched) return err = diags.text, false;
  auto entry = mlir::transform::detail::findTransformEntryPoint(mod.getOperation(), *sched, "__transform_main");
  if (!entry) return err = diags.text + "no @__transform_main in " + name, false;
  mlir::transform::TransformOptions topts;
  if (mlir::failed(mlir::transform::applyTransformNamedSequence(mod.getOperation(), entry, *sched, topts)))
    return err = diags.text, false;
  return true;
}

bool runPipeline(mlir::ModuleOp mod, const std::string& pipeline, std::string& err, DiagCollector& diags) {
  mlir::PassManager pm(mod.getContext());
  std::string perr;
  llvm::raw_string_ostream es(perr);
  // The pass manager is anchored on the module: the pipeline's text is the list inside
  // builtin.module(...) (a wrapped text would nest into modules inside the module).
  std::string inner = pipeline;
  if (inner.rfind("builtin.module(", 0) == 0) inner = inner.substr(15, inner.size() - 16);
  if (mlir::failed(mlir::parsePassPipeline(inner, pm, es)))
    return err = "internal error: bad pass pipeline '" + pipeline + "': " + perr, false;
  if (mlir::failed(pm.run(mod))) return err = diags.text, false;
  return true;
}

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

}  // namespace

// MLIR's ROCDL serializer runs <toolkit>/llvm/bin/ld.lld. A private prefix whose ld.lld is the
// lld 22 this build found (lld 14 rejects code object v6); $SEXTANT_ROCM_TOOLKIT overrides it.
static std::string rocmToolkitDir() {
  if (const char* e = std::getenv("SEXTANT_ROCM_TOOLKIT")) return e;
  std::string dir = (std::filesystem::temp_directory_path() / ("sextant-rocm-" + std::to_string(getuid()))).string();
  std::filesystem::path link = std::filesystem::path(dir) / "llvm/bin/ld.lld";
  std::error_code ec;
  if (!std::filesystem::exists(link, ec)) {
    std::filesystem::create_directories(link.parent_path(), ec);
    std::filesystem::path tmp = link;
    tmp += "." + std::to_string(getpid());
    std::filesystem::create_symlink(SEXTANT_LLD, tmp, ec);
    std::filesystem::rename(tmp, link, ec);  // atomic: parallel compilers may race here
  }
  return dir;
}

Result<std::map<std::string, int64_t>> readAmdgpuMetadata(const std::string& bytes) {
  auto buf = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(bytes), "hsaco", false);
  auto obj = llvm::object::ELF64LEObjectFile::create(buf->getMemBufferRef());
  if (!obj) return Error{"not an ELF code object: " + llvm::toString(obj.takeError())};
  const auto& elf = obj->getELFFile();
  auto phdrs = elf.program_headers();
  if (!phdrs) return Error{"no program headers: " + llvm::toString(phdrs.takeError())};
  for (const auto& ph : *phdrs) {
    if (ph.p_type != llvm::ELF::PT_NOTE) continue;
    llvm::Error err = llvm::Error::success();
    for (auto note : elf.notes(ph, err)) {
      if (note.getName() != "AMDGPU" || note.getType() != llvm::ELF::NT_AMDGPU_METADATA) continue;
      auto desc = note.getDesc(ph.p_align);
      llvm::msgpack::Document doc;
      if (!doc.readFromBlob(llvm::StringRef(reinterpret_cast<const char*>(desc.data()), desc.size()), false))
        return Error{"malformed AMDGPU metadata note"};
      auto& root = doc.getRoot();
      if (root.getKind() != llvm::msgpack::Type::Map) return Error{"AMDGPU metadata is not a map"};
      auto& kernels = root.getMap()["amdhsa.kernels"];
      if (kernels.getKind() != llvm::msgpack::Type::Array || kernels.getArray().size() == 0)
        return Error{"AMDGPU metadata lists no kernel"};
      auto& k = kernels.getArray()[0];
      if (k.getKind() != llvm::msgpack::Type::Map) return Error{"AMDGPU kernel metadata is not a map"};
      std::map<std::string, int64_t> out;
      for (auto& [key, val] : k.getMap()) {
        if (key.getKind() != llvm::msgpack::Type::String) continue;
        std::string name = key.getString().str();
        if (!name.empty() && name[0] == '.') name = name.substr(1);
        if (val.getKind() == llvm::msgpack::Type::Int) out[name] = val.getInt();
        else if (val.getKind() == llvm::msgpack::Type::UInt) out[name] = int64_t(val.getUInt());
      }
      llvm::consumeError(std::move(err));
      return out;
    }
    if (err) return Error{"bad note segment: " + llvm::toString(std::move(err))};
  }
  return Error{"the code object has no AMDGPU metadata note"};
}

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
  if (r.mma && !runPipeline(*mod, "builtin.module(convert-vector-to-gpu{use-nvgpu=true},canonicalize,cse)", err, diags))
    return finish("transform", "vector to nvgpu: " + err);
  if (!r.pipeline_schedule.empty()) {
    if (!applyScript(*mod, r.pipeline_schedule, "pipeline_schedule", err, diags))
      return finish("transform", "pipelining: " + err);
    if (r.pipeline_depth > 1) {
      // Before canonicalization, which folds a one-iteration steady-state loop away.
      info.async_groups_per_iteration = fixAsyncWaitCounts(*mod, r.pipeline_depth);
      if (!applyScript(*mod, kCanonicalizeFuncs, "canonicalize", err, diags)) return finish("transform", err);
    }
  }
  if (r.swizzle && !runPipeline(*mod, "builtin.module(func.func(nvgpu-optimize-shared-memory))", err, diags))
    return finish("transform", "swizzle: " + err);
  workgroupAllocsToAllocas(*mod);
  if (!applyScript(*mod, kAllocaToGlobal, "alloca_to_global", err, diags)) return finish("transform", err);
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
  auto host = launch->getParentOfType<mlir::func::FuncOp>();
  for (mlir::Value v : launch.getKernelOperands()) {
    if (auto ba = llvm::dyn_cast<mlir::BlockArgument>(v); ba && ba.getOwner()->getParentOp() == host) {
      static const char* names[] = {"A", "B", "C"};
      if (ba.getArgNumber() > 2) return finish("lower", "unexpected kernel argument");
      info.args.push_back(names[ba.getArgNumber()]);
    } else if (auto c = constantIndex(v)) {
      info.args.push_back("i64:" + std::to_string(*c));
    } else {
      return finish("lower", "a kernel argument is neither an operand buffer nor a constant");
    }
  }
  mlir::Value dims[6] = {launch.getGridSizeX(),  launch.getGridSizeY(),  launch.getGridSizeZ(),
                         launch.getBlockSizeX(), launch.getBlockSizeY(), launch.getBlockSizeZ()};
  for (int i = 0; i < 6; ++i) {
    auto c = constantIndex(dims[i]);
    if (!c) return finish("lower", "launch dimensions are not constants");
    (i < 3 ? info.grid[i] : info.block[i - 3]) = *c;
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
  mod->walk([&](mlir::gpu::LaunchOp l) {
    GpuModuleKernel k;
    if (auto fn = l->getParentOfType<mlir::func::FuncOp>()) k.host_function = fn.getSymName().str();
    mlir::Value dims[6] = {l.getGridSizeX(), l.getGridSizeY(), l.getGridSizeZ(),
                           l.getBlockSizeX(), l.getBlockSizeY(), l.getBlockSizeZ()};
    for (int i = 0; i < 6; ++i) (i < 3 ? k.grid[i] : k.block[i - 3]) = constantIndex(dims[i]).value_or(0);
    kernels.push_back(k);
  });
  if (!runPipeline(*mod, std::string("builtin.module(") + kGpuOutlining + ")", err, diags))
    return finish("lower", err);
  size_t i = 0;
  mod->walk([&](mlir::gpu::LaunchFuncOp l) {
    if (i < kernels.size()) kernels[i++].name = l.getKernelModuleName().str() + "::" + l.getKernelName().str();
  });
  mod->walk([&](mlir::func::FuncOp f) {
    if (f.isPublic() && !f.isExternal()) f->setAttr("llvm.emit_c_interface", mlir::UnitAttr::get(ctx.get()));
  });
  diags.text.clear();
  if (!runPipeline(*mod, gpuLoweringPipeline(r.nvidia, r.chip, r.features, r.rocm_toolkit, false), err, diags))
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

static std::string typeName(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

Result<std::vector<FoundOp>> findGemmOps(const std::string& module, const std::string& filename) {
  auto ctx = makeContext();
  DiagCollector diags(ctx.get());
  auto mod = mlir::parseSourceString<mlir::ModuleOp>(module, ctx.get(), filename);
  if (!mod) return Error{filename + " does not parse: " + diags.text};
  std::vector<FoundOp> found;
  mod->walk([&](mlir::linalg::LinalgOp op) {
    if (!mlir::linalg::isaContractionOpInterface(op)) return;
    FoundOp f;
    f.op_name = op->getName().getStringRef().str();
    if (auto fn = op->getParentOfType<mlir::func::FuncOp>()) f.function = fn.getSymName().str();
    if (op.getNumDpsInits() == 1)
      if (auto def = op.getDpsInitOperand(0)->get().getDefiningOp()) f.init_is_fill = mlir::isa<mlir::linalg::FillOp>(def);
    if (auto fl = mlir::dyn_cast<mlir::FileLineColLoc>(op->getLoc())) {
      std::string file = fl.getFilename().str();
      file = file.substr(file.find_last_of('/') + 1);
      f.location = file + ":" + std::to_string(fl.getLine()) + ":" + std::to_string(fl.getColumn());
    } else {
      llvm::raw_string_ostream os(f.location);
      os << op->getLoc();
    }
    auto dims = mlir::linalg::inferContractionDims(op);
    if (mlir::failed(dims) || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) {
      f.reason = "not a two-operand contraction";
      found.push_back(f);
      return;
    }
    auto ranges = op.getStaticLoopRanges();
    bool dynamic = false;
    for (int64_t r : ranges) dynamic |= mlir::ShapedType::isDynamic(r);
    auto elem = [](mlir::Value v) { return mlir::getElementTypeOrSelf(v.getType()); };
    f.a_type = typeName(elem(op.getDpsInputOperand(0)->get()));
    f.b_type = typeName(elem(op.getDpsInputOperand(1)->get()));
    f.c_type = typeName(elem(op.getDpsInitOperand(0)->get()));
    auto maps = op.getIndexingMapsArray();
    auto is = [&](mlir::AffineMap map, std::initializer_list<unsigned> ds) {
      if (map.getNumResults() != ds.size()) return false;
      unsigned i = 0;
      for (unsigned d : ds)
        if (map.getResult(i++) != mlir::getAffineDimExpr(d, ctx.get())) return false;
      return true;
    };
    bool fl = mlir::isa<mlir::FloatType>(elem(op.getDpsInputOperand(0)->get())) &&
              mlir::isa<mlir::FloatType>(elem(op.getDpsInitOperand(0)->get()));
    if (dims->batch.size() == 1 && dims->m.size() == 1 && dims->n.size() == 1 && dims->k.size() == 1 && !dynamic) {
      f.batch = ranges[dims->batch[0]];
      f.m = ranges[dims->m[0]];
      f.n = ranges[dims->n[0]];
      f.k = ranges[dims->k[0]];
      if (dims->batch[0] != 0 || dims->m[0] != 1 || dims->n[0] != 2 || dims->k[0] != 3)
        f.reason = "batched GEMM with loops not in (batch, m, n, k) order";
      else if (!is(maps[0], {0, 1, 3}) || !is(maps[1], {0, 3, 2}) || !is(maps[2], {0, 1, 2}))
        f.reason = "batched GEMM with a layout other than NN";
      else if (!fl)
        f.reason = "integer contraction";
      else
        f.supported = true, f.layout = "NN";
      found.push_back(f);
      return;
    }
    if (!dims->batch.empty() || dims->m.size() != 1 || dims->n.size() != 1 || dims->k.size() != 1) {
      f.reason = "contraction with several M/N/K dimensions";
      found.push_back(f);
      return;
    }
    if (dynamic) {
      f.reason = "dynamic sizes";
      found.push_back(f);
      return;
    }
    f.m = ranges[dims->m[0]];
    f.n = ranges[dims->n[0]];
    f.k = ranges[dims->k[0]];
    if (dims->m[0] != 0 || dims->n[0] != 1 || dims->k[0] != 2) {
      f.reason = "loops not in (m, n, k) order";
      found.push_back(f);
      return;
    }
    bool a_n = is(maps[0], {0, 2}), a_t = is(maps[0], {2, 0}), b_n = is(maps[1], {2, 1}), b_t = is(maps[1], {1, 2});
    if (!is(maps[2], {0, 1}) || !(a_n || a_t) || !(b_n || b_t) || (a_t && b_t)) {
      f.reason = "operand layout not NN, NT or TN";
      found.push_back(f);
      return;
    }
    f.layout = a_t ? "TN" : (b_t ? "NT" : "NN");
    if (!fl) {
      f.reason = "integer contraction";
      found.push_back(f);
      return;
    }
    f.supported = true;
    found.push_back(f);
  });
  return found;
}

Status validateTransformLibrary(const std::string& library) {
  auto ctx = makeContext();
  DiagCollector diags(ctx.get());
  auto mod = mlir::parseSourceString<mlir::ModuleOp>(library, ctx.get(), "library");
  if (!mod) return Error{"the generated library does not parse: " + diags.text};
  if (mlir::failed(mlir::verify(*mod))) return Error{"the generated library does not verify: " + diags.text};
  bool has_entry = false;
  mod->walk([&](mlir::Operation* op) {
    if (auto sym = op->getAttrOfType<mlir::StringAttr>("sym_name"))
      if (sym.getValue() == "__transform_main") has_entry = true;
  });
  if (!has_entry) return Error{"the generated library has no @__transform_main"};
  return okStatus();
}

Result<std::map<std::string, int64_t>> readScheduleKnobs(const std::string& schedule) {
  auto ctx = makeContext();
  DiagCollector diags(ctx.get());
  auto mod = mlir::parseSourceString<mlir::ModuleOp>(schedule, ctx.get(), "schedule");
  if (!mod) return Error{"the schedule does not parse: " + diags.text};
  std::map<std::string, int64_t> knobs;
  std::string problem;
  mod->walk([&](mlir::Operation* op) {
    if (op->getName().getStringRef() != "transform.tune.knob") return;
    auto name = op->getAttrOfType<mlir::StringAttr>("name");
    auto sel = op->getAttrOfType<mlir::IntegerAttr>("selected");
    if (!name) return;
    if (!sel) {
      problem = "knob '" + name.getValue().str() + "' has no selected integer value";
      return;
    }
    knobs[name.getValue().str()] = sel.getInt();
  });
  if (!problem.empty()) return Error{problem};
  bool has_entry = false;
  mod->walk([&](mlir::Operation* op) {
    if (auto sym = op->getAttrOfType<mlir::StringAttr>("sym_name"))
      if (sym.getValue() == "__transform_main") has_entry = true;
  });
  if (!has_entry) return Error{"the schedule has no @__transform_main named sequence"};
  return knobs;
}

std::string llvmVersion() { return LLVM_VERSION_STRING; }
std::string llvmHostCpuName() { return llvm::sys::getHostCPUName().str(); }
std::string llvmHostFeatures() { return hostFeatureString(); }

}  // namespace sextant
