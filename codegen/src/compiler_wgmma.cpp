// The Hopper route (sm_90a, knob mma = 2): a GEMM function rewritten into one kernel that loads
// the A and B tiles with TMA (cp.async.bulk.tensor, 128-byte swizzle, an mbarrier per stage of a
// multi-stage ring) and multiplies them with warpgroup MMA (wgmma.mma_async from shared-memory
// matrix descriptors), the f32 accumulator in registers, stored straight to C.
//
// MLIR 22 has the ops but no transform that reaches them from linalg (../shared/notes/
// gpu-matrix-units.md), so the kernel is written here, in the form of the upstream sm_90
// integration tests (llvm-project mlir/test/Integration/GPU/CUDA/sm90/
// gemm_f32_f16_f16_128x128x128.mlir and python/tools/matmulBuilder.py), generalised to a grid of
// block_m x block_n tiles, 1-4 consumer warpgroups and 2-4 stages:
//
//   thread 0: init one mbarrier per stage; prefetch both TMA descriptors; barrier
//   thread 0: for the first `stages` K tiles: expect_tx(bytes of A+B tile), TMA A (block_m x 64)
//             and B (64 x 64 boxes, block_n/64 of them) into stage s
//   for k in K/64: wait mbarrier[k % stages] with parity (k / stages) % 2
//                  wgmma over the stage (warpgroup w: rows w*wg_m.. of the A tile; the op waits
//                  until at most 1 wgmma group is pending, i.e. step k-1's has finished)
//                  barrier; thread 0 refills the stage of step k-1 with K tile k-1+stages
//   wait for every wgmma group; each warpgroup stores its wg_m x block_n accumulator to C.
//
// Warp-specialised (warp_specialize, after matmulBuilder.py's variant, without setmaxnreg): one
// more warpgroup whose first thread issues every TMA load, waiting on an "empty" mbarrier per stage
// (all consumer threads arrive on it when the wgmma of that stage's step has finished) before it
// refills a stage; the consumer warpgroups only wait on the "full" mbarriers, never at a block
// barrier.
//
// The tensor maps (CUtensorMap) are created on the host: in a compiled module by
// nvgpu.tma.create.descriptor (MLIR's CUDA runtime wrappers), for the tuner by tune-runner from
// the parameters recorded in the bundle ("tmap:..." kernel arguments, compiler_gpu.cpp). The
// kernel takes them as pointers (a gpu.func argument of tensor-map type does not legalize in
// MLIR 22). Shared memory: one extern array aligned to 1024 bytes (128-byte swizzled tiles must
// be; every tile offset here is a multiple of 1024), the mbarriers static.
//
// Not verified on a GPU (none was available): the B tile of more than 64 columns as consecutive
// 64x64 swizzled boxes read with transposeB follows the upstream test, which runs it at 128.
#include "compiler_internal.h"

#include <sstream>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"

