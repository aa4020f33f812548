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
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {

using namespace mlir;

namespace {

// Whether a last-dimension offset is a multiple of b by construction: a constant, an affine.apply
// of d0 * b (a forall's tile offset), or the induction variable of an scf.for or scf.forall whose
// start and step are multiples of b (a loop over blocks).
bool blockAligned(OpFoldResult offset, int64_t block) {
  if (auto c = getConstantIntValue(offset)) return *c % block == 0;
  Value v = cast<Value>(offset);
  if (auto apply = v.getDefiningOp<affine::AffineApplyOp>()) {
    AffineMap map = apply.getAffineMap();
    return map.getNumDims() == 1 && map.getNumSymbols() == 0 && map.getNumResults() == 1 &&
           map.getResult(0) == getAffineDimExpr(0, v.getContext()) * block;
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg) return false;
  std::optional<int64_t> lb, step;
  Operation* owner = arg.getOwner()->getParentOp();
  if (auto loop = dyn_cast<scf::ForOp>(owner); loop && arg == loop.getInductionVar()) {
    lb = getConstantIntValue(loop.getLowerBound()), step = getConstantIntValue(loop.getStep());
  } else if (auto forall = dyn_cast<scf::ForallOp>(owner)) {
    const unsigned i = arg.getArgNumber();
    if (i < forall.getRank())
      lb = getConstantIntValue(forall.getMixedLowerBound()[i]), step = getConstantIntValue(forall.getMixedStep()[i]);
  }
  return lb && step && *lb % block == 0 && *step % block == 0;
}

// The block index of an offset that blockAligned accepts.
Value blockIndex(OpBuilder& b, Location loc, OpFoldResult offset, int64_t block) {
  if (auto c = getConstantIntValue(offset)) return arith::ConstantIndexOp::create(b, loc, *c / block);
  Value v = cast<Value>(offset);
  if (auto apply = v.getDefiningOp<affine::AffineApplyOp>()) return apply.getOperand(0);
  return arith::DivUIOp::create(b, loc, v, arith::ConstantIndexOp::create(b, loc, block));
}

// The block size a slice asks for (0: not one block of the last dimension, whole in the others).
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
  return b != ShapedType::kDynamic && b < d && d % b == 0 && blockAligned(offsets.back(), b) ? b : 0;
}

// The block size a use of `src` (a static f32 tensor of rank >= 2) reads: a slice that is one
// block of the last dimension (blockOf), or a vector read (a slice the schedule folded into it) of
// b elements of the last dimension at a multiple of b, unmasked, in bounds there, its vector
// dimensions the tensor's innermost ones. 0: not a block read.
int64_t blockRead(Operation* user, Value src, RankedTensorType type) {
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(user)) return s.getSource() == src ? blockOf(s, type) : 0;
  auto r = dyn_cast<vector::TransferReadOp>(user);
  if (!r || r.getBase() != src || r.getMask() || !r.getPermutationMap().isMinorIdentity() ||
      !r.getInBoundsValues().back())
    return 0;
  const int64_t d = type.getDimSize(type.getRank() - 1), b = r.getVectorType().getShape().back();
  return b < d && d % b == 0 && blockAligned(OpFoldResult(r.getIndices().back()), b) ? b : 0;
}

// A block read (blockRead: b) rewritten to read `packed`, the same values stored as
// [dn / b, d0, ..., d(n-1), b].
void readPacked(Operation* user, Value packed, RankedTensorType type, int64_t b) {
  OpBuilder builder(user);
  const Location loc = user->getLoc();
  const int64_t r = type.getRank();
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(user)) {
    Value q = blockIndex(builder, loc, s.getMixedOffsets().back(), b);
    SmallVector<OpFoldResult> offsets = {q}, sizes = {builder.getIndexAttr(1)};
    SmallVector<OpFoldResult> strides(size_t(r + 1), builder.getIndexAttr(1));
    for (int64_t i = 0; i < r; ++i) {
      offsets.push_back(builder.getIndexAttr(0));
      sizes.push_back(builder.getIndexAttr(i + 1 < r ? type.getDimSize(i) : b));
    }
    auto block = tensor::ExtractSliceOp::create(builder, loc, s.getResultType(), packed, offsets, sizes, strides);
    s.getResult().replaceAllUsesWith(block.getResult());
    s.erase();
    return;
  }
  auto rd = cast<vector::TransferReadOp>(user);
  SmallVector<Value> idx = {blockIndex(builder, loc, OpFoldResult(rd.getIndices().back()), b)};
  for (int64_t i = 0; i + 1 < r; ++i) idx.push_back(rd.getIndices()[size_t(i)]);
  idx.push_back(arith::ConstantIndexOp::create(builder, loc, 0));
  Value v = vector::TransferReadOp::create(builder, loc, rd.getVectorType(), packed, idx, rd.getPadding(),
                                           rd.getInBoundsValues());
  rd.getResult().replaceAllUsesWith(v);
  rd.erase();
}

