// Vulkan cooperative-matrix kernels (issue #33; the Vulkan space's knob mma = 1): what the route
// needs besides the tensor-core route's stage 1 and MLIR's convert-vector-to-gpu (which turns the
// subgroup's 16x16x16 contractions into gpu.subgroup_mma_* ops, lowered to
// spirv.KHR.CooperativeMatrix* with a SPIR-V 1.6 target environment).
//
// The accumulators start from zero in registers. Stage 1 fuses the op's zero fill into the block
// tile and spreads it over the threads; after a barrier each subgroup reads its C fragments back as
// the accumulators' first values. That round trip through global memory costs a write and a read of
// C, and Vulkan's gpu.barrier (WorkgroupMemory semantics) does not order storage-buffer accesses of
// different invocations at all: a reading subgroup may see C before another thread's zeros. Reads
// of C that come before any other write of C read the fill's zeros: they become zero constants
// (gpu.subgroup_mma_constant_matrix after the conversion), and the fill's stores go, since the
// kernel writes every element of C again at the end.
#include "compiler_internal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {

namespace {

bool isZeroSplat(mlir::Value v) {
  mlir::Attribute a;
  if (!mlir::matchPattern(v, mlir::m_Constant(&a))) return false;
  auto d = llvm::dyn_cast<mlir::SplatElementsAttr>(a);
  if (!d) return false;
  auto f = llvm::dyn_cast<mlir::FloatAttr>(d.getSplatValue<mlir::Attribute>());
  return f && f.getValue().isZero();
}

// The op's ancestor in `body` (itself if it is there).
mlir::Operation* topIn(mlir::Block& body, mlir::Operation* op) { return body.findAncestorOpInBlock(*op); }

// One launch: returns how many reads became constants.
int accumulatorsFromZero(mlir::gpu::LaunchOp launch) {
  mlir::Block& body = launch.getBody().front();
  // Memrefs the launch fills with zero vectors (defined outside it: the kernel's C).
  llvm::SetVector<mlir::Value> filled;
  launch.walk([&](mlir::vector::TransferWriteOp w) {
    if (isZeroSplat(w.getVector()) && !launch->isAncestor(w.getBase().getParentBlock()->getParentOp()))
      filled.insert(w.getBase());
  });
  int replaced = 0;
  for (mlir::Value mem : filled) {
    llvm::SmallVector<mlir::vector::TransferWriteOp> zeros;
    llvm::SmallVector<mlir::vector::TransferReadOp> reads;
    mlir::Operation* last_zero = nullptr;   // in body order
    mlir::Operation* first_other = nullptr; // the first other write (or an access this does not know)
    bool unknown = false;
    for (mlir::Operation* u : mem.getUsers()) {
      if (!launch->isProperAncestor(u)) continue;
      mlir::Operation* t = topIn(body, u);
      if (auto w = llvm::dyn_cast<mlir::vector::TransferWriteOp>(u); w && isZeroSplat(w.getVector())) {
        zeros.push_back(w);
        if (!last_zero || last_zero->isBeforeInBlock(t)) last_zero = t;
      } else if (auto r = llvm::dyn_cast<mlir::vector::TransferReadOp>(u)) {
        reads.push_back(r);
      } else {
        // Any other write (the results), or an access of another kind: nothing after it is known.
        if (!first_other || t->isBeforeInBlock(first_other)) first_other = t;
        unknown |= !llvm::isa<mlir::vector::TransferWriteOp, mlir::vector::StoreOp, mlir::memref::StoreOp>(u);
      }
    }
    if (unknown || !last_zero) continue;
    // Reads after the whole fill and before any other write read zeros; one in between (or inside
    // the fill's own region) would not: then this memref is left alone.
    bool all_after_fill = true;
    llvm::SmallVector<mlir::vector::TransferReadOp> zero_reads;
    for (auto r : reads) {
      mlir::Operation* t = topIn(body, r);
      if (first_other && !t->isBeforeInBlock(first_other)) continue;
      if (!last_zero->isBeforeInBlock(t)) all_after_fill = false;
      zero_reads.push_back(r);
    }
    if (!all_after_fill || zero_reads.empty()) continue;
    for (auto r : zero_reads) {
      mlir::OpBuilder b(r);
      auto vt = llvm::cast<mlir::VectorType>(r.getType());
      mlir::Value zero = mlir::arith::ConstantOp::create(
          b, r.getLoc(), vt, mlir::DenseElementsAttr::get(vt, b.getZeroAttr(vt.getElementType())));
      r.replaceAllUsesWith(zero);
      r.erase();
      ++replaced;
    }
    // No read of C is left: the fill's stores are dead (the results overwrite all of C). Any read
    // after another write might still see a zero the fill wrote: then they stay.
    if (zero_reads.size() == reads.size())
      for (auto w : zeros) w.erase();
  }
  return replaced;
}

}  // namespace

