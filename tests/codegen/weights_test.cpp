// Workloads whose B is a weight (GemmWorkload::weights, key suffix ":weights"): the kernel reads B
// in blocks that the caller stores once outside the timed calls, as a network's constant weights
// are packed at compile time (compiler_cpu_pack_weights.cpp, runtime/src/cpu_runner.cpp).
#include <algorithm>
#include <cmath>
#include <dlfcn.h>
#include <filesystem>
#include <set>
#include <gtest/gtest.h>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/runtime/cpu_runner.h"
#include "cpu_compile_helpers.h"
#include "test_cpus.h"

using namespace sextant;
using namespace sextant::test;

TEST(Weights, KeyRoundTripsAndBatchedMatmulsHaveNone) {
  GemmWorkload w;
  w.m = 49, w.n = 256, w.k = 64, w.weights = true;
  EXPECT_EQ(w.key(), "gemm:NN:49x256x64:f32*f32->f32:weights");
  auto back = parseWorkloadKey(w.key());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_TRUE(back->weights);
  EXPECT_EQ(*back, w);
  auto plain = parseWorkloadKey("gemm:NN:49x256x64:f32*f32->f32");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->weights);
  auto conv = parseWorkloadKey("conv2d:NHWC:mb1ic8ih8iw8oc32oh8ow8kh3kw3sh1sw1ph1pw1dh0dw0:f32*f32->f32:weights");
  ASSERT_TRUE(conv.ok()) << conv.error();
  EXPECT_TRUE(conv->weights && conv->isConv());
  EXPECT_FALSE(parseWorkloadKey("batch_matmul:NN:2x8x8x8:f32*f32->f32:weights").ok());
  EXPECT_FALSE(parseWorkloadKey("gemm:NN:8x8x8:f32*f32->f32:bias").ok());
  // The payload says so to the compiler; a plain one does not.
  EXPECT_NE(w.payloadMlir().find("sextant.weights"), std::string::npos);
  EXPECT_EQ(plain->payloadMlir().find("sextant.weights"), std::string::npos);
}

namespace {

// The kernel of `knobs` for `w`, compiled.
std::string compileKnobs(const GemmWorkload& w, const std::map<std::string, int64_t>& knobs, const std::string& file) {
  Space s = buildCpuGemmSpace(w, hostCpu());
  auto c = nearestValid(s, knobs);
  std::string so = tmpPath(file);
  CompileOutcome out = compileCpuGemm(w.payloadMlir(), emitCpuGemmSchedule(w, s, c), so);
  EXPECT_TRUE(out.ok) << out.stage << ": " << out.message.substr(0, 3000);
  return so;
}

int64_t weightsBlock(const std::string& so) {
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  void* f = dlsym(h, kWeightsBlockSymbol);
  const int64_t b = f ? reinterpret_cast<int64_t (*)()>(f)() : 0;
  dlclose(h);
  return b;
}

}  // namespace

