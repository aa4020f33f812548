// Convolutions skip the filter rows that fall on zero padding (CPU, after the schedule, on tensors).
//
// The direct route (cpu_conv.cpp) computes each register tile (one output row) over the whole
// filter: a loop over the filter's rows kh, each step reading one row of the padded input. At the
// top and bottom output rows some of those rows are the pad's zeros, whose products add nothing:
// a 3x3 filter with padding 1 on a 7x7 output reads 21 input rows per output column, 2 of them
// zeros (10% of the work; 5% at 14x14). Libraries skip them (oneDNN's figures are above the FMA
// peak there, counted over every tap). This rewrite narrows the bounds of such a loop to the rows
// inside the input: for a loop the schedule marked as the loop over the filter's rows
// (`sextant.filter_rows`), `for kh in [lb, ub)`, whose body reads row base + kh of a zero-padded
// tensor (tensor.pad, constant 0, low padding ph over IH rows) through a one-row slice of a chain
// of slices, or through a transfer read whose row index folded the slices in, the loop becomes
// `for kh in [lo = max(lb, ph - base), max(lo, min(ub, ph + IH - base)))`. Skipping a product
// with zero leaves an accumulator as it was (weights are finite), so results are the same. Only
// loops whose whole body is on tensors and vectors (no side effects) are narrowed. Measured (Zen 5,
// 1 thread): the 14x14 3x3 256-channel layer 235-241 -> 248-252 GFLOP/s; docs/ops.md.
#include "compiler_internal.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {

using namespace mlir;

