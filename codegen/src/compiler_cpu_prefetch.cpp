// Software prefetch for CPU kernels (issue #14): in every innermost loop that issues FMAs (the
// micro-kernel's K loop, the GEMV's), each vector read of memory whose address moves with the
// loop gets a memref.prefetch of the address `distance` iterations ahead (read, locality 3: into
// all cache levels, data). Nothing upstream inserts prefetches (no transform op, no pass in MLIR
// 22: docs/notes-cpu-space-research.md), so this runs after bufferization, on memrefs, before the
// vector transfers are lowered. A prefetch past the end of a buffer is harmless: the instruction
// does not fault and llvm.prefetch has no effect on the program's behaviour.
#include "compiler_internal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {
namespace {

using namespace mlir;

bool dependsOn(Value v, Value iv, Operation* loop, int depth = 0) {
  if (v == iv) return true;
  Operation* def = v.getDefiningOp();
  if (!def || depth > 16 || !loop->isProperAncestor(def)) return false;
  for (Value o : def->getOperands())
    if (dependsOn(o, iv, loop, depth + 1)) return true;
  return false;
}

// Clones the computation of v (inside `loop`) with the induction variable replaced by `ahead`.
Value cloneAhead(OpBuilder& b, Value v, Value iv, Value ahead, Operation* loop, IRMapping& map) {
  if (v == iv) return ahead;
  if (Value m = map.lookupOrNull(v)) return m;
  Operation* def = v.getDefiningOp();
  if (!def || !loop->isProperAncestor(def) || !dependsOn(v, iv, loop)) return v;
  for (Value o : def->getOperands()) map.map(o, cloneAhead(b, o, iv, ahead, loop, map));
  Operation* c = b.clone(*def, map);
  for (auto [r, n] : llvm::zip(def->getResults(), c->getResults())) map.map(r, n);
  return map.lookup(v);
}

}  // namespace

int64_t insertCpuPrefetches(Operation* root, int64_t distance) {
  if (distance <= 0) return 0;
  std::vector<scf::ForOp> loops;
  root->walk([&](scf::ForOp f) {
    bool inner = true, fma = false;
    f.getBody()->walk([&](Operation* op) {
      if (llvm::isa<scf::ForOp>(op)) inner = false;
      // vector.fma (GEMM micro-kernels), or a vector multiply (the GEMV's partial sums: mulf + addf)
      if (llvm::isa<vector::FMAOp>(op) ||
          (llvm::isa<arith::MulFOp>(op) && llvm::isa<VectorType>(op->getResult(0).getType())))
        fma = true;
    });
    if (inner && fma) loops.push_back(f);
  });
  int64_t inserted = 0;
  for (scf::ForOp loop : loops) {
    std::vector<vector::TransferReadOp> reads;
    // Contiguous vector reads (innermost dimension of at least 4 elements: rows of B, of a packed
    // panel, of the GEMV's B; not A's broadcast columns) whose address moves with the loop, through
    // their indices or through a subview taken in the loop.
    loop.getBody()->walk([&](vector::TransferReadOp r) {
      if (!llvm::isa<MemRefType>(r.getBase().getType()) || r.getVectorType().getShape().back() < 4) return;
      if (dependsOn(r.getBase(), loop.getInductionVar(), loop)) return reads.push_back(r);
      for (Value i : r.getIndices())
        if (dependsOn(i, loop.getInductionVar(), loop)) return reads.push_back(r);
    });
    for (auto r : reads) {
      OpBuilder b(r);
      Location loc = r.getLoc();
      Value step = loop.getStep();
      Value d = arith::ConstantIndexOp::create(b, loc, distance);
      Value ahead = arith::AddIOp::create(b, loc, loop.getInductionVar(), arith::MulIOp::create(b, loc, d, step));
      IRMapping map;
      SmallVector<Value> idx;
      for (Value i : r.getIndices()) idx.push_back(cloneAhead(b, i, loop.getInductionVar(), ahead, loop, map));
      Value base = cloneAhead(b, r.getBase(), loop.getInductionVar(), ahead, loop, map);
      // One prefetch per 64-byte line of the vector (its innermost dimension is contiguous).
      const int64_t bytes = r.getVectorType().getShape().back() * r.getVectorType().getElementTypeBitWidth() / 8;
      const int64_t per_line = std::max<int64_t>(1, 512 / r.getVectorType().getElementTypeBitWidth());
      for (int64_t off = 0; off * r.getVectorType().getElementTypeBitWidth() / 8 < bytes; off += per_line) {
        SmallVector<Value> at = idx;
        if (off) at.back() = arith::AddIOp::create(b, loc, idx.back(), arith::ConstantIndexOp::create(b, loc, off));
        memref::PrefetchOp::create(b, loc, base, at, /*isWrite=*/false, /*localityHint=*/3, /*isDataCache=*/true);
        ++inserted;
      }
    }
  }
  return inserted;
}

namespace {

// As a pass, for Transform libraries and consumers' pipelines ("sextant-cpu-prefetch{distance=N}").
struct CpuPrefetchPass : public PassWrapper<CpuPrefetchPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CpuPrefetchPass)
  CpuPrefetchPass() = default;
  CpuPrefetchPass(const CpuPrefetchPass& o) : PassWrapper(o) {}
  StringRef getArgument() const final { return "sextant-cpu-prefetch"; }
  StringRef getDescription() const final {
    return "Sextant: memref.prefetch of each moving vector read of the FMA loops, `distance` iterations ahead (CPU)";
  }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<arith::ArithDialect, memref::MemRefDialect>();
  }
  Option<int64_t> distance{*this, "distance", llvm::cl::desc("iterations ahead (0: none)"), llvm::cl::init(0)};
  void runOnOperation() override { insertCpuPrefetches(getOperation(), distance); }
};

}  // namespace

void registerCpuPrefetchPass() { PassRegistration<CpuPrefetchPass>(); }

}  // namespace sextant::detail
