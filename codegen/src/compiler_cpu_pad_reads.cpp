// Convolutions read their input through its zero padding without copying it (CPU, after the
// schedule, on tensors).
//
// A convolution's payload pads its input (`tensor.pad`, zeros) and the direct route reads the
// padded tensor in vector transfers, one window of pixels x channels per register tile and filter
// row. Bufferized, the pad is a whole padded copy of the input: in MobileNetV2 18 copies of up to
// 5 MB, 0.67 ms of its 4.6 ms on the Zen 5 kind, as much as its depthwise convolutions, which ONNX
// Runtime never makes (`tune profile`, docs/models.md). Here each such read of the padded tensor P
// becomes reads of P's source X: for every pixel of the window (the vector's leading dimensions),
// one read of its channels (the innermost dimension, never padded) at the pixel's clamped
// position in X, selected against zeros when the pixel lies on the padding. A pad whose every use
// is such a read (through slices) is then dead, and no copy is made. The clamped reads are always
// in bounds; LLVM turns each select of a read into a zero-masking load whose mask is loop-invariant
// for the columns. Rows on the padding are mostly skipped before this (compiler_cpu_conv_rows.cpp).
#include "compiler_internal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {

using namespace mlir;

namespace {

// A read of the padded tensor through full-rank, unit-stride slices: the pad and the slices on the
// way, whose offsets added to the read's indices give P's coordinates.
struct PadRead {
  vector::TransferReadOp read;
  tensor::PadOp pad;
  SmallVector<tensor::ExtractSliceOp> slices;
};

bool zeroPad(tensor::PadOp p) {
  Value v = p.getConstantPaddingValue();
  return v && matchPattern(v, m_AnyZeroFloat()) && p.getSourceType().hasStaticShape() &&
         !ShapedType::isDynamicShape(p.getStaticLow()) && !ShapedType::isDynamicShape(p.getStaticHigh());
}

// Every use of `v` (the pad, or a slice of it) is a readable transfer or a slice whose uses are;
// the reads are collected with the slices between them and the pad (and every slice met, parents
// first, into `seen`). Changes nothing.
bool collectReads(Value v, tensor::PadOp pad, SmallVector<tensor::ExtractSliceOp> slices, SmallVector<PadRead>& out,
                  SmallVector<tensor::ExtractSliceOp>& seen) {
  const int64_t rank = pad.getResultType().getRank();
  for (Operation* user : v.getUsers()) {
    if (auto s = dyn_cast<tensor::ExtractSliceOp>(user)) {
      if (s.getResultType().getRank() != rank) return false;
      for (OpFoldResult st : s.getMixedStrides())
        if (auto c = getConstantIntValue(st); !c || *c != 1) return false;
      seen.push_back(s);
      SmallVector<tensor::ExtractSliceOp> deeper = slices;
      deeper.push_back(s);
      if (!collectReads(s.getResult(), pad, deeper, out, seen)) return false;
      continue;
    }
    auto r = dyn_cast<vector::TransferReadOp>(user);
    if (!r || r.getBase() != v || r.getMask() || !r.getPermutationMap().isMinorIdentity()) return false;
    const int64_t vrank = r.getVectorType().getRank();
    if (vrank < 1 || vrank > rank) return false;
    // The innermost dimension (the vector's last) must not be padded: it is read whole.
    if (pad.getStaticLow()[size_t(rank - 1)] != 0 || pad.getStaticHigh()[size_t(rank - 1)] != 0) return false;
    // The leading vector dimensions are unrolled: they must lie within P (in-bounds reads).
    auto inb = r.getInBoundsValues();
    for (int64_t i = 0; i + 1 < vrank; ++i)
      if (!inb[size_t(i)]) return false;
    out.push_back(PadRead{r, pad, slices});
  }
  return true;
}

// The reads of X replacing one read of P.
void rewrite(IRRewriter& rw, PadRead pr) {
  vector::TransferReadOp r = pr.read;
  rw.setInsertionPoint(r);
  const Location loc = r.getLoc();
  const auto src = pr.pad.getSourceType();
  const int64_t rank = src.getRank();
  const auto vt = r.getVectorType();
  const int64_t vrank = vt.getRank(), lanes = vt.getShape().back();
  auto cst = [&](int64_t x) -> Value { return arith::ConstantIndexOp::create(rw, loc, x); };
  // P's coordinates of the read's first element: its indices plus the slices' offsets.
  SmallVector<Value> at(r.getIndices().begin(), r.getIndices().end());
  for (tensor::ExtractSliceOp slice : pr.slices)
    for (int64_t d = 0; d < rank; ++d) {
      OpFoldResult off = slice.getMixedOffsets()[size_t(d)];
      if (auto c = getConstantIntValue(off); c && *c == 0) continue;
      at[size_t(d)] = arith::AddIOp::create(rw, loc, at[size_t(d)], getValueOrCreateConstantIndexOp(rw, loc, off));
    }
  auto row = VectorType::get({lanes}, vt.getElementType());
  Value zeros = arith::ConstantOp::create(rw, loc, rw.getZeroAttr(row));
  Value result = arith::ConstantOp::create(rw, loc, rw.getZeroAttr(vt));
  Value t = arith::ConstantOp::create(rw, loc, rw.getBoolAttr(true));
  // (The same source and row index as the read that narrowed its loop: the same rows of P.)
  const bool rowsInInput = r->hasAttr(kRowsInInputAttr);
  // Each element of the leading vector dimensions: its position, validity and clamped read.
  SmallVector<int64_t> lead(vt.getShape().begin(), vt.getShape().end() - 1);
  int64_t count = 1;
  for (int64_t n : lead) count *= n;
  for (int64_t e = 0; e < count; ++e) {
    SmallVector<int64_t> pos(lead.size());
    for (int64_t k = int64_t(lead.size()) - 1, rest = e; k >= 0; --k) pos[size_t(k)] = rest % lead[size_t(k)], rest /= lead[size_t(k)];
    Value valid = t;
    SmallVector<Value> idx;
    for (int64_t d = 0; d < rank; ++d) {
      Value p = at[size_t(d)];
      const int64_t vd = d - (rank - vrank);  // this dimension's place in the vector, or < 0
      if (vd >= 0 && vd + 1 < vrank && pos[size_t(vd)] != 0) p = arith::AddIOp::create(rw, loc, p, cst(pos[size_t(vd)]));
      const int64_t low = pr.pad.getStaticLow()[size_t(d)], high = pr.pad.getStaticHigh()[size_t(d)];
      if (low == 0 && high == 0) {
        idx.push_back(p);
        continue;
      }
      // Rows kept inside the input by skipPaddingRows (NHWC's dimension 1, not a vector dimension):
      // no check.
      if (d == 1 && rowsInInput && vd < 0) {
        idx.push_back(low ? arith::SubIOp::create(rw, loc, p, cst(low)).getResult() : p);
        continue;
      }
      Value x = low ? arith::SubIOp::create(rw, loc, p, cst(low)).getResult() : p;  // X's coordinate
      const int64_t n = src.getDimSize(d);
      Value inLow = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::sge, x, cst(0));
      Value inHigh = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::slt, x, cst(n));
      valid = arith::AndIOp::create(rw, loc, valid, arith::AndIOp::create(rw, loc, inLow, inHigh));
      idx.push_back(arith::MinSIOp::create(rw, loc, arith::MaxSIOp::create(rw, loc, x, cst(0)), cst(n - 1)));
    }
    Value v = vector::TransferReadOp::create(rw, loc, row, pr.pad.getSource(), idx, r.getPadding(),
                                             ArrayRef<bool>{r.getInBoundsValues().back()});
    Value sel = arith::SelectOp::create(rw, loc, valid, v, zeros);
    result = lead.empty() ? sel : vector::InsertOp::create(rw, loc, sel, result, pos).getResult();
  }
  rw.replaceOp(r, result);
}

}  // namespace