namespace {

constexpr const char* kFilterRowsAttr = "sextant.filter_rows";

// The padded rows a value reads: the zero pad it is a slice of, and the row offsets of the slices
// in between (unit strides, full rank), or no pad.
struct RowChain {
  tensor::PadOp pad;
  SmallVector<OpFoldResult> offsets;
};

RowChain rowChainOf(Value src) {
  RowChain chain;
  while (!(chain.pad = src.getDefiningOp<tensor::PadOp>())) {
    auto up = src.getDefiningOp<tensor::ExtractSliceOp>();
    // Rank-reducing slices would move dimension 1: only full-rank ones on the way up.
    if (!up || up.getSourceType().getRank() != up.getResultType().getRank() || up.getResultType().getRank() < 3)
      return {};
    auto stride = getConstantIntValue(up.getMixedStrides()[1]);
    if (!stride || *stride != 1) return {};
    chain.offsets.push_back(up.getMixedOffsets()[1]);
    src = up.getSource();
  }
  auto type = chain.pad.getSourceType();
  Value value = chain.pad.getConstantPaddingValue();
  if (type.getRank() < 3 || type.isDynamicDim(1) || !value || !matchPattern(value, m_AnyZeroFloat()) ||
      chain.pad.getStaticLow()[1] == ShapedType::kDynamic)
    return {};
  return chain;
}

// The rows before `loop` of a row index that is base + iv: the index is iv itself, or an
// affine.apply whose result is iv plus terms of operands defined outside the loop (the base is
// then that apply with iv = 0, made before the loop). Null otherwise.
Value baseOfRow(OpBuilder& b, scf::ForOp loop, Value index) {
  Value iv = loop.getInductionVar();
  if (index == iv) return arith::ConstantIndexOp::create(b, loop.getLoc(), 0);
  auto apply = index.getDefiningOp<affine::AffineApplyOp>();
  if (!apply || apply.getAffineMap().getNumResults() != 1) return Value();
  AffineMap map = apply.getAffineMap();
  int at = -1;
  for (auto [i, v] : llvm::enumerate(apply.getMapOperands())) {
    if (v == iv) {
      if (at >= 0) return Value();
      at = int(i);
    } else if (loop->isAncestor(v.getParentBlock()->getParentOp())) {
      return Value();  // another operand that changes inside the loop
    }
  }
  if (at < 0) return Value();
  const unsigned dims = map.getNumDims();
  AffineExpr ive = unsigned(at) < dims ? getAffineDimExpr(unsigned(at), b.getContext())
                                       : getAffineSymbolExpr(unsigned(at) - dims, b.getContext());
  AffineExpr e = map.getResult(0), e0 = e.replace(ive, getAffineConstantExpr(0, b.getContext()));
  if (simplifyAffineExpr(e - e0, dims, map.getNumSymbols()) != ive) return Value();  // not iv + base
  SmallVector<Value> operands(apply.getMapOperands());
  operands[size_t(at)] = arith::ConstantIndexOp::create(b, loop.getLoc(), 0);
  return affine::AffineApplyOp::create(b, loop.getLoc(), AffineMap::get(dims, map.getNumSymbols(), e0), operands);
}

// Narrows `loop` (marked sextant.filter_rows) if its body reads one padded row at row base + iv,
// through a one-row slice or a transfer read whose vector does not span rows (the first such read
// found decides); whether it did.
bool narrowToInputRows(scf::ForOp loop) {
  auto step = getConstantIntValue(loop.getStep());
  if (!step || *step != 1) return false;
  // A body with side effects (memref writes, calls) could do more than accumulate.
  for (Operation& op : loop.getBody()->getOperations())
    if (!isMemoryEffectFree(&op)) return false;
  // The first read of one padded row: its chain of slices up to the pad, and its row index.
  RowChain chain;
  Value row, src0;  // src0: the source of the deciding read, when it is a transfer
  loop.getBody()->walk([&](Operation* op) {
    if (chain.pad) return;
    Value src, index;
    if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) {
      if (s.getSourceType().getRank() >= 3 && s.getStaticSizes()[1] == 1)
        if (auto v = dyn_cast<Value>(s.getMixedOffsets()[1])) src = s.getSource(), index = v;
    } else if (auto t = dyn_cast<vector::TransferReadOp>(op)) {
      auto type = dyn_cast<RankedTensorType>(t.getBase().getType());
      if (type && type.getRank() >= 3 && !t.getPermutationMap().isFunctionOfDim(1)) src = t.getBase(), index = t.getIndices()[1];
    }
    // The read's source must be outside the loop, reading the pad through slices.
    if (src && !loop->isAncestor(src.getParentBlock()->getParentOp())) {
      chain = rowChainOf(src);
      row = index;
      if (chain.pad && isa<vector::TransferReadOp>(op)) src0 = src;
    }
  });
  if (!chain.pad) return false;
  for (OpFoldResult o : chain.offsets)
    if (auto v = dyn_cast<Value>(o); v && loop->isAncestor(v.getParentBlock()->getParentOp())) return false;
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value base = baseOfRow(b, loop, row);
  if (!base) return false;
  auto cst = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  for (OpFoldResult o : chain.offsets) base = arith::AddIOp::create(b, loc, base, getValueOrCreateConstantIndexOp(b, loc, o));
  const int64_t ph = chain.pad.getStaticLow()[1], ih = chain.pad.getSourceType().getDimSize(1);
  Value lo = arith::MaxSIOp::create(b, loc, loop.getLowerBound(), arith::SubIOp::create(b, loc, cst(ph), base));
  Value hi = arith::MinSIOp::create(b, loc, loop.getUpperBound(), arith::SubIOp::create(b, loc, cst(ph + ih), base));
  hi = arith::MaxSIOp::create(b, loc, hi, lo);
  loop.getLowerBoundMutable().assign(lo);
  loop.getUpperBoundMutable().assign(hi);
  // The reads of the same rows (same source, same row index) now stay inside the input's rows:
  // marked, so that reading through the pad (compiler_cpu_pad_reads.cpp) checks only the columns.
  if (src0)
    loop.getBody()->walk([&](vector::TransferReadOp t) {
      if (t.getBase() == src0 && t.getIndices().size() > 1 && t.getIndices()[1] == row)
        t->setAttr(kRowsInInputAttr, UnitAttr::get(t.getContext()));
    });
  return true;
}

}  // namespace

int skipPaddingRows(Operation* root) {
  SmallVector<scf::ForOp> loops;
  root->walk([&](scf::ForOp f) {
    if (f->hasAttr(kFilterRowsAttr)) loops.push_back(f);
  });
  int n = 0;
  for (scf::ForOp f : loops) n += narrowToInputRows(f) ? 1 : 0;
  return n;
}

namespace {

// As a pass, for consumers who apply an exported library with sextant-opt
// ("sextant-skip-padding-rows", after the transform interpreter).
struct SkipPaddingRowsPass : public PassWrapper<SkipPaddingRowsPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SkipPaddingRowsPass)
  StringRef getArgument() const final { return "sextant-skip-padding-rows"; }
  StringRef getDescription() const final {
    return "Sextant: the loops over a convolution's filter rows (sextant.filter_rows) skip the rows on the input's zero padding";
  }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<arith::ArithDialect, affine::AffineDialect>(); }
  void runOnOperation() override { skipPaddingRows(getOperation()); }
};

}  // namespace

void registerSkipPaddingRowsPass() { PassRegistration<SkipPaddingRowsPass>(); }

}  // namespace sextant::detail
