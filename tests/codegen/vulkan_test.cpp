// The Vulkan target (issue #33): schedules of the Vulkan space compiled to SPIR-V (validated by
// spirv-val), run on a Vulkan device with the Khronos validation layer on (here Mesa's lavapipe, a
// CPU-emulated device: these tests verify kernels, they measure nothing) and verified against the
// CPU reference; a kernel whose barriers are removed is caught; an invalid module is refused before
// it runs; the device's limits shape the space and the launch checks.
// A test that needs a Vulkan device, spirv-val or the validation layer says so and is skipped.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <cstring>
#include <random>
#include <set>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/runtime/gemm_host.h"
#include "sextant/runtime/gpu_runner.h"

#include "gpu_build.h"

using namespace sextant;
using namespace sextant::testing_codegen;

namespace {

bool haveProgram(const char* name) { return std::system((std::string("command -v ") + name + " >/dev/null 2>&1").c_str()) == 0; }

// The device every test here runs on, opened once with the validation layer on.
GpuDevice* vulkanDevice(std::string& why) {
  static std::string error;
  static std::unique_ptr<GpuDevice> dev = [] {
    setenv("SEXTANT_VULKAN_VALIDATION", "1", 1);
    auto d = openVulkanDevice(0);
    if (!d) {
      error = d.error();
      return std::unique_ptr<GpuDevice>();
    }
    return std::move(*d);
  }();
  why = error;
  return dev.get();
}

#define REQUIRE_VULKAN(dev)                                                           \
  std::string why_;                                                                   \
  GpuDevice* dev = vulkanDevice(why_);                                                \
  if (!dev) GTEST_SKIP() << "no Vulkan device with the validation layer: " << why_;   \
  if (!haveProgram("spirv-val")) GTEST_SKIP() << "spirv-val (Debian spirv-tools) is not installed"

struct Compiled {
  CompileOutcome out;
  GpuKernelInfo info;
  std::string spirv;
};

Compiled compileVulkan(const GemmWorkload& w, const Space& s, const Candidate& c, const GpuTargetInfo& g,
                       const std::string& schedule_edit_from = "", const std::string& schedule_edit_to = "") {
  Compiled k;
  GpuPlan p = *planGpuGemm(w, s, c);
  GpuCompileRequest r = gpuCompileRequest(w, s, c, p, g);
  EXPECT_TRUE(r.vulkan);
  if (!schedule_edit_from.empty())
    for (size_t at = r.schedule.find(schedule_edit_from); at != std::string::npos; at = r.schedule.find(schedule_edit_from, at))
      r.schedule.replace(at, schedule_edit_from.size(), schedule_edit_to);
  r.out_path = tmpPath(std::to_string(rand()) + ".spv");
  k.out = compileGpuGemm(r, k.info);
  if (k.out.ok) k.spirv = slurp(r.out_path);
  std::filesystem::remove(r.out_path);
  return k;
}

GpuMeasurement run(GpuDevice& dev, const GemmWorkload& w, const Compiled& k, uint32_t subgroup = 0) {
  auto problem = GemmHostProblem::create(w);
  EXPECT_TRUE(problem.ok());
  GpuMeasureOptions o;
  o.warmup = 1, o.min_reps = 2, o.max_reps = 2, o.min_time_s = 0, o.timeout_s = 60;
  GemmBench bench(dev, o);
  EXPECT_TRUE(bench.setProblem(*problem).ok());
  KernelLaunchSpec spec;
  spec.id = "k";
  spec.image = k.spirv;
  spec.format = KernelFormat::Spirv;
  spec.kernel_name = k.info.name;
  for (const auto& a : k.info.args) spec.args.push_back(KernelArg::buf(a[0]));
  for (int d = 0; d < 3; ++d) spec.dims.grid[d] = uint32_t(k.info.grid[d]), spec.dims.block[d] = uint32_t(k.info.block[d]);
  spec.dims.subgroup_size = subgroup ? subgroup : uint32_t(k.info.subgroup_size);
  return bench.measureKernel(spec);
}

GpuTargetInfo vulkanTarget() {
  auto g = gpuTargetInfo(*resolveTarget("vulkan"));
  EXPECT_TRUE(g.ok());
  return *g;
}

}  // namespace