// A 49-row GEMM read in register tiles of 32 columns with no panel copy: with B a weight, the
// kernel reads it as 32-column blocks (exports the block), the harness stores it so and the result
// verifies; the same kernel called on B as stored computes something else (it really reads the
// blocks); without `weights` the kernel reads B as stored and exports nothing.
TEST(Weights, KernelReadsItsWeightInTheBlocksTheCallerStores) {
  // Blocks of 32 columns: two AVX-512 vectors; on AVX2 (16 registers) 7 x 4 vectors do not fit:
  // blocks of 16 (two vectors).
  const int64_t cols = hostCpu().f32Lanes() >= 16 ? 32 : 16;
  const std::map<std::string, int64_t> knobs = {{"tile_m", 49}, {"tile_n", cols}, {"tile_k", 64}, {"reg_m", 7},
                                                {"reg_n", cols}, {"unroll_k", 4}, {"pack_b", 0}};
  GemmWorkload w;
  w.m = 49, w.n = 256, w.k = 64, w.weights = true;
  const std::string so = compileKnobs(w, knobs, "weights.so");
  ASSERT_EQ(weightsBlock(so), cols);
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  Measurement m = measureBriefly(*p, so);
  EXPECT_EQ(m.status, MeasureStatus::Ok) << m.message;
  EXPECT_EQ(m.also_evicted_bytes, size_t(w.k * w.n * 4)) << "the stored blocks are evicted with the operands";

  // Called directly on B as stored (no harness): wrong.
  GemmWorkload plain_w = w;
  plain_w.weights = false;
  std::string error;
  KernelFn raw = loadSharedObjectKernel(plain_w, so, error);
  EXPECT_FALSE(raw) << "a kernel that wants its weights in blocks loads for a workload without weights";
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto call = reinterpret_cast<void (*)(void*, void*, void*)>(dlsym(h, "_mlir_ciface_sextant_gemm"));
  ASSERT_NE(call, nullptr);
  std::vector<float> a = p->a(), b = p->b(), c(size_t(w.m * w.n), 0.0f);
  struct D2 {
    float *alloc, *data;
    int64_t offset, sizes[2], strides[2];
  };
  D2 da{a.data(), a.data(), 0, {w.m, w.k}, {w.k, 1}}, db{b.data(), b.data(), 0, {w.k, w.n}, {w.n, 1}},
      dc{c.data(), c.data(), 0, {w.m, w.n}, {w.n, 1}};
  call(&da, &db, &dc);
  double err = 0;
  for (size_t i = 0; i < c.size(); ++i) err = std::max(err, double(std::fabs(c[i] - p->reference()[i])));
  EXPECT_GT(err, 1e-2) << "the kernel computed the product from B as stored: it does not read the blocks";
  dlclose(h);
  std::filesystem::remove(so);

  const std::string so_plain = compileKnobs(plain_w, knobs, "plain.so");
  EXPECT_EQ(weightsBlock(so_plain), 0);
  auto pp = GemmProblem::create(plain_w);
  ASSERT_TRUE(pp.ok());
  Measurement mp = measureBriefly(*pp, so_plain);
  EXPECT_EQ(mp.status, MeasureStatus::Ok) << mp.message;
  EXPECT_EQ(mp.also_evicted_bytes, 0u);
  std::filesystem::remove(so_plain);
}

// A kernel that copies panels of B (pack_b) with B a weight: its panel copies read the blocks, and
// the product verifies.
TEST(Weights, KernelsThatCopyPanelsReadTheBlocksToo) {
  GemmWorkload w;
  w.m = 64, w.n = 128, w.k = 64, w.weights = true;
  const std::string so = compileKnobs(w, {{"tile_m", 32}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", 8}, {"reg_n", 16},
                                          {"unroll_k", 2}, {"pack_b", 1}},
                                      "panels.so");
  EXPECT_GT(weightsBlock(so), 0);
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok());
  Measurement m = measureBriefly(*p, so);
  EXPECT_EQ(m.status, MeasureStatus::Ok) << m.message;
  std::filesystem::remove(so);
}

// A convolution with its filter as a weight (the direct route's default schedule; dense, strided,
// 1x1, grouped, depthwise): verified against the naive loops, whatever the kernel asks for.
TEST(Weights, ConvolutionWithItsFilterAsAWeightVerifies) {
  for (const char* desc : {"mb1ic16ih10oc64kh3ph1", "mb1ic16ih9oc32kh3sh2ph1", "mb1ic32ih7oc64kh1", "mb1g4ic32ih14oc64kh3ph1",
                           "mb1g32ic32ih14oc32kh3sh2ph1"}) {
    auto w = makeConvWorkload(desc, "f32", "NHWC");
    ASSERT_TRUE(w.ok()) << w.error();
    w->weights = true;
    Space s = buildCpuGemmSpace(*w, hostCpu());
    std::string so = tmpPath("convw.so");
    CompileOutcome out = compileCpuGemm(w->payloadMlir(), emitCpuGemmSchedule(*w, s, defaultCpuCandidate(s, *w)), so);
    ASSERT_TRUE(out.ok) << desc << ": " << out.stage << ": " << out.message.substr(0, 2000);
    auto p = GemmProblem::create(*w);
    ASSERT_TRUE(p.ok()) << p.error();
    Measurement m = measureBriefly(*p, so);
    EXPECT_EQ(m.status, MeasureStatus::Ok) << desc << " (block " << weightsBlock(so) << "): " << m.message;
    std::filesystem::remove(so);
  }
}

