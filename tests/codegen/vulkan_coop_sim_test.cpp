// Vulkan cooperative-matrix kernels (issue #33; the Vulkan space's mma = 1) without a device that
// runs them (lavapipe has no VK_KHR_cooperative_matrix, up to Mesa 25.0 at least): a kernel is
// compiled for a described device as the tuner compiles it, and the scheduled IR (after the
// fragments became gpu.subgroup_mma_*, before outlining) runs on the lock-step interpreter of
// gpu_sim.h, each subgroup op applied per subgroup (its indices must be the same on every lane of
// the subgroup); C must equal A x B exactly (small integers). This checks the route's tiling, the
// workgroup copies and barriers (race check), the accumulators' zero start and the fragments'
// placement; the SPIR-V conversion of gpu.subgroup_mma_* is MLIR's. Then the SPIR-V itself: the
// cooperative-matrix instructions, the Vulkan memory model, and the validator's verdict (Debian's
// spirv-val cannot check these kernels: compile-only, labelled so; $SEXTANT_SPIRV_VAL naming a newer
// one must pass them). Also the space: where the route and the subgroup knob exist, and old records.
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "gpu_sim.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "sextant/codegen/compiler.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/codegen/library.h"

namespace sextant {
namespace {

using namespace mlir;
using namespace gpusim;

// A device that lists the space's cooperative-matrix shape (as NVIDIA's driver does), subgroups of
// `subgroup`, optionally a choice of subgroup sizes.
GpuTargetInfo coopDevice(int64_t subgroup = 32, int64_t min_sg = 0, int64_t max_sg = 0) {
  auto g = *gpuTargetInfo(*resolveTarget("vulkan"));
  VulkanLimits l;
  l.name = "described device with cooperative matrices";
  l.max_invocations = 1024, l.max_size[0] = 1024, l.max_size[1] = 1024, l.max_size[2] = 64;
  l.shared_bytes = 48 * 1024, l.subgroup_size = subgroup, l.float16 = true;
  l.vendor_id = 0x10DE, l.device_type = "discrete-gpu";
  l.coop_matrix_shapes = {"16x16x16:f16,f16,f16,f16", kVulkanCoopMatrixShape};
  if (min_sg) l.subgroup_size_control = true, l.min_subgroup_size = min_sg, l.max_subgroup_size = max_sg;
  applyVulkanLimits(g, l);
  return g;
}

std::vector<int64_t> knobValues(const Space& s, const char* name) { return s.knobs()[size_t(s.knobIndex(name))].values; }

struct Compiled {
  CompileOutcome out;
  GpuKernelInfo info;
  std::string spirv;
};

Compiled compile(const GemmWorkload& w, const Space& s, const Candidate& c, const GpuTargetInfo& g) {
  Compiled k;
  GpuPlan p = *planGpuGemm(w, s, c);
  GpuCompileRequest r = gpuCompileRequest(w, s, c, p, g);
  r.keep_ir = true;
  r.out_path = ::testing::TempDir() + "/coop_" + std::to_string(getpid()) + ".spv";
  k.out = compileGpuGemm(r, k.info);
  std::ifstream f(r.out_path, std::ios::binary);
  k.spirv.assign(std::istreambuf_iterator<char>(f), {});
  std::filesystem::remove(r.out_path);
  return k;
}

// Compiled, and validated or labelled compile-only (a validator that predates the extension, or none).
void expectCompiled(const Compiled& k, const std::string& what) {
  if (k.out.ok) return;
  ASSERT_EQ(k.out.stage, "validate") << what << ": " << k.out.message;
  const bool unchecked = k.out.message.rfind(kSpirvUnchecked, 0) == 0;
  const bool no_validator = k.out.message.find("not found") != std::string::npos;
  EXPECT_TRUE(unchecked || no_validator) << what << ": " << k.out.message;
  // A validator named by SEXTANT_SPIRV_VAL is meant to check them.
  if (const char* v = std::getenv("SEXTANT_SPIRV_VAL"); v && *v) ADD_FAILURE() << what << ": " << k.out.message;
}

// One subgroup op over the block: `f(s, lane0)` per subgroup s of `sg` lanes, after checking that
// the op's index operands are the same on every lane of the subgroup.
void perSubgroup(Interp& in, Operation* op, ValueRange idx, int64_t sg, const std::function<void(int64_t, int64_t)>& f) {
  if (in.threads % sg) in.fail(op, "the block is not whole subgroups");
  for (int64_t s = 0; s < in.threads / sg; ++s) {
    for (int64_t l = 1; l < sg; ++l)
      if (in.indices(idx, s * sg + l) != in.indices(idx, s * sg)) in.fail(op, "indices differ across the lanes of a subgroup");
    f(s, s * sg);
  }
}

std::vector<int64_t> mmaShape(Value v) {
  auto s = llvm::cast<gpu::MMAMatrixType>(v.getType()).getShape();
  return {s[0], s[1]};
}

// gpu.subgroup_mma_*: every lane holds the whole 16x16 fragment (row-major), as the subgroup does.
// wrong_b: the negative control (B fragments transposed).
bool subgroupMma(Interp& in, Operation* op, int64_t sg, bool wrong_b) {
  auto fragAt = [&](Buf& b, Operation* o, std::vector<int64_t> base, int64_t lead, int64_t r, int64_t c, int64_t t, bool write) {
    if (b.shape.size() != 2 || lead != b.strides[0]) in.fail(o, "leadDimension is not the row stride of a 2-D buffer");
    base[0] += r, base[1] += c;
    in.touch(o, b, base, t, write);
    return base;
  };
  if (auto c = llvm::dyn_cast<gpu::SubgroupMmaConstantMatrixOp>(op)) {
    auto n = mmaShape(c->getResult(0));
    in.setAll(c->getResult(0), Vec(size_t(n[0] * n[1]), in.get(c.getValue())[0][0]));
    return true;
  }
  if (auto l = llvm::dyn_cast<gpu::SubgroupMmaLoadMatrixOp>(op)) {
    if (l.getTranspose() && *l.getTranspose()) in.fail(op, "transposed loads are not modelled");
    Buf& b = in.buf(l.getSrcMemref());
    auto n = mmaShape(l.getRes());
    std::vector<Vec> out(size_t(in.threads));
    perSubgroup(in, op, l.getIndices(), sg, [&](int64_t s, int64_t t0) {
      Vec frag(size_t(n[0] * n[1]));
      for (int64_t r = 0; r < n[0]; ++r)
        for (int64_t c = 0; c < n[1]; ++c)
          frag[size_t(r * n[1] + c)] = b.at(fragAt(b, op, in.indices(l.getIndices(), t0), int64_t(l.getLeadDimension().getZExtValue()), r, c, t0, false));
      for (int64_t t = s * sg; t < (s + 1) * sg; ++t) out[size_t(t)] = frag;
    });
    in.vals[l.getRes()] = out;
    return true;
  }
  if (auto m = llvm::dyn_cast<gpu::SubgroupMmaComputeOp>(op)) {
    std::vector<Vec> a = in.get(m.getOpA()), bb = in.get(m.getOpB()), c = in.get(m.getOpC());  // copies: see intBinary
    auto an = mmaShape(m.getOpA()), cn = mmaShape(m.getOpC());
    const int64_t M = cn[0], N = cn[1], K = an[1];
    std::vector<Vec> out(size_t(in.threads));
    perSubgroup(in, op, {}, sg, [&](int64_t s, int64_t t0) {
      for (int64_t t = s * sg; t < (s + 1) * sg; ++t)
        if (a[size_t(t)] != a[size_t(t0)] || bb[size_t(t)] != bb[size_t(t0)] || c[size_t(t)] != c[size_t(t0)])
          in.fail(op, "fragments differ across the lanes of a subgroup");
      Vec d = c[size_t(t0)];
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k)
            d[size_t(i * N + j)] += a[size_t(t0)][size_t(i * K + k)] * bb[size_t(t0)][size_t(wrong_b ? j * K + k : k * N + j)];
      for (int64_t t = s * sg; t < (s + 1) * sg; ++t) out[size_t(t)] = d;
    });
    in.vals[m.getRes()] = out;
    return true;
  }
  if (auto st = llvm::dyn_cast<gpu::SubgroupMmaStoreMatrixOp>(op)) {
    if (st.getTranspose() && *st.getTranspose()) in.fail(op, "transposed stores are not modelled");
    Buf& b = in.buf(st.getDstMemref());
    auto n = mmaShape(st.getSrc());
    std::vector<Vec> v = in.get(st.getSrc());
    perSubgroup(in, op, st.getIndices(), sg, [&](int64_t, int64_t t0) {
      for (int64_t r = 0; r < n[0]; ++r)
        for (int64_t c = 0; c < n[1]; ++c)
          b.at(fragAt(b, op, in.indices(st.getIndices(), t0), int64_t(st.getLeadDimension().getZExtValue()), r, c, t0, true)) =
              v[size_t(t0)][size_t(r * n[1] + c)];
    });
    return true;
  }
  return false;
}

// Compiles candidate `knobs` of `key` for `g`, runs it on the interpreter and returns the largest
// |C - A x B|; throws on what the interpreter cannot run. drop_loop_barriers: the K loop's barriers
// erased (the race check's negative control); wrong_b: the instruction model's negative control.
double runCase(const std::string& key, const std::string& knobs, const GpuTargetInfo& g, bool drop_loop_barriers = false,
               bool wrong_b = false, std::string* ir_seen = nullptr) {
  auto w = *parseWorkloadKey(key);
  Space s = buildGpuGemmSpace(w, g);
  auto cand = s.fromKey(knobs);
  if (!cand.ok()) throw std::runtime_error(cand.error());
  if (!s.isValid(*cand)) throw std::runtime_error("invalid candidate " + knobs);
  GpuPlan p = *planGpuGemm(w, s, *cand);
  if (!p.mma) throw std::runtime_error("not a cooperative-matrix candidate");
  Compiled k = compile(w, s, *cand, g);
  expectCompiled(k, knobs);
  if (k.info.scheduled_ir.empty()) throw std::runtime_error("no scheduled IR: " + k.out.stage + ": " + k.out.message);
  if (ir_seen) *ir_seen = k.info.scheduled_ir;
  ScheduledKernel sk = parseScheduledKernel(k.info.scheduled_ir, drop_loop_barriers);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> d(-4, 4);
  Buf A = makeBuf({w.m, w.k}), B = makeBuf({w.k, w.n}), C = makeBuf({w.m, w.n});
  for (auto* b : {&A, &B})
    for (double& x : *b->data) x = d(rng);
  for (double& x : *C.data) x = 12345;  // the kernel must start from zero itself
  Interp in;
  in.extra = [&](Operation* op) { return subgroupMma(in, op, p.warp_size, wrong_b); };
  runLaunch(in, sk.fn, sk.launch, A, B, C);
  double worst = 0;
  for (int64_t i = 0; i < w.m; ++i)
    for (int64_t j = 0; j < w.n; ++j) {
      double want = 0;
      for (int64_t kk = 0; kk < w.k; ++kk) want += A.at({i, kk}) * B.at({kk, j});
      double e = std::abs(C.at({i, j}) - want);
      worst = std::isnan(e) ? INFINITY : std::max(worst, e);
    }
  return worst;
}

const char* kKey = "gemm:NN:64x128x64:f16*f16->f32";
// Four 32x32 subgroup tiles of 2x2 fragments; two 64x64 tiles of 4x4 fragments; 16x32 tiles in a
// non-square block with scalar accesses and 64-bit copies.
const std::vector<std::string> kKnobs = {
    "block_m=64,block_n=64,block_k=32,mma=1,warp_m=32,warp_n=32,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0,"
    "lds_k_major=0,lds_pad=0,warp_specialize=0,promote=3,vec4=1",
    "block_m=64,block_n=128,block_k=64,mma=1,warp_m=64,warp_n=64,thread_m=2,thread_n=1,copy_bits=128,pipeline=1,swizzle=0,"
    "lds_k_major=0,lds_pad=0,warp_specialize=0,promote=3,vec4=1",
    "block_m=32,block_n=64,block_k=32,mma=1,warp_m=16,warp_n=32,thread_m=2,thread_n=1,copy_bits=64,pipeline=1,swizzle=0,"
    "lds_k_major=0,lds_pad=0,warp_specialize=0,promote=3,vec4=0",
};

TEST(VulkanCoop, KernelsComputeTheProductOnTheSubgroupModel) {
  for (int64_t sg : {32, 64}) {
    GpuTargetInfo g = coopDevice(sg);
    for (const auto& knobs : kKnobs) {
      std::string ir;
      double err = -1;
      try {
        err = runCase(kKey, knobs, g, false, false, &ir);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "subgroups of " << sg << ", " << knobs << ": " << e.what();
        continue;
      }
      EXPECT_EQ(err, 0.0) << "subgroups of " << sg << ", " << knobs;
      EXPECT_NE(ir.find("gpu.subgroup_mma_compute"), std::string::npos);
      // The accumulators start as zero fragments, not as a read of C.
      EXPECT_NE(ir.find("gpu.subgroup_mma_constant_matrix"), std::string::npos) << knobs;
      EXPECT_EQ(ir.find("vector.contract"), std::string::npos) << knobs;
    }
  }
}

// Random cooperative-matrix candidates of two shapes (one with K = 96): each compiles (validated by
// SEXTANT_SPIRV_VAL's spirv-val where set, else labelled compile-only) and computes the product on
// the subgroup model. SEXTANT_COOP_SWEEP=N candidates per shape (default 4;
// experiments/vulkan_coop_validate.sh runs 64 with a validator that knows the extension).
TEST(VulkanCoop, RandomCandidatesComputeTheProduct) {
  const char* env = std::getenv("SEXTANT_COOP_SWEEP");
  const int per_shape = env ? std::max(1, atoi(env)) : 4;
  GpuTargetInfo g = coopDevice();
  std::mt19937_64 rng(2026);
  int run = 0, exact = 0;
  for (const char* key : {kKey, "gemm:NN:128x64x96:f16*f16->f32"}) {
    auto w = *parseWorkloadKey(key);
    Space s = buildGpuGemmSpace(w, g);
    for (int n = 0, tries = 0; n < per_shape && tries < 100000; ++tries) {
      Candidate c = s.sample(rng);
      if (!planGpuGemm(w, s, c)->mma) continue;
      ++n, ++run;
      try {
        const double err = runCase(key, s.keyOf(c), g);
        exact += err == 0.0;
        EXPECT_EQ(err, 0.0) << key << " " << s.keyOf(c);
      } catch (const std::exception& e) {
        ADD_FAILURE() << key << " " << s.keyOf(c) << ": " << e.what();
      }
    }
  }
  printf("%d of %d cooperative-matrix candidates computed the product on the subgroup model (SPIR-V %s)\n", exact, run,
         std::getenv("SEXTANT_SPIRV_VAL") ? "validated by SEXTANT_SPIRV_VAL" : "compile-only unless spirv-val knows the extension");
}

TEST(VulkanCoop, AMissingBarrierAndAWrongModelAreCaught) {
  GpuTargetInfo g = coopDevice();
  try {
    runCase(kKey, kKnobs[0], g, true);
    ADD_FAILURE() << "no race found without the K loop's barriers";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("LDS race"), std::string::npos) << e.what();
  }
  EXPECT_GT(runCase(kKey, kKnobs[0], g, false, true), 0.0);
}

