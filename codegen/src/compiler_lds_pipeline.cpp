// The MFMA route's LDS double buffering (AMD gfx942, knob pipeline = 2): the next K tile's global
// loads are issued at the top of each K-loop iteration, before the current tile's MFMAs, and
// stored after them into the other half of a doubled LDS buffer; one barrier per iteration.
//
//   before                                 after
//   for k:                                 copy(k0) -> buf[0]; barrier
//     load A(k), B(k) from global          for k:
//     store them to LDS; barrier             regs = load A, B (next(k)) from global
//     LDS reads + MFMAs on buf               LDS reads + MFMAs on buf[parity(k)]
//     barrier                                store regs -> buf[1 - parity(k)]; barrier
//
// next(k) = min(k + step, last): the last iteration loads and stores its own tile once more
// instead of branching (one redundant tile per K loop; nobody reads it). Why one barrier is
// enough: iteration i writes half 1-p, which iteration i-1 read before its closing barrier, and
// iteration i+1 reads it only after iteration i's barrier. The lock-step interpreter's race check
// (tests/codegen/mfma_sim_test.cpp) checks exactly this on real kernels.
//
// There is no upstream counterpart for AMD: MLIR 22's pipelining transform
// (transform.nvgpu.pipeline_shared_memory_copies) needs cp.async, which gfx942 has not; the
// structure is that of the classic "prefetch to registers" GEMM (e.g. rocWMMA's and Composable
// Kernel's 2-stage LDS pipelines), written here on the scheduled IR.
#include "compiler_internal.h"

