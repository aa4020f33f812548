// The MFMA route's own rewrite (AMD gfx942): every wave-level vector.contract of an intrinsic's
// shape (left by the schedule after unroll_vectors_subgroup_mma) becomes one amdgpu.mfma whose
// operands each lane loads itself, at the positions of the CDNA3 lane layouts (mfma.h).
// Upstream MLIR 22 has no vector.contract -> MFMA lowering (../shared/notes/gpu-matrix-units.md);
// IREE's route is the model (distribute to lanes, then amdgpu.mfma: iree-org/iree
// compiler/src/iree/compiler/Codegen/Dialect/GPU/IR/IREEGPUAttrs.cpp).
//
// How: at this point every lane of a wave computes the whole wave tile (vector semantics), its
// operands read from LDS by vector.transfer_read and the accumulator carried through the K loop.
// 1. Each contract: A and B become per-lane 1-D transfer_reads of the elements the lane holds
//    (4 along K), the accumulator goes down to the lane's vector<accElems x f32> and back up
//    through unrealized_conversion_cast ops tagged "sextant.mfma".
// 2. Loop-carried accumulators change type in place (init cast down before the loop, the result
//    cast up after it).
// 3. The casts meet what they came from: down(up(x)) = x; down(read of C) = the lane's reads of C
//    (4 consecutive rows of one column per block); up(x) written to C = the lane's writes; a
//    splat constant stays a splat. A tagged cast left over is an error, never a silently wrong
//    kernel.
#include "compiler_internal.h"

#include <set>

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "sextant/codegen/mfma.h"

namespace sextant::detail {
namespace {

using namespace mlir;

constexpr const char* kTag = "sextant.mfma";

struct Rewriter {
  const MfmaIntrinsic& mi;
  std::string& err;
  VectorType acc_ty, lane_acc_ty, lane_in_ty;

