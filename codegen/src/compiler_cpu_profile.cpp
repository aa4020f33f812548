// A network's per-op clock (tune compile --profile, tune model --profile): each op of a function's
// body that does work (the network's public functions and the private ones they call: the ONNX
// importer puts each convolution and matmul with its padding and epilogue in one) gets a call of
// __sextant_prof_begin(i) before it and __sextant_prof_end(i) after it (codegen/model_runtime/model_profile.c, linked into the shared
// object), on tensors, after the elementwise chains are fused and before the library's schedules.
//
// What an op's time covers: ops a schedule fuses into a later op (a zero fill into its GEMM's
// tiles, a GEMM or convolution into its epilogue's tiles, a pad into its convolution) leave their
// pair of calls around nothing, and their time is the later op's. The calls are opaque to MLIR and
// LLVM (they may touch any memory), so nothing moves across them; what they cost (two clock
// readings, ~40 ns) is counted in the op.
#include "compiler_internal.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <sstream>

namespace sextant::detail {

using namespace mlir;

namespace {

std::string dims(Type t) {
  auto s = dyn_cast<ShapedType>(t);
  if (!s || !s.hasRank()) return "?";
  std::ostringstream out;
  bool first = true;
  for (int64_t d : s.getShape()) {
    if (!first) out << 'x';
    first = false;
    if (ShapedType::isDynamic(d)) out << '?';
    else out << d;
  }
  return first ? std::string("scalar") : out.str();
}

// Ops that cost nothing (constants, shapes, views) are not timed.
bool free(Operation* op) {
  return op->hasTrait<OpTrait::ConstantLike>() || op->hasTrait<OpTrait::IsTerminator>() ||
         isa<tensor::EmptyOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp, tensor::DimOp>(op);
}

ProfiledOp describe(Operation* op, const llvm::DenseMap<Operation*, int64_t>& ids) {
  ProfiledOp p;
  p.op = op->getName().getStringRef().str();
  std::ostringstream label;
  label << p.op;
  if (op->getNumResults() > 0) label << " -> " << dims(op->getResult(0).getType());
  auto linalg = dyn_cast<linalg::LinalgOp>(op);
  if (linalg) {
    // Loop counts: 2 x the iteration space for contractions and convolutions, one per point
    // otherwise (elementwise, reductions, pooling windows).
    double points = 1;
    bool known = true;
    for (int64_t r : linalg.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(r)) known = false;
      points *= double(r);
    }
    const bool fma = linalg::isaConvolutionOpInterface(linalg) || linalg::isaContractionOpInterface(linalg);
    if (known) p.flops = fma && !isa<linalg::PoolingNhwcMaxOp, linalg::PoolingNhwcSumOp>(op) ? 2 * points : points;
    if (linalg.getNumDpsInputs() >= 2 && fma) label << " <- " << dims(linalg.getDpsInputs()[1].getType());
    if (auto s = op->getAttrOfType<DenseIntElementsAttr>("strides")) {
      auto v = s.getValues<int64_t>();
      bool unit = std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
      if (!unit) label << " stride " << *v.begin();
    }
    std::string kind = "elementwise";
    const std::string n = p.op;
    if (n.find("depthwise") != std::string::npos) kind = "depthwise conv";
    else if (n.find("pooling") != std::string::npos) kind = "pooling";
    else if (n.find("conv") != std::string::npos) {
      auto f = dyn_cast<ShapedType>(linalg.getDpsInputs()[1].getType());
      const bool one = f && f.hasRank() && f.getRank() == 4 &&
                       (n.find("hwcf") != std::string::npos ? f.getDimSize(0) == 1 && f.getDimSize(1) == 1
                                                            : f.getDimSize(1) == 1 && f.getDimSize(2) == 1);
      kind = one ? "conv 1x1" : "conv";
    } else if (n.find("matmul") != std::string::npos) kind = "matmul";
    else if (isa<linalg::FillOp>(op)) kind = "fill";
    else if (linalg.getNumReductionLoops() > 0) kind = fma ? "matmul" : "reduction";
    else if (linalg.getNumDpsInits() == 1) {
      // An epilogue: the init (or an input) is the result of a named contraction or convolution.
      for (Value v : op->getOperands())
        if (Operation* d = v.getDefiningOp())
          if (isa<linalg::LinalgOp>(d) && !isa<linalg::GenericOp, linalg::FillOp>(d) &&
              d->getName().getStringRef().contains("pooling") == false) {
            kind = "epilogue";
            label << " (epilogue of " << d->getName().getStringRef().str() << ")";
            if (auto it = ids.find(d); it != ids.end()) p.producer = it->second;
            break;
          }
    }
    p.kind = kind;
  } else if (isa<tensor::PadOp>(op)) {
    p.kind = "pad";
  } else if (isa<tensor::InsertSliceOp, tensor::ExtractSliceOp, tensor::ConcatOp>(op)) {
    p.kind = "copy";
  } else {
    p.kind = "other";
  }
  p.label = label.str();
  return p;
}

// A call: its callee named (a call of a timed function holds the clocks of the callee's ops, which
// are the rows `tune profile` shows).
ProfiledOp describeCall(func::CallOp call) {
  ProfiledOp p;
  p.op = "func.call";
  p.kind = "other";
  p.label = "call @";
  p.label += call.getCallee().str();
  return p;
}

}  // namespace

