// Real MLIR compilation of CPU candidates (in process: these schedules are known to be safe).
#include <algorithm>
#include <cstdio>
#include <dlfcn.h>
#include <filesystem>
#include <map>
#include <optional>
#include <tuple>
#include <gtest/gtest.h>
#include <unistd.h>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/runtime/cpu_runner.h"
#include "cpu_compile_helpers.h"

using namespace sextant;
using namespace sextant::test;

TEST(Compiler, CompilesAVerifiedKernelForTheHost) {
  GemmWorkload w;
  w.m = 64, w.n = 96, w.k = 32;
  Space s = buildCpuGemmSpace(w, hostCpu());
  auto c = nearestValid(s, {{"tile_m", 32}, {"tile_n", 32}, {"tile_k", 16}, {"reg_m", 4}, {"reg_n", 32},
                            {"unroll_k", 2}, {"reg_loop_order", 1}});
  std::string so = tmpPath("ok.so");
  CompileOutcome out = compileCpuGemm(w.payloadMlir(), emitCpuGemmSchedule(w, s, c), so);
  ASSERT_TRUE(out.ok) << out.stage << ": " << out.message;
  EXPECT_GT(out.seconds, 0);
  EXPECT_GT(out.object_bytes, 0);

  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  Measurement m = measureBriefly(*p, so);
  EXPECT_EQ(m.status, MeasureStatus::Ok) << m.message;

  // Code for the host's real vector ISA, not generic x86-64.
  if (hostCpu().hasFlag("avx512f")) {
    EXPECT_NE(llvmHostFeatures().find("+avx512f"), std::string::npos);
    std::string cmd = std::string(SEXTANT_LLVM_TOOLS) + "/llvm-objdump -d " + so + " | grep -c zmm";
    FILE* f = popen(cmd.c_str(), "r");
    int zmm = 0;
    ASSERT_EQ(fscanf(f, "%d", &zmm), 1);
    pclose(f);
    EXPECT_GT(zmm, 10) << "no AVX-512 instructions in the compiled kernel";
  }
  std::filesystem::remove(so);
}

// Issue #14 (threads): the forall of cache tiles on OpenMP threads. The kernel links libomp,
// forks through __kmpc_fork_call, and computes the right result (verified against OpenBLAS).
TEST(Compiler, MultiThreadedKernelComputesTheRightResult) {
  GemmWorkload w;
  w.m = 128, w.n = 192, w.k = 64;
  Space s = buildCpuGemmSpace(w, hostCpu());
  auto c = nearestValid(s, {{"tile_m", 32}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", 4}, {"reg_n", 32},
                            {"unroll_k", 2}, {"reg_loop_order", 1}});
  std::string so = tmpPath("threads.so");
  CompileOutcome out = compileCpuGemm(w.payloadMlir(), emitCpuGemmSchedule(w, s, c), so, 2);
  ASSERT_TRUE(out.ok) << out.stage << ": " << out.message;
  EXPECT_NE(commandOutput(std::string(SEXTANT_LLVM_TOOLS) + "/llvm-readelf -d " + so).find("libomp"), std::string::npos);
  EXPECT_NE(commandOutput(std::string(SEXTANT_LLVM_TOOLS) + "/llvm-nm -D --undefined-only " + so).find("__kmpc_fork_call"),
            std::string::npos);
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  MeasureOptions mo;
  mo.min_reps = 2, mo.max_reps = 3, mo.min_time_s = 0.001;
  Measurement m = measureSharedObject(*p, so, mo);
  EXPECT_EQ(m.status, MeasureStatus::Ok) << m.message;
  std::filesystem::remove(so);
  // The serial kernel of the same schedule has no OpenMP in it.
  ASSERT_TRUE(compileCpuGemm(w.payloadMlir(), emitCpuGemmSchedule(w, s, c), so).ok);
  EXPECT_EQ(commandOutput(std::string(SEXTANT_LLVM_TOOLS) + "/llvm-nm -D --undefined-only " + so).find("__kmpc"), std::string::npos);
  std::filesystem::remove(so);
  EXPECT_FALSE(compileCpuGemm(w.payloadMlir(), emitCpuGemmSchedule(w, s, c), so, 0).ok);
}

