// bf16 tensor cores on NVIDIA (mma.sync m16n8k16 .bf16, sm_80+) with MLIR 22, which cannot build
// them itself: convert-vector-to-gpu has no bf16 case in getMmaSyncRegisterType and
// convert-nvgpu-to-nvvm none in getNvvmMmaType (both fixed upstream after the 22 branch; see
// ../shared/notes/gpu-matrix-units.md). The way around, in two passes of our own:
//
// 1. sextant-bf16-mma-as-f16 (before convert-vector-to-gpu): in every gpu.launch whose
//    contractions read bf16, every bf16 value becomes an f16 value of the same bits: the operand
//    buffers the kernel captures are reinterpreted at its top (builtin.unrealized_conversion_cast
//    of the memref: both lower to the same pointer, and the casts reconcile), LDS buffers, loads, stores and the contraction
//    retyped, constants bitcast. Only data movement may touch these values (memref, vector,
//    gpu, scf ops and constants): any arithmetic on them would compute with the wrong type, and
//    the pass refuses it. The launch is marked sextant.bf16_mma. The f16 route then builds
//    exactly the kernel it builds for f16 (ldmatrix, cp.async, swizzle): per the PTX ISA the
//    m16n8k16 fragments of .f16 and .bf16 have the same layout, two 16-bit elements per 32-bit
//    register.
// 2. sextant-nvvm-mma-bf16 (after convert-nvgpu-to-nvvm, before outlining): in the marked
//    launches, each nvvm.mma.sync gets bf16 multiplicand types and its A and B registers as i32
//    (a bitcast of the vector<2xf16> the f16 route made); PTX: mma.sync.aligned.m16n8k16.row.col
//    .f32.bf16.bf16.f32.
#include "compiler_internal.h"

#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"

