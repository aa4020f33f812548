// The MFMA route end to end without an AMD GPU (none can be reached): a kernel is compiled for
// gfx942 as the tuner compiles it, and the scheduled IR (after the MFMA rewrite, before outlining)
// is run on the CPU by a small lock-step interpreter — every thread of a block executes each op
// before the next one, amdgpu.mfma is applied per wave through the independent instruction model
// (mfma_isa_model.h) — and C must equal A x B exactly (small integers). This checks the rewrite's
// index arithmetic for every layout, beyond the layout tables themselves. The interpreter knows
// the ops these kernels contain and fails on any other. A deliberately wrong instruction model
// must make the comparison fail.
#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "gpu_sim.h"
#include "mfma_isa_model.h"
#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "sextant/codegen/compiler.h"
#include "sextant/codegen/gpu_schedule.h"

namespace sextant {
namespace {

using namespace mlir;
using namespace gpusim;

// amdgpu.mfma per wave through the instruction model (wrong_model: the accumulator lanes rotated).
void mfma(Interp& in, amdgpu::MFMAOp op, bool wrong_model) {
  MfmaIntrinsic mi;
  mi.m = op.getM(), mi.n = op.getN(), mi.k = op.getK();
  if (op.getBlocks() != 1 || op.getCbsz() != 0 || op.getAbid() != 0 || op.getBlgp() != amdgpu::MFMAPermB::none)
    in.fail(op, "only plain single-block MFMA is modelled");
  if (in.threads % 64) in.fail(op, "threads are not whole waves");
  std::vector<Vec> a = in.get(op.getSourceA()), b = in.get(op.getSourceB()), c = in.get(op.getDestC());  // copies: see intBinary
  std::vector<Vec> d(in.threads);
  for (int64_t w = 0; w < in.threads / 64; ++w) {
    std::vector<Vec> wa(a.begin() + 64 * w, a.begin() + 64 * w + 64), wb(b.begin() + 64 * w, b.begin() + 64 * w + 64),
        wc(c.begin() + 64 * w, c.begin() + 64 * w + 64);
    test::isaMfma(mi, wa, wb, wc);
    for (int64_t l = 0; l < 64; ++l) d[64 * w + (wrong_model ? (l + 1) % 64 : l)] = wc[l];
  }
  in.vals[op.getResult()] = d;
}

struct Case {
  std::string key, knobs;
};

// Compiles `c` for mi300 as the tuner does, runs the scheduled kernel on the interpreter, and
// returns the largest |C - A x B|; throws on anything the interpreter cannot run.
// drop_loop_barriers: the negative control of the race check (the K loop's barriers erased).
double runCase(const Case& c, bool wrong_model, std::string* mfma_seen = nullptr, bool drop_loop_barriers = false) {
  auto t = resolveTarget("mi300");
  auto g = gpuTargetInfo(*t);
  auto w = *parseWorkloadKey(c.key);
  Space s = buildGpuGemmSpace(w, *g);
  auto cand = s.fromKey(c.knobs);
  if (!cand.ok()) throw std::runtime_error(cand.error());
  if (!s.isValid(*cand)) throw std::runtime_error("invalid candidate " + c.knobs);
  GpuPlan p = *planGpuGemm(w, s, *cand);
  if (p.mfma.m == 0) throw std::runtime_error("not an MFMA candidate");
  GpuCompileRequest r = gpuCompileRequest(w, s, *cand, p, *g);
  r.keep_ir = true;
  r.out_path = ::testing::TempDir() + "/mfma_sim_" + std::to_string(getpid()) + ".hsaco";
  GpuKernelInfo info;
  CompileOutcome out = compileGpuGemm(r, info);
  if (!out.ok) throw std::runtime_error("compile failed at " + out.stage + ": " + out.message);
  if (mfma_seen) *mfma_seen = info.scheduled_ir;
  if (std::getenv("MFMA_SIM_DUMP")) fprintf(stderr, "%s\n", info.scheduled_ir.c_str());

  ScheduledKernel sk = parseScheduledKernel(info.scheduled_ir, drop_loop_barriers);
  func::FuncOp fn = sk.fn;

  // Operands with the payload's layouts, small integers (exact in f16/bf16 and in f32 sums).
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(-4, 4);
  Buf A = makeBuf(llvm::cast<MemRefType>(fn.getArgument(0).getType()).getShape().vec());
  Buf B = makeBuf(llvm::cast<MemRefType>(fn.getArgument(1).getType()).getShape().vec());
  Buf C = makeBuf({w.m, w.n});
  for (auto* b : {&A, &B})
    for (double& x : *b->data) x = d(rng);
  for (double& x : *C.data) x = 12345;  // the kernel must initialise C itself
  const bool ta = w.layout == Layout::TN, tb = w.layout == Layout::NT;
  auto a_at = [&](int64_t i, int64_t k) { return ta ? A.at({k, i}) : A.at({i, k}); };
  auto b_at = [&](int64_t k, int64_t j) { return tb ? B.at({j, k}) : B.at({k, j}); };

  Interp in;
  in.extra = [&](Operation* op) {
    auto m = llvm::dyn_cast<amdgpu::MFMAOp>(op);
    if (m) mfma(in, m, wrong_model);
    return bool(m);
  };
  runLaunch(in, fn, sk.launch, A, B, C);
  double worst = 0;
  for (int64_t i = 0; i < w.m; ++i)
    for (int64_t j = 0; j < w.n; ++j) {
      double want = 0;
      for (int64_t k = 0; k < w.k; ++k) want += a_at(i, k) * b_at(k, j);
      double e = std::abs(C.at({i, j}) - want);
      worst = std::isnan(e) ? INFINITY : std::max(worst, e);
    }
  return worst;
}

const std::vector<Case> kCases = {
    // 32x32x8, 4 waves of one intrinsic tile each, two K steps of the block loop.
    {"gemm:NN:64x64x64:f16*f16->f32",
     "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0"},
    // 16x16x16, waves of 2x4 intrinsic tiles, a non-square block.
    {"gemm:NN:64x128x32:f16*f16->f32",
     "block_m=32,block_n=128,block_k=32,mma=2,warp_m=32,warp_n=64,thread_m=2,thread_n=1,copy_bits=64,pipeline=1,swizzle=0"},
    // bf16 with B stored transposed (NT), 32x32x8 with 2x2 tiles per wave.
    {"gemm:NT:128x64x64:bf16*bf16->f32",
     "block_m=128,block_n=64,block_k=16,mma=1,warp_m=64,warp_n=64,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0"},
    // f16 with A stored transposed (TN), 16x16x16.
    {"gemm:TN:64x64x64:f16*f16->f32",
     "block_m=64,block_n=32,block_k=64,mma=2,warp_m=16,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0"},
    // K-major LDS: B transposed on its way into LDS (NN), A (TN), nothing to move (NT).
    {"gemm:NN:64x64x64:f16*f16->f32",
     "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0,"
     "lds_k_major=1"},
    {"gemm:TN:64x64x64:bf16*bf16->f32",
     "block_m=64,block_n=32,block_k=64,mma=2,warp_m=16,warp_n=32,thread_m=2,thread_n=1,copy_bits=64,pipeline=1,swizzle=0,"
     "lds_k_major=1"},
    {"gemm:NT:128x64x64:bf16*bf16->f32",
     "block_m=128,block_n=64,block_k=16,mma=1,warp_m=64,warp_n=64,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0,"
     "lds_k_major=1"},
    // Padded LDS rows, with and without the K-major layout.
    {"gemm:NN:64x64x64:f16*f16->f32",
     "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0,"
     "lds_k_major=1,lds_pad=1"},
    {"gemm:TN:64x64x64:f16*f16->f32",
     "block_m=64,block_n=32,block_k=64,mma=2,warp_m=16,warp_n=32,thread_m=2,thread_n=1,copy_bits=64,pipeline=1,swizzle=0,"
     "lds_pad=1"},
    // Double-buffered LDS (pipeline = 2): 2 and 4 K steps, both intrinsics, with the K-major
    // transposing copies and padding, NN / NT / TN.
    {"gemm:NN:64x64x64:f16*f16->f32",
     "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=2,swizzle=0"},
    {"gemm:NT:128x64x64:bf16*bf16->f32",
     "block_m=128,block_n=64,block_k=16,mma=1,warp_m=64,warp_n=64,thread_m=2,thread_n=1,copy_bits=128,pipeline=2,swizzle=0,"
     "lds_k_major=1"},
    {"gemm:TN:64x64x64:bf16*bf16->f32",
     "block_m=64,block_n=32,block_k=16,mma=2,warp_m=16,warp_n=32,thread_m=2,thread_n=1,copy_bits=32,pipeline=2,swizzle=0,"
     "lds_k_major=1,lds_pad=1"},
    {"gemm:NN:64x128x48:f16*f16->f32",
     "block_m=32,block_n=128,block_k=16,mma=2,warp_m=32,warp_n=64,thread_m=2,thread_n=1,copy_bits=64,pipeline=2,swizzle=0,"
     "lds_pad=1"},
};

TEST(MfmaSim, KernelsComputeTheProductOnTheInstructionModel) {
  for (const auto& c : kCases) {
    std::string ir;
    double err = -1;
    try {
      err = runCase(c, false, &ir);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.key << " " << c.knobs << ": " << e.what();
      continue;
    }
    EXPECT_EQ(err, 0.0) << c.key << " " << c.knobs;
    EXPECT_NE(ir.find("amdgpu.mfma"), std::string::npos) << c.key;
    EXPECT_EQ(ir.find("vector.contract"), std::string::npos) << c.key;
  }
}

// The double-buffered kernels (pipeline = 2) pass the race check above with one barrier per K
// step; without it, the next step's operand reads meet the other threads' stores.
TEST(MfmaSim, AMissingBarrierIsCaughtAsARace) {
  for (const auto& c : kCases) {
    if (c.knobs.find("pipeline=2") == std::string::npos) continue;
    try {
      runCase(c, false, nullptr, true);
      ADD_FAILURE() << "no race found without the K loop's barrier: " << c.key << " " << c.knobs;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("LDS race"), std::string::npos) << e.what();
    }
  }
}

TEST(MfmaSim, AWrongInstructionModelIsCaught) {
  double err = runCase(kCases[0], true);
  EXPECT_GT(err, 0.0);
}

}  // namespace
}  // namespace sextant
