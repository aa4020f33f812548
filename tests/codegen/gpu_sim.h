// A lock-step interpreter for scheduled GPU kernels (the IR before outlining: a gpu.launch in the
// host function), so that a route's kernels can be checked without its GPU: every thread of a
// block executes each op before the next one, on exact small-integer values; workgroup-memory
// accesses are checked for races (an element one thread wrote and another reads or writes with no
// barrier between them). It knows the ops these kernels contain and fails on any other; each
// route adds its matrix-unit ops through Interp::extra (mfma_sim_test.cpp: amdgpu.mfma;
// vulkan_coop_sim_test.cpp: gpu.subgroup_mma_*). Test-only, header-only.
#pragma once

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"

namespace sextant::gpusim {

using namespace mlir;
using Vec = std::vector<double>;

// Per element of an LDS buffer, for the race check: the barrier epoch and thread of the last
// write, and of the reads since (reader -2: several threads).
struct Shadow {
  std::vector<int64_t> w_epoch, w_thread, r_epoch, reader;
  explicit Shadow(size_t n) : w_epoch(n, -1), w_thread(n, -1), r_epoch(n, -1), reader(n, -1) {}
};

struct Buf {
  std::shared_ptr<Vec> data;
  std::shared_ptr<Shadow> shadow;  // LDS (workgroup) buffers only
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;
  int64_t flat(const std::vector<int64_t>& idx) const {
    int64_t o = offset;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (idx[d] < 0 || idx[d] >= shape[d]) throw std::runtime_error("out-of-bounds access");
      o += idx[d] * strides[d];
    }
    return o;
  }
  double& at(const std::vector<int64_t>& idx) { return (*data)[flat(idx)]; }
};

// Workgroup memory: #gpu.address_space<workgroup>, or the integer space 3 (the Vulkan route's).
inline bool isLds(Type t) {
  auto m = llvm::dyn_cast<MemRefType>(t);
  if (!m) return false;
  if (auto i = llvm::dyn_cast_or_null<IntegerAttr>(m.getMemorySpace())) return i.getInt() == 3;
  auto s = llvm::dyn_cast_or_null<gpu::AddressSpaceAttr>(m.getMemorySpace());
  return s && s.getValue() == gpu::AddressSpace::Workgroup;
}

inline Buf makeBuf(std::vector<int64_t> shape) {
  Buf b;
  b.shape = shape;
  b.strides.assign(shape.size(), 1);
  int64_t n = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) b.strides[d] = n, n *= shape[d];
  b.data = std::make_shared<Vec>(n, 0.0);
  return b;
}

inline std::vector<int64_t> shapeOf(Type t) {
  if (auto v = llvm::dyn_cast<VectorType>(t)) return {v.getShape().begin(), v.getShape().end()};
  return {};
}
inline int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

struct Interp {
  int64_t threads = 0;
  // The ops of one route (amdgpu.mfma, gpu.subgroup_mma_*): true when it ran `op`.
  std::function<bool(Operation*)> extra;
  std::array<int64_t, 3> block{}, grid{}, block_id{};
  llvm::DenseMap<Value, std::vector<Vec>> vals;  // per thread
  llvm::DenseMap<Value, Buf> bufs;
  std::map<std::string, Buf> globals;
  // The race check: barriers counted; an LDS element one thread wrote and another thread reads or
  // writes (or one read and another writes) with no barrier between them is a data race, which the
  // lock-step execution would otherwise hide (every thread finishes each op before the next).
  int64_t epoch = 0;

  Buf ldsBuf(Type t) {
    Buf b = makeBuf(llvm::cast<MemRefType>(t).getShape().vec());
    if (isLds(t)) b.shadow = std::make_shared<Shadow>(b.data->size());
    return b;
  }
  void touch(Operation* op, Buf& b, const std::vector<int64_t>& idx, int64_t t, bool write) {
    if (!b.shadow) return;
    Shadow& s = *b.shadow;
    int64_t o = b.flat(idx);
    auto race = [&](const char* what, int64_t other) {
      fail(op, std::string("LDS race: thread ") + std::to_string(t) + " " + what + " thread " +
                   std::to_string(other) + " with no barrier between");
    };
    if (s.w_epoch[o] == epoch && s.w_thread[o] != t) race(write ? "overwrites an element written by" : "reads an element written by", s.w_thread[o]);
    if (write) {
      if (s.r_epoch[o] == epoch && s.reader[o] != t) race("overwrites an element read by", s.reader[o]);
      s.w_epoch[o] = epoch, s.w_thread[o] = t;
    } else if (s.r_epoch[o] != epoch) {
      s.r_epoch[o] = epoch, s.reader[o] = t;
    } else if (s.reader[o] != t) {
      s.reader[o] = -2;
    }
  }

