// The Hopper route (knob mma = 2 on sm_90, compiler_wgmma.cpp): the space, the kernel's PTX (TMA
// loads, mbarriers, wgmma.mma_async, the 1024-byte aligned dynamic shared memory), ptxas for
// sm_90a, the tensor-map arguments tune-runner makes, refusals, and the exported library.
// No GPU here: nothing checks that these kernels compute the right result (tune-runner does
// that on an H100; docs/gpu.md).
#include <filesystem>
#include <gtest/gtest.h>
#include <regex>
#include <set>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/gpu_resources.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/codegen/library.h"

#include "gpu_build.h"

using namespace sextant;
using namespace sextant::testing_codegen;

namespace {

const std::string kF16 = "gemm:NN:256x512x512:f16*f16->f32";

std::string knobs(int bm, int bn, int warp_m, int stages, int ws = 0) {
  return "block_m=" + std::to_string(bm) + ",block_n=" + std::to_string(bn) + ",block_k=64,mma=2,warp_m=" +
         std::to_string(warp_m) + ",warp_n=8,thread_m=2,thread_n=1,copy_bits=128,pipeline=" + std::to_string(stages) +
         ",swizzle=1,warp_specialize=" + std::to_string(ws);
}

// ptxas as the pre-flight runs it (arch sm_90: runPtxas picks sm_90a from the PTX).
void assemble(const Built& b, int64_t max_regs) {
  std::string ptxas = findPtxas();
  if (ptxas.empty()) {  // the test's other checks have run; it is reported as skipped, not passed
    GTEST_SKIP() << "no ptxas on this machine (CUDA toolkit): the PTX was not assembled";
  }
  auto r = runPtxas(ptxas, b.path, "sm_90", b.path + ".cubin");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_LE(r->registers, max_regs);
  EXPECT_EQ(r->spill_bytes, 0);
  EXPECT_EQ(r->smem_bytes, 1024);  // the mbarriers, padded to the tiles' alignment
  EXPECT_EQ(r->smem_bytes + b.info.dynamic_smem_bytes, b.plan.smem_bytes);
  std::filesystem::remove(b.path + ".cubin");
}

}  // namespace