// Random candidates of four workloads (one not a power of two, one NT, one f16): each compiles, passes
// spirv-val, runs under the validation layer without a message and computes the right C.
// SEXTANT_VULKAN_SWEEP=N sets the candidates per shape (default 4; issue #33's goal sweep is 64).
TEST(Vulkan, RandomCandidatesRunAndVerify) {
  REQUIRE_VULKAN(dev);
  const char* env = std::getenv("SEXTANT_VULKAN_SWEEP");
  const int per_shape = env ? std::atoi(env) : 4;
  GpuTargetInfo g = vulkanTarget();
  std::mt19937_64 rng(33);
  for (const char* key : {"gemm:NN:128x128x128:f32*f32->f32", "gemm:NN:96x80x48:f32*f32->f32", "gemm:NT:64x128x64:f32*f32->f32",
                          "gemm:NN:64x128x64:f16*f16->f32"}) {
    auto w = parseWorkloadKey(key);
    ASSERT_TRUE(w.ok()) << w.error();
    Space s = buildGpuGemmSpace(*w, g);
    ASSERT_GT(s.size(), 0u) << key;
    int ok = 0;
    for (int i = 0; i < per_shape; ++i) {
      Candidate c = s.at(rng() % s.size());
      Compiled k = compileVulkan(*w, s, c, g);
      ASSERT_TRUE(k.out.ok) << key << " " << s.keyOf(c) << ": " << k.out.stage << ": " << k.out.message;
      GpuMeasurement m = run(*dev, *w, k);
      EXPECT_TRUE(m.ok()) << key << " " << s.keyOf(c) << ": " << gpuStatusName(m.status) << ": " << m.message;
      EXPECT_GT(m.checked_entries, 0);
      ok += m.ok();
    }
    EXPECT_EQ(ok, per_shape) << key;
  }
}

// Arrays (OpTypeArray 28 / OpTypeRuntimeArray 29) whose element is a 4-lane vector (OpTypeVector 23)
// of `bits`-bit floats (OpTypeFloat 22): buffers retyped to vec4 elements.
int vec4Arrays(const std::string& spirv, uint32_t bits = 32) {
  std::vector<uint32_t> words(spirv.size() / 4);
  std::memcpy(words.data(), spirv.data(), spirv.size());
  std::set<uint32_t> floats, vec4s;
  int n = 0;
  for (size_t i = 5; i < words.size() && (words[i] >> 16) > 0; i += words[i] >> 16) {
    const uint32_t op = words[i] & 0xffffu;
    if (op == 22 && words[i + 2] == bits) floats.insert(words[i + 1]);
    if (op == 23 && floats.count(words[i + 2]) && words[i + 3] == 4) vec4s.insert(words[i + 1]);
    if ((op == 28 || op == 29) && vec4s.count(words[i + 2])) ++n;
  }
  return n;
}