int readThroughZeroPads(Operation* root) {
  SmallVector<tensor::PadOp> pads;
  root->walk([&](tensor::PadOp p) {
    if (zeroPad(p)) pads.push_back(p);
  });
  IRRewriter rw(root->getContext());
  int n = 0;
  for (tensor::PadOp p : pads) {
    SmallVector<PadRead> reads;
    SmallVector<tensor::ExtractSliceOp> seen;
    if (!collectReads(p.getResult(), p, {}, reads, seen) || reads.empty()) continue;
    for (const PadRead& r : reads) rewrite(rw, r);
    // The slices and the pad, now without uses (children before their parents).
    for (tensor::ExtractSliceOp s : llvm::reverse(seen))
      if (s->use_empty()) rw.eraseOp(s);
    if (p->use_empty()) rw.eraseOp(p);
    ++n;
  }
  return n;
}

namespace {

// As a pass, for consumers who apply an exported library with sextant-opt
// ("sextant-read-through-zero-pads", after the transform interpreter and
// sextant-skip-padding-rows).
struct ReadThroughZeroPadsPass : public PassWrapper<ReadThroughZeroPadsPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ReadThroughZeroPadsPass)
  StringRef getArgument() const final { return "sextant-read-through-zero-pads"; }
  StringRef getDescription() const final {
    return "Sextant: vector reads of a zero tensor.pad read its source (clamped, selected against zeros), and the "
           "padded copy is not made";
  }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<arith::ArithDialect, tensor::TensorDialect, vector::VectorDialect>();
  }
  void runOnOperation() override { readThroughZeroPads(getOperation()); }
};

}  // namespace

void registerReadThroughZeroPadsPass() { PassRegistration<ReadThroughZeroPadsPass>(); }

}  // namespace sextant::detail