namespace sextant::detail {
namespace {

using namespace mlir;

constexpr const char* kMark = "sextant.bf16_mma";

Type toF16(Type t) {
  MLIRContext* ctx = t.getContext();
  if (t.isBF16()) return Float16Type::get(ctx);
  if (auto v = llvm::dyn_cast<VectorType>(t); v && v.getElementType().isBF16())
    return v.clone(Float16Type::get(ctx));
  if (auto m = llvm::dyn_cast<MemRefType>(t); m && m.getElementType().isBF16())
    return MemRefType::get(m.getShape(), Float16Type::get(ctx), m.getLayout(), m.getMemorySpace());
  return t;
}
bool hasBf16(Type t) { return toF16(t) != t; }

std::string where(Operation* op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName() << " at " << op->getLoc();
  return s;
}

// A bf16 constant's value as an f16 attribute of the same bits.
Attribute bitsAsF16(Attribute a) {
  MLIRContext* ctx = a.getContext();
  if (auto f = llvm::dyn_cast<FloatAttr>(a); f && f.getType().isBF16())
    return FloatAttr::get(Float16Type::get(ctx), APFloat(APFloat::IEEEhalf(), f.getValue().bitcastToAPInt()));
  if (auto d = llvm::dyn_cast<DenseElementsAttr>(a); d && d.getElementType().isBF16())
    return d.bitcast(Float16Type::get(ctx));
  return nullptr;
}

bool retypeLaunch(gpu::LaunchOp launch, std::string& err) {
  // Only data movement may see the bf16 values.
  Operation* bad = nullptr;
  launch.walk([&](Operation* op) {
    if (bad || op == launch.getOperation()) return;
    bool touches = llvm::any_of(op->getResultTypes(), hasBf16) || llvm::any_of(op->getOperandTypes(), hasBf16);
    if (!touches) return;
    StringRef d = op->getDialect() ? op->getDialect()->getNamespace() : "";
    if (d == "memref" || d == "vector" || d == "gpu" || d == "scf" || d == "nvgpu" || d == "ub" ||
        llvm::isa<arith::ConstantOp, UnrealizedConversionCastOp>(op))
      return;
    bad = op;
  });
  if (bad) {
    err = "bf16 tensor cores: the kernel computes with bf16 values (" + where(bad) +
          "); only loads, stores and the contraction may touch them";
    return false;
  }
  // Values captured from above: the operand buffers and constants.
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(launch.getBody(), captured);
  // The new values at the top of the kernel: its arguments stay the function's buffers.
  OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
  for (Value v : captured) {
    if (!hasBf16(v.getType())) continue;
    Value nv;
    if (auto c = v.getDefiningOp<arith::ConstantOp>()) {
      Attribute a = bitsAsF16(c.getValue());
      if (!a) {
        err = "bf16 tensor cores: a constant the kernel uses cannot be reinterpreted (" + where(c) + ")";
        return false;
      }
      nv = arith::ConstantOp::create(b, c.getLoc(), llvm::cast<TypedAttr>(a));
    } else if (Operation* def = v.getDefiningOp();
               def && def->getName().getStringRef() == "ub.poison" && def->getNumResults() == 1) {
      // The padding of in-bounds transfers: poison of the new type.
      Operation* p = b.clone(*def);
      p->getResult(0).setType(toF16(v.getType()));
      nv = p->getResult(0);
    } else if (llvm::isa<MemRefType>(v.getType())) {
      nv = UnrealizedConversionCastOp::create(b, launch.getLoc(), toF16(v.getType()), v).getResult(0);
    } else {
      err = "bf16 tensor cores: the kernel captures a bf16 value that is neither a buffer nor a constant";
      return false;
    }
    v.replaceUsesWithIf(nv, [&](OpOperand& u) { return u.getOwner() != nv.getDefiningOp() && launch->isProperAncestor(u.getOwner()); });
  }
  launch.walk([&](Operation* op) {
    if (op == launch.getOperation()) return;
    if (auto c = llvm::dyn_cast<arith::ConstantOp>(op))
      if (Attribute a = bitsAsF16(c.getValue())) c->setAttr("value", a);
    for (Value r : op->getResults()) r.setType(toF16(r.getType()));
    for (Region& reg : op->getRegions())
      for (Block& blk : reg)
        for (BlockArgument arg : blk.getArguments()) arg.setType(toF16(arg.getType()));
  });
  launch->setAttr(kMark, UnitAttr::get(launch.getContext()));
  return true;
}

}  // namespace

bool bf16MmaAsF16(Operation* root, std::string& err) {
  std::vector<gpu::LaunchOp> launches;
  root->walk([&](gpu::LaunchOp l) {
    bool bf16 = false;
    l.walk([&](vector::ContractionOp c) { bf16 |= llvm::cast<VectorType>(c.getLhsType()).getElementType().isBF16(); });
    if (bf16) launches.push_back(l);
  });
  for (auto l : launches)
    if (!retypeLaunch(l, err)) return false;
  return true;
}

bool nvvmMmaToBf16(Operation* root, std::string& err) {
  bool ok = true;
  root->walk([&](gpu::LaunchOp launch) {
    if (!ok || !launch->hasAttr(kMark)) return;
    // convert-nvgpu-to-nvvm materialised index -> i64 casts of constants defined above the launch,
    // above it too: they would become kernel arguments. Cast and constant move into the kernel.
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(launch.getBody(), captured);
    OpBuilder top = OpBuilder::atBlockBegin(&launch.getBody().front());
    for (Value v : captured) {
      auto cast = v.getDefiningOp<UnrealizedConversionCastOp>();
      if (!cast || cast->getNumOperands() != 1) continue;
      Operation* def = cast->getOperand(0).getDefiningOp();
      if (!def || !def->hasTrait<OpTrait::ConstantLike>()) continue;
      IRMapping m;
      top.clone(*def, m);
      Operation* nc = top.clone(*cast, m);
      Value nv = nc->getResult(llvm::cast<OpResult>(v).getResultNumber());
      v.replaceUsesWithIf(nv, [&](OpOperand& u) { return launch->isProperAncestor(u.getOwner()); });
    }
    int64_t n = 0;
    launch.walk([&](NVVM::MmaOp mma) {
      if (!ok) return;
      if (mma.getMultiplicandAPtxType() != NVVM::MMATypes::f16 || mma.getMultiplicandBPtxType() != NVVM::MMATypes::f16) {
        err = "bf16 tensor cores: expected an f16 nvvm.mma.sync to retype, found " + where(mma);
        ok = false;
        return;
      }
      OpBuilder b(mma);
      auto i32 = b.getI32Type();
      const unsigned ab = unsigned(mma.getOperandA().size() + mma.getOperandB().size());
      for (unsigned i = 0; i < ab; ++i) {  // operand segments: A, B, then C
        Value v = mma->getOperand(i);
        auto vt = llvm::dyn_cast<VectorType>(v.getType());
        if (!vt || vt.getNumElements() != 2 || !vt.getElementType().isF16()) {
          err = "bf16 tensor cores: an mma.sync register is not vector<2xf16> (" + where(mma) + ")";
          ok = false;
          return;
        }
        mma->setOperand(i, LLVM::BitcastOp::create(b, mma.getLoc(), i32, v));
      }
      mma.setMultiplicandAPtxType(NVVM::MMATypes::bf16);
      mma.setMultiplicandBPtxType(NVVM::MMATypes::bf16);
      ++n;
    });
    if (ok && n == 0) {
      err = "bf16 tensor cores: a launch marked " + std::string(kMark) +
            " holds no nvvm.mma.sync (convert-nvgpu-to-nvvm must run first)";
      ok = false;
    }
    if (ok) launch->removeAttr(kMark);
  });
  return ok;
}

namespace {

struct Bf16AsF16Pass : public PassWrapper<Bf16AsF16Pass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Bf16AsF16Pass)
  StringRef getArgument() const final { return "sextant-bf16-mma-as-f16"; }
  StringRef getDescription() const final {
    return "Sextant: bf16 GEMM kernels retyped to f16 of the same bits for MLIR's f16 tensor-core route "
           "(then sextant-nvvm-mma-bf16)";
  }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<arith::ArithDialect>(); }
  void runOnOperation() override {
    std::string err;
    if (!bf16MmaAsF16(getOperation(), err)) {
      getOperation()->emitError() << err;
      signalPassFailure();
    }
  }
};

struct NvvmMmaBf16Pass : public PassWrapper<NvvmMmaBf16Pass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(NvvmMmaBf16Pass)
  StringRef getArgument() const final { return "sextant-nvvm-mma-bf16"; }
  StringRef getDescription() const final {
    return "Sextant: nvvm.mma.sync of launches marked by sextant-bf16-mma-as-f16 become bf16 mma.sync";
  }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<LLVM::LLVMDialect, NVVM::NVVMDialect>(); }
  void runOnOperation() override {
    std::string err;
    if (!nvvmMmaToBf16(getOperation(), err)) {
      getOperation()->emitError() << err;
      signalPassFailure();
    }
  }
};

}  // namespace

void registerBf16MmaPasses() {
  PassRegistration<Bf16AsF16Pass>();
  PassRegistration<NvvmMmaBf16Pass>();
}

}  // namespace sextant::detail