std::vector<ProfiledOp> instrumentOps(ModuleOp m) {
  std::vector<ProfiledOp> ops;
  MLIRContext* ctx = m.getContext();
  OpBuilder b(ctx);
  auto fnType = b.getFunctionType({b.getI64Type()}, {});
  b.setInsertionPointToStart(m.getBody());
  for (const char* name : {"__sextant_prof_begin", "__sextant_prof_end"})
    if (!m.lookupSymbol(name)) {
      auto f = func::FuncOp::create(b, m.getLoc(), name, fnType);
      f.setPrivate();
    }
  llvm::DenseMap<Operation*, int64_t> ids;
  auto timed = [](func::FuncOp f) { return !f.isExternal() && !f.getName().starts_with("__sextant_prof"); };
  m.walk([&](func::FuncOp f) {
    if (!timed(f)) return;
    std::vector<Operation*> work;
    for (Operation& op : f.getBody().front())
      if (!free(&op) && !(isa<func::CallOp>(&op) && cast<func::CallOp>(&op).getCallee().starts_with("__sextant_prof")))
        work.push_back(&op);
    for (Operation* op : work) {
      const int64_t id = int64_t(ops.size());
      auto call = dyn_cast<func::CallOp>(op);
      ops.push_back(call ? describeCall(call) : describe(op, ids));
      ids[op] = id;
      ProfiledOp& p = ops.back();
      p.function = f.getName().str();
      p.nested = !f.isPublic();
      if (call)
        if (auto callee = m.lookupSymbol<func::FuncOp>(call.getCallee())) p.container = timed(callee);
      if (p.nested) {
        std::string label = "@";
        label += p.function;
        label += ": ";
        label += p.label;
        p.label = label;
      }
      b.setInsertionPoint(op);
      Value c = arith::ConstantIntOp::create(b, op->getLoc(), b.getI64Type(), id);
      func::CallOp::create(b, op->getLoc(), "__sextant_prof_begin", TypeRange{}, ValueRange{c});
      b.setInsertionPointAfter(op);
      func::CallOp::create(b, op->getLoc(), "__sextant_prof_end", TypeRange{}, ValueRange{c});
    }
  });
  return ops;
}

void markEmptyClocks(ModuleOp m, std::vector<ProfiledOp>& ops) {
  // A begin whose end follows with nothing between but constants: the op was fused into another
  // (or folded away).
  m.walk([&](func::CallOp begin) {
    if (begin.getCallee() != "__sextant_prof_begin") return;
    for (Operation* op = begin->getNextNode(); op; op = op->getNextNode()) {
      auto end = dyn_cast<func::CallOp>(op);
      if (end && end.getCallee() == "__sextant_prof_end") {
        IntegerAttr id;
        if (matchPattern(begin.getOperand(0), m_Constant(&id)) && id.getInt() >= 0 && size_t(id.getInt()) < ops.size())
          ops[size_t(id.getInt())].fused = true;
        return;
      }
      if (!op->hasTrait<OpTrait::ConstantLike>()) return;
    }
  });
}

}  // namespace sextant::detail
