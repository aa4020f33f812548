// The Vulkan route (issue #33): outlined GPU kernels -> SPIR-V compute shaders, in-process with
// MLIR 22 (../shared/notes/vulkan.md holds the probe this follows), and the gate every kernel passes
// before it may run: spirv-val (Debian spirv-tools) with the Vulkan 1.1 environment.
//
// MLIR 22 specifics handled here or by the schedule (gpu_schedule.cpp):
// - workgroup memory must be the integer memory space 3 (the schedule allocates it so);
// - convert-gpu-to-spirv does not derive the entry-point ABI (the workgroup size): set here from
//   the launch's block size;
// - vector loads of scalar buffers become invalid pointer bitcasts (llvm/llvm-project#213192): the
//   schedule lowers memory accesses to scalars;
// - gpu-module-to-binary has no Vulkan flavour that works: spirv::serialize directly.
// Kernel argument i is the storage buffer at descriptor set 0, binding i (the runner's ABI).
#include "compiler_internal.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "llvm/Support/FileSystem.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/Target/SPIRV/Serialization.h"

namespace sextant::detail {

namespace {

// SPIR-V has 1-D vectors only. The thread's C tile (thread_m x thread_n) is a 2-D vector carried
// through the K loop; split every 2-D vector that an scf op carries into its rows (a 1:N type
// conversion of the scf structure), so that canonicalization can fold the row extracts and
// inserts around it and no 2-D vector is left.
bool splitLoopCarriedRows(mlir::Operation* root, std::string& err) {
  mlir::MLIRContext* ctx = root->getContext();
  mlir::TypeConverter tc;
  tc.addConversion([](mlir::Type t) { return t; });
  tc.addConversion([](mlir::VectorType v, llvm::SmallVectorImpl<mlir::Type>& out) -> std::optional<llvm::LogicalResult> {
    if (v.getRank() != 2 || v.isScalable()) return std::nullopt;
    for (int64_t i = 0; i < v.getDimSize(0); ++i) out.push_back(mlir::VectorType::get({v.getDimSize(1)}, v.getElementType()));
    return mlir::success();
  });
  // rows -> the 2-D vector
  tc.addSourceMaterialization([](mlir::OpBuilder& b, mlir::VectorType t, mlir::ValueRange rows, mlir::Location loc) -> mlir::Value {
    if (t.getRank() != 2 || int64_t(rows.size()) != t.getDimSize(0)) return mlir::Value();
    mlir::Value acc = mlir::ub::PoisonOp::create(b, loc, t);
    for (size_t i = 0; i < rows.size(); ++i) acc = mlir::vector::InsertOp::create(b, loc, rows[i], acc, int64_t(i));
    return acc;
  });
  // the 2-D vector -> rows
  tc.addTargetMaterialization([](mlir::OpBuilder& b, mlir::TypeRange types, mlir::ValueRange in, mlir::Location loc,
                                 mlir::Type) -> llvm::SmallVector<mlir::Value> {
    llvm::SmallVector<mlir::Value> rows;
    if (in.size() != 1) return rows;
    for (size_t i = 0; i < types.size(); ++i) rows.push_back(mlir::vector::ExtractOp::create(b, loc, in[0], int64_t(i)));
    return rows;
  });
  mlir::ConversionTarget target(*ctx);
  mlir::RewritePatternSet patterns(ctx);
  mlir::scf::populateSCFStructuralTypeConversionsAndLegality(tc, patterns, target);
  target.markUnknownOpDynamicallyLegal([](mlir::Operation*) { return true; });
  if (mlir::failed(mlir::applyPartialConversion(root, target, std::move(patterns)))) {
    err = "splitting the loop-carried 2-D vectors into rows failed";
    return false;
  }
  return true;
}

// vec4 memory accesses (the space's `vec4` knob: 1-D vector transfers). MLIR 22 lowers a vector
// load of a scalar buffer to a pointer bitcast that Vulkan does not allow (llvm/llvm-project#213192),
// so, as IREE's SPIRVVectorizeLoadStore does: a buffer (kernel argument or workgroup allocation) of
// f32 or f16 whose every access is a vector load or store of 4k elements at an index known to be a
// multiple of 4 in its innermost dimension, or a scalar load, is retyped to vector<4 x T> elements
// (a scalar load becomes a vec4 load and a dynamic extract); the vector accesses of any other
// buffer become scalar ones. Buffers without vector accesses are left alone.

constexpr int64_t kAnyMultiple = int64_t(1) << 30;

// A number known to divide an index value (arith on constants, loop induction variables; GPU ids
// and anything else: 1). kAnyMultiple for 0.
int64_t knownDivisor(mlir::Value v, int depth = 0) {
  if (depth > 24) return 1;
  if (auto c = mlir::getConstantIntValue(v)) return *c == 0 ? kAnyMultiple : std::gcd(std::abs(*c), kAnyMultiple);
  auto both = [&](mlir::Value a, mlir::Value b) { return std::gcd(knownDivisor(a, depth + 1), knownDivisor(b, depth + 1)); };
  if (auto a = v.getDefiningOp<mlir::arith::AddIOp>()) return both(a.getLhs(), a.getRhs());
  if (auto a = v.getDefiningOp<mlir::arith::SubIOp>()) return both(a.getLhs(), a.getRhs());
  if (auto m = v.getDefiningOp<mlir::arith::MulIOp>())
    return std::min(kAnyMultiple, knownDivisor(m.getLhs(), depth + 1) * knownDivisor(m.getRhs(), depth + 1));
  if (auto c = v.getDefiningOp<mlir::arith::IndexCastOp>()) return knownDivisor(c.getIn(), depth + 1);
  if (auto ba = llvm::dyn_cast<mlir::BlockArgument>(v))
    if (auto f = llvm::dyn_cast_or_null<mlir::scf::ForOp>(ba.getOwner()->getParentOp()))
      if (ba == f.getInductionVar()) return both(f.getLowerBound(), f.getStep());
  return 1;
}

// `idx` with its innermost index divided by `divisor` (1: kept), then `plus` added.
llvm::SmallVector<mlir::Value> innermostShifted(mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange idx,
                                                int64_t divisor, int64_t plus) {
  llvm::SmallVector<mlir::Value> out(idx.begin(), idx.end());
  if (divisor != 1)
    out.back() = mlir::arith::DivUIOp::create(b, loc, out.back(), mlir::arith::ConstantIndexOp::create(b, loc, divisor));
  if (plus) out.back() = mlir::arith::AddIOp::create(b, loc, out.back(), mlir::arith::ConstantIndexOp::create(b, loc, plus));
  return out;
}

int64_t vectorWidth(mlir::Type t) {
  auto v = llvm::dyn_cast<mlir::VectorType>(t);
  return v && v.getRank() == 1 ? v.getDimSize(0) : -1;
}

// Whether buffer `mem` (static f32 or f16 memref, innermost size a multiple of 4) can hold vec4 elements.
bool vec4Buffer(mlir::Value mem) {
  auto t = llvm::dyn_cast<mlir::MemRefType>(mem.getType());
  if (!t || !t.hasStaticShape() || t.getRank() < 1 || !(t.getElementType().isF32() || t.getElementType().isF16()) ||
      !t.getLayout().isIdentity() || t.getShape().back() % 4 != 0)
    return false;
  bool any_vector = false;
  for (mlir::Operation* u : mem.getUsers()) {
    if (auto l = llvm::dyn_cast<mlir::vector::LoadOp>(u)) {
      const int64_t w = vectorWidth(l.getType());
      if (w <= 0 || w % 4 || knownDivisor(l.getIndices().back()) % 4) return false;
      any_vector = true;
    } else if (auto st = llvm::dyn_cast<mlir::vector::StoreOp>(u)) {
      if (st.getBase() != mem || vectorWidth(st.getValueToStore().getType()) != 4 ||
          knownDivisor(st.getIndices().back()) % 4)
        return false;
      any_vector = true;
    } else if (!llvm::isa<mlir::memref::LoadOp>(u)) {
      return false;
    }
  }
  return any_vector;
}

void retypeToVec4(mlir::Value mem, mlir::OpBuilder& b) {
  auto t = llvm::cast<mlir::MemRefType>(mem.getType());
  llvm::SmallVector<int64_t> shape(t.getShape());
  shape.back() /= 4;
  auto v4 = mlir::VectorType::get({4}, t.getElementType());
  mem.setType(mlir::MemRefType::get(shape, v4, mlir::MemRefLayoutAttrInterface(), t.getMemorySpace()));
  llvm::SmallVector<mlir::Operation*> users(mem.getUsers().begin(), mem.getUsers().end());
  for (mlir::Operation* u : users) {
    b.setInsertionPoint(u);
    const mlir::Location loc = u->getLoc();
    auto quarter = [&](mlir::ValueRange idx, int64_t plus) { return innermostShifted(b, loc, idx, 4, plus); };
    if (auto l = llvm::dyn_cast<mlir::vector::LoadOp>(u)) {
      const int64_t w = vectorWidth(l.getType());
      llvm::SmallVector<mlir::Value> elems;
      mlir::Value result;
      for (int64_t p = 0; p < w / 4; ++p) {
        mlir::Value piece = mlir::memref::LoadOp::create(b, loc, mem, quarter(l.getIndices(), p));
        if (w == 4) result = piece;
        for (int64_t e = 0; e < 4 && w > 4; ++e) elems.push_back(mlir::vector::ExtractOp::create(b, loc, piece, e));
      }
      if (w > 4) result = mlir::vector::FromElementsOp::create(b, loc, l.getType(), elems);
      l.replaceAllUsesWith(result);
      l.erase();
    } else if (auto st = llvm::dyn_cast<mlir::vector::StoreOp>(u)) {
      mlir::memref::StoreOp::create(b, loc, st.getValueToStore(), mem, quarter(st.getIndices(), 0));
      st.erase();
    } else if (auto l = llvm::dyn_cast<mlir::memref::LoadOp>(u)) {
      mlir::Value rem = mlir::arith::RemUIOp::create(b, loc, l.getIndices().back(),
                                                    mlir::arith::ConstantIndexOp::create(b, loc, 4));
      mlir::Value piece = mlir::memref::LoadOp::create(b, loc, mem, quarter(l.getIndices(), 0));
      mlir::Value x = mlir::vector::ExtractOp::create(b, loc, piece, llvm::ArrayRef<mlir::OpFoldResult>{rem});
      l.replaceAllUsesWith(x);
      l.erase();
    }
  }
}

// The vector accesses of a buffer that keeps scalar elements, as scalar loads and stores; whether
// there were any.
bool scalarizeAccesses(mlir::Value mem, mlir::OpBuilder& b) {
  bool changed = false;
  llvm::SmallVector<mlir::Operation*> users(mem.getUsers().begin(), mem.getUsers().end());
  for (mlir::Operation* u : users) {
    b.setInsertionPoint(u);
    const mlir::Location loc = u->getLoc();
    auto at = [&](mlir::ValueRange idx, int64_t plus) { return innermostShifted(b, loc, idx, 1, plus); };
    if (auto l = llvm::dyn_cast<mlir::vector::LoadOp>(u)) {
      const int64_t w = vectorWidth(l.getType());
      if (w <= 0) continue;
      llvm::SmallVector<mlir::Value> elems;
      for (int64_t e = 0; e < w; ++e) elems.push_back(mlir::memref::LoadOp::create(b, loc, mem, at(l.getIndices(), e)));
      l.replaceAllUsesWith(mlir::vector::FromElementsOp::create(b, loc, l.getType(), elems).getResult());
      l.erase();
      changed = true;
    } else if (auto st = llvm::dyn_cast<mlir::vector::StoreOp>(u); st && st.getBase() == mem) {
      const int64_t w = vectorWidth(st.getValueToStore().getType());
      if (w <= 0) continue;
      for (int64_t e = 0; e < w; ++e)
        mlir::memref::StoreOp::create(b, loc, mlir::vector::ExtractOp::create(b, loc, st.getValueToStore(), e), mem,
                                      at(st.getIndices(), e));
      st.erase();
      changed = true;
    }
  }
  return changed;
}

// Per GPU module: kernel arguments and workgroup allocations; a retyped argument is cast on the host
// side of its launches (builtin.unrealized_conversion_cast: the same buffer, viewed as vec4 elements).
// Returns whether it rewrote anything.
bool vectorizeMemoryAccesses(mlir::ModuleOp mod, mlir::gpu::GPUModuleOp gm) {
  mlir::OpBuilder b(gm.getContext());
  bool changed = false;
  gm.walk([&](mlir::gpu::GPUFuncOp f) {
    if (!f.isKernel()) return;
    llvm::SmallVector<mlir::Value> roots(f.getArguments().begin(), f.getArguments().end());
    f.walk([&](mlir::memref::AllocOp a) { roots.push_back(a.getResult()); });
    bool retyped_arg = false;
    for (mlir::Value r : roots) {
      if (!llvm::isa<mlir::MemRefType>(r.getType())) continue;
      if (vec4Buffer(r)) {
        retypeToVec4(r, b);
        retyped_arg |= llvm::isa<mlir::BlockArgument>(r);
        changed = true;
      } else {
        changed |= scalarizeAccesses(r, b);
      }
    }
    if (!retyped_arg) return;
    llvm::SmallVector<mlir::Type> inputs;
    for (mlir::Value a : f.getArguments()) inputs.push_back(a.getType());
    f.setFunctionType(mlir::FunctionType::get(f.getContext(), inputs, {}));
    mod.walk([&](mlir::gpu::LaunchFuncOp l) {
      if (l.getKernelModuleName() != gm.getName() || l.getKernelName() != f.getName()) return;
      b.setInsertionPoint(l);
      for (unsigned i = 0; i < l.getNumKernelOperands(); ++i) {
        mlir::Value v = l.getKernelOperand(i);
        if (v.getType() == inputs[i]) continue;
        auto cast = mlir::UnrealizedConversionCastOp::create(b, l.getLoc(), inputs[i], v);
        l->setOperand(l.getNumOperands() - l.getNumKernelOperands() + i, cast.getResult(0));
      }
    });
  });
  return changed;
}

// A shader module with cooperative matrices must use the Vulkan memory model (spirv-val 2025.5:
// "If the Shader and CooperativeMatrixKHR capabilities are declared, the VulkanMemoryModel capability
// must also be declared"). spirv-update-vce keeps only what the ops need, and no op needs
// VulkanMemoryModel: it is put back here, with OpMemoryModel Vulkan (its extension is core in 1.5).
void requireVulkanMemoryModel(mlir::spirv::ModuleOp m) {
  auto vce = m.getVceTripleAttr();
  if (!vce) return;
  llvm::SmallVector<mlir::spirv::Capability> caps(vce.getCapabilities().begin(), vce.getCapabilities().end());
  if (!llvm::is_contained(caps, mlir::spirv::Capability::CooperativeMatrixKHR)) return;
  if (!llvm::is_contained(caps, mlir::spirv::Capability::VulkanMemoryModel)) caps.push_back(mlir::spirv::Capability::VulkanMemoryModel);
  llvm::SmallVector<mlir::spirv::Extension> exts(vce.getExtensions().begin(), vce.getExtensions().end());
  m.setVceTripleAttr(mlir::spirv::VerCapExtAttr::get(vce.getVersion(), caps, exts, m.getContext()));
  m.setMemoryModelAttr(mlir::spirv::MemoryModelAttr::get(m.getContext(), mlir::spirv::MemoryModel::Vulkan));
}

// Every GPU module (outlined kernels, each with a constant workgroup size) converted to a SPIR-V
// compute shader for `target_env` (a #spirv.target_env) and serialized: binaries[gpu module name].
bool lowerKernelsToSpirv(mlir::ModuleOp mod, const std::string& target_env, std::map<std::string, std::string>& binaries,
                         std::string& err, DiagCollector& diags) {
  mlir::MLIRContext* ctx = mod.getContext();
  auto env = llvm::dyn_cast_or_null<mlir::spirv::TargetEnvAttr>(mlir::parseAttribute(target_env, ctx));
  if (!env) {
    err = "not a #spirv.target_env: " + target_env + "\n" + diags.text;
    return false;
  }
  std::vector<mlir::gpu::GPUModuleOp> gms;
  mod.walk([&](mlir::gpu::GPUModuleOp gm) { gms.push_back(gm); });
  if (gms.empty()) {
    err = "no GPU kernel to convert";
    return false;
  }
  for (auto gm : gms) {
    gm->setAttr(mlir::spirv::getTargetEnvAttrName(), env);
    bool bad = false;
    gm.walk([&](mlir::gpu::GPUFuncOp f) {
      if (!f.isKernel()) return;
      auto block = f.getKnownBlockSize();
      if (!block || block->size() != 3) {
        bad = true;
        return;
      }
      f->setAttr(mlir::spirv::getEntryPointABIAttrName(),
                 mlir::spirv::getEntryPointABIAttr(ctx, {(*block)[0], (*block)[1], (*block)[2]}));
    });
    if (bad) {
      err = "a kernel of " + gm.getName().str() + " has no constant workgroup size";
      return false;
    }
    if (!splitLoopCarriedRows(gm, err)) return false;
    // What is left of n-D and wide vectors (f16 operands widened as a whole, for one) unrolled to
    // SPIR-V's native sizes (at most 4 lanes) by MLIR's own SPIR-V vector unrolling.
    if (mlir::failed(mlir::spirv::unrollVectorsInFuncBodies(gm))) {
      err = "unrolling the kernel's vectors to SPIR-V sizes failed";
      return false;
    }
  }
  // Inside the kernels: row extracts folded, affine index arithmetic, subviews folded into loads
  // and stores; the buffers' vector accesses made valid (vec4 elements or scalars); then the
  // conversion (each spirv.module lands beside its gpu.module, named __spv__NAME), ABI lowering and
  // the version, capabilities and extensions the module really needs.
  if (!runPipeline(mod, "builtin.module(gpu.module(canonicalize,fold-memref-alias-ops,lower-affine,cse))", err, diags))
    return false;
  bool rewritten = false;
  for (auto gm : gms) rewritten |= vectorizeMemoryAccesses(mod, gm);
  // The rewrite's extracts of freshly built vectors folded (vec4 kernels only).
  if (rewritten && !runPipeline(mod, "builtin.module(gpu.module(canonicalize,cse))", err, diags)) return false;
  if (!runPipeline(mod, "builtin.module(convert-gpu-to-spirv,spirv.module(spirv-lower-abi-attrs,spirv-update-vce))", err,
                   diags))
    return false;
  std::vector<mlir::spirv::ModuleOp> spv;
  mod.walk([&](mlir::spirv::ModuleOp m) { spv.push_back(m); });
  for (auto m : spv) requireVulkanMemoryModel(m);
  for (auto m : spv) {
    llvm::SmallVector<uint32_t, 0> words;
    if (mlir::failed(mlir::spirv::serialize(m, words))) {
      err = "SPIR-V serialization failed: " + diags.text;
      return false;
    }
    std::string name = m.getName() ? m.getName()->str() : "";
    if (name.rfind("__spv__", 0) == 0) name = name.substr(7);
    binaries[name].assign(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(uint32_t));
  }
  if (binaries.size() != gms.size()) {
    err = "expected one spirv.module per GPU module, found " + std::to_string(binaries.size()) + " for " +
          std::to_string(gms.size());
    return false;
  }
  return true;
}

// Writes a SPIR-V binary to `path` and validates it there: "" when it passed, else the failed stage.
std::string writeValidated(const std::string& path, const std::string& binary, std::string& err) {
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << binary;
    if (!f) {
      err = "cannot write " + path;
      return "codegen";
    }
  }
  if (Status v = validateSpirvFile(path); !v) {
    err = v.error();
    return "validate";
  }
  return "";
}

}  // namespace