// vec4 memory accesses: with the knob on, a kernel whose buffers allow it (f32, 4-wide aligned
// accesses) holds vec4 arrays; every kernel, on or off, validates, runs under the validation layer
// and computes the right C (NN, NT, TN, f16, batched).
TEST(Vulkan, Vec4AccessesRunAndVerify) {
  REQUIRE_VULKAN(dev);
  GpuTargetInfo g = vulkanTarget();
  {  // a candidate whose copies and C rows are 4 wide: vec4 buffers with the knob, none without
    auto w = parseWorkloadKey("gemm:NN:128x128x64:f32*f32->f32");
    Space s = buildGpuGemmSpace(*w, g);
    const std::string knobs = "block_m=64,block_n=64,block_k=16,mma=0,warp_m=16,warp_n=8,thread_m=4,thread_n=4,"
                              "copy_bits=128,pipeline=1,swizzle=0,lds_k_major=0,lds_pad=0,warp_specialize=0,promote=3,vec4=";
    for (int v : {1, 0}) {
      auto c = s.fromKey(knobs + std::to_string(v));
      ASSERT_TRUE(c.ok()) << c.error();
      Compiled k = compileVulkan(*w, s, *c, g);
      ASSERT_TRUE(k.out.ok) << k.out.stage << ": " << k.out.message;
      if (v) EXPECT_GE(vec4Arrays(k.spirv), 3) << "A, B and C (and the workgroup tiles) as vec4 arrays";
      else EXPECT_EQ(vec4Arrays(k.spirv), 0);
      GpuMeasurement m = run(*dev, *w, k);
      EXPECT_TRUE(m.ok()) << "vec4=" << v << ": " << gpuStatusName(m.status) << ": " << m.message;
    }
    // f16 inputs: A, B and their workgroup tiles as vec4 of f16 (64-bit copies).
    auto wh = parseWorkloadKey("gemm:NN:128x128x64:f16*f16->f32");
    Space sh = buildGpuGemmSpace(*wh, g);
    auto ch = sh.fromKey("block_m=64,block_n=64,block_k=16,mma=0,warp_m=16,warp_n=8,thread_m=4,thread_n=4,copy_bits=64,"
                         "pipeline=1,swizzle=0,lds_k_major=0,lds_pad=0,warp_specialize=0,promote=3,vec4=1");
    ASSERT_TRUE(ch.ok()) << ch.error();
    ASSERT_TRUE(sh.isValid(*ch));
    Compiled kh = compileVulkan(*wh, sh, *ch, g);
    ASSERT_TRUE(kh.out.ok) << kh.out.stage << ": " << kh.out.message;
    EXPECT_GE(vec4Arrays(kh.spirv, 16), 2) << "A and B as vec4 of f16";
    GpuMeasurement mh = run(*dev, *wh, kh);
    EXPECT_TRUE(mh.ok()) << "f16 vec4: " << gpuStatusName(mh.status) << ": " << mh.message;
  }
  std::mt19937_64 rng(36);
  for (const char* key : {"gemm:NN:96x80x48:f32*f32->f32", "gemm:NT:64x128x64:f32*f32->f32", "gemm:TN:64x64x32:f32*f32->f32",
                          "gemm:NN:64x128x64:f16*f16->f32", "batch_matmul:NT:2x64x64x32:f32*f32->f32"}) {
    auto w = parseWorkloadKey(key);
    Space s = buildGpuGemmSpace(*w, g);
    const int vk = s.knobIndex("vec4");
    ASSERT_GE(vk, 0);
    std::vector<Candidate> on;
    for (uint64_t i = 0; i < s.size(); ++i)
      if (s.values(s.at(i))[vk] == 1) on.push_back(s.at(i));
    ASSERT_FALSE(on.empty()) << key;
    const char* env = std::getenv("SEXTANT_VULKAN_SWEEP");
    const int per_shape = env ? std::atoi(env) : 2;
    for (int i = 0; i < per_shape; ++i) {
      Candidate c = on[rng() % on.size()];
      Compiled k = compileVulkan(*w, s, c, g);
      ASSERT_TRUE(k.out.ok) << key << " " << s.keyOf(c) << ": " << k.out.stage << ": " << k.out.message;
      GpuMeasurement m = run(*dev, *w, k);
      EXPECT_TRUE(m.ok()) << key << " " << s.keyOf(c) << ": " << gpuStatusName(m.status) << ": " << m.message;
    }
  }
}

// Batched matmul (NN, NT as attention's Q.K^T, TN): one batch element per workgroup row of the
// grid (z); the default and random candidates (SEXTANT_VULKAN_SWEEP=N per shape, default 3) compile,
// validate, run and compute every batch element's C.
TEST(Vulkan, BatchMatmulRunsAndVerifies) {
  REQUIRE_VULKAN(dev);
  GpuTargetInfo g = vulkanTarget();
  std::mt19937_64 rng(35);
  for (const char* key : {"batch_matmul:NN:3x64x64x32:f32*f32->f32", "batch_matmul:NT:2x64x128x64:f32*f32->f32",
                          "batch_matmul:TN:2x32x64x48:f32*f32->f32"}) {
    auto w = parseWorkloadKey(key);
    ASSERT_TRUE(w.ok()) << w.error();
    Space s = buildGpuGemmSpace(*w, g);
    ASSERT_GT(s.size(), 0u) << key;
    const char* env = std::getenv("SEXTANT_VULKAN_SWEEP");
    const int per_shape = env ? std::atoi(env) : 3;
    for (int i = 0; i < per_shape; ++i) {
      Candidate c = i == 0 ? defaultGpuCandidate(s) : s.at(rng() % s.size());
      GpuPlan p = *planGpuGemm(*w, s, c);
      EXPECT_EQ(p.grid[2], w->batch);
      Compiled k = compileVulkan(*w, s, c, g);
      ASSERT_TRUE(k.out.ok) << key << " " << s.keyOf(c) << ": " << k.out.stage << ": " << k.out.message;
      EXPECT_EQ(k.info.grid[2], w->batch) << key;
      GpuMeasurement m = run(*dev, *w, k);
      EXPECT_TRUE(m.ok()) << key << " " << s.keyOf(c) << ": " << gpuStatusName(m.status) << ": " << m.message;
      EXPECT_EQ(m.checked_entries, w->batch * w->m * w->n) << key;  // every entry of every element
    }
  }
}

