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

// The innermost scf.for loops that issue vector.fma (GEMM micro-kernels' K loops) or, with
// `vector_mul`, also a vector multiply (the GEMV's partial sums: mulf + addf).
std::vector<scf::ForOp> innermostFmaLoops(Operation* root, bool vector_mul) {
  std::vector<scf::ForOp> loops;
  root->walk([&](scf::ForOp f) {
    bool inner = true, fma = false;
    f.getBody()->walk([&](Operation* op) {
      if (llvm::isa<scf::ForOp>(op)) inner = false;
      if (llvm::isa<vector::FMAOp>(op) ||
          (vector_mul && llvm::isa<arith::MulFOp>(op) && llvm::isa<VectorType>(op->getResult(0).getType())))
        fma = true;
    });
    if (inner && fma) loops.push_back(f);
  });
  return loops;
}

}  // namespace

int64_t insertCpuPrefetches(Operation* root, int64_t distance) {
  if (distance <= 0) return 0;
  int64_t inserted = 0;
  for (scf::ForOp loop : innermostFmaLoops(root, /*vector_mul=*/true)) {
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

// Clones what `v` needs that is defined at or after `at` in `at`'s block, and (when `next` is set)
// what depends on `iv`, with `iv` replaced by `next`, so that it can be computed before `at`; null
// where that would need an op with regions.
Value cloneBefore(OpBuilder& b, Value v, Operation* at, Value iv, Value next, IRMapping& map, int depth = 0) {
  if (next && v == iv) return next;
  if (Value m = map.lookupOrNull(v)) return m;
  Operation* def = v.getDefiningOp();
  if (!def || depth > 16) return v;
  const bool after = def->getBlock() == at->getBlock() ? !def->isBeforeInBlock(at) : false;
  const bool moving = next && dependsOn(v, iv, iv.getParentRegion()->getParentOp());
  if (!after && !moving) return v;
  if (def->getNumRegions() > 0) return Value();
  for (Value o : def->getOperands()) {
    Value c = cloneBefore(b, o, at, iv, next, map, depth + 1);
    if (!c) return Value();
    map.map(o, c);
  }
  Operation* c = b.clone(*def, map);
  for (auto [r, n] : llvm::zip(def->getResults(), c->getResults())) map.map(r, n);
  return map.lookup(v);
}

bool hasFma(Operation* loop) {
  bool fma = false;
  loop->walk([&](Operation* op) {
    if (llvm::isa<vector::FMAOp>(op)) fma = true;
  });
  return fma;
}

// Prefetches of the lines `r` reads, computed before `at` (with `iv` replaced by `next` when
// `next` is set): one per 64-byte line of each row of the vector (its innermost dimension is
// contiguous; the leading ones walk the leading indices), with llvm.prefetch's `locality`; how many.
int64_t prefetchRead(vector::TransferReadOp r, Operation* at, Value iv, Value next, int locality = 3) {
  VectorType vt = r.getVectorType();
  const size_t rank = size_t(vt.getRank()), lead = rank - 1;
  int64_t rows = 1;
  for (size_t d = 0; d < lead; ++d) rows *= vt.getShape()[d];
  if (r.getIndices().size() < rank || rows > 64) return 0;
  OpBuilder b(at);
  Location loc = r.getLoc();
  IRMapping map;
  Value base = cloneBefore(b, r.getBase(), at, iv, next, map);
  SmallVector<Value> idx;
  for (Value i : r.getIndices()) idx.push_back(cloneBefore(b, i, at, iv, next, map));
  if (!base || llvm::any_of(idx, [](Value v) { return !v; })) return 0;
  const int64_t per_line = std::max<int64_t>(1, 512 / vt.getElementTypeBitWidth());
  int64_t inserted = 0;
  for (int64_t row = 0; row < rows; ++row) {
    SmallVector<Value> p = idx;
    int64_t rest = row;
    for (size_t d = lead; d-- > 0;) {
      const int64_t off = rest % vt.getShape()[d];
      rest /= vt.getShape()[d];
      const size_t j = idx.size() - rank + d;
      if (off) p[j] = arith::AddIOp::create(b, loc, idx[j], arith::ConstantIndexOp::create(b, loc, off));
    }
    const Value row_start = p.back();
    for (int64_t off = 0; off < vt.getShape().back(); off += per_line) {
      if (off) p.back() = arith::AddIOp::create(b, loc, row_start, arith::ConstantIndexOp::create(b, loc, off));
      memref::PrefetchOp::create(b, loc, base, p, /*isWrite=*/false, /*localityHint=*/locality, /*isDataCache=*/true);
      ++inserted;
    }
  }
  return inserted;
}

}  // namespace

int64_t insertEpiloguePrefetches(Operation* root) {
  // The reduction loops (scf.for with FMAs, no FMA loop after them in their block) and the vector
  // reads of memory after them in the same block: the epilogue's.
  std::vector<std::pair<scf::ForOp, std::vector<vector::TransferReadOp>>> work;
  root->walk([&](scf::ForOp k) {
    if (!hasFma(k)) return;
    std::vector<vector::TransferReadOp> reads;
    for (Operation* op = k->getNextNode(); op; op = op->getNextNode()) {
      if (auto f = llvm::dyn_cast<scf::ForOp>(op); f && hasFma(f)) return;  // not the last reduction of its block
      if (auto r = llvm::dyn_cast<vector::TransferReadOp>(op))
        if (llvm::isa<MemRefType>(r.getBase().getType()) && r.getVectorType().getRank() >= 1 &&
            r.getVectorType().getShape().back() >= 4)
          reads.push_back(r);
    }
    if (!reads.empty()) work.push_back({k, std::move(reads)});
  });
  // This register tile's epilogue reads, and the next register tile's when the loop around the
  // reduction moves them (the register tiles across a block): ResNet-50 on 1 thread (Zen 5, one
  // database, alternating calls), 37.7-41.2 ms without, 36.1-39.4 with both, either alone between.
  int64_t inserted = 0;
  for (auto& [k, reads] : work) {
    auto outer = llvm::dyn_cast_or_null<scf::ForOp>(k->getParentOp());
    for (vector::TransferReadOp r : reads) {
      inserted += prefetchRead(r, k, Value(), Value());
      if (!outer) continue;
      const Value iv = outer.getInductionVar();
      bool moves = dependsOn(r.getBase(), iv, outer);
      for (Value i : r.getIndices()) moves = moves || dependsOn(i, iv, outer);
      if (!moves) continue;
      OpBuilder b(k);
      inserted += prefetchRead(r, k, iv, arith::AddIOp::create(b, r.getLoc(), iv, outer.getStep()));
    }
  }
  return inserted;
}

// Weights streamed from memory (a network's constant B, each panel read from DRAM once): the first
// register tile of a panel waited for its rows, the hardware prefetchers not running far enough
// ahead; with the next panel's rows prefetched by every register tile of this one (redundantly: a
// prefetch of a line already on its way costs one load slot), the 49x2048x512 weights GEMM (reg_m 7)
// went from 229-231 to 240-245 GFLOP/s on AMD EPYC Zen 5 (1 thread; L2 hint 243-244, L1 240-241).
// Prefetching in the first register tile only (an scf.if on the row loop) was slower: 213.
int64_t insertPanelPrefetches(Operation* root, int locality) {
  int64_t inserted = 0;
  for (scf::ForOp k : innermostFmaLoops(root, /*vector_mul=*/false)) {
    // One-row contiguous vector reads (rows of B or of its panel; not A's broadcast elements).
    std::vector<vector::TransferReadOp> reads;
    k.getBody()->walk([&](vector::TransferReadOp r) {
      VectorType vt = r.getVectorType();
      if (!llvm::isa<MemRefType>(r.getBase().getType()) || vt.getShape().back() < 4) return;
      for (int64_t d : vt.getShape().drop_back())
        if (d != 1) return;
      reads.push_back(r);
    });
    for (vector::TransferReadOp r : reads) {
      auto moves = [&](scf::ForOp l) {
        bool m = dependsOn(r.getBase(), l.getInductionVar(), l);
        for (Value i : r.getIndices()) m = m || dependsOn(i, l.getInductionVar(), l);
        return m;
      };
      // The first loop around the K loop that does not move the read (it reuses the panel), then
      // the first one above it that does (the next panel is its next iteration's).
      scf::ForOp reuse, next;
      // (Directly nested loops only: the walk stops at the first op that is not an scf.for.)
      for (auto l = llvm::dyn_cast_or_null<scf::ForOp>(k->getParentOp()); l && !next;
           l = llvm::dyn_cast_or_null<scf::ForOp>(l->getParentOp())) {
        if (!reuse) {
          if (!moves(l)) reuse = l;
        } else if (moves(l)) {
          next = l;
        }
      }
      if (!reuse || !next) continue;
      OpBuilder b(k);
      Value ahead = arith::AddIOp::create(b, r.getLoc(), next.getInductionVar(), next.getStep());
      inserted += prefetchRead(r, r, next.getInductionVar(), ahead, locality);
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