std::string lowerKernelToSpirv(mlir::ModuleOp mod, const GpuCompileRequest& r, CompileOutcome& out, std::string& err,
                               DiagCollector& diags) {
  std::map<std::string, std::string> binaries;
  diags.text.clear();
  if (!lowerKernelsToSpirv(mod, r.spirv_target, binaries, err, diags)) return "codegen";
  if (binaries.size() != 1) {
    err = "expected one SPIR-V module";
    return "codegen";
  }
  const std::string& spirv = binaries.begin()->second;
  out.object_bytes = int64_t(spirv.size());
  if (std::string stage = writeValidated(r.out_path, spirv, err); !stage.empty()) return stage;
  out.ok = true;
  err.clear();
  return "";
}

std::string lowerModuleToSpirv(mlir::ModuleOp mod, const GpuModuleRequest& r, std::vector<GpuModuleKernel>& kernels,
                               CompileOutcome& out, std::string& err, DiagCollector& diags) {
  std::map<std::string, std::string> binaries;
  diags.text.clear();
  if (!lowerKernelsToSpirv(mod, r.spirv_target, binaries, err, diags)) return "codegen";
  for (auto& k : kernels) {
    const std::string bin = k.name.substr(0, k.name.find("::"));
    if (!binaries.count(bin)) {
      err = "no SPIR-V for kernel " + k.name;
      return "codegen";
    }
    k.object = binaries[bin];
    const std::string check = r.out_path + "." + bin + ".check.spv";
    std::string stage = writeValidated(check, k.object, err);
    std::filesystem::remove(check);
    if (!stage.empty()) {
      err = k.name + ": " + err;
      return stage;
    }
  }
  // The module as text: host functions with their gpu.launch_func, the kernels as spirv.modules.
  std::error_code ec;
  llvm::raw_fd_ostream os(r.out_path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    err = "cannot write " + r.out_path + ": " + ec.message();
    return "codegen";
  }
  mod.print(os);
  os.flush();
  out.object_bytes = int64_t(os.tell());
  out.ok = true;
  err.clear();
  return "";
}

}  // namespace sextant::detail