// IREE's per-vendor configurations: the device class from the vendor ID and type; each class's
// configuration is a valid candidate at (or nearest to) IREE's tiles; the device's own class is
// the default and the first seed; the seeds are distinct.
TEST(Vulkan, VendorConfigurationsAreTheDefaultsAndSeeds) {
  EXPECT_EQ(vulkanDeviceClass(0x10DE, "discrete-gpu"), "nvidia");
  EXPECT_EQ(vulkanDeviceClass(0x1002, "discrete-gpu"), "amd");
  EXPECT_EQ(vulkanDeviceClass(0x13B5, "integrated-gpu"), "mali");
  EXPECT_EQ(vulkanDeviceClass(0x5143, "integrated-gpu"), "adreno");
  EXPECT_EQ(vulkanDeviceClass(0x106B, "integrated-gpu"), "apple");
  EXPECT_EQ(vulkanDeviceClass(0x8086, "integrated-gpu"), "other");
  EXPECT_EQ(vulkanDeviceClass(0x10005, "cpu"), "cpu");  // lavapipe (Mesa)
  GpuTargetInfo g = vulkanTarget();
  EXPECT_EQ(g.vulkan_class, "cpu");  // lavapipe's limits until a device is opened
  VulkanLimits nv;
  nv.vendor_id = 0x10DE, nv.device_type = "discrete-gpu", nv.max_invocations = 1024, nv.max_size[0] = 1024;
  nv.shared_bytes = 49152, nv.subgroup_size = 32;
  GpuTargetInfo gn = g;
  applyVulkanLimits(gn, nv);
  EXPECT_EQ(gn.vulkan_class, "nvidia");
  auto w = parseWorkloadKey("gemm:NN:1024x1024x1024:f32*f32->f32");
  Space s = buildGpuGemmSpace(*w, gn);
  // NVIDIA (32 x 8 invocations, 4x4x32 thread tiles, promoted): exactly representable.
  Candidate d = defaultGpuCandidate(*w, s, gn);
  ASSERT_TRUE(s.isValid(d));
  GpuPlan p = *planGpuGemm(*w, s, d);
  EXPECT_EQ(p.block_m, 32);
  EXPECT_EQ(p.block_n, 128);
  EXPECT_EQ(p.block_k, 32);
  EXPECT_EQ(p.thread_m, 4);
  EXPECT_EQ(p.thread_n, 4);
  EXPECT_EQ(p.threads, 256);
  EXPECT_TRUE(p.promote_a && p.promote_b);
  // Mali and the fallback read global memory directly (no promotion).
  for (const char* cls : {"mali", "adreno", "apple", "cpu", "other"}) {
    Candidate c = vulkanConfigCandidate(s, vulkanVendorConfig(cls, DType::F32));
    ASSERT_TRUE(s.isValid(c)) << cls;
    GpuPlan q = *planGpuGemm(*w, s, c);
    EXPECT_FALSE(q.promote_a || q.promote_b) << cls;
  }
  auto seeds = vulkanVendorSeeds(*w, s, gn);
  ASSERT_GE(seeds.size(), 4u);
  EXPECT_EQ(seeds.front(), d);
  std::set<uint64_t> distinct;
  for (const Candidate& c : seeds) distinct.insert(s.encode(c));
  EXPECT_EQ(distinct.size(), seeds.size());
  // The default of a lavapipe space is the fallback's (IREE gives CPU devices its fallback).
  Space sl = buildGpuGemmSpace(*w, g);
  EXPECT_EQ(defaultGpuCandidate(*w, sl, g), vulkanConfigCandidate(sl, vulkanVendorConfig("cpu", DType::F32)));
  EXPECT_EQ(defaultGpuCandidate(sl), defaultGpuCandidate(*w, sl, g));
}