  [[noreturn]] void fail(Operation* op, const std::string& why) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << op->getName() << " at " << op->getLoc() << ": " << why;
    throw std::runtime_error(s);
  }

  std::vector<Vec>& get(Value v) {
    auto it = vals.find(v);
    if (it != vals.end()) return it->second;
    if (auto c = v.getDefiningOp<arith::ConstantOp>()) {
      run(c);
      return vals[v];
    }
    if (Operation* def = v.getDefiningOp(); def && def->getName().getStringRef() == "ub.poison") {
      // Poison: NaN, so that any element of it reaching C fails the comparison.
      setAll(v, Vec(std::max<int64_t>(1, numel(shapeOf(v.getType()))), std::nan("")));
      return vals[v];
    }
    std::string d;
    llvm::raw_string_ostream os(d);
    if (Operation* def = v.getDefiningOp()) os << def->getName() << " at " << def->getLoc();
    else os << "a block argument";
    throw std::runtime_error("value used before definition: " + d);
  }
  int64_t uniform(Value v) {
    auto& x = get(v);
    for (auto& t : x)
      if (t[0] != x[0][0]) throw std::runtime_error("a loop bound differs across threads");
    return int64_t(x[0][0]);
  }
  void setAll(Value v, const Vec& x) { vals[v] = std::vector<Vec>(threads, x); }

  Buf& buf(Value v) {
    auto it = bufs.find(v);
    if (it == bufs.end()) throw std::runtime_error("unknown buffer");
    return it->second;
  }

  std::vector<int64_t> indices(ValueRange ind, int64_t t) {
    std::vector<int64_t> out;
    for (Value v : ind) out.push_back(int64_t(get(v)[t][0]));
    return out;
  }

  // vector.transfer_read / transfer_write: vector element v sits at base + v along the memref
  // dimensions the permutation map names (constant results broadcast).
  template <typename T>
  void transfer(T op, bool read) {
    Buf& b = buf(op.getBase());
    AffineMap perm = op.getPermutationMap();
    auto shape = shapeOf(op.getVectorType());
    int64_t n = numel(shape);
    std::vector<Vec> out(threads, Vec(n));
    for (int64_t t = 0; t < threads; ++t) {
      auto base = indices(op.getIndices(), t);
      for (int64_t e = 0; e < n; ++e) {
        auto idx = base;
        int64_t rest = e;
        for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
          int64_t vi = rest % shape[d];
          rest /= shape[d];
          if (auto de = llvm::dyn_cast<AffineDimExpr>(perm.getResult(unsigned(d)))) idx[de.getPosition()] += vi;
        }
        touch(op, b, idx, t, !read);
        if (read) out[t][e] = b.at(idx);
        else b.at(idx) = get(op->getOperand(0))[t][e];
      }
    }
    if (read) vals[op->getResult(0)] = out;
  }

  // Flat offset and length of the sub-vector at a (static or per-thread dynamic) position.
  std::pair<int64_t, int64_t> position(const SmallVector<OpFoldResult>& pos, const std::vector<int64_t>& shape, int64_t t) {
    int64_t off = 0, stride = numel(shape);
    for (size_t d = 0; d < pos.size(); ++d) {
      int64_t p = 0;
      if (auto a = llvm::dyn_cast_if_present<Attribute>(pos[d])) p = llvm::cast<IntegerAttr>(a).getInt();
      else p = int64_t(get(llvm::cast<Value>(pos[d]))[t][0]);
      stride /= shape[d], off += p * stride;
    }
    return {off, stride};
  }

  void runBlock(Block& blk) {
    for (Operation& op : blk) run(&op);
  }

  void intBinary(Operation* op, const std::function<int64_t(int64_t, int64_t)>& f) {
    // Copies: get() may run a constant and grow `vals`, which moves its entries.
    std::vector<Vec> x = get(op->getOperand(0)), y = get(op->getOperand(1));
    std::vector<Vec> out(threads);
    for (int64_t t = 0; t < threads; ++t) {
      out[t].resize(x[t].size());
      for (size_t e = 0; e < x[t].size(); ++e) out[t][e] = double(f(int64_t(x[t][e]), int64_t(y[t][e])));
    }
    vals[op->getResult(0)] = out;
  }

  void run(Operation* op) {
    std::string name = op->getName().getStringRef().str();
    if (auto c = llvm::dyn_cast<arith::ConstantOp>(op)) {
      Attribute a = c.getValue();
      if (auto i = llvm::dyn_cast<IntegerAttr>(a)) return setAll(c, {double(i.getInt())});
      if (auto f = llvm::dyn_cast<FloatAttr>(a)) return setAll(c, {f.getValueAsDouble()});
      if (auto d = llvm::dyn_cast<DenseFPElementsAttr>(a)) {
        Vec x;
        for (APFloat v : d.getValues<APFloat>()) x.push_back(v.convertToDouble());
        return setAll(c, x);
      }
      if (auto d = llvm::dyn_cast<DenseIntElementsAttr>(a)) {
        Vec x;
        for (APInt v : d.getValues<APInt>()) x.push_back(double(v.getSExtValue()));
        return setAll(c, x);
      }
      fail(op, "constant kind");
    }
    if (auto tid = llvm::dyn_cast<gpu::ThreadIdOp>(op)) {
      std::vector<Vec> out(threads);
      for (int64_t t = 0; t < threads; ++t) out[t] = {tid.getDimension() == gpu::Dimension::x ? double(t) : 0.0};
      vals[tid] = out;
      return;
    }
    if (auto bid = llvm::dyn_cast<gpu::BlockIdOp>(op))
      return setAll(bid, {double(block_id[int(bid.getDimension())])});
    if (auto bd = llvm::dyn_cast<gpu::BlockDimOp>(op)) return setAll(bd, {double(block[int(bd.getDimension())])});
    if (auto gd = llvm::dyn_cast<gpu::GridDimOp>(op)) return setAll(gd, {double(grid[int(gd.getDimension())])});
    if (llvm::isa<gpu::BarrierOp>(op)) return void(++epoch);
    if (llvm::isa<gpu::TerminatorOp, memref::DeallocOp>(op)) return;
    if (name == "arith.addi") return intBinary(op, [](int64_t a, int64_t b) { return a + b; });
    if (name == "arith.subi") return intBinary(op, [](int64_t a, int64_t b) { return a - b; });
    if (name == "arith.muli") return intBinary(op, [](int64_t a, int64_t b) { return a * b; });
    if (name == "arith.minsi" || name == "arith.minui") return intBinary(op, [](int64_t a, int64_t b) { return std::min(a, b); });
    if (name == "arith.divui" || name == "arith.divsi") return intBinary(op, [](int64_t a, int64_t b) { return a / b; });
    if (name == "arith.remui" || name == "arith.remsi") return intBinary(op, [](int64_t a, int64_t b) { return a % b; });
    if (name == "arith.floordivsi")
      return intBinary(op, [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); });
    if (auto ap = llvm::dyn_cast<affine::AffineApplyOp>(op)) {
      std::vector<Vec> out(threads);
      for (int64_t t = 0; t < threads; ++t) {
        SmallVector<Attribute> in;
        for (Value v : ap.getMapOperands()) in.push_back(IntegerAttr::get(IndexType::get(op->getContext()), int64_t(get(v)[t][0])));
        SmallVector<Attribute> res;
        if (failed(ap.getAffineMap().constantFold(in, res))) fail(op, "affine map does not fold");
        out[t] = {double(llvm::cast<IntegerAttr>(res[0]).getInt())};
      }
      vals[ap] = out;
      return;
    }
    if (auto a = llvm::dyn_cast<memref::AllocOp>(op)) return void(bufs[a] = ldsBuf(a.getType()));
    if (auto a = llvm::dyn_cast<memref::AllocaOp>(op)) return void(bufs[a] = ldsBuf(a.getType()));
    if (auto g = llvm::dyn_cast<memref::GetGlobalOp>(op)) {
      auto it = globals.find(g.getName().str());
      if (it == globals.end()) it = globals.emplace(g.getName().str(), ldsBuf(g.getType())).first;
      bufs[g] = it->second;
      return;
    }
    if (auto r = llvm::dyn_cast<vector::TransferReadOp>(op)) {
      if (r.getMask()) fail(op, "masked transfer");
      return transfer(r, true);
    }
    if (auto w = llvm::dyn_cast<vector::TransferWriteOp>(op)) {
      if (w.getMask()) fail(op, "masked transfer");
      return transfer(w, false);
    }
    // Contiguous loads and stores along the innermost dimension.
    if (llvm::isa<vector::LoadOp, memref::LoadOp>(op)) {
      Buf& b = buf(op->getOperand(0));
      int64_t n = std::max<int64_t>(1, numel(shapeOf(op->getResult(0).getType())));
      std::vector<Vec> out(threads, Vec(n));
      for (int64_t t = 0; t < threads; ++t) {
        auto idx = indices(op->getOperands().drop_front(), t);
        for (int64_t e = 0; e < n; ++e, ++idx.back()) touch(op, b, idx, t, false), out[t][e] = b.at(idx);
      }
      vals[op->getResult(0)] = out;
      return;
    }
    if (llvm::isa<vector::StoreOp, memref::StoreOp>(op)) {
      Buf& b = buf(op->getOperand(1));
      for (int64_t t = 0; t < threads; ++t) {
        auto idx = indices(op->getOperands().drop_front(2), t);
        const Vec& v = get(op->getOperand(0))[t];
        for (size_t e = 0; e < v.size(); ++e, ++idx.back()) touch(op, b, idx, t, true), b.at(idx) = v[e];
      }
      return;
    }
    if (auto x = llvm::dyn_cast<vector::ExtractOp>(op)) {
      auto src = shapeOf(x.getSource().getType());
      std::vector<Vec> out(threads);
      for (int64_t t = 0; t < threads; ++t) {
        auto [off, stride] = position(x.getMixedPosition(), src, t);
        auto& v = get(x.getSource())[t];
        out[t] = Vec(v.begin() + off, v.begin() + off + stride);
      }
      vals[x] = out;
      return;
    }
    if (auto x = llvm::dyn_cast<vector::InsertOp>(op)) {
      auto dst = shapeOf(x.getDest().getType());
      std::vector<Vec> out = get(x.getDest());
      for (int64_t t = 0; t < threads; ++t) {
        auto [off, stride] = position(x.getMixedPosition(), dst, t);
        auto& v = get(x.getValueToStore())[t];
        for (size_t e = 0; e < v.size(); ++e) out[t][off + e] = v[e];
      }
      vals[x] = out;
      return;
    }
    if (auto bc = llvm::dyn_cast<vector::BroadcastOp>(op)) {
      int64_t n = numel(shapeOf(bc.getType()));
      std::vector<Vec> out(threads, Vec(n));
      for (int64_t t = 0; t < threads; ++t) {
        auto& v = get(bc.getSource())[t];
        for (int64_t e = 0; e < n; ++e) out[t][e] = v[e % v.size()];
      }
      vals[bc] = out;
      return;
    }
    if (llvm::isa<vector::ShapeCastOp, arith::ExtFOp, arith::TruncFOp, arith::IndexCastOp>(op))
      return void(vals[op->getResult(0)] = get(op->getOperand(0)));  // values are exact small integers
    if (auto fe = llvm::dyn_cast<vector::FromElementsOp>(op)) {
      std::vector<Vec> out(threads);
      for (int64_t t = 0; t < threads; ++t)
        for (Value e : fe.getElements()) out[t].push_back(get(e)[t][0]);
      vals[fe] = out;
      return;
    }
    if (auto s = llvm::dyn_cast<vector::InsertStridedSliceOp>(op)) {
      if (s.getSourceVectorType().getRank() != 1 || s.getDestVectorType().getRank() != 1) fail(op, "rank > 1");
      int64_t off = llvm::cast<IntegerAttr>(s.getOffsets()[0]).getInt();
      std::vector<Vec> src = get(s.getValueToStore()), dst = get(s.getDest());  // copies: see intBinary
      std::vector<Vec> out = dst;
      for (int64_t t = 0; t < threads; ++t)
        for (size_t e = 0; e < src[t].size(); ++e) out[t][off + e] = src[t][e];
      vals[s] = out;
      return;
    }
    if (auto s = llvm::dyn_cast<vector::ExtractStridedSliceOp>(op)) {
      if (s.getSourceVectorType().getRank() != 1) fail(op, "rank > 1");
      int64_t off = llvm::cast<IntegerAttr>(s.getOffsets()[0]).getInt();
      int64_t len = llvm::cast<IntegerAttr>(s.getSizes()[0]).getInt();
      auto& src = get(s.getSource());
      std::vector<Vec> out(threads);
      for (int64_t t = 0; t < threads; ++t) out[t] = Vec(src[t].begin() + off, src[t].begin() + off + len);
      vals[s] = out;
      return;
    }
    if (auto f = llvm::dyn_cast<scf::ForOp>(op)) {
      int64_t lo = uniform(f.getLowerBound()), hi = uniform(f.getUpperBound()), st = uniform(f.getStep());
      std::vector<std::vector<Vec>> carried;
      for (Value v : f.getInitArgs()) carried.push_back(get(v));
      Block& body = *f.getBody();
      for (int64_t i = lo; i < hi; i += st) {
        setAll(f.getInductionVar(), {double(i)});
        for (size_t j = 0; j < carried.size(); ++j) vals[f.getRegionIterArgs()[j]] = carried[j];
        for (Operation& inner : body.without_terminator()) run(&inner);
        auto y = llvm::cast<scf::YieldOp>(body.getTerminator());
        for (size_t j = 0; j < carried.size(); ++j) carried[j] = get(y.getOperand(unsigned(j)));
      }
      for (size_t j = 0; j < carried.size(); ++j) vals[f.getResult(unsigned(j))] = carried[j];
      return;
    }
    if (extra && extra(op)) return;
    fail(op, "not modelled");
  }
};