// The pattern driver of convert-vector-to-gpu hoists constants out of the launch (gpu.launch is not
// isolated from above), so the zero fragments (gpu.subgroup_mma_constant_matrix) end up before it,
// where outlining would make them kernel arguments: each launch gets its own copy.
int sinkMmaConstantsIntoLaunches(mlir::Operation* root) {
  llvm::SmallVector<mlir::gpu::SubgroupMmaConstantMatrixOp> outside;
  root->walk([&](mlir::gpu::SubgroupMmaConstantMatrixOp c) {
    if (!c->getParentOfType<mlir::gpu::LaunchOp>()) outside.push_back(c);
  });
  int n = 0;
  for (auto c : outside) {
    llvm::MapVector<mlir::gpu::LaunchOp, llvm::SmallVector<mlir::OpOperand*>> uses;
    for (mlir::OpOperand& u : c->getUses())
      if (auto l = u.getOwner()->getParentOfType<mlir::gpu::LaunchOp>()) uses[l].push_back(&u);
    for (auto& [launch, list] : uses) {
      mlir::OpBuilder b(&launch.getBody().front(), launch.getBody().front().begin());
      mlir::IRMapping map;
      if (mlir::Operation* scalar = c.getValue().getDefiningOp()) b.clone(*scalar, map);
      mlir::Operation* copy = b.clone(*c, map);
      for (mlir::OpOperand* u : list) u->set(copy->getResult(0));
      ++n;
    }
    if (c->use_empty()) c->erase();
  }
  return n;
}

namespace {

struct SinkMmaConstantsPass : public mlir::PassWrapper<SinkMmaConstantsPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SinkMmaConstantsPass)
  llvm::StringRef getArgument() const final { return "sextant-sink-mma-constants"; }
  llvm::StringRef getDescription() const final {
    return "Sextant: gpu.subgroup_mma_constant_matrix ops used in a gpu.launch copied into it (before outlining)";
  }
  void runOnOperation() override { sinkMmaConstantsIntoLaunches(getOperation()); }
};

struct AccumulatorsFromZeroPass : public mlir::PassWrapper<AccumulatorsFromZeroPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AccumulatorsFromZeroPass)
  llvm::StringRef getArgument() const final { return "sextant-accumulators-from-zero"; }
  llvm::StringRef getDescription() const final {
    return "Sextant: in each gpu.launch, reads of a buffer the launch zero-filled, before any other write of it, "
           "become zero constants and the fill's stores go (Vulkan cooperative-matrix accumulators)";
  }
  void getDependentDialects(mlir::DialectRegistry& r) const override { r.insert<mlir::arith::ArithDialect>(); }
  void runOnOperation() override { accumulatorsFromZeroInLaunches(getOperation()); }
};

}  // namespace

int accumulatorsFromZeroInLaunches(mlir::Operation* root) {
  int n = 0;
  root->walk([&](mlir::gpu::LaunchOp l) { n += accumulatorsFromZero(l); });
  return n;
}

void registerAccumulatorsFromZeroPass() {
  mlir::PassRegistration<AccumulatorsFromZeroPass>();
  mlir::PassRegistration<SinkMmaConstantsPass>();
}

}  // namespace sextant::detail