// Every class's configuration compiles, validates, runs and verifies on the device (f32, and f16
// where the device has it), on a shape that is not a power of two.
TEST(Vulkan, VendorConfigurationsRunAndVerify) {
  REQUIRE_VULKAN(dev);
  GpuTargetInfo g = vulkanTarget();
  for (const char* key : {"gemm:NN:192x160x96:f32*f32->f32", "gemm:NN:128x128x64:f16*f16->f32"}) {
    auto w = parseWorkloadKey(key);
    Space s = buildGpuGemmSpace(*w, g);
    for (const Candidate& c : vulkanVendorSeeds(*w, s, g)) {
      Compiled k = compileVulkan(*w, s, c, g);
      ASSERT_TRUE(k.out.ok) << key << " " << s.keyOf(c) << ": " << k.out.stage << ": " << k.out.message;
      GpuMeasurement m = run(*dev, *w, k);
      EXPECT_TRUE(m.ok()) << key << " " << s.keyOf(c) << ": " << gpuStatusName(m.status) << ": " << m.message;
    }
  }
}

// Workgroup variables of a SPIR-V module (OpVariable, opcode 59, storage class Workgroup = 4).
int workgroupVariables(const std::string& spirv) {
  std::vector<uint32_t> words(spirv.size() / 4);
  std::memcpy(words.data(), spirv.data(), spirv.size());
  int n = 0;
  for (size_t i = 5; i < words.size() && (words[i] >> 16) > 0; i += words[i] >> 16)
    if ((words[i] & 0xffffu) == 59 && (words[i] >> 16) >= 4 && words[i + 3] == 4) ++n;
  return n;
}

// The promotion knob: A and B, A only, B only or neither staged in workgroup memory. Each choice
// compiles to a kernel with that many workgroup buffers, runs under the validation layer and
// computes the right C (NN and NT).
TEST(Vulkan, PromotionKnobRunsAndVerifies) {
  REQUIRE_VULKAN(dev);
  GpuTargetInfo g = vulkanTarget();
  std::mt19937_64 rng(34);
  for (const char* key : {"gemm:NN:128x96x64:f32*f32->f32", "gemm:NT:64x128x64:f32*f32->f32"}) {
    auto w = parseWorkloadKey(key);
    Space s = buildGpuGemmSpace(*w, g);
    const int pk = s.knobIndex("promote");
    ASSERT_GE(pk, 0);
    for (int64_t promote : {3, 1, 2, 0}) {
      std::vector<Candidate> with;
      for (uint64_t i = 0; i < s.size(); ++i)
        if (s.values(s.at(i))[pk] == promote) with.push_back(s.at(i));
      ASSERT_FALSE(with.empty()) << key << " promote=" << promote;
      {
        Candidate c = with[rng() % with.size()];
        GpuPlan p = *planGpuGemm(*w, s, c);
        EXPECT_EQ(p.promote_a, (promote & 1) != 0);
        EXPECT_EQ(p.promote_b, (promote & 2) != 0);
        EXPECT_EQ(p.smem_bytes == 0, promote == 0);
        Compiled k = compileVulkan(*w, s, c, g);
        ASSERT_TRUE(k.out.ok) << key << " " << s.keyOf(c) << ": " << k.out.stage << ": " << k.out.message;
        EXPECT_EQ(workgroupVariables(k.spirv), (promote & 1) + (promote >> 1)) << key << " " << s.keyOf(c);
        GpuMeasurement m = run(*dev, *w, k);
        EXPECT_TRUE(m.ok()) << key << " " << s.keyOf(c) << ": " << gpuStatusName(m.status) << ": " << m.message;
      }
    }
  }
}

// The same kernel with its workgroup barriers replaced by no-ops computes a wrong C: the device
// really runs the workgroup's invocations concurrently, and the verification sees it.
TEST(Vulkan, KernelWithoutBarriersIsCaught) {
  REQUIRE_VULKAN(dev);
  GpuTargetInfo g = vulkanTarget();
  auto w = parseWorkloadKey("gemm:NN:256x256x256:f32*f32->f32");
  Space s = buildGpuGemmSpace(*w, g);
  auto c = s.fromKey("block_m=64,block_n=64,block_k=32,mma=0,warp_m=16,warp_n=8,thread_m=4,thread_n=4,copy_bits=128,"
                     "pipeline=1,swizzle=0,lds_k_major=0,lds_pad=0,warp_specialize=0");
  ASSERT_TRUE(c.ok()) << c.error();
  Compiled k = compileVulkan(*w, s, *c, g);
  ASSERT_TRUE(k.out.ok) << k.out.message;
  ASSERT_TRUE(run(*dev, *w, k).ok());
  // OpControlBarrier (opcode 224, 4 words) -> four OpNop.
  std::vector<uint32_t> words(k.spirv.size() / 4);
  std::memcpy(words.data(), k.spirv.data(), k.spirv.size());
  int removed = 0;
  for (size_t i = 5; i < words.size();) {
    const uint32_t n = words[i] >> 16;
    if ((words[i] & 0xffffu) == 224) {
      for (uint32_t j = 0; j < n; ++j) words[i + j] = (1u << 16);
      ++removed;
    }
    i += n;
  }
  ASSERT_GT(removed, 0) << "the kernel has no barrier";
  k.spirv.assign(reinterpret_cast<const char*>(words.data()), words.size() * 4);
  GpuMeasurement m = run(*dev, *w, k);
  EXPECT_EQ(m.status, GpuStatus::WrongResult) << gpuStatusName(m.status) << ": " << m.message;
}

