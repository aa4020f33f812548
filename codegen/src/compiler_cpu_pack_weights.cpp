// Constant weights packed at compile time into the blocks the schedule reads (CPU, after the
// schedule, on tensors).
//
// A schedule cuts a network's filter (HWCF) or GEMM weight (K x N) into blocks along its last
// dimension: each forall block of tile_f output channels reads KH x KW x C x tile_f of it, each
// block of tile_n columns K x tile_n. In the stored layout such a block is rows of tile_f floats a
// whole F apart: the hardware prefetcher follows it poorly, and a layer whose weights are read once
// per call from memory (ResNet-50's 7x7-pixel layers: 2-9 MB of weights for 49 pixels) waits on
// them. Weights are constants, so the block can be stored contiguously at compile time, as
// libraries do once ahead (oneDNN's reordered weights, ONNX Runtime's pre-packed ones): a slice
// that is whole in every dimension but the last, of b elements at a multiple of b, of a dense f32
// constant of shape [d0, ..., dn] becomes the slice [q, 0, ...] of the constant packed as
// [dn / b, d0, ..., d(n-1), b] (q: the block's index). Same values, so the same results; the
// original constant goes when nothing else reads it.
#include "compiler_internal.h"

#include <map>

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {

using namespace mlir;

namespace {

// The block index of a last-dimension offset that is a multiple of b by construction: a constant,
// an affine.apply of d0 * b (a forall's tile offset), or the induction variable of an scf.for or
// scf.forall whose start and step are multiples of b (a loop over blocks). Null when it is none of these.
Value blockIndex(OpBuilder& b, Location loc, OpFoldResult offset, int64_t block) {
  if (auto c = getConstantIntValue(offset))
    return *c % block == 0 ? Value(arith::ConstantIndexOp::create(b, loc, *c / block)) : Value();
  Value v = cast<Value>(offset);
  if (auto apply = v.getDefiningOp<affine::AffineApplyOp>()) {
    AffineMap map = apply.getAffineMap();
    if (map.getNumDims() == 1 && map.getNumSymbols() == 0 && map.getNumResults() == 1 &&
        map.getResult(0) == getAffineDimExpr(0, b.getContext()) * block)
      return apply.getOperand(0);
    return Value();
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg) return Value();
  std::optional<int64_t> lb, step;
  Operation* owner = arg.getOwner()->getParentOp();
  if (auto loop = dyn_cast<scf::ForOp>(owner); loop && arg == loop.getInductionVar()) {
    lb = getConstantIntValue(loop.getLowerBound()), step = getConstantIntValue(loop.getStep());
  } else if (auto forall = dyn_cast<scf::ForallOp>(owner)) {
    const unsigned i = arg.getArgNumber();
    if (i < forall.getRank())
      lb = getConstantIntValue(forall.getMixedLowerBound()[i]), step = getConstantIntValue(forall.getMixedStep()[i]);
  }
  if (lb && step && *lb % block == 0 && *step % block == 0)
    return arith::DivUIOp::create(b, loc, v, arith::ConstantIndexOp::create(b, loc, block));
  return Value();
}

// The block size a slice of a constant asks for (0: not a block of the last dimension).
int64_t blockOf(tensor::ExtractSliceOp s, RankedTensorType type) {
  const int64_t r = type.getRank();
  auto sizes = s.getStaticSizes();
  auto offsets = s.getMixedOffsets();
  auto strides = s.getMixedStrides();
  if (r < 2 || s.getResultType().getRank() != r || !type.hasStaticShape()) return 0;
  for (int64_t i = 0; i < r; ++i) {
    auto st = getConstantIntValue(strides[size_t(i)]);
    if (!st || *st != 1) return 0;
    if (i + 1 < r) {
      auto o = getConstantIntValue(offsets[size_t(i)]);
      if (sizes[size_t(i)] != type.getDimSize(i) || !o || *o != 0) return 0;
    }
  }
  const int64_t b = sizes[size_t(r - 1)], d = type.getDimSize(r - 1);
  return b != ShapedType::kDynamic && b < d && d % b == 0 ? b : 0;
}

// The constant packed as [dn / b, d0, ..., d(n-1), b].
DenseElementsAttr packed(DenseElementsAttr attr, RankedTensorType type, int64_t b) {
  const int64_t r = type.getRank(), d = type.getDimSize(r - 1), rows = type.getNumElements() / d;
  SmallVector<int64_t> shape = {d / b};
  for (int64_t i = 0; i + 1 < r; ++i) shape.push_back(type.getDimSize(i));
  shape.push_back(b);
  auto values = attr.getValues<float>();
  std::vector<float> out(size_t(type.getNumElements()));
  size_t at = 0;
  for (int64_t q = 0; q < d / b; ++q)
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t j = 0; j < b; ++j) out[at++] = values[size_t(row * d + q * b + j)];
  return DenseElementsAttr::get(RankedTensorType::get(shape, type.getElementType()), ArrayRef<float>(out));
}

}  // namespace