namespace sextant::detail {

std::string wgmmaModuleText(const WgmmaParams& p, const std::string& fname) {
  const int64_t wgs = p.block_m / p.wg_m + (p.warp_specialize ? 1 : 0), threads = 128 * wgs, nk = p.k / 64;
  const int64_t a_bytes = p.block_m * 64 * 2, b_bytes = 64 * p.block_n * 2, stage = a_bytes + b_bytes;
  const int64_t total = p.stages * stage;
  const std::string dt = p.elem, ws = "#gpu.address_space<workgroup>";
  const std::string tmA = "!nvgpu.tensormap.descriptor<tensor = memref<" + std::to_string(p.block_m) + "x64x" + dt +
                          ", 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>";
  const std::string tmB = "!nvgpu.tensormap.descriptor<tensor = memref<64x64x" + dt +
                          ", 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>";
  const std::string bar = "!nvgpu.mbarrier.group<memorySpace = " + ws + ", num_barriers = " + std::to_string(p.stages) + ">";
  const std::string acc = "!nvgpu.warpgroup.accumulator<fragmented = vector<" + std::to_string(p.wg_m) + "x" +
                          std::to_string(p.block_n) + "xf32>>";
  const std::string smem = "memref<" + std::to_string(total) + "xi8, " + ws + ">";
  const std::string tileA = "memref<" + std::to_string(p.wg_m) + "x64x" + dt + ", " + ws + ">";
  const std::string tileB = "memref<64x" + std::to_string(p.block_n) + "x" + dt + ", " + ws + ">";
  const std::string aT = "memref<" + std::to_string(p.m) + "x" + std::to_string(p.k) + "x" + dt + ">";
  const std::string bT = "memref<" + std::to_string(p.k) + "x" + std::to_string(p.n) + "x" + dt + ">";
  const std::string cT = "memref<" + std::to_string(p.m) + "x" + std::to_string(p.n) + "xf32>";
  const std::string cSub = "memref<" + std::to_string(p.wg_m) + "x" + std::to_string(p.block_n) + "xf32, strided<[" +
                           std::to_string(p.n) + ", 1], offset: ?>>";
  const std::string kname = fname + "_wgmma";
  std::ostringstream o;
  // Thread 0's loads of K tile `k` into stage `s` (index values), at indentation I.
  auto loads = [&](const std::string& I, const std::string& s, const std::string& k) {
    o << I << "%offA = arith.muli " << s << ", %cStage : index\n"
      << I << "%offB = arith.addi %offA, %cABytes : index\n"
      << I << "%va = memref.view %smem[%offA][] : " << smem << " to memref<" << p.block_m << "x64x" << dt << ", " << ws
      << ">\n"
      << I << "nvgpu.mbarrier.arrive.expect_tx %bar[" << s << "], %cStage : " << bar << "\n"
      << I << "%kk = arith.muli " << k << ", %c64 : index\n"
      << I << "nvgpu.tma.async.load %descA[%kk, %m0], %bar[" << s << "] to %va : " << tmA << ", " << bar
      << " -> memref<" << p.block_m << "x64x" << dt << ", " << ws << ">\n";
    for (int64_t j = 0; j < p.block_n / 64; ++j)
      o << I << "%ob" << j << " = arith.addi %offB, %cB" << j << " : index\n"
        << I << "%vb" << j << " = memref.view %smem[%ob" << j << "][] : " << smem << " to memref<64x64x" << dt << ", "
        << ws << ">\n"
        << I << "%nb" << j << " = arith.addi %n0, %cN" << j << " : index\n"
        << I << "nvgpu.tma.async.load %descB[%nb" << j << ", %kk], %bar[" << s << "] to %vb" << j << " : " << tmB
        << ", " << bar << " -> memref<64x64x" << dt << ", " << ws << ">\n";
  };
  o << "module attributes {gpu.container_module} {\n"
    << "gpu.module @" << kname << "_module {\n"
    << "  memref.global @sextant_wgmma_smem : memref<0xi8, " << ws << "> {alignment = 1024 : i64}\n"
    << "  gpu.func @" << kname << "(%pA: !llvm.ptr, %pB: !llvm.ptr, %C: " << cT
    << ") kernel attributes {known_block_size = array<i32: " << threads << ", 1, 1>} {\n";
  const std::string I = "    ";
  o << I << "%descA = builtin.unrealized_conversion_cast %pA : !llvm.ptr to " << tmA << "\n"
    << I << "%descB = builtin.unrealized_conversion_cast %pB : !llvm.ptr to " << tmB << "\n";
  std::vector<std::pair<std::string, int64_t>> cs = {{"c0", 0},         {"c1", 1},           {"c64", 64},
                                                     {"c128", 128},     {"cS", p.stages},    {"cNK", nk},
                                                     {"cBM", p.block_m}, {"cBN", p.block_n}, {"cWM", p.wg_m},
                                                     {"cStage", stage}, {"cABytes", a_bytes}, {"cPro", std::min(p.stages, nk)},
                                                     {"ticks", 10000000}};
  for (int64_t j = 0; j < p.block_n / 64; ++j) cs.push_back({"cB" + std::to_string(j), j * 64 * 64 * 2});
  for (int64_t j = 0; j < p.block_n / 64; ++j) cs.push_back({"cN" + std::to_string(j), j * 64});
  for (auto& [n, v] : cs) o << I << "%" << n << " = arith.constant " << v << " : index\n";
  const int64_t consumers = p.block_m / p.wg_m;
  o << I << "%tid = gpu.thread_id x\n"
    << I << "%bx = gpu.block_id x\n"
    << I << "%by = gpu.block_id y\n"
    << I << "%g = memref.get_global @sextant_wgmma_smem : memref<0xi8, " << ws << ">\n"
    << I << "%smem = memref.reinterpret_cast %g to offset: [0], sizes: [" << total << "], strides: [1] : memref<0xi8, "
    << ws << "> to " << smem << "\n"
    << I << "%bar = nvgpu.mbarrier.create -> " << bar << "\n";
  if (p.warp_specialize)  // stage s free again: every consumer thread has arrived
    o << I << "%empty = nvgpu.mbarrier.create -> " << bar << "\n"
      << I << "%cConsumerThreads = arith.constant " << 128 * consumers << " : index\n";
  o << I << "%is0 = arith.cmpi eq, %tid, %c0 : index\n"
    << I << "%m0 = arith.muli %by, %cBM : index\n"
    << I << "%n0 = arith.muli %bx, %cBN : index\n"
    << I << "scf.if %is0 {\n"
    << I << "  scf.for %s = %c0 to %cS step %c1 {\n"
    << I << "    nvgpu.mbarrier.init %bar[%s], %c1 : " << bar << "\n";
  if (p.warp_specialize) o << I << "    nvgpu.mbarrier.init %empty[%s], %cConsumerThreads : " << bar << "\n";
  // The initialised mbarriers made visible to the TMA unit (the async proxy) before it signals
  // them, as CUTLASS's fence_barrier_init does.
  o << I << "  }\n"
    << I << "  nvvm.fence.mbarrier.init\n"
    << I << "  nvgpu.tma.prefetch.descriptor %descA : " << tmA << "\n"
    << I << "  nvgpu.tma.prefetch.descriptor %descB : " << tmB << "\n"
    << I << "}\n"
    << I << "gpu.barrier\n"
    << I << "%wg = arith.divui %tid, %c128 : index\n";
  // The consumers' K loop at indentation C: wait for the stage, wgmma over it (the op then waits
  // until at most one wgmma group is pending: step i-1's has finished), release step i-1's stage.
  auto consumerLoop = [&](const std::string& C) {
    const std::string J = C + "  ";
    o << C << "%aRow = arith.muli %wg, %cWM : index\n"
      << C << "%aOff = arith.muli %aRow, %c128 : index\n"
      << C << "%acc0 = nvgpu.warpgroup.mma.init.accumulator -> " << acc << "\n"
      << C << "%res = scf.for %i = %c0 to %cNK step %c1 iter_args(%acc = %acc0) -> (" << acc << ") {\n"
      << J << "%s = arith.remui %i, %cS : index\n"
      << J << "%round = arith.divui %i, %cS : index\n"
      << J << "%r64 = arith.index_cast %round : index to i64\n"
      << J << "%parity = arith.trunci %r64 : i64 to i1\n"
      << J << "nvgpu.mbarrier.try_wait.parity %bar[%s], %parity, %ticks : " << bar << "\n"
      << J << "%sa = arith.muli %s, %cStage : index\n"
      << J << "%sa2 = arith.addi %sa, %aOff : index\n"
      << J << "%sb = arith.addi %sa, %cABytes : index\n"
      << J << "%ta = memref.view %smem[%sa2][] : " << smem << " to " << tileA << "\n"
      << J << "%tb = memref.view %smem[%sb][] : " << smem << " to " << tileB << "\n"
      << J << "%dA = nvgpu.warpgroup.generate.descriptor %ta, %descA : " << tileA << ", " << tmA
      << " -> !nvgpu.warpgroup.descriptor<tensor = " << tileA << ">\n"
      << J << "%dB = nvgpu.warpgroup.generate.descriptor %tb, %descB : " << tileB << ", " << tmB
      << " -> !nvgpu.warpgroup.descriptor<tensor = " << tileB << ">\n"
      << J << "%acc2 = nvgpu.warpgroup.mma %dA, %dB, %acc {transposeB, waitGroup = 1 : i64} : "
      << "!nvgpu.warpgroup.descriptor<tensor = " << tileA << ">, !nvgpu.warpgroup.descriptor<tensor = " << tileB
      << ">, " << acc << " -> " << acc << "\n"
      << J << "%ge1 = arith.cmpi uge, %i, %c1 : index\n"
      << J << "%prev = arith.subi %i, %c1 : index\n";
    if (p.warp_specialize) {
      o << J << "scf.if %ge1 {\n"
        << J << "  %ps = arith.remui %prev, %cS : index\n"
        << J << "  %token = nvgpu.mbarrier.arrive %empty[%ps] : " << bar << " -> !nvgpu.mbarrier.token\n"
        << J << "}\n";
    } else {  // all threads past step i-1's wgmma, then thread 0 refills its stage
      o << J << "gpu.barrier\n"
        << J << "%nxt = arith.addi %prev, %cS : index\n"
        << J << "%inr = arith.cmpi ult, %nxt, %cNK : index\n"
        << J << "%ok1 = arith.andi %ge1, %inr : i1\n"
        << J << "%ok2 = arith.andi %ok1, %is0 : i1\n"
        << J << "scf.if %ok2 {\n"
        << J << "  %ps = arith.remui %prev, %cS : index\n";
      loads(J + "  ", "%ps", "%nxt");
      o << J << "}\n";
    }
    o << J << "scf.yield %acc2 : " << acc << "\n"
      << C << "}\n"
      << C << "nvvm.wgmma.wait.group.sync.aligned 0\n"
      // MLIR 22's warpgroup.mma.store places a thread's rows from its warp index tid / 32 over the
      // whole block (not within its warpgroup: NVGPUToNVVM assumes one warpgroup), which already
      // adds 64 rows per warpgroup before it; the view starts that much higher up. (Found on the
      // first GPU run, an H200, 2026-11-26: every multi-warpgroup kernel wrote rows beyond its own.)
      << C << "%cWM64 = arith.constant " << p.wg_m - 64 << " : index\n"
      << C << "%sRow = arith.muli %wg, %cWM64 : index\n"
      << C << "%cm = arith.addi %m0, %sRow : index\n"
      << C << "%csub = memref.subview %C[%cm, %n0] [" << p.wg_m << ", " << p.block_n << "] [1, 1] : " << cT << " to "
      << cSub << "\n"
      << C << "nvgpu.warpgroup.mma.store %res, %csub : " << acc << " to " << cSub << "\n";
  };
  if (p.warp_specialize) {
    // The last warpgroup produces: its first thread loads K tile k into stage k % stages once the
    // consumers have released the stage's previous tile (k - stages).
    o << I << "%cConsumers = arith.constant " << consumers << " : index\n"
      << I << "%isProducer = arith.cmpi eq, %wg, %cConsumers : index\n"
      << I << "scf.if %isProducer {\n"
      << I << "  %leader = arith.cmpi eq, %tid, %cConsumerThreads : index\n"
      << I << "  scf.if %leader {\n"
      << I << "    scf.for %k = %c0 to %cNK step %c1 {\n"
      << I << "      %s = arith.remui %k, %cS : index\n"
      << I << "      %round = arith.divui %k, %cS : index\n"
      << I << "      %again = arith.cmpi uge, %k, %cS : index\n"
      << I << "      scf.if %again {\n"
      << I << "        %r1 = arith.addi %round, %c1 : index\n"
      << I << "        %r64 = arith.index_cast %r1 : index to i64\n"
      << I << "        %parity = arith.trunci %r64 : i64 to i1\n"
      << I << "        nvgpu.mbarrier.try_wait.parity %empty[%s], %parity, %ticks : " << bar << "\n"
      << I << "      }\n";
    loads(I + "      ", "%s", "%k");
    o << I << "    }\n"
      << I << "  }\n"
      << I << "} else {\n";
    consumerLoop(I + "  ");
    o << I << "}\n";
  } else {
    o << I << "scf.if %is0 {\n"
      << I << "  scf.for %s = %c0 to %cPro step %c1 {\n";
    loads(I + "    ", "%s", "%s");
    o << I << "  }\n"
      << I << "}\n";
    consumerLoop(I);
  }
  o << I << "gpu.return\n"
    << "  }\n"
    << "}\n";
  // The host side: tensor maps (box sizes outermost first), the launch.
  o << "func.func @" << fname << "(%A: " << aT << ", %B: " << bT << ", %C: " << cT << ") {\n"
    << "  %h1 = arith.constant 1 : index\n"
    << "  %h64 = arith.constant 64 : index\n"
    << "  %hBM = arith.constant " << p.block_m << " : index\n"
    << "  %gx = arith.constant " << p.n / p.block_n << " : index\n"
    << "  %gy = arith.constant " << p.m / p.block_m << " : index\n"
    << "  %nt = arith.constant " << threads << " : index\n"
    << "  %shm = arith.constant " << total << " : i32\n"
    << "  %ua = memref.cast %A : " << aT << " to memref<*x" << dt << ">\n"
    << "  %ub = memref.cast %B : " << bT << " to memref<*x" << dt << ">\n"
    << "  %tA = nvgpu.tma.create.descriptor %ua box[%hBM, %h64] : memref<*x" << dt << "> -> " << tmA << "\n"
    << "  %tB = nvgpu.tma.create.descriptor %ub box[%h64, %h64] : memref<*x" << dt << "> -> " << tmB << "\n"
    << "  %pA = builtin.unrealized_conversion_cast %tA : " << tmA << " to !llvm.ptr\n"
    << "  %pB = builtin.unrealized_conversion_cast %tB : " << tmB << " to !llvm.ptr\n"
    << "  gpu.launch_func @" << kname << "_module::@" << kname << " blocks in (%gx, %gy, %h1) threads in (%nt, %h1, %h1)"
    << " dynamic_shared_memory_size %shm args(%pA : !llvm.ptr, %pB : !llvm.ptr, %C : " << cT << ")\n"
    << "  return\n"
    << "}\n"
    << "}\n";
  return o.str();
}

Status checkWgmmaParams(const WgmmaParams& p) {
  if (p.elem != "f16" && p.elem != "bf16") return Error{"wgmma: A and B must be f16 or bf16, not " + p.elem};
  if (p.block_m != 64 && p.block_m != 128 && p.block_m != 256) return Error{"wgmma: block_m must be 64, 128 or 256"};
  if (p.block_n < 64 || p.block_n > 256 || p.block_n % 64) return Error{"wgmma: block_n must be 64, 128, 192 or 256"};
  if ((p.wg_m != 64 && p.wg_m != 128) || p.block_m % p.wg_m || p.block_m / p.wg_m > 4)
    return Error{"wgmma: rows per warpgroup must be 64 or 128 and divide block_m into at most 4 warpgroups"};
  if (p.wg_m == 128 && p.block_n != 128)  // see wgmmaShape (gpu_space.cpp): MLIR 22's store of the second fragment
    return Error{"wgmma: 128-row warpgroups need block_n = 128 (MLIR 22 stores their second 64-row half elsewhere)"};
  // Step k refills the stage step k-1 read: with one stage, step k would wait for a tile never loaded.
  if (p.stages < 2 || p.stages > 8) return Error{"wgmma: 2 to 8 stages"};
  if (p.m % p.block_m || p.n % p.block_n || p.k % 64)
    return Error{"wgmma: M, N must be multiples of the block tile and K of 64 (" + std::to_string(p.m) + "x" +
                 std::to_string(p.n) + "x" + std::to_string(p.k) + ")"};
  return okStatus();
}

namespace {

using namespace mlir;

// The memref function argument a GEMM operand comes from (directly or through to_tensor).
BlockArgument argumentOf(Value v, func::FuncOp f) {
  if (auto t = v.getDefiningOp<bufferization::ToTensorOp>()) v = t.getBuffer();
  auto ba = llvm::dyn_cast<BlockArgument>(v);
  return ba && ba.getOwner() == &f.getBody().front() ? ba : BlockArgument();
}

bool isZero(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? llvm::dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  return f && f.getValue().isZero();
}

}  // namespace

bool rewriteFunctionToWgmma(mlir::Operation* func, const WgmmaParams& opts, std::string& err) {
  auto f = llvm::dyn_cast<mlir::func::FuncOp>(func);
  if (!f) {
    err = "wgmma: not a func.func";
    return false;
  }
  std::vector<linalg::MatmulOp> mms;
  f.walk([&](linalg::MatmulOp m) { mms.push_back(m); });
  if (mms.size() != 1) {
    err = "wgmma: expected one linalg.matmul in @" + f.getSymName().str() + ", found " + std::to_string(mms.size());
    return false;
  }
  linalg::MatmulOp mm = mms[0];
  if (mm.hasUserDefinedMaps()) {
    err = "wgmma: only the NN layout (linalg.matmul without indexing_maps) is supported";
    return false;
  }
  BlockArgument a = argumentOf(mm.getDpsInputs()[0], f), b = argumentOf(mm.getDpsInputs()[1], f);
  auto fill = mm.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  BlockArgument c = fill ? argumentOf(fill.getDpsInits()[0], f) : BlockArgument();
  if (!a || !b || !c || !isZero(fill.getDpsInputs()[0])) {
    err = "wgmma: the GEMM must read A and B from memref arguments and overwrite a memref argument C (C = 0, then "
          "C += A*B); accumulating into C is not supported";
    return false;
  }
  if (mm.hasPureTensorSemantics()) {
    bool stored = false;
    for (Operation* u : mm->getResult(0).getUsers())
      if (auto m = llvm::dyn_cast<bufferization::MaterializeInDestinationOp>(u)) stored |= m.getDest() == c;
    if (!stored) {
      err = "wgmma: the GEMM's result must be materialised into the C argument";
      return false;
    }
  }
  for (Operation& op : f.getBody().front()) {
    if (!llvm::isa<bufferization::ToTensorOp, bufferization::MaterializeInDestinationOp, linalg::FillOp,
                   linalg::MatmulOp, arith::ConstantOp, func::ReturnOp>(op)) {
      err = "wgmma: the function holds more than the GEMM (" + op.getName().getStringRef().str() +
            "); one scheduled GEMM per function";
      return false;
    }
  }
  auto at = llvm::cast<MemRefType>(a.getType()), bt = llvm::cast<MemRefType>(b.getType()),
       ct = llvm::cast<MemRefType>(c.getType());
  for (MemRefType t : {at, bt, ct})
    if (!t.hasStaticShape() || !t.getLayout().isIdentity() || t.getRank() != 2 || t.getMemorySpace()) {
      err = "wgmma: A, B and C must be static, contiguous 2-D memrefs";
      return false;
    }
  if (a.getArgNumber() != 0 || b.getArgNumber() != 1 || c.getArgNumber() != 2 || f.getNumArguments() != 3 ||
      f.getNumResults() != 0) {
    err = "wgmma: the function must be (A, B, C) -> ()";
    return false;
  }
  WgmmaParams p = opts;
  p.m = at.getDimSize(0), p.k = at.getDimSize(1), p.n = bt.getDimSize(1);
  Type ea = at.getElementType();
  p.elem = ea.isF16() ? "f16" : ea.isBF16() ? "bf16" : "other";
  if (bt.getElementType() != ea || !ct.getElementType().isF32() || bt.getDimSize(0) != p.k ||
      ct.getDimSize(0) != p.m || ct.getDimSize(1) != p.n) {
    err = "wgmma: expected A (MxK) and B (KxN) of one type, f16 or bf16, and C (MxN) f32";
    return false;
  }
  if (auto s = checkWgmmaParams(p); !s) {
    err = s.error();
    return false;
  }
  auto parent = f->getParentOfType<ModuleOp>();
  if (!parent) {
    err = "wgmma: the function is not in a module";
    return false;
  }
  const std::string fname = f.getSymName().str();
  if (SymbolTable::lookupSymbolIn(parent, fname + "_wgmma_module")) {
    err = "wgmma: @" + fname + "_wgmma_module exists already";
    return false;
  }
  DiagCollector diags(f.getContext());
  auto gen = parseSourceString<ModuleOp>(wgmmaModuleText(p, fname), f.getContext(), "wgmma-kernel");
  if (!gen) {
    err = "wgmma: the generated kernel does not parse (a Sextant bug): " + diags.text;
    return false;
  }
  auto host = gen->lookupSymbol<func::FuncOp>(fname);
  auto kmod = gen->lookupSymbol<gpu::GPUModuleOp>(fname + "_wgmma_module");
  f.getBody().takeBody(host.getBody());
  kmod->moveBefore(f);
  parent->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(f.getContext()));
  return true;
}