// Every kernel passes spirv-val before it may run: a corrupted module is refused with the
// validator's words, and without spirv-val the compilation fails (stage "validate") instead of
// shipping an unchecked kernel.
TEST(Vulkan, InvalidSpirvIsRefusedBeforeItRuns) {
  if (!haveProgram("spirv-val")) GTEST_SKIP() << "spirv-val (Debian spirv-tools) is not installed";
  GpuTargetInfo g = vulkanTarget();
  auto w = parseWorkloadKey("gemm:NN:128x128x128:f32*f32->f32");
  Space s = buildGpuGemmSpace(*w, g);
  Compiled k = compileVulkan(*w, s, defaultGpuCandidate(s), g);
  ASSERT_TRUE(k.out.ok) << k.out.stage << ": " << k.out.message;
  const std::string path = tmpPath("val.spv");
  std::ofstream(path, std::ios::binary) << k.spirv;
  EXPECT_TRUE(validateSpirvFile(path).ok());
  // The first OpControlBarrier's execution scope made an id that does not exist.
  std::vector<uint32_t> words(k.spirv.size() / 4);
  std::memcpy(words.data(), k.spirv.data(), k.spirv.size());
  for (size_t i = 5; i < words.size(); i += words[i] >> 16)
    if ((words[i] & 0xffffu) == 224) {
      words[i + 1] = words[3] + 7;  // beyond the module's id bound
      break;
    }
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(words.data()), std::streamsize(k.spirv.size()));
  auto bad = validateSpirvFile(path);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("spirv-val rejected"), std::string::npos) << bad.error();
  std::filesystem::remove(path);
  // No validator, no kernel.
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", "/nonexistent", 1);
  Compiled unchecked = compileVulkan(*w, s, defaultGpuCandidate(s), g);
  setenv("PATH", old_path.c_str(), 1);
  EXPECT_FALSE(unchecked.out.ok);
  EXPECT_EQ(unchecked.out.stage, "validate");
  EXPECT_NE(unchecked.out.message.find("spirv-val not found"), std::string::npos) << unchecked.out.message;
}

// The device's limits shape the space: with 64 invocations and 8 KiB of workgroup memory, no
// candidate asks for more; a launch beyond the device's limit is refused, naming the limit.
TEST(Vulkan, DeviceLimitsShapeTheSpaceAndTheLaunch) {
  GpuTargetInfo g = vulkanTarget();
  VulkanLimits l;
  l.name = "small device";
  l.max_invocations = 64, l.max_size[0] = 64, l.shared_bytes = 8192, l.subgroup_size = 16;
  applyVulkanLimits(g, l);
  EXPECT_EQ(g.display, "small device");
  auto w = parseWorkloadKey("gemm:NN:256x256x256:f32*f32->f32");
  Space small = buildGpuGemmSpace(*w, g), big = buildGpuGemmSpace(*w, vulkanTarget());
  ASSERT_GT(small.size(), 0u);
  EXPECT_LT(small.size(), big.size());
  for (uint64_t i = 0; i < small.size(); ++i) {
    GpuPlan p = *planGpuGemm(*w, small, small.at(i));
    EXPECT_LE(p.threads, 64);
    EXPECT_LE(p.smem_bytes, 8192);
    EXPECT_EQ(p.threads % 16, 0);
    EXPECT_LE(p.thread_n, 4);  // SPIR-V vectors of at most 4 lanes
  }
  std::string why;
  GpuDevice* dev = vulkanDevice(why);
  if (!dev) GTEST_SKIP() << "space checked; no Vulkan device for the launch check: " << why;
  GpuTargetInfo dg = vulkanTarget();
  Compiled k = compileVulkan(*w, big, defaultGpuCandidate(big), dg);
  ASSERT_TRUE(k.out.ok) << k.out.message;
  auto lk = dev->load(k.spirv, KernelFormat::Spirv, k.info.name);
  ASSERT_TRUE(lk.ok()) << lk.error();
  LaunchDims d;
  d.block = {4096, 1, 1};
  auto st = dev->prepare(*lk, d);
  EXPECT_FALSE(st.ok());
  d.block = {uint32_t(k.info.block[0]), uint32_t(k.info.block[1]), uint32_t(k.info.block[2])};
  d.grid = {1, 1, 1};
  EXPECT_TRUE(dev->prepare(*lk, d).ok());
  dev->unload(*lk);
  // A PTX image is not for this device.
  EXPECT_FALSE(dev->load(".version 8.0", KernelFormat::Ptx, "k").ok());
  EXPECT_NE(dev->info().arch.find("vulkan-"), std::string::npos);
}