// prefetch_b (issue #31: the next B panel prefetched while this one is reused): a knob of weights
// GEMMs of at most 64 rows only (NN; B read in place or copied), with outer_order 1 and at least two
// register tiles of rows per block; other spaces keep their knobs and fingerprints.
TEST(Weights, PrefetchBIsAKnobOfWeightsGemmsOnly) {
  GemmWorkload w;
  w.m = 49, w.n = 256, w.k = 512, w.weights = true;
  Space s = buildCpuGemmSpace(w, hostCpu());
  ASSERT_GE(s.knobIndex("prefetch_b"), 0);
  GemmWorkload plain = w;
  plain.weights = false;
  EXPECT_LT(buildCpuGemmSpace(plain, hostCpu()).knobIndex("prefetch_b"), 0);
  GemmWorkload nt = w;
  nt.layout = Layout::NT;
  EXPECT_LT(buildCpuGemmSpace(nt, hostCpu()).knobIndex("prefetch_b"), 0);
  GemmWorkload tall = w;
  tall.m = 128;  // (more than 64 rows: not offered, docs/search.md)
  EXPECT_LT(buildCpuGemmSpace(tall, hostCpu()).knobIndex("prefetch_b"), 0);
  auto at = [&](std::map<std::string, int64_t> k) { return s.fromMap(fitRegisterTile(s, std::move(k))); };
  const std::map<std::string, int64_t> base = {{"tile_m", 49}, {"tile_n", 32}, {"tile_k", 512}, {"reg_m", 7}, {"reg_n", 32},
                                               {"unroll_k", 2}, {"reg_loop_order", 0}, {"pack_b", 0}, {"pack_a", 1},
                                               {"prefetch_b", 1}};
  auto with = [&](const char* k, int64_t v) {
    auto m = base;
    m[k] = v;
    return m;
  };
  auto ok = at(with("outer_order", 1));
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_TRUE(s.isValid(*ok)) << s.keyOf(*ok);
  for (int64_t order : {0, 2}) {
    auto c = at(with("outer_order", order));
    EXPECT_TRUE(!c.ok() || !s.isValid(*c)) << "prefetch_b with outer_order " << order;
  }
  // One register tile of rows per block (8 of 64): nothing reuses the panel, no prefetch_b.
  GemmWorkload w64 = w;
  w64.m = 64;
  Space s64 = buildCpuGemmSpace(w64, hostCpu());
  for (int64_t pf : {0, 1}) {
    auto c = s64.fromMap(fitRegisterTile(s64, {{"tile_m", 8}, {"tile_n", 32}, {"tile_k", 512}, {"reg_m", 8}, {"reg_n", 32},
                                               {"unroll_k", 2}, {"reg_loop_order", 0}, {"pack_b", 0}, {"pack_a", 1},
                                               {"outer_order", 1}, {"prefetch_b", pf}}));
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_EQ(s64.isValid(*c), pf == 0) << s64.keyOf(*c);
  }
}

// With prefetch_b the kernel prefetches (prefetcht1: into L2) and still computes the right result,
// register tiles whole (7 rows) or peeled (8 rows over 49); without it there is no prefetch.
TEST(Weights, PrefetchBPrefetchesTheNextPanelAndVerifies) {
  GemmWorkload w;
  w.m = 49, w.n = 128, w.k = 256, w.weights = true;
  Space s = buildCpuGemmSpace(w, hostCpu());
  for (int64_t reg_m : {7, 8})
    for (int64_t pf : {1, 0}) {
      auto c = s.fromMap(fitRegisterTile(s, {{"tile_m", 49}, {"tile_n", 32}, {"tile_k", 256}, {"reg_m", reg_m}, {"reg_n", 32},
                                             {"unroll_k", 2}, {"reg_loop_order", 0}, {"pack_b", 0}, {"outer_order", 1},
                                             {"pack_a", 1}, {"prefetch_b", pf}}));
      ASSERT_TRUE(c.ok()) << c.error();
      ASSERT_TRUE(s.isValid(*c)) << s.keyOf(*c);
      const std::string script = emitCpuGemmSchedule(w, s, *c);
      EXPECT_EQ(script.find(kPrefetchBAttr) != std::string::npos, pf == 1) << s.keyOf(*c);
      const std::string name = "prefetch_b-" + std::to_string(reg_m) + "-" + std::to_string(pf) + ".so";
      if (pf == 1) {
        expectCompilesAndVerifies(w, script, s.keyOf(*c), name, "prefetcht1");
        continue;
      }
      const std::string so = tmpPath(name);
      CompileOutcome out = compileCpuGemm(w.payloadMlir(), script, so);
      ASSERT_TRUE(out.ok) << out.stage << ": " << out.message.substr(0, 2000);
      EXPECT_EQ(commandOutput(std::string(SEXTANT_LLVM_TOOLS) + "/llvm-objdump -d " + so + " | grep -c prefetcht"), "0\n");
      std::filesystem::remove(so);
    }
}