TEST(Wgmma, SpaceHasTheRouteOnSm90ForF16AndBf16NNOnly) {
  auto h100 = *gpuTargetInfo(*resolveTarget("h100"));
  auto a100 = *gpuTargetInfo(*resolveTarget("a100"));
  auto mma = [](const std::string& key, const GpuTargetInfo& g) {
    return buildGpuGemmSpace(*parseWorkloadKey(key), g).knobs()[3].values;
  };
  EXPECT_EQ(mma("gemm:NN:4096x4096x4096:f16*f16->f32", h100), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(mma("gemm:NN:4096x4096x4096:bf16*bf16->f32", h100), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(mma("gemm:NN:4096x4096x4096:f16*f16->f32", a100), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(mma("gemm:NT:4096x4096x4096:f16*f16->f32", h100), (std::vector<int64_t>{0}));
  EXPECT_EQ(mma("gemm:NN:4096x4096x4096:f32*f32->f32", h100), (std::vector<int64_t>{0}));

  // Every wgmma point of the space against a brute force of the route's rules.
  auto w = *parseWorkloadKey("gemm:NN:4096x4096x256:f16*f16->f32");
  Space s = buildGpuGemmSpace(w, h100);
  std::set<std::string> in_space;
  for (uint64_t i = 0; i < s.size(); ++i) {
    Candidate c = s.at(i);
    auto p = planGpuGemm(w, s, c);
    ASSERT_TRUE(p.ok());
    if (!p->wgmma) continue;
    auto kv = s.knobMap(c);
    in_space.insert(knobs(int(kv["block_m"]), int(kv["block_n"]), int(kv["warp_m"]), int(kv["pipeline"]),
                          int(kv["warp_specialize"])));
    EXPECT_EQ(p->threads, 128 * (p->block_m / p->warpgroup_m + (p->warp_specialize ? 1 : 0)));
    EXPECT_EQ(p->smem_bytes, p->pipeline * (p->block_m + p->block_n) * 128 + 1024);
  }
  std::set<std::string> brute;
  for (int bm : {64, 128, 256})
    for (int bn : {64, 128, 256})
      for (int wm : {16, 64})
        for (int st = 2; st <= 4; ++st)  // one stage cannot refill ahead
          for (int ws : {0, 1}) {
            int wg_m = wm == 64 ? 64 : std::min(bm, 128), threads = 128 * (bm / wg_m + ws);
            // registers: the accumulators + about 30, within 255 and 64 Ki / threads (multiple of 8)
            int acc = wg_m * bn / 128, budget = std::min(255, 65536 / threads / 8 * 8);
            bool ok = bm / wg_m <= 4 && acc <= 128 && acc + 30 <= budget && st <= 256 / 64 &&
                      (wg_m == 64 || bn == 128) &&  // MLIR 22 stores a 128-row accumulator right only at n = 128
                      st * (bm + bn) * 128 + 1024 <= h100.smem_per_block_bytes;
            if (ok) brute.insert(knobs(bm, bn, wm, st, ws));
          }
  EXPECT_EQ(in_space, brute);
  EXPECT_GT(brute.size(), 60u);
}

// The default on large sm_90 f16/bf16 GEMMs: 256x128 blocks in two 128-row consumer warpgroups, 4
// stages, no producer (chosen from the H200 and H100 runs, datasets/gpu/README.md).
TEST(Wgmma, DefaultIsTwo128RowWarpgroupsOf256x128) {
  auto h100 = *gpuTargetInfo(*resolveTarget("h100"));
  for (const char* key : {"gemm:NN:4096x4096x4096:f16*f16->f32", "gemm:NN:8192x28672x8192:bf16*bf16->f32"}) {
    auto w = *parseWorkloadKey(key);
    Space s = buildGpuGemmSpace(w, h100);
    auto p = planGpuGemm(w, s, defaultGpuCandidate(w, s, h100));
    ASSERT_TRUE(p.ok()) << key;
    EXPECT_TRUE(p->wgmma) << key;
    EXPECT_EQ(p->block_m, 256) << key;
    EXPECT_EQ(p->block_n, 128) << key;
    EXPECT_EQ(p->warpgroup_m, 128) << key;
    EXPECT_EQ(p->pipeline, 4) << key;
    EXPECT_FALSE(p->warp_specialize) << key;
    EXPECT_EQ(p->threads, 256) << key;
  }
}

TEST(Wgmma, F16KernelHasTmaMbarriersAndWgmma) {
  Built b = build("h100", kF16, knobs(128, 128, 16, 3));
  ASSERT_TRUE(b.out.ok) << b.out.stage << ": " << b.out.message;
  EXPECT_NE(b.object.find(".target sm_90a"), std::string::npos);
  // 128x128 block, one warpgroup: per K step of 64, two m64 halves x four k16 steps.
  EXPECT_EQ(count(b.object, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"), 8);
  EXPECT_GT(count(b.object, "wgmma.fence.sync.aligned"), 0);
  EXPECT_GT(count(b.object, "wgmma.commit_group.sync.aligned"), 0);
  EXPECT_GT(count(b.object, "wgmma.wait_group.sync.aligned \t1"), 0);  // step k-1 done before its stage is refilled
  EXPECT_GT(count(b.object, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"), 0);
  EXPECT_GT(count(b.object, "mbarrier.try_wait.parity"), 0);
  EXPECT_GT(count(b.object, "mbarrier.arrive.expect_tx"), 0);
  EXPECT_EQ(count(b.object, "mbarrier.init.shared.b64"), 3);  // one per stage
  EXPECT_EQ(count(b.object, "fence.mbarrier_init.release.cluster"), 1);  // visible to the TMA unit
  EXPECT_NE(b.object.find(".extern .shared .align 1024 .b8 sextant_wgmma_smem[];"), std::string::npos);
  EXPECT_EQ(b.info.args, (std::vector<std::string>{"tmap:A:f16:dims=512,256:stride=1024:box=64,128:swizzle=128",
                                                   "tmap:B:f16:dims=512,512:stride=1024:box=64,64:swizzle=128", "C"}));
  EXPECT_EQ(b.info.dynamic_smem_bytes, 3 * (128 + 128) * 64 * 2);
  EXPECT_EQ(b.info.grid[0], 4);
  EXPECT_EQ(b.info.grid[1], 2);
  EXPECT_EQ(b.info.block[0], 128);
  assemble(b, 255);
}

TEST(Wgmma, Bf16AndFourWarpgroups) {
  Built b = build("h100", "gemm:NN:256x512x512:bf16*bf16->f32", knobs(256, 64, 64, 4));
  ASSERT_TRUE(b.out.ok) << b.out.stage << ": " << b.out.message;
  EXPECT_EQ(count(b.object, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"), 4);  // 64 rows each
  EXPECT_EQ(count(b.object, ".f16.f16"), 0);
  EXPECT_EQ(b.info.block[0], 512);
  EXPECT_EQ(b.info.args[0], "tmap:A:bf16:dims=512,256:stride=1024:box=64,256:swizzle=128");
  assemble(b, 255);
}

// Warp-specialised: a producer warpgroup behind the consumers (384 threads for 2 consumers), full
// and empty mbarriers per stage, the consumers' release an mbarrier arrive, no block barrier in the
// K loop (the only bar.sync is the one after the mbarrier initialisation).
TEST(Wgmma, WarpSpecialisedKernel) {
  Built b = build("h100", kF16, knobs(256, 128, 16, 4, 1));
  ASSERT_TRUE(b.out.ok) << b.out.stage << ": " << b.out.message;
  EXPECT_EQ(b.info.block[0], 384);
  EXPECT_EQ(b.plan.threads, 384);
  EXPECT_EQ(count(b.object, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"), 8);
  EXPECT_EQ(count(b.object, "mbarrier.init.shared.b64"), 8);  // 4 full + 4 empty
  EXPECT_GT(count(b.object, "mbarrier.arrive.shared.b64"), 0);
  EXPECT_EQ(count(b.object, "bar.sync"), 1);
  EXPECT_GT(count(b.object, "cp.async.bulk.tensor.2d"), 0);
  assemble(b, 168);  // 65536 / 384 threads
  Built plain = build("h100", kF16, knobs(256, 128, 16, 4, 0));
  ASSERT_TRUE(plain.out.ok) << plain.out.message;
  EXPECT_EQ(plain.info.block[0], 256);
  EXPECT_GT(count(plain.object, "bar.sync"), 1);  // the per-step barrier before a refill
}

// What the rewrite refuses, with the reason: an NT GEMM, and K not a multiple of 64.
TEST(Wgmma, RefusesLayoutsAndShapesItCannotDo) {
  auto g = *gpuTargetInfo(*resolveTarget("h100"));
  auto w = *parseWorkloadKey(kF16);
  Space s = buildGpuGemmSpace(w, g);
  Candidate c = *s.fromKey(knobs(128, 128, 16, 2));
  GpuPlan p = *planGpuGemm(w, s, c);
  for (auto [key, why] : {std::pair<std::string, std::string>{"gemm:NT:256x512x512:f16*f16->f32", "only the NN layout"},
                          {"gemm:NN:256x512x480:f16*f16->f32", "K of 64"}}) {
    GpuCompileRequest r = gpuCompileRequest(w, s, c, p, g);
    r.payload = parseWorkloadKey(key)->payloadMlir();
    r.out_path = tmpPath("refused.ptx");
    GpuKernelInfo info;
    CompileOutcome out = compileGpuGemm(r, info);
    EXPECT_FALSE(out.ok) << key;
    EXPECT_NE(out.message.find(why), std::string::npos) << out.message;
  }
  // One stage is not in the space, and the pass refuses it.
  EXPECT_FALSE(s.fromKey(knobs(128, 128, 16, 1)).ok() && s.isValid(*s.fromKey(knobs(128, 128, 16, 1))));
  GpuCompileRequest r = gpuCompileRequest(w, s, c, p, g);
  r.schedule = std::regex_replace(r.schedule, std::regex("\"stages\" = 2"), "\"stages\" = 1");
  r.out_path = tmpPath("refused.ptx");
  GpuKernelInfo info;
  CompileOutcome out = compileGpuGemm(r, info);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.message.find("2 to 8 stages"), std::string::npos) << out.message;
}

// The exported library (the pass sextant-wgmma-gemm, named in it) gives the tuner's kernel.
TEST(Wgmma, LibraryKernelIsTheTunedKernel) {
  auto t = *resolveTarget("h100");
  auto g = *gpuTargetInfo(t);
  auto w = *parseWorkloadKey(kF16);
  Space s = buildGpuGemmSpace(w, g);
  const std::string k = knobs(128, 256, 64, 2);
  Built direct = build("h100", kF16, k);
  ASSERT_TRUE(direct.out.ok) << direct.out.message;
  LibraryEntry e{w, s, *s.fromKey(k), "tuned", 0, LibraryEntry::Kind::Nvidia, {{"record", "1"}}, {}};
  auto lib = emitTransformLibrary({e}, "test");
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_NE(lib->find("\"sextant-wgmma-gemm\""), std::string::npos);
  ASSERT_TRUE(validateTransformLibrary(*lib).ok());
  GpuModuleRequest r;
  r.chip = g.chip;  // sm_90: the compiler moves to sm_90a for wgmma
  r.features = g.features;
  r.out_path = tmpPath("wgmma-module.mlir");
  std::vector<GpuModuleKernel> kernels;
  CompileOutcome out = compileModuleGpu(w.payloadMlir(), *lib, r, kernels);
  ASSERT_TRUE(out.ok) << out.stage << ": " << out.message.substr(0, 3000);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].block[0], 256);
  EXPECT_EQ(kernels[0].grid[0], 2);
  EXPECT_EQ(kernels[0].object, direct.object);
  // The host side makes the tensor maps through MLIR's CUDA runtime wrappers.
  EXPECT_NE(slurp(r.out_path).find("mgpuTensorMapEncodeTiledMemref"), std::string::npos);
  std::filesystem::remove(r.out_path);
}