int packConstantBlocks(Operation* root) {
  SmallVector<tensor::ExtractSliceOp> slices;
  root->walk([&](tensor::ExtractSliceOp s) {
    auto c = s.getSource().getDefiningOp<arith::ConstantOp>();
    auto attr = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
    if (attr && !attr.isSplat() && attr.getElementType().isF32()) slices.push_back(s);
  });
  std::map<std::pair<Operation*, int64_t>, Value> made;  // (constant, block) -> the packed constant
  int n = 0;
  for (tensor::ExtractSliceOp s : slices) {
    auto c = s.getSource().getDefiningOp<arith::ConstantOp>();
    auto type = cast<RankedTensorType>(c.getType());
    const int64_t b = blockOf(s, type);
    if (b == 0) continue;
    OpBuilder builder(s);
    Value q = blockIndex(builder, s.getLoc(), s.getMixedOffsets().back(), b);
    if (!q) continue;
    Value& p = made[{c.getOperation(), b}];
    if (!p) {
      OpBuilder at(c);
      p = arith::ConstantOp::create(at, c.getLoc(), packed(cast<DenseElementsAttr>(c.getValue()), type, b)).getResult();
    }
    const int64_t r = type.getRank();
    SmallVector<OpFoldResult> offsets = {q}, sizes = {builder.getIndexAttr(1)}, strides(size_t(r + 1), builder.getIndexAttr(1));
    for (int64_t i = 0; i < r; ++i) {
      offsets.push_back(builder.getIndexAttr(0));
      sizes.push_back(builder.getIndexAttr(i + 1 < r ? type.getDimSize(i) : b));
    }
    auto block = tensor::ExtractSliceOp::create(builder, s.getLoc(), s.getResultType(), p, offsets, sizes, strides);
    s.getResult().replaceAllUsesWith(block.getResult());
    s.erase();
    ++n;
  }
  for (auto& [key, p] : made)
    if (key.first->use_empty()) key.first->erase();
  return n;
}

namespace {

// As a pass, for consumers who apply an exported library with sextant-opt
// ("sextant-pack-constant-blocks", after the transform interpreter).
struct PackConstantBlocksPass : public PassWrapper<PackConstantBlocksPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PackConstantBlocksPass)
  StringRef getArgument() const final { return "sextant-pack-constant-blocks"; }
  StringRef getDescription() const final {
    return "Sextant: constant weights sliced in blocks along their last dimension are packed with each block contiguous";
  }
  void getDependentDialects(DialectRegistry& r) const override { r.insert<arith::ArithDialect, tensor::TensorDialect>(); }
  void runOnOperation() override { packConstantBlocks(getOperation()); }
};

}  // namespace

void registerPackConstantBlocksPass() { PassRegistration<PackConstantBlocksPass>(); }

}  // namespace sextant::detail