namespace sextant {

Status validateSpirvFile(const std::string& path) {
  // The module's SPIR-V version (header word 1) and whether it declares CooperativeMatrixKHR
  // (OpCapability 6022).
  uint32_t version = 0;
  bool coop = false;
  {
    std::ifstream f(path, std::ios::binary);
    std::vector<uint32_t> w;
    uint32_t x;
    while (f.read(reinterpret_cast<char*>(&x), 4)) w.push_back(x);
    if (w.size() >= 5 && w[0] == 0x07230203u) {
      version = w[1];
      for (size_t i = 5; i < w.size();) {
        const uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
        if (count == 0) break;
        if (op == 17 && count == 2 && i + 1 < w.size() && w[i + 1] == 6022) coop = true;
        if (op != 17 && op != 11 && op != 10 && op != 14) break;  // capabilities, extensions, imports, memory model
        i += count;
      }
    }
  }
  const char* env_val = std::getenv("SEXTANT_SPIRV_VAL");
  const std::string val = env_val && *env_val ? env_val : "spirv-val";
  const std::string env = version >= 0x00010600u ? "vulkan1.3" : version >= 0x00010500u ? "vulkan1.2" : "vulkan1.1";
  std::string out;
  int rc = detail::runProgram({val, "--target-env", env, path}, out);
  if (rc == 0) return okStatus();
  if (rc < 0 || rc == 127)  // not started, or exec failed in the spawned child (127, as a shell says)
    return Error{val + " not found (Debian package spirv-tools" + std::string(env_val ? "; SEXTANT_SPIRV_VAL names it" : "") +
                 "): every Vulkan kernel is validated before it may run"};
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  // A validator that predates the extension reads the capability as an unknown number.
  if (coop && out.find("Invalid capability operand: 6022") != std::string::npos)
    return Error{std::string(kSpirvUnchecked) + ": " + val + " cannot check cooperative-matrix kernels (" +
                 out.substr(0, 200) + "); set SEXTANT_SPIRV_VAL to a spirv-val of SPIRV-Tools 2023.4 or newer "
                 "(experiments/vulkan_coop_validate.sh installs one) to validate and run them"};
  return Error{"spirv-val rejected the kernel: " + out.substr(0, 2000)};
}

}  // namespace sextant