// tune --threads 2: the space's one-value "threads" knob annotates the forall; the lowering reads
// it (no thread count passed to the compiler), and the exported schedule carries it.
TEST(Compiler, ThreadsKnobIsCarriedByTheScheduleToTheLowering) {
  GemmWorkload w;
  w.m = 96, w.n = 128, w.k = 64;
  Space s = buildCpuGemmSpace(w, hostCpu(), 2);
  ASSERT_EQ(s.knobIndex("threads"), 7);
  EXPECT_NE(s.fingerprint(), buildCpuGemmSpace(w, hostCpu()).fingerprint());
  Candidate c = defaultCpuCandidate(s, w);
  std::string script = emitCpuGemmSchedule(w, s, c);
  EXPECT_NE(script.find("\"sextant.num_threads\" = %threads"), std::string::npos) << script;
  auto knobs = readScheduleKnobs(script);
  ASSERT_TRUE(knobs.ok()) << knobs.error();
  EXPECT_EQ(knobs->at("threads"), 2);
  // Fewer blocks than threads is invalid: one block of 96 x 128 cannot keep 2 threads busy.
  auto one_block = s.fromMap({{"tile_m", 96}, {"tile_n", 128}, {"tile_k", 64}, {"reg_m", 4}, {"reg_n", 32},
                              {"unroll_k", 1}, {"reg_loop_order", 0}, {"threads", 2}});
  if (one_block.ok()) {
    EXPECT_FALSE(s.isValid(*one_block));
  }
  std::string so = tmpPath("threads-knob.so");
  CompileOutcome out = compileCpuGemm(w.payloadMlir(), script, so);
  ASSERT_TRUE(out.ok) << out.stage << ": " << out.message;
  std::string cmd = std::string(SEXTANT_LLVM_TOOLS) + "/llvm-nm -D --undefined-only " + so + " | grep -c __kmpc_fork_call";
  FILE* f = popen(cmd.c_str(), "r");
  int forks = 0;
  ASSERT_EQ(fscanf(f, "%d", &forks), 1);
  pclose(f);
  EXPECT_EQ(forks, 1) << "the annotation did not reach the lowering";
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  MeasureOptions mo;
  mo.min_reps = 2, mo.max_reps = 3, mo.min_time_s = 0.001;
  EXPECT_EQ(measureSharedObject(*p, so, mo).status, MeasureStatus::Ok);
  std::filesystem::remove(so);
  EXPECT_EQ(cpuArchThreads(cpuArchWithThreads("x86_64-avx512", 2)), 2);
  EXPECT_EQ(cpuArchWithThreads("x86_64-avx512", 1), "x86_64-avx512");
  EXPECT_EQ(cpuArchThreads("x86_64-avx512"), 1);
}