// A kernel that requires a subgroup size (the space's subgroup knob, where the device offers a
// choice): its pipeline is made requiring it and runs; a size outside the device's range is a
// launch error that names the range (lavapipe: subgroup size control with 8 only).
TEST(Vulkan, KernelsRequireTheirSubgroupSize) {
  REQUIRE_VULKAN(dev);
  const VulkanDeviceProps* props = vulkanDeviceProps(*dev);
  ASSERT_NE(props, nullptr);
  if (!props->limits.subgroup_size_control) GTEST_SKIP() << props->name << " has no subgroup size control for compute";
  auto w = *parseWorkloadKey("gemm:NN:128x128x128:f32*f32->f32");
  GpuTargetInfo g = vulkanTarget();
  applyVulkanLimits(g, props->limits);
  Space s = buildGpuGemmSpace(w, g);
  Compiled k = compileVulkan(w, s, defaultGpuCandidate(w, s, g), g);
  ASSERT_TRUE(k.out.ok) << k.out.message;
  auto ok = run(*dev, w, k, uint32_t(props->limits.min_subgroup_size));
  EXPECT_EQ(ok.status, GpuStatus::Ok) << ok.message;
  auto bad = run(*dev, w, k, uint32_t(props->limits.max_subgroup_size * 2));
  EXPECT_EQ(bad.status, GpuStatus::LaunchError);
  EXPECT_NE(bad.message.find("allows " + std::to_string(props->limits.min_subgroup_size)), std::string::npos) << bad.message;
}

// The runner's pipeline cache on disk: written when a kernel is loaded (header of this device:
// vendor ID, device ID), seeding the next process's device; another driver's or a damaged file is
// ignored and replaced. (lavapipe's cache holds only the header: on a GPU driver it holds the
// compiled pipelines.)
TEST(Vulkan, PipelineCacheIsKeptOnDisk) {
  REQUIRE_VULKAN(dev);
  const std::string dir = tmpPath("pipeline-cache");
  std::filesystem::remove_all(dir);
  setenv("SEXTANT_VULKAN_PIPELINE_CACHE", dir.c_str(), 1);
  GpuTargetInfo g = vulkanTarget();
  auto w = parseWorkloadKey("gemm:NN:64x64x64:f32*f32->f32");
  Space s = buildGpuGemmSpace(*w, g);
  Compiled k = compileVulkan(*w, s, defaultGpuCandidate(s), g);
  ASSERT_TRUE(k.out.ok) << k.out.message;
  auto loadOnce = [&](bool expect_loaded) {
    auto d = openVulkanDevice(0);
    ASSERT_TRUE(d.ok()) << d.error();
    auto pc = vulkanPipelineCacheFile(**d);
    ASSERT_TRUE(pc.has_value());
    EXPECT_EQ(pc->path.rfind(dir + "/vulkan-pipelines-", 0), 0u) << pc->path;
    EXPECT_EQ(pc->loaded, expect_loaded);
    auto lk = (*d)->load(k.spirv, KernelFormat::Spirv, k.info.name);
    ASSERT_TRUE(lk.ok()) << lk.error();
    const std::string data = slurp(pc->path);
    ASSERT_GE(data.size(), 32u);
    uint32_t header[4];
    std::memcpy(header, data.data(), sizeof header);
    EXPECT_EQ(header[1], 1u);  // VK_PIPELINE_CACHE_HEADER_VERSION_ONE
    EXPECT_EQ(header[2], vulkanDeviceProps(**d)->vendor_id);
    (*d)->unload(*lk);
  };
  loadOnce(false);  // no file yet
  loadOnce(true);   // the first process's file
  for (const auto& f : std::filesystem::directory_iterator(dir)) std::ofstream(f.path(), std::ios::trunc) << "not a cache";
  loadOnce(false);  // damaged: ignored, then replaced
  loadOnce(true);
  setenv("SEXTANT_VULKAN_PIPELINE_CACHE", "off", 1);
  {
    auto d = openVulkanDevice(0);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(vulkanPipelineCacheFile(**d)->path, "");
  }
  unsetenv("SEXTANT_VULKAN_PIPELINE_CACHE");
  std::filesystem::remove_all(dir);
}