// The SPIR-V of a cooperative-matrix kernel: its instructions, SPIR-V 1.6, the Vulkan memory
// model, no read of C before the K loop (the zero start), and the validator's verdict.
TEST(VulkanCoop, SpirvHasCooperativeMatricesAndTheVulkanMemoryModel) {
  GpuTargetInfo g = coopDevice();
  auto w = *parseWorkloadKey(kKey);
  Space s = buildGpuGemmSpace(w, g);
  Compiled k = compile(w, s, *s.fromKey(kKnobs[0]), g);
  expectCompiled(k, kKnobs[0]);
  ASSERT_GE(k.spirv.size(), 20u);
  std::vector<uint32_t> words(k.spirv.size() / 4);
  memcpy(words.data(), k.spirv.data(), words.size() * 4);
  EXPECT_EQ(words[1], 0x00010600u);  // SPIR-V 1.6
  std::map<uint32_t, int> ops;
  bool vmm_cap = false, vulkan_model = false;
  for (size_t i = 5; i < words.size() && (words[i] >> 16);) {
    const uint32_t op = words[i] & 0xffffu;
    ++ops[op];
    if (op == 17 && words[i + 1] == 5345) vmm_cap = true;     // OpCapability VulkanMemoryModel
    if (op == 14 && words[i + 2] == 3) vulkan_model = true;   // OpMemoryModel _ Vulkan
    i += words[i] >> 16;
  }
  EXPECT_EQ(ops[4459], 8);  // OpCooperativeMatrixMulAddKHR: 2x2 fragments x 2 K steps of 16
  EXPECT_EQ(ops[4458], 4);  // OpCooperativeMatrixStoreKHR: the 2x2 C fragments, once
  EXPECT_EQ(ops[4457], 8);  // OpCooperativeMatrixLoadKHR: A and B fragments only (C starts from zero)
  EXPECT_TRUE(vmm_cap);
  EXPECT_TRUE(vulkan_model);
  EXPECT_EQ(k.info.subgroup_size, 0);  // one subgroup size: the pipeline requires none
}