namespace {

// As a pass, for schedules and Transform libraries (transform.apply_registered_pass
// "sextant-wgmma-gemm" with options = {...} to a function or a module): every function holding
// one linalg.matmul f16/bf16 -> f32 becomes the host side of a wgmma kernel.
struct WgmmaGemmPass : public PassWrapper<WgmmaGemmPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(WgmmaGemmPass)
  WgmmaGemmPass() = default;
  WgmmaGemmPass(const WgmmaGemmPass& o) : PassWrapper(o) {}
  StringRef getArgument() const final { return "sextant-wgmma-gemm"; }
  StringRef getDescription() const final {
    return "Sextant: a GEMM function -> a Hopper kernel (TMA loads, mbarrier stages, wgmma.mma_async; sm_90a)";
  }
  void getDependentDialects(DialectRegistry& r) const override {
    r.insert<arith::ArithDialect, memref::MemRefDialect, gpu::GPUDialect, nvgpu::NVGPUDialect, NVVM::NVVMDialect,
             LLVM::LLVMDialect, scf::SCFDialect>();
  }
  Option<int64_t> block_m{*this, "block-m", llvm::cl::desc("rows of C per block (64, 128, 256)"), llvm::cl::init(128)};
  Option<int64_t> block_n{*this, "block-n", llvm::cl::desc("columns of C per block (64-256, multiple of 64)"),
                          llvm::cl::init(128)};
  Option<int64_t> wg_m{*this, "warpgroup-m", llvm::cl::desc("rows of C per warpgroup (64, 128)"), llvm::cl::init(128)};
  Option<int64_t> stages{*this, "stages", llvm::cl::desc("TMA stages in shared memory"), llvm::cl::init(3)};
  Option<bool> warp_specialize{*this, "warp-specialize",
                               llvm::cl::desc("one more warpgroup issues the TMA loads (full/empty mbarriers)"),
                               llvm::cl::init(false)};