// A weights GEMM of 7 x 7 pixels' rows (M = 49; a 1x1 convolution of a 7x7 image, as a GEMM or as
// the conv op) starts from 7-row register tiles right after the default, one of them with
// prefetch_b; other shapes and plain GEMMs do not get them.
TEST(Weights, SevenRowWeightsGemmsStartFromSevenRowTiles) {
  auto sevens = [](const GemmWorkload& w) {
    Space s = buildCpuGemmSpace(w, hostCpu());
    const Candidate def = defaultCpuCandidate(s, w);
    int n = 0, prefetching = 0;
    for (const Candidate& c : cpuSeedCandidates(s, w)) {
      EXPECT_TRUE(s.isValid(c)) << s.keyOf(c);
      EXPECT_NE(c, def);
      if (s.valueOr(c, "reg_m", 0) == 7) ++n, prefetching += s.valueOr(c, "prefetch_b", 0) == 1;
    }
    return std::make_pair(n, prefetching);
  };
  GemmWorkload w;
  w.m = 49, w.n = 2048, w.k = 512, w.weights = true;
  EXPECT_EQ(sevens(w), std::make_pair(2, 1));
  auto conv = parseWorkloadKey("conv2d:NHWC:mb1ic512ih7iw7oc2048oh7ow7kh1kw1sh1sw1ph0pw0dh0dw0:f32*f32->f32:weights");
  ASSERT_TRUE(conv.ok()) << conv.error();
  EXPECT_EQ(sevens(*conv), std::make_pair(2, 1));
  GemmWorkload plain = w;
  plain.weights = false;
  EXPECT_EQ(sevens(plain).first, 0);
  GemmWorkload big = w;
  big.m = 196;  // (several blocks of rows: not the one-block case measured)
  EXPECT_EQ(sevens(big).first, 0);
}