// A tensor's type packed with block b: [dn / b, d0, ..., d(n-1), b].
RankedTensorType packedType(RankedTensorType type, int64_t b) {
  const int64_t r = type.getRank();
  SmallVector<int64_t> shape = {type.getDimSize(r - 1) / b};
  for (int64_t i = 0; i + 1 < r; ++i) shape.push_back(type.getDimSize(i));
  shape.push_back(b);
  return RankedTensorType::get(shape, type.getElementType());
}

// The constant packed with block b (storeInWeightBlocks).
DenseElementsAttr packed(DenseElementsAttr attr, RankedTensorType type, int64_t b) {
  const int64_t d = type.getDimSize(type.getRank() - 1);
  auto values = attr.getValues<float>();
  std::vector<float> in(values.begin(), values.end()), out(in.size());
  storeInWeightBlocks(in.data(), int64_t(in.size()) / d, d, b, out.data());
  return DenseElementsAttr::get(packedType(type, b), ArrayRef<float>(out));
}

// A static f32 tensor of rank >= 2 with more than one row (one row is contiguous already).
bool packableType(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type && type.hasStaticShape() && type.getRank() >= 2 && type.getElementType().isF32() &&
         type.getNumElements() > type.getDimSize(type.getRank() - 1);
}

}  // namespace

int packConstantBlocks(Operation* root) {
  SmallVector<arith::ConstantOp> constants;
  root->walk([&](arith::ConstantOp c) {
    auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
    if (attr && !attr.isSplat() && packableType(c.getType())) constants.push_back(c);
  });
  int n = 0;
  for (arith::ConstantOp c : constants) {
    auto type = cast<RankedTensorType>(c.getType());
    std::map<int64_t, Value> made;  // block -> the packed constant
    SmallVector<std::pair<Operation*, int64_t>> reads;
    for (Operation* user : c->getUsers())
      if (int64_t b = blockRead(user, c.getResult(), type)) reads.push_back({user, b});
    for (auto [user, b] : reads) {
      Value& p = made[b];
      if (!p) {
        OpBuilder at(c);
        p = arith::ConstantOp::create(at, c.getLoc(), packed(cast<DenseElementsAttr>(c.getValue()), type, b)).getResult();
      }
      readPacked(user, p, type, b);
      ++n;
    }
    if (c->use_empty()) c->erase();
  }
  return n;
}

int64_t packWeightArgument(func::FuncOp f) {
  if (f.isExternal() || f.getNumArguments() < 2) return 0;
  // The weight as a tensor: bufferization.to_tensor of argument 1, through memref.collapse_shape
  // (a 1x1 convolution's filter as a K x N matrix).
  Value m = f.getArgument(1), t;
  for (int guard = 0; guard < 4 && !t; ++guard) {
    if (!m.hasOneUse()) return 0;
    Operation* user = *m.getUsers().begin();
    if (auto c = dyn_cast<memref::CollapseShapeOp>(user)) m = c.getResult();
    else if (auto tt = dyn_cast<bufferization::ToTensorOp>(user)) t = tt.getResult();
    else return 0;
  }
  if (!t || !packableType(t.getType())) return 0;
  auto type = cast<RankedTensorType>(t.getType());
  // Every read a block read of one size, or nothing changes (a read left as it was would take the
  // packed memory for the stored layout).
  int64_t b = 0;
  for (Operation* user : t.getUsers()) {
    const int64_t ub = blockRead(user, t, type);
    if (ub == 0 || (b != 0 && ub != b)) return 0;
    b = ub;
  }
  if (b == 0) return 0;
  // The argument's memory holds the packed layout: viewed as such (no copy).
  SmallVector<Operation*> users(t.getUsers().begin(), t.getUsers().end());
  OpBuilder builder(f.getContext());
  builder.setInsertionPointAfter(t.getDefiningOp());
  const Location loc = t.getLoc();
  const int64_t r = type.getRank();
  SmallVector<ReassociationIndices> whole(1), whole_packed(1);
  for (int64_t i = 0; i < r; ++i) whole[0].push_back(i);
  for (int64_t i = 0; i <= r; ++i) whole_packed[0].push_back(i);
  Value flat = tensor::CollapseShapeOp::create(builder, loc, t, whole);
  Value view = tensor::ExpandShapeOp::create(builder, loc, packedType(type, b), flat, whole_packed);
  for (Operation* user : users) readPacked(user, view, type, b);
  // What the caller must store: the object's kWeightsBlockSymbol() returns b.
  auto module = f->getParentOfType<ModuleOp>();
  builder.setInsertionPointToEnd(module.getBody());
  auto i64 = builder.getI64Type();
  auto fn = func::FuncOp::create(builder, loc, kWeightsBlockSymbol, builder.getFunctionType({}, {i64}));
  OpBuilder body = OpBuilder::atBlockBegin(fn.addEntryBlock());
  func::ReturnOp::create(body, loc, ValueRange{arith::ConstantIntOp::create(body, loc, i64, b).getResult()});
  return b;
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