  Value cst(OpBuilder& b, Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(OpBuilder& b, Location loc, Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  // The lane (0..63) within the wave: block dims are (threads, 1, 1) and waves are consecutive
  // thread ids (#gpu.warp<linear_dim_*> with warp_size 64).
  Value lane(OpBuilder& b, Location loc) {
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    return arith::RemUIOp::create(b, loc, tid, cst(b, loc, 64));
  }

  // Every mfma.h layout is a lane part plus a per-element offset (the map at lane 0): the lane
  // part is (l % extent, 4 * (l / extent)), extent being the rows of A, the columns of B or C.
  std::pair<Value, Value> laneBase(OpBuilder& b, Location loc, Value l, int64_t extent) {
    Value across = arith::RemUIOp::create(b, loc, l, cst(b, loc, extent));
    Value group = arith::MulIOp::create(b, loc, arith::DivUIOp::create(b, loc, l, cst(b, loc, extent)), cst(b, loc, 4));
    return {across, group};
  }

  // The vector dimension of contract operand `operand` (0: lhs, 1: rhs) that holds the reduction
  // (K), or -1.
  static int64_t kVectorDim(vector::ContractionOp c, unsigned operand) {
    AffineMap m = c.getIndexingMapsArray()[operand];
    auto its = c.getIteratorTypesArray();
    for (unsigned v = 0; v < m.getNumResults(); ++v)
      if (auto de = llvm::dyn_cast<AffineDimExpr>(m.getResult(v)); de && its[de.getPosition()] == vector::IteratorType::reduction)
        return v;
    return -1;
  }

  UnrealizedConversionCastOp cast(OpBuilder& b, Location loc, Type to, Value v) {
    auto c = UnrealizedConversionCastOp::create(b, loc, TypeRange{to}, ValueRange{v});
    c->setAttr(kTag, b.getUnitAttr());
    return c;
  }

  // The memref dimension that vector dimension `vdim` of a transfer walks along, or -1.
  static int64_t memDim(AffineMap perm, unsigned vdim) {
    auto e = llvm::dyn_cast<AffineDimExpr>(perm.getResult(vdim));
    return e ? int64_t(e.getPosition()) : -1;
  }

  // A 1-D read of `len` elements of transfer `r`'s source, starting where `r` would put vector
  // position (start[0], start[1]) and walking along `r`'s vector dimension `along`: one vector
  // load where that is the memref's innermost dimension, else `len` scalar loads (the generic
  // lowering of a strided 1-D transfer is a loop with dynamically indexed inserts).
  Value laneRead(OpBuilder& b, Location loc, vector::TransferReadOp r, Value start0, Value start1, unsigned along,
                 int64_t len, Type elem) {
    AffineMap perm = r.getPermutationMap();
    SmallVector<Value> ind(r.getIndices().begin(), r.getIndices().end());
    Value start[2] = {start0, start1};
    for (unsigned v = 0; v < 2; ++v) ind[memDim(perm, v)] = add(b, loc, ind[memDim(perm, v)], start[v]);
    const int64_t d = memDim(perm, along);
    auto vt = VectorType::get({len}, elem);
    if (d == int64_t(ind.size()) - 1) return vector::LoadOp::create(b, loc, vt, r.getBase(), ind, false, IntegerAttr());
    SmallVector<Value> elems;
    for (int64_t i = 0; i < len; ++i) {
      SmallVector<Value> at = ind;
      at[d] = add(b, loc, ind[d], cst(b, loc, i));
      elems.push_back(memref::LoadOp::create(b, loc, r.getBase(), at));
    }
    return vector::FromElementsOp::create(b, loc, vt, elems);
  }

  // A transfer of a 2-D vector whose dimensions both walk memref dimensions, fully in bounds.
  template <typename T>
  bool plainTransfer(T t) {
    auto vt = t.getVectorType();
    if (vt.getRank() != 2 || t.getMask()) return false;
    for (unsigned v = 0; v < 2; ++v)
      if (memDim(t.getPermutationMap(), v) < 0) return false;
    for (bool ib : t.getInBoundsValues())
      if (!ib) return false;
    return true;
  }

  // lds_k_major: an LDS operand buffer whose K dimension is not the innermost one (B in NN, A in
  // TN) is allocated transposed, so that each lane's 4 K elements are one 64-bit LDS load instead
  // of 4 scalar ones. Its users (the copies into it, the operand reads) follow: reads get the
  // transposed permutation map (laneRead then sees K innermost), writes become element stores at
  // swapped indices. Returns false (buffer left as it is) if a user is anything else.
  bool transposeBuffer(memref::AllocOp alloc) {
    auto t = alloc.getType();
    if (t.getRank() != 2 || !t.hasStaticShape() || !t.getLayout().isIdentity()) return false;
    for (Operation* u : alloc->getUsers()) {
      if (llvm::isa<vector::TransferReadOp>(u)) continue;
      auto w = llvm::dyn_cast<vector::TransferWriteOp>(u);
      if (!w || w.getMask() || w.getVectorType().getRank() > 2) return false;
      for (unsigned d = 0; d < unsigned(w.getVectorType().getRank()); ++d)
        if (memDim(w.getPermutationMap(), d) < 0) return false;
    }
    OpBuilder b(alloc);
    auto nt = MemRefType::get({t.getDimSize(1), t.getDimSize(0)}, t.getElementType(), AffineMap(), t.getMemorySpace());
    auto na = memref::AllocOp::create(b, alloc.getLoc(), nt, ValueRange{}, alloc.getAlignmentAttr());
    AffineMap swap = AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, b.getContext());
    for (Operation* u : llvm::to_vector(alloc->getUsers())) {
      OpBuilder ub(u);
      Location loc = u->getLoc();
      if (auto r = llvm::dyn_cast<vector::TransferReadOp>(u)) {
        SmallVector<Value> ind = {r.getIndices()[1], r.getIndices()[0]};
        auto nr = vector::TransferReadOp::create(ub, loc, r.getVectorType(), na, ind,
                                                 AffineMapAttr::get(r.getPermutationMap().compose(swap)), r.getPadding(),
                                                 r.getMask(), r.getInBoundsAttr());
        r.getResult().replaceAllUsesWith(nr.getResult());
        r->erase();
        continue;
      }
      auto w = llvm::cast<vector::TransferWriteOp>(u);
      AffineMap perm = w.getPermutationMap();
      auto vt = w.getVectorType();
      // Element stores: vector position p lands at base + p along the dimensions perm names.
      const int64_t n = vt.getNumElements();
      for (int64_t e = 0; e < n; ++e) {
        SmallVector<int64_t> pos;
        int64_t rest = e;
        for (int64_t d = vt.getRank() - 1; d >= 0; --d) pos.insert(pos.begin(), rest % vt.getDimSize(d)), rest /= vt.getDimSize(d);
        SmallVector<Value> ind(w.getIndices().begin(), w.getIndices().end());
        for (unsigned d = 0; d < pos.size(); ++d) {
          int64_t md = memDim(perm, d);
          if (pos[d]) ind[md] = add(ub, loc, ind[md], cst(ub, loc, pos[d]));
        }
        Value x = vector::ExtractOp::create(ub, loc, w.getValueToStore(), ArrayRef<int64_t>(pos));
        memref::StoreOp::create(ub, loc, x, na, ValueRange{ind[1], ind[0]});
      }
      w->erase();
    }
    alloc->erase();
    return true;
  }

  // lds_pad: the buffer's rows get `pad` more elements (the same indices address the same
  // elements; the row stride changes). Users must be vector transfers, which take any indices.
  bool padBuffer(memref::AllocOp alloc, int64_t pad) {
    auto t = alloc.getType();
    if (t.getRank() != 2 || !t.hasStaticShape() || !t.getLayout().isIdentity()) return false;
    for (Operation* u : alloc->getUsers())
      if (!llvm::isa<vector::TransferReadOp, vector::TransferWriteOp, memref::StoreOp>(u)) return false;
    OpBuilder b(alloc);
    auto nt = MemRefType::get({t.getDimSize(0), t.getDimSize(1) + pad}, t.getElementType(), AffineMap(), t.getMemorySpace());
    auto na = memref::AllocOp::create(b, alloc.getLoc(), nt, ValueRange{}, alloc.getAlignmentAttr());
    // Transfers keep their indices and stay in bounds (every row is longer); their in_bounds
    // attributes stay true.
    alloc.getResult().replaceAllUsesWith(na.getResult());
    alloc->erase();
    return true;
  }

  // The LDS buffer contract operand `operand` is read from (any buffer with `k_minor_only`: only
  // if K is not its innermost dimension), or null.
  static memref::AllocOp operandBuffer(vector::ContractionOp c, unsigned operand, bool k_minor_only) {
    auto r = c->getOperand(operand).getDefiningOp<vector::TransferReadOp>();
    auto alloc = r ? r.getBase().getDefiningOp<memref::AllocOp>() : nullptr;
    if (!alloc || alloc.getType().getRank() != 2) return nullptr;
    const int64_t k = kVectorDim(c, operand);
    if (k_minor_only && (k < 0 || memDim(r.getPermutationMap(), unsigned(k)) == 1)) return nullptr;
    return alloc;
  }

  // Step 1 for one contract.
  bool rewriteContract(vector::ContractionOp c) {
    auto fail = [&](const std::string& why) {
      std::string loc;
      llvm::raw_string_ostream os(loc);
      os << c.getLoc();
      err = "MFMA rewrite: vector.contract at " + loc + ": " + why;
      return false;
    };
    if (c.getKind() != vector::CombiningKind::ADD) return fail("not an add-reduction");
    if (c.getAccType() != acc_ty) return fail("accumulator is not the intrinsic's " + mi.shape() + " f32 tile");
    auto maps = c.getIndexingMapsArray();
    auto its = c.getIteratorTypesArray();
    if (its.size() != 3) return fail("not a 3-D contraction");
    int64_t kdim = -1;
    for (unsigned i = 0; i < 3; ++i)
      if (its[i] == vector::IteratorType::reduction) kdim = kdim < 0 ? int64_t(i) : -2;
    if (kdim < 0) return fail("needs exactly one reduction dimension");
    auto dimAt = [](AffineMap m, unsigned r) { return llvm::cast<AffineDimExpr>(m.getResult(r)).getPosition(); };
    for (auto& m : maps)
      if (m.getNumResults() != 2 || !m.isProjectedPermutation()) return fail("operand maps are not 2-D projections");
    // Vector dimensions of the operands holding M, N and K.
    const int64_t ka = kVectorDim(c, 0), kb = kVectorDim(c, 1);
    if (ka < 0 || kb < 0) return fail("K is missing from an operand");
    const unsigned a_k = unsigned(ka), a_m = 1 - a_k, b_k = unsigned(kb), b_n = 1 - b_k;
    if (dimAt(maps[2], 0) != dimAt(maps[0], a_m) || dimAt(maps[2], 1) != dimAt(maps[1], b_n))
      return fail("the accumulator is not laid out (M, N)");
    auto at = llvm::cast<VectorType>(c.getLhsType()), bt = llvm::cast<VectorType>(c.getRhsType());
    if (at.getDimSize(a_m) != mi.m || at.getDimSize(a_k) != mi.k || bt.getDimSize(b_n) != mi.n ||
        bt.getDimSize(b_k) != mi.k)
      return fail("operands are not of the intrinsic's shape " + mi.shape());
    if (at.getElementType() != lane_in_ty.getElementType() || bt.getElementType() != lane_in_ty.getElementType())
      return fail("operand element types are not the intrinsic's");
    auto ra = c.getLhs().getDefiningOp<vector::TransferReadOp>();
    auto rb = c.getRhs().getDefiningOp<vector::TransferReadOp>();
    if (!ra || !rb || !plainTransfer(ra) || !plainTransfer(rb))
      return fail("operands are not in-bounds reads of a buffer");

    OpBuilder b(c);
    Location loc = c.getLoc();
    Value l = lane(b, loc);
    // A: lane l holds row l % m, K elements 4*(l / m) .. +3 (mfmaLaneA).
    auto [am, ak] = laneBase(b, loc, l, mi.m);
    Value a = laneRead(b, loc, ra, a_m == 0 ? am : ak, a_m == 0 ? ak : am, a_k, mi.aElems(), at.getElementType());
    // B: lane l holds column l % n, K elements 4*(l / n) .. +3 (mfmaLaneB).
    auto [bn, bk] = laneBase(b, loc, l, mi.n);
    Value bv = laneRead(b, loc, rb, b_n == 0 ? bn : bk, b_n == 0 ? bk : bn, b_k, mi.bElems(), bt.getElementType());
    Value acc = cast(b, loc, lane_acc_ty, c.getAcc()).getResult(0);
    auto i32 = [&](int64_t v) { return b.getI32IntegerAttr(int32_t(v)); };
    Value d = amdgpu::MFMAOp::create(b, loc, lane_acc_ty, i32(mi.m), i32(mi.n), i32(mi.k), i32(1), a, bv, acc, i32(0),
                                     i32(0), amdgpu::MFMAPermBAttr::get(b.getContext(), amdgpu::MFMAPermB::none));
    c.getResult().replaceAllUsesWith(cast(b, loc, acc_ty, d).getResult(0));
    c->erase();
    if (ra->use_empty()) ra->erase();
    if (rb->use_empty()) rb->erase();
    return true;
  }

  static bool isDown(Operation* op, Type to) {
    auto c = llvm::dyn_cast<UnrealizedConversionCastOp>(op);
    return c && c->hasAttr(kTag) && c->getNumResults() == 1 && c.getResult(0).getType() == to;
  }

  // Step 2: loop-carried accumulators become lane vectors.
  void rewriteLoops(Operation* root) {
    root->walk([&](scf::ForOp loop) {
      auto yield = llvm::cast<scf::YieldOp>(loop.getBody()->getTerminator());
      for (unsigned j = 0; j < loop.getNumRegionIterArgs(); ++j) {
        BlockArgument arg = loop.getRegionIterArgs()[j];
        if (arg.getType() != acc_ty || arg.use_empty()) continue;
        bool all_down = true;
        for (Operation* u : arg.getUsers()) all_down &= isDown(u, lane_acc_ty);
        Operation* up = yield.getOperand(j).getDefiningOp();
        if (!all_down || !up || !isDown(up, acc_ty)) continue;
        OpBuilder b(loop);
        Location loc = loop.getLoc();
        loop.getInitArgsMutable()[j].assign(cast(b, loc, lane_acc_ty, loop.getInitArgs()[j]).getResult(0));
        arg.setType(lane_acc_ty);
        for (Operation* u : llvm::to_vector(arg.getUsers())) {
          u->getResult(0).replaceAllUsesWith(arg);
          u->erase();
        }
        yield->setOperand(j, up->getOperand(0));
        if (up->use_empty()) up->erase();
        Value res = loop.getResult(j);
        res.setType(lane_acc_ty);
        b.setInsertionPointAfter(loop);
        auto back = cast(b, loc, acc_ty, res);
        res.replaceAllUsesExcept(back.getResult(0), back);
      }
    });
  }

  // Step 3: one pass over the tagged casts; true if anything changed.
  bool resolveOnce(Operation* root) {
    std::vector<UnrealizedConversionCastOp> casts;
    root->walk([&](UnrealizedConversionCastOp c) {
      if (c->hasAttr(kTag)) casts.push_back(c);
    });
    for (auto c : casts) {
      Value in = c.getOperand(0), out = c.getResult(0);
      OpBuilder b(c);
      Location loc = c.getLoc();
      if (out.getType() == lane_acc_ty) {  // down
        Operation* def = in.getDefiningOp();
        if (def && isDown(def, acc_ty)) {
          out.replaceAllUsesWith(def->getOperand(0));
          c->erase();
          if (def->use_empty()) def->erase();
          return true;
        }
        if (auto k = in.getDefiningOp<arith::ConstantOp>()) {
          auto dense = llvm::dyn_cast<DenseElementsAttr>(k.getValue());
          if (dense && dense.isSplat()) {
            Value s = arith::ConstantOp::create(
                b, loc, DenseElementsAttr::get(lane_acc_ty, dense.getSplatValue<Attribute>()));
            out.replaceAllUsesWith(s);
            c->erase();
            return true;
          }
        }
        if (auto r = in.getDefiningOp<vector::TransferReadOp>(); r && plainTransfer(r)) {
          // The lane's accumulator blocks: 4 consecutive rows of column l % n each (mfmaLaneC).
          auto [col, row0] = laneBase(b, loc, lane(b, loc), mi.n);
          Value v = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(lane_acc_ty, b.getF32FloatAttr(0.0f)));
          for (int64_t g = 0; g < mi.accElems() / 4; ++g) {
            Value row = add(b, loc, row0, cst(b, loc, mfmaLaneC(mi, 0, 4 * g).row));
            Value part = laneRead(b, loc, r, row, col, 0, 4, b.getF32Type());
            v = vector::InsertStridedSliceOp::create(b, loc, part, v, ArrayRef<int64_t>{4 * g}, ArrayRef<int64_t>{1});
          }
          out.replaceAllUsesWith(v);
          c->erase();
          if (r->use_empty()) r->erase();
          return true;
        }
      } else if (out.getType() == acc_ty) {  // up
        bool writes = !out.use_empty();
        for (OpOperand& u : out.getUses()) {
          auto w = llvm::dyn_cast<vector::TransferWriteOp>(u.getOwner());
          writes &= w && w.getValueToStore() == out && plainTransfer(w);
        }
        if (!writes) continue;
        for (Operation* u : llvm::to_vector(out.getUsers())) {
          auto w = llvm::cast<vector::TransferWriteOp>(u);
          OpBuilder wb(w);
          Location wl = w.getLoc();
          AffineMap perm = w.getPermutationMap();
          auto [col, row0] = laneBase(wb, wl, lane(wb, wl), mi.n);
          // Each element on its own: the lane's 4 rows of one column are strided in C.
          for (int64_t e = 0; e < mi.accElems(); ++e) {
            SmallVector<Value> ind(w.getIndices().begin(), w.getIndices().end());
            Value row = add(wb, wl, row0, cst(wb, wl, mfmaLaneC(mi, 0, e).row));
            ind[memDim(perm, 0)] = add(wb, wl, ind[memDim(perm, 0)], row);
            ind[memDim(perm, 1)] = add(wb, wl, ind[memDim(perm, 1)], col);
            Value x = vector::ExtractOp::create(wb, wl, in, ArrayRef<int64_t>{e});
            memref::StoreOp::create(wb, wl, x, w.getBase(), ind);
          }
          w->erase();
        }
        c->erase();
        return true;
      }
    }
    return false;
  }
};

}  // namespace

bool rewriteContractsToMfma(mlir::Operation* root, const MfmaIntrinsic& mi, std::string& err, bool lds_k_major,
                            int64_t lds_pad) {
  MLIRContext* ctx = root->getContext();
  Type in = mi.in == DType::BF16 ? Type(BFloat16Type::get(ctx)) : Type(Float16Type::get(ctx));
  Rewriter rw{mi, err, VectorType::get({mi.m, mi.n}, Float32Type::get(ctx)),
              VectorType::get({mi.accElems()}, Float32Type::get(ctx)), VectorType::get({mi.aElems()}, in)};
  std::vector<vector::ContractionOp> contracts;
  auto collect = [&] {
    contracts.clear();
    root->walk([&](gpu::LaunchOp launch) { launch.walk([&](vector::ContractionOp c) { contracts.push_back(c); }); });
  };
  // The operands' LDS buffers (each once; several contracts read one buffer).
  auto buffers = [&](bool k_minor_only) {
    std::set<Operation*> out;
    for (auto c : contracts)
      for (unsigned op = 0; op < 2; ++op)
        if (auto a = Rewriter::operandBuffer(c, op, k_minor_only)) out.insert(a.getOperation());
    return out;
  };
  collect();
  if (contracts.empty()) {
    err = "MFMA rewrite: the kernel has no vector.contract to turn into " + mi.name();
    return false;
  }
  if (lds_k_major) {
    for (Operation* a : buffers(true)) rw.transposeBuffer(llvm::cast<memref::AllocOp>(a));
    collect();  // transposing re-created the operand reads
  }
  if (lds_pad > 0)
    for (Operation* a : buffers(false))
      if (!rw.padBuffer(llvm::cast<memref::AllocOp>(a), lds_pad)) {
        err = "MFMA rewrite: an LDS operand buffer has a user the padding does not handle";
        return false;
      }
  for (auto c : contracts)
    if (!rw.rewriteContract(c)) return false;
  rw.rewriteLoops(root);
  while (rw.resolveOnce(root)) {
  }
  std::string left;
  root->walk([&](UnrealizedConversionCastOp c) {
    if (!c->hasAttr(kTag) || !left.empty()) return;
    llvm::raw_string_ostream os(left);
    os << c.getLoc() << " (used by ";
    if (c.getResult(0).use_empty()) os << "nothing";
    else os << c.getResult(0).getUsers().begin()->getName();
    os << ")";
  });
  if (!left.empty()) {
    err = "MFMA rewrite: an accumulator is used in a way the rewrite does not handle, at " + left;
    return false;
  }
  return true;
}

namespace {

// The rewrite as a pass, for Transform libraries (transform.apply_registered_pass
// "sextant-vector-to-mfma" with options = { "shape" = "32x32x8" }) applied by tune compile or by
// sextant-opt; the operand type (f16 or bf16) comes from the contractions.
struct VectorToMfmaPass : public PassWrapper<VectorToMfmaPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(VectorToMfmaPass)
  VectorToMfmaPass() = default;
  VectorToMfmaPass(const VectorToMfmaPass& o) : PassWrapper(o) {}
  StringRef getArgument() const final { return "sextant-vector-to-mfma"; }
  StringRef getDescription() const final {
    return "Sextant: wave-level vector.contract in gpu.launch -> amdgpu.mfma with per-lane operand loads (gfx942)";
  }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<amdgpu::AMDGPUDialect, arith::ArithDialect, memref::MemRefDialect, vector::VectorDialect,
             gpu::GPUDialect>();
  }
  Option<std::string> shape{*this, "shape", llvm::cl::desc("MFMA shape: 32x32x8 or 16x16x16"), llvm::cl::init("32x32x8")};
  Option<bool> k_major{*this, "lds-k-major", llvm::cl::desc("store LDS operands with K innermost"), llvm::cl::init(false)};
  Option<int64_t> pad{*this, "lds-pad", llvm::cl::desc("elements of padding per LDS operand row"), llvm::cl::init(0)};