// SEXTANT_VULKAN_KNOBS="shape|knobs": compiles and runs one candidate (a debugging aid; skipped
// without it).
TEST(Vulkan, OneCandidateFromTheEnvironment) {
  const char* env = std::getenv("SEXTANT_VULKAN_KNOBS");
  if (!env) GTEST_SKIP() << "SEXTANT_VULKAN_KNOBS not set";
  REQUIRE_VULKAN(dev);
  std::string spec = env;
  auto w = parseWorkloadKey(spec.substr(0, spec.find('|')));
  ASSERT_TRUE(w.ok()) << w.error();
  GpuTargetInfo g = vulkanTarget();
  Space s = buildGpuGemmSpace(*w, g);
  auto c = s.fromKey(spec.substr(spec.find('|') + 1));
  ASSERT_TRUE(c.ok()) << c.error();
  Compiled k = compileVulkan(*w, s, *c, g);
  ASSERT_TRUE(k.out.ok) << k.out.stage << ": " << k.out.message;
  std::ofstream(tmpPath("candidate.spv"), std::ios::binary) << k.spirv;
  GpuMeasurement m = run(*dev, *w, k);
  EXPECT_TRUE(m.ok()) << gpuStatusName(m.status) << ": " << m.message;
  printf("compiled in %.2f s; kernel median %.4f s (%.2f GFLOP/s, CPU-emulated device)\n", k.out.seconds, m.median_s, m.gflops);
}

// Issue #33 item 5: the probe found a shared recipe copying the C tile back and forth after the K
// loop on every thread. No GPU FMA route of Sextant does: the scheduled IR (before outlining) of
// the NVIDIA, AMD and Vulkan FMA kernels has no copy op left, and stores the thread's C tile once.
TEST(GpuRoutes, NoCopyOfTheCTileAfterTheKLoop) {
  const std::string knobs = "block_m=64,block_n=64,block_k=32,mma=0,warp_m=16,warp_n=8,thread_m=4,thread_n=4,copy_bits=128,"
                            "pipeline=1,swizzle=0,lds_k_major=0,lds_pad=0,warp_specialize=0";
  for (const char* target : {"h100", "mi300", "vulkan"}) {
    auto t = resolveTarget(target);
    auto g = gpuTargetInfo(*t);
    auto w = parseWorkloadKey("gemm:NN:256x256x128:f32*f32->f32");
    Space s = buildGpuGemmSpace(*w, *g);
    auto c = s.fromKey(knobs);
    ASSERT_TRUE(c.ok()) << target << ": " << c.error();
    GpuPlan p = *planGpuGemm(*w, s, *c);
    GpuCompileRequest r = gpuCompileRequest(*w, s, *c, p, *g);
    r.keep_ir = true;
    r.out_path = tmpPath(std::string(target) + ".kernel");
    GpuKernelInfo info;
    CompileOutcome out = compileGpuGemm(r, info);
    std::filesystem::remove(r.out_path);
    if (!out.ok && std::string(target) == "vulkan" && out.stage == "validate") continue;  // no spirv-val: other test
    ASSERT_TRUE(out.ok) << target << ": " << out.stage << ": " << out.message;
    const std::string& ir = info.scheduled_ir;
    EXPECT_EQ(count(ir, "memref.copy"), 0) << target;
    EXPECT_EQ(count(ir, "linalg.copy"), 0) << target;
    // After the K loop: the C tile (4 x 4) written once, as 4 row stores (1-D transfers) or 16 scalar ones (Vulkan).
    const std::string after = ir.substr(ir.rfind("scf.yield"));
    const int stores = count(after, "vector.transfer_write") + count(after, "vector.store") + count(after, "memref.store");
    EXPECT_TRUE(stores == 4 || stores == 16) << target << ": " << stores << " stores after the K loop";
  }
}