#include <algorithm>
#include <map>
#include <set>

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {
namespace {

using namespace mlir;

bool isWorkgroup(Type t) {
  auto m = llvm::dyn_cast<MemRefType>(t);
  auto s = m ? llvm::dyn_cast_or_null<gpu::AddressSpaceAttr>(m.getMemorySpace()) : nullptr;
  return s && s.getValue() == gpu::AddressSpace::Workgroup;
}

std::string where(Operation* op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName() << " at " << op->getLoc();
  return s;
}

// The memref operand of a load or store, or null for anything else.
Value accessedMemref(Operation* op) {
  if (auto l = llvm::dyn_cast<vector::LoadOp>(op)) return l.getBase();
  if (auto l = llvm::dyn_cast<memref::LoadOp>(op)) return l.getMemRef();
  if (auto s = llvm::dyn_cast<vector::StoreOp>(op)) return s.getBase();
  if (auto s = llvm::dyn_cast<memref::StoreOp>(op)) return s.getMemRef();
  return nullptr;
}
bool isStore(Operation* op) { return llvm::isa<vector::StoreOp, memref::StoreOp>(op); }
// Operand number of the first index of a load or store.
unsigned firstIndex(Operation* op) { return isStore(op) ? 2 : 1; }

bool pipelineLoop(gpu::LaunchOp launch, scf::ForOp loop, std::string& err) {
  auto lo = getConstantIntValue(loop.getLowerBound()), hi = getConstantIntValue(loop.getUpperBound()),
       step = getConstantIntValue(loop.getStep());
  if (!lo || !hi || !step || *step <= 0) {
    err = "LDS double buffering: the K loop's bounds are not constants";
    return false;
  }
  const int64_t trips = (*hi - *lo + *step - 1) / *step;
  if (trips < 2) return true;  // nothing to overlap
  Block* body = loop.getBody();

  // The LDS stores (the copies' ends) and the ops that compute what they store (the copies).
  std::vector<Operation*> stores, barriers;
  std::set<Operation*> copy;
  for (Operation& op : body->without_terminator()) {
    if (llvm::isa<gpu::BarrierOp>(op)) barriers.push_back(&op);
    Value m = accessedMemref(&op);
    if (m && isStore(&op)) {
      if (!isWorkgroup(m.getType())) {
        err = "LDS double buffering: the K loop writes global memory (" + where(&op) + ")";
        return false;
      }
      stores.push_back(&op);
    }
  }
  if (stores.empty()) {
    err = "LDS double buffering: the K loop stores nothing to LDS";
    return false;
  }
  std::vector<Operation*> work;
  auto addDef = [&](Value v) {
    Operation* d = v.getDefiningOp();
    if (d && d->getBlock() == body && copy.insert(d).second) work.push_back(d);
  };
  for (Operation* s : stores)
    for (unsigned i = 0; i < s->getNumOperands(); ++i)
      if (s->getOperand(i) != accessedMemref(s)) addDef(s->getOperand(i));
  while (!work.empty()) {
    Operation* op = work.back();
    work.pop_back();
    if (op->getNumRegions() || (!isMemoryEffectFree(op) && !llvm::isa<vector::LoadOp, memref::LoadOp>(op))) {
      err = "LDS double buffering: a copy into LDS computes with " + where(op);
      return false;
    }
    if (Value m = accessedMemref(op); m && isWorkgroup(m.getType())) {
      err = "LDS double buffering: a copy into LDS reads LDS (" + where(op) + ")";
      return false;
    }
    for (Value v : op->getOperands()) addDef(v);
  }
  // Nothing else in the loop may write memory (the MFMAs and the operand reads do not).
  for (Operation& op : body->without_terminator()) {
    if (copy.count(&op) || llvm::isa<gpu::BarrierOp>(op) || std::find(stores.begin(), stores.end(), &op) != stores.end())
      continue;
    if (llvm::isa<memref::AllocOp, memref::DeallocOp>(op) || isMemoryEffectFree(&op) ||
        llvm::isa<vector::LoadOp, memref::LoadOp>(op))
      continue;
    err = "LDS double buffering: the K loop holds " + where(&op) + ", which it does not handle";
    return false;
  }

  // Each LDS buffer written in the loop: a statically shaped memref.alloc, doubled along dim 0.
  std::map<Operation*, memref::AllocOp> doubled;  // old alloc -> new
  std::map<Operation*, int64_t> rows;
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  for (Operation* s : stores) {
    auto alloc = accessedMemref(s).getDefiningOp<memref::AllocOp>();
    if (!alloc || !alloc.getType().hasStaticShape() || alloc.getType().getRank() < 1) {
      err = "LDS double buffering: an LDS buffer is not a statically shaped memref.alloc (" + where(s) + ")";
      return false;
    }
    if (doubled.count(alloc)) continue;
    if (!launch->isProperAncestor(alloc)) {
      err = "LDS double buffering: an LDS buffer is allocated outside the kernel";
      return false;
    }
    for (Operation* u : alloc->getUsers())
      if (!llvm::isa<memref::DeallocOp>(u) && !(accessedMemref(u) == alloc.getResult() && body->findAncestorOpInBlock(*u))) {
        err = "LDS double buffering: an LDS buffer is used by " + where(u) + ", which it does not handle";
        return false;
      }
    auto ty = alloc.getType();
    SmallVector<int64_t> shape(ty.getShape());
    rows[alloc] = shape[0];
    shape[0] *= 2;
    auto nty = MemRefType::get(shape, ty.getElementType(), ty.getLayout(), ty.getMemorySpace());
    doubled[alloc] = memref::AllocOp::create(b, alloc.getLoc(), nty, alloc.getAlignmentAttr());
  }
  auto cst = [&](OpBuilder& bb, int64_t v) -> Value { return arith::ConstantIndexOp::create(bb, loc, v); };
  // A store of the copy, mapped, into half `half` (an index: 0 or rows) of the doubled buffer.
  auto emitStore = [&](OpBuilder& bb, Operation* s, IRMapping& m, Value half) {
    unsigned i0 = firstIndex(s);
    Value row = arith::AddIOp::create(bb, loc, m.lookupOrDefault(s->getOperand(i0)), half);
    Operation* c = bb.clone(*s, m);
    auto alloc = accessedMemref(s).getDefiningOp<memref::AllocOp>();
    c->setOperand(1, doubled[alloc].getResult());
    c->setOperand(i0, row);
  };

  // Prologue: the first tile into half 0.
  {
    IRMapping m;
    m.map(loop.getInductionVar(), loop.getLowerBound());
    for (Operation& op : body->without_terminator())
      if (copy.count(&op)) b.clone(op, m);
    Value zero = cst(b, 0);
    for (Operation* s : stores) emitStore(b, s, m, zero);
    gpu::BarrierOp::create(b, loc);
  }
  // In the loop: parity, the next tile's loads first, reads from the current half.
  OpBuilder top = OpBuilder::atBlockBegin(body);
  Value iv = loop.getInductionVar();
  Value rel = arith::DivUIOp::create(top, loc, arith::SubIOp::create(top, loc, iv, cst(top, *lo)), cst(top, *step));
  Value parity = arith::RemUIOp::create(top, loc, rel, cst(top, 2));
  Value other = arith::SubIOp::create(top, loc, cst(top, 1), parity);
  Value next = arith::MinSIOp::create(top, loc, arith::AddIOp::create(top, loc, iv, cst(top, *step)),
                                      cst(top, *lo + (trips - 1) * *step));
  IRMapping m;
  m.map(iv, next);
  for (Operation& op : llvm::make_early_inc_range(body->without_terminator())) {
    if (!copy.count(&op)) continue;
    top.clone(op, m);
  }
  std::map<Operation*, std::pair<Value, Value>> halves;  // old alloc -> (current, next) offsets
  for (auto& [old, nu] : doubled)
    halves[old] = {arith::MulIOp::create(top, loc, parity, cst(top, rows[old])),
                   arith::MulIOp::create(top, loc, other, cst(top, rows[old]))};
  OpBuilder end(body->getTerminator());
  for (Operation* s : stores) {
    auto alloc = accessedMemref(s).getDefiningOp<memref::AllocOp>();
    emitStore(end, s, m, halves[alloc].second);
  }
  gpu::BarrierOp::create(end, loc);
  // The MFMAs' operand reads move to the current half.
  for (auto& [old, nu] : doubled) {
    std::vector<Operation*> users(old->getUsers().begin(), old->getUsers().end());
    for (Operation* u : users) {
      if (llvm::isa<memref::DeallocOp>(u) || isStore(u)) continue;
      OpBuilder ub(u);
      u->setOperand(0, nu.getResult());
      unsigned i0 = firstIndex(u);
      u->setOperand(i0, arith::AddIOp::create(ub, loc, u->getOperand(i0), halves[old].first));
    }
  }
  for (Operation* s : stores) s->erase();
  for (Operation* br : barriers) br->erase();
  // The old copies (now unused) and the old buffers.
  std::vector<Operation*> old_copy;
  for (Operation& op : body->without_terminator())
    if (copy.count(&op)) old_copy.push_back(&op);
  for (auto it = old_copy.rbegin(); it != old_copy.rend(); ++it)
    if ((*it)->use_empty()) (*it)->erase();
  for (auto& [old, nu] : doubled) {
    for (Operation* u : llvm::make_early_inc_range(old->getUsers())) u->erase();
    old->erase();
  }
  return true;
}

}  // namespace

bool doubleBufferLds(Operation* root, std::string& err) {
  std::vector<std::pair<gpu::LaunchOp, scf::ForOp>> loops;
  root->walk([&](gpu::LaunchOp launch) {
    launch.walk([&](scf::ForOp f) {
      bool mfma = false;
      for (Operation& op : *f.getBody()) mfma |= llvm::isa<amdgpu::MFMAOp>(op);
      if (mfma) loops.push_back({launch, f});
    });
  });
  if (loops.empty()) {
    err = "LDS double buffering: no K loop with MFMAs in a kernel";
    return false;
  }
  for (auto& [launch, loop] : loops)
    if (!pipelineLoop(launch, loop, err)) return false;
  return true;
}

namespace {

// The rewrite as a pass, for Transform libraries (transform.apply_registered_pass
// "sextant-lds-double-buffer"), after sextant-vector-to-mfma and the transfers' lowering.
struct LdsDoubleBufferPass : public PassWrapper<LdsDoubleBufferPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LdsDoubleBufferPass)
  StringRef getArgument() const final { return "sextant-lds-double-buffer"; }
  StringRef getDescription() const final {
    return "Sextant: double-buffered LDS in MFMA K loops, the next tile's global loads before the current tile's "
           "MFMAs (gfx942)";
  }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<arith::ArithDialect, memref::MemRefDialect, gpu::GPUDialect>();
  }
  void runOnOperation() override {
    std::string err;
    if (!doubleBufferLds(getOperation(), err)) {
      getOperation()->emitError() << err;
      signalPassFailure();
    }
  }
};

}  // namespace

void registerLdsDoubleBufferPass() { PassRegistration<LdsDoubleBufferPass>(); }

}  // namespace sextant::detail