  void runOnOperation() override {
    MfmaIntrinsic mi = mfmaForKnob(shape == "32x32x8" ? 1 : shape == "16x16x16" ? 2 : 0, DType::F16);
    if (mi.m == 0) {
      getOperation()->emitError() << "sextant-vector-to-mfma: unknown shape '" << shape << "'";
      return signalPassFailure();
    }
    getOperation()->walk([&](vector::ContractionOp c) {
      if (llvm::cast<VectorType>(c.getLhsType()).getElementType().isBF16()) mi.in = DType::BF16;
    });
    std::string err;
    if (!rewriteContractsToMfma(getOperation(), mi, err, k_major, pad)) {
      getOperation()->emitError() << err;
      signalPassFailure();
    }
  }
};

}  // namespace

}  // namespace sextant::detail

void sextant::registerSextantPasses() {
  static bool done = [] {
    mlir::PassRegistration<detail::VectorToMfmaPass>();
    detail::registerLdsDoubleBufferPass();
    detail::registerAccumulatorsFromZeroPass();
    detail::registerBf16MmaPasses();
    detail::registerDynamicSmemPass();
    detail::registerWgmmaPass();
    detail::registerAmxPass();
    detail::registerCpuPrefetchPass();
    detail::registerSkipPaddingRowsPass();
    detail::registerPackConstantBlocksPass();
    detail::registerReadThroughZeroPadsPass();
    return true;
  }();
  (void)done;
}