  void runOnOperation() override {
    WgmmaParams p;
    p.block_m = block_m, p.block_n = block_n, p.wg_m = wg_m, p.stages = stages;
    p.warp_specialize = warp_specialize;
    if (!rewriteMatmulFunctions(getOperation(), "sextant-wgmma-gemm",
                                [&](func::FuncOp f, std::string& err) { return rewriteFunctionToWgmma(f, p, err); }))
      signalPassFailure();
  }
};

}  // namespace

bool rewriteMatmulFunctions(Operation* root, const char* pass,
                            llvm::function_ref<bool(func::FuncOp, std::string&)> rewrite) {
  std::vector<func::FuncOp> fns;
  if (auto f = llvm::dyn_cast<func::FuncOp>(root)) fns.push_back(f);
  else root->walk([&](func::FuncOp f) {
    bool has = false;
    f.walk([&](linalg::MatmulOp) { has = true; });
    if (has) fns.push_back(f);
  });
  if (fns.empty()) {
    root->emitError() << pass << ": no function with a linalg.matmul";
    return false;
  }
  for (auto f : fns) {
    std::string err;
    if (!rewrite(f, err)) {
      f->emitError() << err;
      return false;
    }
  }
  return true;
}

void registerWgmmaPass() { PassRegistration<WgmmaGemmPass>(); }

}  // namespace sextant::detail