// The exported library (tune export / tune compile) applied to the workload's own payload gives
// the tuner's kernel: the same SPIR-V words (compared also where the validator cannot check them).
TEST(VulkanCoop, LibraryKernelIsTheTunedKernel) {
  GpuTargetInfo g = coopDevice();
  auto w = *parseWorkloadKey(kKey);
  Space s = buildGpuGemmSpace(w, g);
  for (const auto& knobs : kKnobs) {
    Candidate c = *s.fromKey(knobs);
    Compiled direct = compile(w, s, c, g);
    expectCompiled(direct, knobs);
    LibraryEntry e{w, s, c, "tuned", 0, LibraryEntry::Kind::Vulkan, {{"record", "1"}}, {}};
    auto lib = emitTransformLibrary({e}, "test");
    ASSERT_TRUE(lib.ok()) << lib.error();
    GpuModuleRequest r;
    r.nvidia = false, r.vulkan = true;
    r.spirv_target = vulkanCoopMatrixTargetEnv(g, g.warp_size);
    r.out_path = ::testing::TempDir() + "/coop_module_" + std::to_string(getpid()) + ".mlir";
    std::vector<GpuModuleKernel> kernels;
    CompileOutcome out = compileModuleGpu(w.payloadMlir(), *lib, r, kernels);
    std::filesystem::remove(r.out_path);
    // Both validated, or both stopped at the validator (the SPIR-V is made before it is checked).
    EXPECT_EQ(out.ok, direct.out.ok) << knobs << ": " << out.stage << ": " << out.message.substr(0, 2000);
    EXPECT_EQ(out.stage, direct.out.stage);
    ASSERT_EQ(kernels.size(), 1u);
    ASSERT_FALSE(direct.spirv.empty());
    EXPECT_EQ(kernels[0].object, direct.spirv) << knobs;
  }
}