// A scheduled kernel (GpuKernelInfo::scheduled_ir) parsed: its host function @sextant_gemm and the
// gpu.launch in it; with drop_loop_barriers, the K loop's barriers erased (the race check's
// negative control). Throws when the IR does not parse or has no launch.
struct ScheduledKernel {
  std::unique_ptr<MLIRContext> ctx;  // before mod: destroyed after it
  OwningOpRef<ModuleOp> mod;
  func::FuncOp fn;
  gpu::LaunchOp launch;
};
inline ScheduledKernel parseScheduledKernel(const std::string& ir, bool drop_loop_barriers) {
  ScheduledKernel k;
  DialectRegistry reg;
  registerAllDialects(reg);
  k.ctx = std::make_unique<MLIRContext>(reg);
  k.ctx->loadAllAvailableDialects();
  k.mod = parseSourceString<ModuleOp>(ir, k.ctx.get());
  if (!k.mod) throw std::runtime_error("scheduled IR does not parse");
  k.mod->walk([&](func::FuncOp f) {
    if (f.getSymName() == "sextant_gemm") k.fn = f;
  });
  if (k.fn) k.fn.walk([&](gpu::LaunchOp l) { k.launch = l; });
  if (!k.launch) throw std::runtime_error("no gpu.launch");
  if (drop_loop_barriers) {
    std::vector<gpu::BarrierOp> drop;
    k.launch.walk([&](gpu::BarrierOp b) {
      if (b->getParentOfType<scf::ForOp>()) drop.push_back(b);
    });
    if (drop.empty()) throw std::runtime_error("no barrier in the K loop");
    for (auto b : drop) b.erase();
  }
  return k;
}

