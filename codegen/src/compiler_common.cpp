// Shared by the lowering routes (compiler_cpu.cpp, compiler_gpu.cpp, compiler_amd.cpp): MLIR
// context, diagnostics, host target machine, running a program, applying a Transform script and a
// pass pipeline; and the MLIR-facing queries that lower nothing (op discovery, schedule parsing,
// library validation, LLVM version and host).
#include "compiler_internal.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

extern char** environ;

namespace sextant {
namespace detail {

void initOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::registerAllPasses();
    registerSextantPasses();
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

}  // namespace detail

using namespace detail;

static std::string typeName(mlir::Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

// A linalg.conv_2d_nhwc_hwcf or linalg.depthwise_conv_2d_nhwc_hwc as a benchdnn descriptor in
// f.conv (issue #31). The padding is read from a tensor.pad of zeros that produces the input
// (symmetric, on H and W only); otherwise the input is taken as it is (padding 0).
static void describeConv(mlir::linalg::LinalgOp op, FoundOp& f) {
  const bool dw = mlir::isa<mlir::linalg::DepthwiseConv2DNhwcHwcOp>(op.getOperation());
  mlir::DenseIntElementsAttr strides, dilations;
  if (auto c = mlir::dyn_cast<mlir::linalg::Conv2DNhwcHwcfOp>(op.getOperation()))
    strides = c.getStrides(), dilations = c.getDilations();
  else if (auto d = mlir::dyn_cast<mlir::linalg::DepthwiseConv2DNhwcHwcOp>(op.getOperation()))
    strides = d.getStrides(), dilations = d.getDilations();
  auto shapeOf = [](mlir::Value v) { return mlir::cast<mlir::ShapedType>(v.getType()); };
  mlir::Value input = op.getDpsInputOperand(0)->get();
  auto in = shapeOf(input), fil = shapeOf(op.getDpsInputOperand(1)->get()), out = shapeOf(op.getDpsInitOperand(0)->get());
  auto elem = [](mlir::Value v) { return mlir::getElementTypeOrSelf(v.getType()); };
  f.a_type = typeName(elem(input));
  f.b_type = typeName(elem(op.getDpsInputOperand(1)->get()));
  f.c_type = typeName(elem(op.getDpsInitOperand(0)->get()));
  if (!in.hasStaticShape() || !fil.hasStaticShape() || !out.hasStaticShape()) {
    f.reason = "convolution with dynamic sizes";
    return;
  }
  if (f.a_type != "f32" || f.b_type != "f32" || f.c_type != "f32") {
    f.reason = "convolution that is not f32";
    return;
  }
  int64_t ph = 0, pw = 0, ih = in.getDimSize(1), iw = in.getDimSize(2);
  if (auto pad = input.getDefiningOp<mlir::tensor::PadOp>()) {
    auto lo = pad.getStaticLow(), hi = pad.getStaticHigh();
    mlir::Value pv = pad.getConstantPaddingValue();
    if (lo.size() == 4 && hi.size() == 4 && lo[0] == 0 && hi[0] == 0 && lo[3] == 0 && hi[3] == 0 && lo[1] == hi[1] &&
        lo[2] == hi[2] && lo[1] >= 0 && lo[2] >= 0 && pv && mlir::matchPattern(pv, mlir::m_AnyZeroFloat()) &&
        shapeOf(pad.getSource()).hasStaticShape()) {
      ph = lo[1], pw = lo[2];
      ih = shapeOf(pad.getSource()).getDimSize(1), iw = shapeOf(pad.getSource()).getDimSize(2);
    }
  }
  auto v = [](mlir::DenseIntElementsAttr a, int i) { return a ? a.getValues<int64_t>()[i] : int64_t(1); };
  const int64_t c = in.getDimSize(3), oc = dw ? c : fil.getDimSize(3);
  auto n = [](int64_t x) { return std::to_string(x); };
  f.conv = "mb" + n(in.getDimSize(0)) + (dw ? "g" + n(c) : std::string()) + "ic" + n(c) + "ih" + n(ih) + "iw" + n(iw) +
           "oc" + n(oc) + "oh" + n(out.getDimSize(1)) + "ow" + n(out.getDimSize(2)) + "kh" + n(fil.getDimSize(0)) + "kw" +
           n(fil.getDimSize(1)) + "sh" + n(v(strides, 0)) + "sw" + n(v(strides, 1)) + "ph" + n(ph) + "pw" + n(pw) + "dh" +
           n(v(dilations, 0) - 1) + "dw" + n(v(dilations, 1) - 1);
  f.supported = true;
}

Result<std::vector<FoundOp>> findGemmOps(const std::string& module, const std::string& filename) {
  auto ctx = makeContext();
  DiagCollector diags(ctx.get());
  auto mod = mlir::parseSourceString<mlir::ModuleOp>(module, ctx.get(), filename);
  if (!mod) return Error{filename + " does not parse: " + diags.text};
  std::vector<FoundOp> found;
  mod->walk([&](mlir::linalg::LinalgOp op) {
    const bool conv = mlir::isa<mlir::linalg::Conv2DNhwcHwcfOp, mlir::linalg::DepthwiseConv2DNhwcHwcOp>(op.getOperation());
    if (!conv && !mlir::linalg::isaContractionOpInterface(op)) return;
    FoundOp f;
    f.op_name = op->getName().getStringRef().str();
    if (op.getNumDpsInputs() == 2) {
      auto cst = op.getDpsInputOperand(1)->get().getDefiningOp<mlir::arith::ConstantOp>();
      auto attr = cst ? mlir::dyn_cast<mlir::DenseElementsAttr>(cst.getValue()) : mlir::DenseElementsAttr();
      f.weights = attr && !attr.isSplat();
    }
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
    if (conv) {
      describeConv(op, f);
      found.push_back(f);
      return;
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
      else {
        // NN, NT (B stored b x n x k: attention's Q.K^T) or TN (A stored b x k x m).
        const bool a_n = is(maps[0], {0, 1, 3}), a_t = is(maps[0], {0, 3, 1});
        const bool b_n = is(maps[1], {0, 3, 2}), b_t = is(maps[1], {0, 2, 3});
        if (!is(maps[2], {0, 1, 2}) || !(a_n || a_t) || !(b_n || b_t) || (a_t && b_t))
          f.reason = "batched GEMM with an operand layout not NN, NT or TN";
        else if (!fl)
          f.reason = "integer contraction";
        else
          f.supported = true, f.layout = a_t ? "TN" : (b_t ? "NT" : "NN");
      }
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