// A weights GEMM whose K has no power-of-two divisor above 64 (MobileNetV2's 960 input channels)
// also offers the largest multiple of 16 up to 512 that divides K as a K chunk (480; 576 -> 288),
// and a kernel with it verifies; plain GEMMs and K <= 512 keep their values.
TEST(Weights, WeightsGemmsOfferALargeDivisorOfAnAwkwardK) {
  auto tileK = [](const GemmWorkload& w) {
    Space s = buildCpuGemmSpace(w, hostCpu());
    return s.knobs()[size_t(s.knobIndex("tile_k"))].values;
  };
  auto has = [](const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  GemmWorkload w;
  w.m = 49, w.n = 160, w.k = 960, w.weights = true;
  EXPECT_TRUE(has(tileK(w), 480));
  EXPECT_FALSE(has(tileK(w), 128));  // (not a divisor: only the one large divisor joins)
  GemmWorkload w576 = w;
  w576.k = 576;
  EXPECT_TRUE(has(tileK(w576), 288));
  GemmWorkload plain = w;
  plain.weights = false;
  EXPECT_FALSE(has(tileK(plain), 480));
  GemmWorkload pow2 = w;
  pow2.k = 1024;
  EXPECT_EQ(tileK(pow2), tileK([&] { GemmWorkload p = pow2; p.weights = false; return p; }()));
  Space s = buildCpuGemmSpace(w, hostCpu());
  auto c = s.fromMap(fitRegisterTile(s, {{"tile_m", 49}, {"tile_n", 32}, {"tile_k", 480}, {"reg_m", 7}, {"reg_n", 32},
                                         {"unroll_k", 4}, {"reg_loop_order", 0}, {"pack_b", 0}, {"outer_order", 0},
                                         {"pack_a", 0}, {"prefetch_b", 0}}));
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(s.isValid(*c)) << s.keyOf(*c);
  expectCompilesAndVerifies(w, emitCpuGemmSchedule(w, s, *c), s.keyOf(*c), "tile_k480.so");
}

// On AVX2 (8 f32 lanes, 16 registers) an NN GEMM of 64 rows or more starts, right after the
// default, from BLIS-like blockings around the 6 x 2-vector register tile (B packed in micro-panels,
// the loop over n outermost; a batched one from that tile with K whole); AVX-512 spaces and NT GEMMs do not get
// them; each seed compiles and verifies (on this host, whatever its vector width).
TEST(Weights, Avx2GemmsStartFromTheRegisterFillingTile) {
  GemmWorkload w;
  w.m = 1024, w.n = 1024, w.k = 1024;
  Space s = buildCpuGemmSpace(w, test::avx2());
  const auto seeds = cpuSeedCandidates(s, w);
  ASSERT_EQ(seeds.size(), 2u);
  for (const Candidate& c : seeds) {
    EXPECT_TRUE(s.isValid(c)) << s.keyOf(c);
    EXPECT_NE(c, defaultCpuCandidate(s, w));
    EXPECT_EQ(s.valueOr(c, "reg_m", 0), 6) << s.keyOf(c);
    EXPECT_EQ(s.valueOr(c, "reg_n", 0), 16) << s.keyOf(c);
    EXPECT_EQ(s.valueOr(c, "pack_b", 0), 2) << s.keyOf(c);  // B in micro-panels
    EXPECT_EQ(s.valueOr(c, "outer_order", 0), 2) << s.keyOf(c);
  }
  // A weights GEMM's space has no micro-panels: its seeds copy B's panels (pack_b 1).
  GemmWorkload wt = w;
  wt.weights = true;
  Space st = buildCpuGemmSpace(wt, test::avx2());
  const auto wseeds = cpuSeedCandidates(st, wt);
  ASSERT_EQ(wseeds.size(), 2u);
  for (const Candidate& c : wseeds) EXPECT_EQ(st.valueOr(c, "pack_b", 0), 1) << st.keyOf(c);
  if (hostCpu().vendor != "GenuineIntel") {
    EXPECT_TRUE(cpuSeedCandidates(buildCpuGemmSpace(w, test::avx512()), w).empty());
  }
  GemmWorkload nt = w, small = w;
  nt.layout = Layout::NT;
  small.m = 32;
  EXPECT_TRUE(cpuSeedCandidates(buildCpuGemmSpace(nt, test::avx2()), nt).empty());
  EXPECT_TRUE(cpuSeedCandidates(buildCpuGemmSpace(small, test::avx2()), small).empty());
  // Batched NN: one seed, the same tile with K whole (up to 512); NT batched: none.
  auto bmm = parseWorkloadKey("batch_matmul:NN:4x256x128x512:f32*f32->f32");
  ASSERT_TRUE(bmm.ok()) << bmm.error();
  Space sb = buildCpuGemmSpace(*bmm, test::avx2());
  const auto bs = cpuSeedCandidates(sb, *bmm);
  ASSERT_EQ(bs.size(), 1u);
  EXPECT_TRUE(sb.isValid(bs[0])) << sb.keyOf(bs[0]);
  EXPECT_EQ(sb.valueOr(bs[0], "reg_m", 0), 6);
  EXPECT_EQ(sb.valueOr(bs[0], "tile_k", 0), 512);
  auto bnt = parseWorkloadKey("batch_matmul:NT:4x256x128x512:f32*f32->f32");
  ASSERT_TRUE(bnt.ok()) << bnt.error();
  EXPECT_TRUE(cpuSeedCandidates(buildCpuGemmSpace(*bnt, test::avx2()), *bnt).empty());
  // The AVX2 rule does not reach AVX-512 spaces: none there, or on an Intel host the AVX-512
  // rule's own (4 vectors of 16: Weights.IntelAvx512GemmsStartFromTheRegisterFillingTiles).
  Space sb512 = buildCpuGemmSpace(*bmm, test::avx512());
  for (const Candidate& c : cpuSeedCandidates(sb512, *bmm)) {
    EXPECT_EQ(hostCpu().vendor, "GenuineIntel") << sb512.keyOf(c);
    EXPECT_EQ(sb512.valueOr(c, "reg_n", 0), 64) << sb512.keyOf(c);
  }
  // A smaller shape, so that the check runs fast: the same rule's seeds compile and verify here.
  GemmWorkload v;
  v.m = 128, v.n = 512, v.k = 512;
  Space sv = buildCpuGemmSpace(v, test::avx2());
  const auto vs = cpuSeedCandidates(sv, v);
  ASSERT_FALSE(vs.empty());
  for (const Candidate& c : vs)
    expectCompilesAndVerifies(v, emitCpuGemmSchedule(v, sv, c), sv.keyOf(c), "avx2_seed");
}

// On an Intel host, AVX-512 NN GEMMs of at least 64 rows start right after the default from the
// register tiles that fill the 32 registers (12 rows x 2 vectors, 6 x 4) in the BLIS order, B's
// panel copied (cpu_schedule_starts.cpp, avx512BlockedSeeds); NT, batched, short and AVX2 spaces
// keep theirs; every other host keeps the start it had. The seeds compile and verify here.
TEST(Weights, IntelAvx512GemmsStartFromTheRegisterFillingTiles) {
  GemmWorkload w;
  w.m = 1024, w.n = 1024, w.k = 1024;
  Space s = buildCpuGemmSpace(w, test::avx512());
  const auto seeds = cpuSeedCandidates(s, w);
  if (hostCpu().vendor != "GenuineIntel") {
    EXPECT_TRUE(seeds.empty());
    GTEST_SKIP() << "the register-filling AVX-512 seeds are for Intel hosts; this one is " << hostCpu().vendor
                 << " (checked: it gets none)";
  }
  ASSERT_EQ(seeds.size(), 2u);
  std::set<std::pair<int64_t, int64_t>> tiles;
  for (const Candidate& c : seeds) {
    EXPECT_TRUE(s.isValid(c)) << s.keyOf(c);
    EXPECT_NE(c, defaultCpuCandidate(s, w));
    tiles.insert({s.valueOr(c, "reg_m", 0), s.valueOr(c, "reg_n", 0)});
    EXPECT_EQ(s.valueOr(c, "pack_b", 0), 1) << s.keyOf(c);
    EXPECT_EQ(s.valueOr(c, "outer_order", 0), 2) << s.keyOf(c);
    EXPECT_EQ(s.valueOr(c, "tile_n", 0), 1024) << s.keyOf(c);
  }
  EXPECT_EQ(tiles, (std::set<std::pair<int64_t, int64_t>>{{12, 32}, {6, 64}}));
  GemmWorkload nt = w, small = w, tall = w;
  nt.layout = Layout::NT;
  small.m = 32;
  tall.m = 128, tall.n = 4096, tall.k = 4096;
  EXPECT_TRUE(cpuSeedCandidates(buildCpuGemmSpace(nt, test::avx512()), nt).empty());
  EXPECT_TRUE(cpuSeedCandidates(buildCpuGemmSpace(small, test::avx512()), small).empty());
  Space st = buildCpuGemmSpace(tall, test::avx512());
  const auto ts = cpuSeedCandidates(st, tall);
  ASSERT_EQ(ts.size(), 2u);
  for (const Candidate& c : ts) EXPECT_EQ(st.valueOr(c, "tile_m", 0), 128) << st.keyOf(c);
  // Batched NN (attention's P.V): 6 x 4 vectors over 128- and 64-row blocks, K whole.
  for (const char* key : {"batch_matmul:NN:4x256x128x512:f32*f32->f32", "batch_matmul:NN:12x128x64x128:f32*f32->f32"}) {
    auto bmm = parseWorkloadKey(key);
    ASSERT_TRUE(bmm.ok()) << bmm.error();
    Space sb = buildCpuGemmSpace(*bmm, test::avx512());
    const auto bs = cpuSeedCandidates(sb, *bmm);
    ASSERT_EQ(bs.size(), 2u) << key;
    std::set<int64_t> rows;
    for (const Candidate& c : bs) {
      EXPECT_TRUE(sb.isValid(c)) << sb.keyOf(c);
      EXPECT_NE(c, defaultCpuCandidate(sb, *bmm));
      EXPECT_EQ(sb.valueOr(c, "reg_m", 0), 6) << sb.keyOf(c);
      EXPECT_EQ(sb.valueOr(c, "reg_n", 0), 64) << sb.keyOf(c);
      EXPECT_EQ(sb.valueOr(c, "tile_k", 0), bmm->k) << sb.keyOf(c);
      rows.insert(sb.valueOr(c, "tile_m", 0));
    }
    EXPECT_EQ(rows, (std::set<int64_t>{64, 128})) << key;
  }
  auto bnt = parseWorkloadKey("batch_matmul:NT:4x256x128x512:f32*f32->f32");
  ASSERT_TRUE(bnt.ok()) << bnt.error();
  EXPECT_TRUE(cpuSeedCandidates(buildCpuGemmSpace(*bnt, test::avx512()), *bnt).empty());
  if (hostCpu().vector_isa != "avx512") GTEST_SKIP() << "this Intel host has no AVX-512: the seeds were not compiled";
  GemmWorkload v;
  v.m = 128, v.n = 1024, v.k = 256;
  Space sv = buildCpuGemmSpace(v, hostCpu());
  const auto vs = cpuSeedCandidates(sv, v);
  ASSERT_EQ(vs.size(), 2u);
  for (const Candidate& c : vs)
    expectCompilesAndVerifies(v, emitCpuGemmSchedule(v, sv, c), sv.keyOf(c), "avx512_seed");
  auto pv = parseWorkloadKey("batch_matmul:NN:2x128x64x96:f32*f32->f32");  // odd K, 128 rows: remainders
  ASSERT_TRUE(pv.ok()) << pv.error();
  Space sp = buildCpuGemmSpace(*pv, hostCpu());
  const auto ps = cpuSeedCandidates(sp, *pv);
  ASSERT_FALSE(ps.empty());
  for (const Candidate& c : ps)
    expectCompilesAndVerifies(*pv, emitCpuGemmSchedule(*pv, sp, c), sp.keyOf(c), "avx512_bmm_seed");
}

// On an Intel AVX-512 host, the weights GEMMs of a CNN's 1x1 convolutions over many pixels (M >= 512,
// K <= 512, the filter within 1 MiB) start right after the default from one 8 x 2-vector register
// tile per block with K whole (cpu_schedule_starts.cpp, convPointwiseWeights), then the register-
// filling tiles; transformer weights GEMMs (K > 512), activations' GEMMs and M = 196 do not get it.
TEST(Weights, IntelPointwiseConvolutionsStartFromOneTilePerBlock) {
  GemmWorkload w;
  w.m = 784, w.n = 256, w.k = 512, w.weights = true;  // ResNet-50 stage 3's 1x1 512 -> 256
  Space s = buildCpuGemmSpace(w, test::avx512());
  const auto seeds = cpuSeedCandidates(s, w);
  if (hostCpu().vendor != "GenuineIntel") {
    for (const Candidate& c : seeds) EXPECT_NE(s.valueOr(c, "tile_m", 0), 8) << s.keyOf(c);
    GTEST_SKIP() << "the AVX-512 pointwise seed is for Intel hosts; this one is " << hostCpu().vendor
                 << " (checked: it gets none)";
  }
  ASSERT_EQ(seeds.size(), 3u);
  const Candidate& c = seeds.front();
  EXPECT_TRUE(s.isValid(c)) << s.keyOf(c);
  EXPECT_EQ(s.keyOf(c), "tile_m=8,tile_n=32,tile_k=512,reg_m=8,reg_n=32,unroll_k=8,reg_loop_order=0,pack_b=0,"
                        "outer_order=0,pack_a=0");
  for (size_t i = 1; i < seeds.size(); ++i)
    EXPECT_EQ(s.valueOr(seeds[i], "reg_m", 0) * s.valueOr(seeds[i], "reg_n", 0), 24 * 16) << s.keyOf(seeds[i]);
  auto firstTileM = [](const GemmWorkload& x) {
    Space sx = buildCpuGemmSpace(x, test::avx512());
    const auto xs = cpuSeedCandidates(sx, x);
    return xs.empty() ? int64_t(-1) : sx.valueOr(xs.front(), "tile_m", 0);
  };
  GemmWorkload bert = w, act = w, small = w, wide = w;
  bert.m = 128, bert.n = 3072, bert.k = 768;  // a transformer's weights GEMM: K > 512
  act.weights = false;
  small.m = 196;  // 14 x 14 pixels: no 8-row blocks
  wide.n = 1024;  // a 2 MiB filter
  for (const GemmWorkload& x : {bert, act, small, wide}) EXPECT_NE(firstTileM(x), 8) << x.key();
  if (hostCpu().vector_isa != "avx512") GTEST_SKIP() << "this Intel host has no AVX-512: the seed was not compiled";
  GemmWorkload v;
  v.m = 512, v.n = 64, v.k = 96, v.weights = true;
  Space sv = buildCpuGemmSpace(v, hostCpu());
  const auto vs = cpuSeedCandidates(sv, v);
  ASSERT_FALSE(vs.empty());
  ASSERT_EQ(sv.valueOr(vs.front(), "tile_k", 0), 96) << sv.keyOf(vs.front());
  expectCompilesAndVerifies(v, emitCpuGemmSchedule(v, sv, vs.front()), sv.keyOf(vs.front()), "pointwise_seed");
}