// Runs `launch` (in the host function `fn`, whose first three arguments are A, B and C) block by
// block on `in` (threads, grid and block set from the launch; in.extra as the route needs).
inline void runLaunch(Interp& in, func::FuncOp fn, gpu::LaunchOp launch, const Buf& A, const Buf& B, const Buf& C) {
  auto cst = [&](Value v) {
    auto c = v.getDefiningOp<arith::ConstantIndexOp>();
    if (!c) throw std::runtime_error("launch size is not a constant");
    return c.value();
  };
  in.grid = {cst(launch.getGridSizeX()), cst(launch.getGridSizeY()), cst(launch.getGridSizeZ())};
  in.block = {cst(launch.getBlockSizeX()), cst(launch.getBlockSizeY()), cst(launch.getBlockSizeZ())};
  if (in.block[1] != 1 || in.block[2] != 1) throw std::runtime_error("expected a 1-D block");
  in.threads = in.block[0];
  for (int64_t by = 0; by < in.grid[1]; ++by)
    for (int64_t bx = 0; bx < in.grid[0]; ++bx) {
      in.vals.clear();
      in.bufs.clear();
      in.globals.clear();
      in.bufs[fn.getArgument(0)] = A, in.bufs[fn.getArgument(1)] = B, in.bufs[fn.getArgument(2)] = C;
      in.block_id = {bx, by, 0};
      auto ids = launch.getBlockIds();
      in.setAll(ids.x, {double(bx)}), in.setAll(ids.y, {double(by)}), in.setAll(ids.z, {0.0});
      auto tids = launch.getThreadIds();
      std::vector<Vec> tx(in.threads);
      for (int64_t t = 0; t < in.threads; ++t) tx[t] = {double(t)};
      in.vals[tids.x] = tx, in.setAll(tids.y, {0.0}), in.setAll(tids.z, {0.0});
      auto gs = launch.getGridSize(), bs = launch.getBlockSize();
      in.setAll(gs.x, {double(in.grid[0])}), in.setAll(gs.y, {double(in.grid[1])}), in.setAll(gs.z, {1.0});
      in.setAll(bs.x, {double(in.block[0])}), in.setAll(bs.y, {1.0}), in.setAll(bs.z, {1.0});
      in.runBlock(launch.getBody().front());
    }
}

}  // namespace sextant::gpusim