// pack_b: the B panel copied into a contiguous buffer per K chunk; the kernel is verified against
// the reference for a dividing shape, an odd K (tile_k = 147: the copy goes row by row), on
// 2 threads (one buffer per block, allocated once per block, not per K chunk) and with A
// transposed (TN).
TEST(Compiler, PackedBPanelCompilesAndVerifies) {
  struct Case {
    int64_t m, n, k;
    int threads;
    std::map<std::string, int64_t> want;
    Layout layout = Layout::NN;
  };
  const std::vector<Case> cases = {
      {64, 128, 64, 1, {{"tile_m", 32}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", 4}, {"reg_n", 32}, {"unroll_k", 2}}},
      {48, 64, 147, 1, {{"tile_m", 16}, {"tile_n", 64}, {"tile_k", 147}, {"reg_m", 4}, {"reg_n", 16}, {"unroll_k", 1}}},
      {64, 128, 64, 2, {{"tile_m", 32}, {"tile_n", 64}, {"tile_k", 16}, {"reg_m", 4}, {"reg_n", 16}, {"unroll_k", 1}}},
      {64, 128, 64, 1, {{"tile_m", 32}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", 4}, {"reg_n", 32}, {"unroll_k", 2}},
       Layout::TN},
  };
  for (const auto& cs : cases) {
    GemmWorkload w;
    w.m = cs.m, w.n = cs.n, w.k = cs.k;
    w.layout = cs.layout;
    Space s = buildCpuGemmSpace(w, hostCpu(), cs.threads);
    auto want = cs.want;
    want["pack_b"] = 1, want["reg_loop_order"] = 0;
    if (cs.threads > 1) want["threads"] = cs.threads;
    auto found = s.fromMap(fitRegisterTile(s, want));
    ASSERT_TRUE(found.ok()) << found.error();
    Candidate c = *found;
    ASSERT_TRUE(s.isValid(c)) << s.keyOf(c);
    const std::string script = emitCpuGemmSchedule(w, s, c);
    EXPECT_NE(script.find("rewrite_in_destination_passing_style %pb_pad"), std::string::npos);
    expectCompilesAndVerifies(w, script, s.keyOf(c),
                              "packb-" + std::to_string(cs.k) + "-" + std::to_string(cs.threads) + layoutName(cs.layout) + ".so");
  }
}

// Panels wider than 64 floats are copied in steps of at most 4 x 64 floats (a divisor of the width:
// 128 -> 64, 192 -> 64), not one vector across the whole panel row (that spilled thousands of
// registers at 2048^3), and still compute the right result, with both operands packed.
TEST(Compiler, WidePanelCopiesAreTiledByColumnsAndVerify) {
  GemmWorkload w;
  w.m = 64, w.n = 256, w.k = 192;
  Space s = buildCpuGemmSpace(w, hostCpu(), 1);
  auto found = s.fromMap(fitRegisterTile(s, {{"tile_m", 32}, {"tile_n", 128}, {"tile_k", 192}, {"reg_m", 4}, {"reg_n", 32},
                                             {"unroll_k", 2}, {"reg_loop_order", 0}, {"pack_a", 1}, {"pack_b", 1}}));
  ASSERT_TRUE(found.ok()) << found.error();
  ASSERT_TRUE(s.isValid(*found)) << s.keyOf(*found);
  const std::string script = emitCpuGemmSchedule(w, s, *found);
  EXPECT_NE(script.find("%pb_copy_cols = transform.structured.tile_using_for %pb_panel tile_sizes [4, 64]"),
            std::string::npos) << script;
  EXPECT_NE(script.find("%pa_copy_cols = transform.structured.tile_using_for %pa_panel tile_sizes [4, 64]"),
            std::string::npos) << script;
  EXPECT_NE(script.find("vectorize %pb_copy vector_sizes [4, 64]"), std::string::npos) << script;
  EXPECT_EQ(script.find("vector_sizes [4, 128]"), std::string::npos) << script;
  EXPECT_EQ(script.find("vector_sizes [4, 192]"), std::string::npos) << script;
  expectCompilesAndVerifies(w, script, s.keyOf(*found), "wide-panels.so");
}

// outer_order and pack_a: every loop order with A, B, both or neither packed computes the right
// result (verified against the reference) for NN, A packing for NT, and orders 1 and 2 on 2
// threads. Each packed operand is copied exactly where the order says: above the inner loop when
// its panel is invariant there.
TEST(Compiler, OuterOrdersAndPackedABlockCompileAndVerify) {
  struct Case {
    int64_t order;
    int pack_a, pack_b, threads;
    Layout layout = Layout::NN;
  };
  std::vector<Case> cases;
  for (int64_t order : {0, 1, 2})
    for (int pa : {0, 1})
      for (int pb : {0, 1}) cases.push_back({order, pa, pb, 1});
  cases.push_back({1, 1, 1, 2});
  cases.push_back({2, 1, 1, 2});
  cases.push_back({1, 1, 0, 1, Layout::NT});
  for (const auto& cs : cases) {
    GemmWorkload w;
    w.m = 64, w.n = 128, w.k = 96;
    w.layout = cs.layout;
    Space s = buildCpuGemmSpace(w, hostCpu(), cs.threads);
    auto found = candidateOf(s,
                             {{"tile_m", 32}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", 4}, {"reg_n", 16},
                              {"unroll_k", 2}, {"reg_loop_order", 0}, {"pack_b", cs.pack_b}, {"pack_a", cs.pack_a},
                              {"outer_order", cs.order}},
                             cs.threads);
    ASSERT_TRUE(found);
    const std::string name = s.keyOf(*found) + " " + layoutName(cs.layout);
    const std::string script = emitCpuGemmSchedule(w, s, *found);
    const size_t inner = script.find("%inner =");
    EXPECT_EQ(inner != std::string::npos, cs.order != 0) << name;
    const size_t pa = script.find("rewrite_in_destination_passing_style %pa_pad"),
                 pb = script.find("rewrite_in_destination_passing_style %pb_pad");
    EXPECT_EQ(pa != std::string::npos, cs.pack_a == 1) << name;
    EXPECT_EQ(pb != std::string::npos, cs.pack_b == 1) << name;
    if (cs.pack_a && cs.order != 0) {
      EXPECT_EQ(pa < inner, cs.order == 1) << name;
    }
    if (cs.pack_b && cs.order != 0) {
      EXPECT_EQ(pb < inner, cs.order == 2) << name;
    }
    expectCompilesAndVerifies(w, script, name, "order-" + std::to_string(&cs - cases.data()) + ".so");
  }
}

// tile_k = K (no K chunks): the zero fill of C goes into the register tiles (the accumulators start
// as zeros; no memset of C before the kernel, no zero stores left), with every loop order, packing
// and register order, a peeled remainder (full tiles and the masked rest), on 1 and 2 threads;
// with K chunks the fill stays a pass of its own. Every variant verified against the reference.
TEST(Compiler, ZeroFillGoesIntoTheRegisterTilesWhenTheWholeKIsThere) {
  struct Case {
    int64_t tile_k, reg_m, order;
    int pack_a, pack_b, reg_order, threads;
    bool fused;
  };
  std::vector<Case> cases;
  for (int64_t order : {0, 1, 2})
    for (int p : {0, 1}) cases.push_back({96, 4, order, p, p, int(order == 1), 1, true});
  cases.push_back({96, 4, 0, 0, 0, 0, 2, true});
  cases.push_back({96, 4, 1, 1, 1, 1, 2, true});
  cases.push_back({96, 12, 0, 0, 0, 0, 1, true});  // 32 rows in tiles of 12: peeled
  cases.push_back({96, 12, 1, 1, 1, 1, 1, true});
  cases.push_back({96, 12, 2, 0, 1, 0, 2, true});
  cases.push_back({32, 4, 0, 0, 0, 0, 1, false});  // K in chunks
  cases.push_back({32, 12, 0, 0, 0, 0, 1, false});
  for (const auto& cs : cases) {
    GemmWorkload w;
    w.m = 64, w.n = 128, w.k = 96;
    Space s = buildCpuGemmSpace(w, hostCpu(), cs.threads);
    auto found = candidateOf(s,
                             {{"tile_m", 32}, {"tile_n", 64}, {"tile_k", cs.tile_k}, {"reg_m", cs.reg_m}, {"reg_n", 16},
                              {"unroll_k", 2}, {"reg_loop_order", cs.reg_order}, {"pack_b", cs.pack_b},
                              {"pack_a", cs.pack_a}, {"outer_order", cs.order}},
                             cs.threads);
    ASSERT_TRUE(found);
    const std::string name = s.keyOf(*found) + " threads " + std::to_string(cs.threads);
    const std::string script = emitCpuGemmSchedule(w, s, *found);
    EXPECT_EQ(script.find("%sx_init = ") != std::string::npos, cs.fused) << name;
    const std::string file = "fill-" + std::to_string(&cs - cases.data()) + ".so";
    std::string so = tmpPath(file);
    CompileOutcome out = compileCpuGemm(w.payloadMlir(), script, so, cs.threads);
    ASSERT_TRUE(out.ok) << name << ": " << out.stage << ": " << out.message.substr(0, 3000);
    // The fill of the whole of C is a memset call; fused, nothing of it is left.
    EXPECT_EQ(commandOutput(std::string(SEXTANT_LLVM_TOOLS) + "/llvm-nm -D --undefined-only " + so + " | grep -c memset"),
              cs.fused ? "0\n" : "1\n")
        << name;
    std::filesystem::remove(so);
    expectCompilesAndVerifies(w, script, name, file);
  }
}

// reg_m 6, 12 and 14 divide no power-of-two block: the register loop over M is peeled (full tiles,
// then a masked remainder). Verified against the reference with rows outer and inner, K unrolled,
// B packed, on 2 threads and with A transposed.
TEST(Compiler, PeeledRegisterTilesCompileAndVerify) {
  struct Case {
    int64_t tile_m, reg_m, reg_n, order;
    int threads = 1;
    Layout layout = Layout::NN;
  };
  const std::vector<Case> cases = {{32, 6, 16, 0}, {32, 6, 16, 1}, {64, 14, 32, 0}, {16, 12, 32, 1},
                                   {32, 6, 32, 0, 2}, {32, 6, 16, 0, 1, Layout::TN}};
  for (const auto& cs : cases) {
    GemmWorkload w;
    w.m = 64, w.n = 128, w.k = 96;
    w.layout = cs.layout;
    Space s = buildCpuGemmSpace(w, hostCpu(), cs.threads);
    auto found = candidateOf(s,
                             {{"tile_m", cs.tile_m}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", cs.reg_m},
                              {"reg_n", cs.reg_n}, {"unroll_k", 2}, {"reg_loop_order", cs.order},
                              {"pack_b", cs.layout == Layout::NN}},
                             cs.threads);
    ASSERT_TRUE(found);
    const std::string name = s.keyOf(*found) + " " + layoutName(cs.layout);
    const std::string script = emitCpuGemmSchedule(w, s, *found);
    EXPECT_NE(script.find("transform.loop.peel"), std::string::npos) << name;
    expectCompilesAndVerifies(w, script, name, "peel-" + std::to_string(&cs - cases.data()) + ".so");
  }
  // A dividing reg_m is not peeled.
  GemmWorkload w;
  w.m = 64, w.n = 128, w.k = 96;
  Space s = buildCpuGemmSpace(w, hostCpu());
  auto c = s.fromMap({{"tile_m", 32}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", 4}, {"reg_n", 16}, {"unroll_k", 2},
                      {"reg_loop_order", 0}});
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(emitCpuGemmSchedule(w, s, *c).find("transform.loop.peel"), std::string::npos);
}

// N = 24 on AVX-512 (MobileNetV2's projections): reg_n 16 over a 24-wide block, the register loop
// over N peeled (a whole vector, then an 8-wide rest vectorized at 8: no masks), with the fill in
// the register tiles (tile_k = K) or K in chunks, either loop order, on 1 and 2 threads. Shapes
// whose N is a multiple of the vector width are not offered it (their space is unchanged).
TEST(Compiler, NPeeledRegisterTilesCompileAndVerify) {
  if (hostCpu().f32Lanes() < 16) GTEST_SKIP() << "needs 16-wide f32 vectors (AVX-512): N = 24 is two whole 8-wide ones here";
  struct Case {
    int64_t tile_m, tile_k, reg_m, order;
    int threads = 1;
  };
  for (const Case& cs : {Case{32, 48, 8, 0}, Case{16, 48, 16, 1}, Case{32, 16, 8, 1}, Case{32, 48, 8, 0, 2}}) {
    GemmWorkload w;
    w.m = 64, w.n = 24, w.k = 48;
    Space s = buildCpuGemmSpace(w, hostCpu(), cs.threads);
    auto found = candidateOf(s,
                             {{"tile_m", cs.tile_m}, {"tile_n", 24}, {"tile_k", cs.tile_k}, {"reg_m", cs.reg_m}, {"reg_n", 16},
                              {"unroll_k", 4}, {"reg_loop_order", cs.order}, {"pack_b", 0}, {"outer_order", 0}, {"pack_a", 0}},
                             cs.threads);
    ASSERT_TRUE(found);
    const std::string name = s.keyOf(*found);
    const std::string script = emitCpuGemmSchedule(w, s, *found);
    EXPECT_NE(script.find("transform.loop.peel"), std::string::npos) << name;
    EXPECT_NE(script.find("vector_sizes [%reg_m, 8, %unroll_k]"), std::string::npos) << name << ": the rest is not 8 wide";
    expectCompilesAndVerifies(w, script, name, "npeel.so");
  }
  GemmWorkload w;
  w.m = 64, w.n = 24, w.k = 48;
  Space s = buildCpuGemmSpace(w, hostCpu());
  auto two = s.fromMap({{"tile_m", 32}, {"tile_n", 24}, {"tile_k", 48}, {"reg_m", 6}, {"reg_n", 16}, {"unroll_k", 4},
                        {"reg_loop_order", 0}});
  EXPECT_TRUE(!two.ok() || !s.isValid(*two)) << "two peels (M and N) in one schedule";
  w.n = 32;
  const Space s32 = buildCpuGemmSpace(w, hostCpu());
  const auto& rn = s32.knobs()[4];
  ASSERT_EQ(rn.name, "reg_n");
  EXPECT_EQ(rn.values, (std::vector<int64_t>{16, 32, 64}));
}

// Issue #35: peeled register tiles whose tile_n is one register tile (the Zen 4 NT datasets' failures,
// 2-25 per 1,000 records): bufferization copies their accumulator tiles between strided views,
// which used to lower to a call of MLIR's runtime `memrefCopy` ("undefined symbol" at load). They
// are loops now; each compiles without that call, loads and verifies.
TEST(Compiler, PeeledTilesWithCopiedAccumulatorsLoadAndVerify) {
  const std::vector<std::map<std::string, int64_t>> cases = {
      {{"tile_m", 16}, {"tile_n", 16}, {"tile_k", 128}, {"reg_m", 12}, {"reg_n", 16}, {"unroll_k", 8},
       {"reg_loop_order", 1}, {"pack_b", 0}, {"outer_order", 2}, {"pack_a", 0}},
      {{"tile_m", 16}, {"tile_n", 16}, {"tile_k", 16}, {"reg_m", 14}, {"reg_n", 16}, {"unroll_k", 4},
       {"reg_loop_order", 0}, {"pack_b", 0}, {"outer_order", 0}, {"pack_a", 1}},
      {{"tile_m", 16}, {"tile_n", 16}, {"tile_k", 256}, {"reg_m", 14}, {"reg_n", 16}, {"unroll_k", 2},
       {"reg_loop_order", 1}, {"pack_b", 0}, {"outer_order", 0}, {"pack_a", 0}}};
  for (Layout layout : {Layout::NT, Layout::NN}) {
    for (const auto& knobs : cases) {
      GemmWorkload w;
      w.m = 16, w.n = 128, w.k = 256;
      w.layout = layout;
      Space s = buildCpuGemmSpace(w, hostCpu(), 1);
      auto found = candidateOf(s, knobs, 1);
      ASSERT_TRUE(found);
      const std::string name = s.keyOf(*found) + " " + layoutName(layout);
      const std::string script = emitCpuGemmSchedule(w, s, *found);
      EXPECT_NE(script.find("transform.loop.peel"), std::string::npos) << name;
      expectCompilesAndVerifies(w, script, name, "peel-copy.so");
    }
  }
}

// Issue #31: register tiles of 7 rows where 7 divides M (the M = 49 GEMMs of 7x7-pixel 1x1
// convolutions): over a block of 49 rows (seven whole tiles, no peel) and over blocks of 8 rows
// (a 7-row tile and a peeled row); other shapes are not offered 7.
TEST(Compiler, SevenRowRegisterTilesCompileAndVerify) {
  GemmWorkload odd;
  odd.m = 48, odd.n = 64, odd.k = 32;
  const Space odd_space = buildCpuGemmSpace(odd, hostCpu(), 1);  // (kept: its knobs are read below)
  const auto& rm = odd_space.knobs()[3];
  ASSERT_EQ(rm.name, "reg_m");
  EXPECT_EQ(std::count(rm.values.begin(), rm.values.end(), 7), 0);
  for (int64_t m : {49, 56}) {
    GemmWorkload w;
    w.m = m, w.n = 64, w.k = 64;
    Space s = buildCpuGemmSpace(w, hostCpu(), 1);
    auto found = candidateOf(s, {{"tile_m", m == 49 ? 49 : 8}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", 7}, {"reg_n", 32},
                                 {"unroll_k", 4}, {"reg_loop_order", 0}, {"pack_b", 0}, {"outer_order", 0}, {"pack_a", 0}},
                             1);
    ASSERT_TRUE(found) << m;
    const std::string name = s.keyOf(*found);
    ASSERT_EQ(s.values(*found)[3], 7) << name;
    const std::string script = emitCpuGemmSchedule(w, s, *found);
    EXPECT_EQ(script.find("transform.loop.peel") != std::string::npos, m == 56) << name;
    expectCompilesAndVerifies(w, script, name, "seven-rows.so");
  }
}

// More than one thread: M / threads and N / threads as cache tiles where the sizes have no such
// power-of-two divisor (MobileNetV2's 196 x 96 GEMMs on 2 threads: two blocks of 98 rows or of 48
// columns), on 2 threads; the 1-thread space does not offer them.
TEST(Compiler, PerThreadSplitTilesCompileAndVerify) {
  GemmWorkload w;
  w.m = 196, w.n = 96, w.k = 64;
  const Space one = buildCpuGemmSpace(w, hostCpu(), 1);
  EXPECT_EQ(one.knobs()[0].values, (std::vector<int64_t>{196}));
  EXPECT_EQ(one.knobs()[1].values, (std::vector<int64_t>{16, 32, 96}));
  const Space s = buildCpuGemmSpace(w, hostCpu(), 2);
  EXPECT_EQ(s.knobs()[0].values, (std::vector<int64_t>{98, 196}));
  EXPECT_EQ(s.knobs()[1].values, (std::vector<int64_t>{16, 32, 48, 96}));
  for (auto [tm, tn, rm, rn] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{98, 96, 14, 32}, {196, 48, 8, 16}}) {
    auto found = candidateOf(s, {{"tile_m", tm}, {"tile_n", tn}, {"tile_k", 32}, {"reg_m", rm}, {"reg_n", rn},
                                 {"unroll_k", 4}, {"reg_loop_order", 0}, {"pack_b", 0}, {"outer_order", 0}, {"pack_a", 0}},
                             2);
    ASSERT_TRUE(found) << tm << "x" << tn;
    const std::string name = s.keyOf(*found);
    expectCompilesAndVerifies(w, emitCpuGemmSchedule(w, s, *found), name, "per-thread-split.so");
  }
}

// unroll_k = 2: register tiles one K step wide whose K loop is unrolled twice (two-step-wide tiles
// read A in pairs, which LLVM broadcast with shuffles). Plain, peeled (reg_m 6 over 64 rows), with
// the zero fill in the register tiles (tile_k = K), packed, and K chunks of 8: each compiles to
// the unrolled loop and computes the right result.
TEST(Compiler, UnrolledKLoopCompilesAndVerifies) {
  GemmWorkload w;
  w.m = 64, w.n = 128, w.k = 64;
  const Space s = buildCpuGemmSpace(w, hostCpu(), 1);
  const int64_t rn = s.knobs()[size_t(s.knobIndex("reg_n"))].values[1];  // two vectors (candidateOf fits them)
  struct Point { int64_t tm, tn, tk, rm, pack; };
  for (const Point& p : {Point{64, 128, 8, 4, 0}, Point{64, 128, 16, 6, 0}, Point{64, 128, 64, 8, 0}, Point{32, 64, 16, 8, 1}}) {
    auto found = candidateOf(s, {{"tile_m", p.tm}, {"tile_n", p.tn}, {"tile_k", p.tk}, {"reg_m", p.rm}, {"reg_n", rn},
                                 {"unroll_k", 2}, {"reg_loop_order", 0}, {"pack_b", p.pack}, {"outer_order", 0},
                                 {"pack_a", p.pack}},
                             1);
    ASSERT_TRUE(found) << p.tm << "x" << p.tn << "x" << p.tk << " reg_m " << p.rm;
    const std::string script = emitCpuGemmSchedule(w, s, *found);
    EXPECT_NE(script.find("transform.loop.unroll %kk_loops {factor = 2}"), std::string::npos) << s.keyOf(*found);
    expectCompilesAndVerifies(w, script, s.keyOf(*found), "unrolled-k.so");
  }
}

TEST(Compiler, TransposedLayoutsCompileAndVerify) {
  for (Layout l : {Layout::NT, Layout::TN}) {
    GemmWorkload w;
    w.m = 32, w.n = 64, w.k = 48;
    w.layout = l;
    Space s = buildCpuGemmSpace(w, hostCpu());
    Candidate c = defaultCpuCandidate(s, w);
    std::string so = tmpPath(std::string("t") + layoutName(l) + ".so");
    CompileOutcome out = compileCpuGemm(w.payloadMlir(), emitCpuGemmSchedule(w, s, c), so);
    ASSERT_TRUE(out.ok) << layoutName(l) << " " << out.stage << ": " << out.message;
    auto p = GemmProblem::create(w);
    ASSERT_TRUE(p.ok());
    MeasureOptions mo;
    mo.min_reps = 1, mo.max_reps = 2, mo.min_time_s = 0.001;
    EXPECT_EQ(measureSharedObject(*p, so, mo).status, MeasureStatus::Ok) << layoutName(l);
    std::filesystem::remove(so);
  }
}

// Software prefetch (compiler_cpu_prefetch.cpp; not a knob: no gain measured, docs/search.md): a
// schedule that annotates its function with sextant.prefetch_distance gets prefetch instructions
// in the object and still computes the right result (GEMM and GEMV).
TEST(Compiler, PrefetchAnnotationCompilesAndVerifies) {
  for (Layout l : {Layout::NN, Layout::NT}) {
    GemmWorkload w;
    w.m = l == Layout::NT ? 1 : 64, w.n = 128, w.k = 256, w.layout = l;
    Space s = buildCpuGemmSpace(w, hostCpu());
    std::string script = emitCpuGemmSchedule(w, s, defaultCpuCandidate(s, w));
    const std::string yield = "    transform.yield\n";
    script.insert(script.find(yield), "    %pd = transform.param.constant 4 : i64 -> !transform.param<i64>\n"
                                      "    transform.annotate %f \"sextant.prefetch_distance\" = %pd : "
                                      "!transform.any_op, !transform.param<i64>\n");
    expectCompilesAndVerifies(w, script, std::string("prefetch ") + layoutName(l),
                              std::string("prefetch-") + layoutName(l) + ".so", "prefetcht0");
  }
}

TEST(Compiler, ReadsKnobSelectionsBackFromTheScript) {
  GemmWorkload w;
  w.m = w.n = w.k = 256;
  Space s = buildCpuGemmSpace(w, hostCpu());
  Candidate c = s.at(s.size() / 3);
  auto knobs = readScheduleKnobs(emitCpuGemmSchedule(w, s, c));
  ASSERT_TRUE(knobs.ok()) << knobs.error();
  EXPECT_EQ(*knobs, s.knobMap(c));
}

TEST(Compiler, UnparsableScheduleIsAnErrorNotACrash) {
  auto k = readScheduleKnobs("module { this is not mlir }");
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.error().find("does not parse"), std::string::npos);
  EXPECT_FALSE(readScheduleKnobs("module {}").ok());  // no entry point

  GemmWorkload w;
  w.m = w.n = w.k = 16;
  CompileOutcome out = compileCpuGemm(w.payloadMlir(), "garbage", tmpPath("bad.so"));
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.stage, "parse_schedule");
}

TEST(Compiler, FailingTransformReportsItsDiagnostic) {
  GemmWorkload w;
  w.m = w.n = w.k = 16;
  // Tiles a handle that matches nothing is fine, but vectorizing a func.func is an error.
  const char* bad = R"(module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %f vector_sizes [4, 4, 4] : !transform.any_op
    transform.yield
  }
})";
  CompileOutcome out = compileCpuGemm(w.payloadMlir(), bad, tmpPath("bad2.so"));
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.stage, "transform");
  EXPECT_FALSE(out.message.empty());
}