// Where the route and the subgroup knob exist; records from before the knob.
TEST(VulkanCoop, TheSpaceHasTheRouteOnlyWhereTheDeviceRunsIt) {
  auto f16 = *parseWorkloadKey(kKey);
  auto f32 = *parseWorkloadKey("gemm:NN:64x128x64:f32*f32->f32");
  auto nt = *parseWorkloadKey("gemm:NT:64x128x64:f16*f16->f32");
  GpuTargetInfo coop = coopDevice(), lavapipe = *gpuTargetInfo(*resolveTarget("vulkan"));
  EXPECT_EQ(knobValues(buildGpuGemmSpace(f16, coop), "mma"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(knobValues(buildGpuGemmSpace(f32, coop), "mma"), (std::vector<int64_t>{0}));
  EXPECT_EQ(knobValues(buildGpuGemmSpace(nt, coop), "mma"), (std::vector<int64_t>{0}));
  EXPECT_EQ(knobValues(buildGpuGemmSpace(f16, lavapipe), "mma"), (std::vector<int64_t>{0}));
  // A device without the f16 x f16 -> f32 shape has no route.
  GpuTargetInfo f16_only = coop;
  VulkanLimits l;
  l.subgroup_size = 32, l.float16 = true, l.coop_matrix_shapes = {"16x16x16:f16,f16,f16,f16"};
  applyVulkanLimits(f16_only, l);
  EXPECT_EQ(knobValues(buildGpuGemmSpace(f16, f16_only), "mma"), (std::vector<int64_t>{0}));
  // Every cooperative-matrix candidate: whole fragments per subgroup tile, both operands promoted,
  // whole subgroups of threads.
  Space s = buildGpuGemmSpace(f16, coop);
  int coop_candidates = 0;
  for (uint64_t i = 0; i < s.size(); ++i) {
    GpuPlan p = *planGpuGemm(f16, s, s.at(i));
    if (!p.mma) continue;
    ++coop_candidates;
    EXPECT_EQ(p.warp_m % 16, 0);
    EXPECT_EQ(p.warp_n % 16, 0);
    EXPECT_TRUE(p.promote_a && p.promote_b);
    EXPECT_EQ(p.threads % p.warp_size, 0);
  }
  EXPECT_GT(coop_candidates, 0);
  // The seeds include one cooperative-matrix candidate.
  int coop_seeds = 0;
  for (const auto& c : vulkanVendorSeeds(f16, s, coop)) coop_seeds += planGpuGemm(f16, s, c)->mma;
  EXPECT_EQ(coop_seeds, 1);

  // The subgroup knob: the device's default first, then its other choices; elsewhere the default
  // alone; NVIDIA and AMD spaces have none.
  GpuTargetInfo amd = coopDevice(64, 32, 64);
  Space sa = buildGpuGemmSpace(f16, amd);
  EXPECT_EQ(knobValues(sa, "subgroup"), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(knobValues(buildGpuGemmSpace(f16, lavapipe), "subgroup"), (std::vector<int64_t>{8}));
  EXPECT_EQ(buildGpuGemmSpace(f16, *gpuTargetInfo(*resolveTarget("h100"))).knobIndex("subgroup"), -1);
  // A candidate of subgroups of 32 on that device requires them; the default candidate is 64.
  bool required = false;
  for (uint64_t i = 0; i < sa.size() && !required; ++i) {
    GpuPlan p = *planGpuGemm(f16, sa, sa.at(i));
    if (p.warp_size == 32) required = p.required_subgroup == 32;
  }
  EXPECT_TRUE(required);
  EXPECT_EQ(planGpuGemm(f16, sa, defaultGpuCandidate(f16, sa, amd))->warp_size, 64);
  // A record from before the knob (no subgroup=) reads as the device's default.
  auto old = sa.fromKey(
      "block_m=64,block_n=64,block_k=32,mma=0,warp_m=16,warp_n=8,thread_m=4,thread_n=4,copy_bits=128,pipeline=1,"
      "swizzle=0,lds_k_major=0,lds_pad=0,warp_specialize=0,promote=3,vec4=1");
  ASSERT_TRUE(old.ok()) << old.error();
  EXPECT_EQ(sa.values(*old).back(), 64);
}

}  // namespace
}  // namespace sextant
