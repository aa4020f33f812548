// The batched matmul op (issue #31): its workload, its space, and every layout compiled and
// verified on small shapes, one and two threads.
#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>
#include <algorithm>
#include <random>
#include <map>
#include <set>
#include <unistd.h>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/ops.h"
#include "sextant/runtime/cpu_runner.h"
#include "compile_and_measure.h"
#include "cpu_compile_helpers.h"

using namespace sextant;
using sextant::testing_support::compileAndMeasure;

namespace {
GemmWorkload bmm(int64_t b, int64_t m, int64_t n, int64_t k, Layout l) {
  auto w = makeBatchMatmulWorkload(std::to_string(b) + "x" + std::to_string(m) + "x" + std::to_string(n) + "x" +
                                       std::to_string(k),
                                   "f32", layoutName(l));
  EXPECT_TRUE(w.ok()) << w.error();
  return *w;
}

}  // namespace

TEST(BatchMatmul, WorkloadKeyShapeAndFlops) {
  GemmWorkload w = bmm(12, 128, 128, 64, Layout::NT);
  EXPECT_TRUE(w.batched());
  EXPECT_EQ(w.key(), "batch_matmul:NT:12x128x128x64:f32*f32->f32");
  EXPECT_EQ(w.gemmShapeString(), "128x128x64");
  EXPECT_DOUBLE_EQ(w.flops(), 2.0 * 12 * 128 * 128 * 64);
  EXPECT_EQ(w.cElements(), 12 * 128 * 128);
  auto back = parseWorkloadKey(w.key());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, w);
  EXPECT_FALSE(w.element().batched());
  EXPECT_EQ(w.element().key(), "gemm:NT:128x128x64:f32*f32->f32");
  // A GEMM's key is what it always was.
  EXPECT_EQ(parseWorkloadKey("gemm:NN:8x8x8:f32*f32->f32")->op, OpKind::Gemm);
  // The payload is a batch_matmul with B transposed by its indexing maps.
  const std::string p = w.payloadMlir();
  EXPECT_NE(p.find("linalg.batch_matmul indexing_maps"), std::string::npos) << p;
  EXPECT_NE(p.find("affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>"), std::string::npos) << p;
  EXPECT_NE(p.find("memref<12x128x64xf32>"), std::string::npos) << p;
}

TEST(BatchMatmul, BadShapesAndOpsSayWhatIsExpected) {
  for (const char* bad : {"128x128x64", "12x128x128x64x2", "0x8x8x8", "4x8xQx8", ""}) {
    auto w = makeBatchMatmulWorkload(bad, "f32", "NN");
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_NE(w.error().find("shape"), std::string::npos) << w.error();
  }
  EXPECT_NE(makeBatchMatmulWorkload("12x128", "f32", "NN").error().find("BxMxNxK"), std::string::npos);
  auto op = findOp("conv9d");
  ASSERT_FALSE(op.ok());
  EXPECT_NE(op.error().find("known: gemm, batch_matmul, conv2d"), std::string::npos) << op.error();
  ASSERT_TRUE(findOp("batch_matmul").ok());
  EXPECT_EQ((*findOp("batch_matmul"))->kind(), OpKind::BatchMatmul);
  EXPECT_FALSE((*findOp("batch_matmul"))->tunesOnGpu());
  EXPECT_FALSE(parseWorkloadKey("batch_matmul:NN:8x8x8:f32*f32->f32").ok());  // three sizes: not a batched key
}

// The batched space: what the batched emitter does not do (A packing, loop orders, GEMV; B packing
// but for NT's transposed-B route) has one value; the threads constraint counts the batch, checked
// against a brute force over the raw space.
TEST(BatchMatmul, SpaceAgainstABruteForceOfItsConstraints) {
  GemmWorkload w = bmm(2, 8, 64, 32, Layout::NT);
  Space s = buildCpuGemmSpace(w, hostCpu(), /*threads=*/2);
  for (const char* one : {"pack_a", "outer_order"})
    EXPECT_EQ(s.knobs()[size_t(s.knobIndex(one))].values.size(), 1u) << one;
  EXPECT_EQ(s.knobs()[size_t(s.knobIndex("pack_b"))].values.size(), 2u);  // NT: the transposed-B route
  EXPECT_EQ(buildCpuGemmSpace(bmm(2, 8, 64, 32, Layout::NN), hostCpu()).knobs()[size_t(s.knobIndex("pack_b"))].values.size(),
            1u);
  EXPECT_EQ(s.knobIndex("gemv"), -1);  // M = 8 NT would have the GEMV route as a GEMM
  GemmWorkload g = w.element();
  EXPECT_GE(buildCpuGemmSpace(g, hostCpu(), 2).knobIndex("gemv"), 0);
  // Brute force: a point is valid iff the register tile fits, the tiles divide, reg_m <= tile_m,
  // and batch x blocks >= 2 threads.
  const int64_t vw = std::max(4, hostCpu().f32Lanes()), nregs = hostCpu().vector_registers;
  uint64_t valid = 0;
  for (uint64_t id = 0; id < s.rawSize(); ++id) {
    Candidate c = s.decode(id);
    auto km = s.knobMap(c);
    const int64_t cols = (km["reg_n"] + vw - 1) / vw;
    const bool ok = km["reg_m"] <= km["tile_m"] && km["tile_n"] % km["reg_n"] == 0 && km["tile_k"] % km["unroll_k"] == 0 &&
                    km["reg_m"] * cols + cols <= nregs &&
                    w.batch * cpuParallelBlocks(w.m, w.n, km["tile_m"], km["tile_n"], 0) >= 2 &&
                    (km["pack_b"] == 0 || km["tile_n"] % 16 == 0);  // K = 32
    EXPECT_EQ(s.isValid(c), ok) << s.keyOf(c);
    valid += ok;
  }
  EXPECT_EQ(valid, s.size());
  // tile_m = 8 and tile_n = 64 make one block per batch element: valid only because batch is 2.
  EXPECT_TRUE(s.isValid(*s.fromMap({{"tile_m", 8}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", 8}, {"reg_n", vw},
                                    {"unroll_k", 1}, {"reg_loop_order", 0}, {"threads", 2}})));
}

// Every layout, odd sizes (a register tile that does not divide the block: masked), several
// candidates each, and two threads: compiled and verified against the reference.
TEST(BatchMatmul, EveryLayoutCompilesAndVerifies) {
  std::mt19937_64 rng(11);
  for (Layout l : {Layout::NN, Layout::NT, Layout::TN}) {
    for (auto [b, m, n, k] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{3, 24, 48, 40}, {2, 7, 32, 16}}) {
      GemmWorkload w = bmm(b, m, n, k, l);
      Space s = buildCpuGemmSpace(w, hostCpu());
      std::vector<Candidate> cands = {defaultCpuCandidate(s, w)};
      for (int i = 0; i < 3; ++i) cands.push_back(s.sample(rng));
      for (const Candidate& c : cands) {
        Measurement m = compileAndMeasure(w, s, c, 1, std::string("b") + layoutName(l));
        EXPECT_EQ(m.status, MeasureStatus::Ok) << w.key() << " " << s.keyOf(c) << ": " << m.message;
      }
    }
  }
  GemmWorkload w = bmm(4, 32, 64, 32, Layout::NT);
  Space s2 = buildCpuGemmSpace(w, hostCpu(), 2);
  Measurement m = compileAndMeasure(w, s2, defaultCpuCandidate(s2, w), 2, "threads2");
  EXPECT_EQ(m.status, MeasureStatus::Ok) << m.message;
}

// unroll_k = 2 on a batched GEMM: an unrolled K loop of one-step register tiles where the tiles
// are whole, two-step-wide tiles where a partial one is masked (unrolled, that ran slower); both
// compile and verify.
TEST(BatchMatmul, UnrolledKLoopWhereTheRegisterTilesAreWhole) {
  GemmWorkload w = bmm(3, 48, 64, 32, Layout::NN);
  Space s = buildCpuGemmSpace(w, hostCpu());
  const int64_t rn = s.knobs()[size_t(s.knobIndex("reg_n"))].values[1];  // two vectors, fitted to this host
  for (auto [rm, unrolled] : {std::pair<int64_t, bool>{8, true}, {6, true}, {14, false}}) {
    auto found = s.fromMap(test::fitRegisterTile(s, {{"tile_m", 48}, {"tile_n", 64}, {"tile_k", 16}, {"reg_m", rm},
                                                     {"reg_n", rn}, {"unroll_k", 2}, {"reg_loop_order", 0}, {"pack_b", 0},
                                                     {"outer_order", 0}, {"pack_a", 0}}));
    ASSERT_TRUE(found.ok()) << found.error();
    ASSERT_TRUE(s.isValid(*found)) << s.keyOf(*found);
    const std::string script = emitCpuGemmSchedule(w, s, *found);
    EXPECT_EQ(script.find("transform.loop.unroll") != std::string::npos, unrolled) << s.keyOf(*found);
    Measurement m = compileAndMeasure(w, s, *found, 1, "bunroll");
    EXPECT_EQ(m.status, MeasureStatus::Ok) << s.keyOf(*found) << ": " << m.message;
  }
}

// Verification covers every batch element: a kernel that computes only the first one fails, and
// the message names the batch element.
TEST(BatchMatmul, VerificationCoversEveryBatchElement) {
  GemmWorkload w = bmm(3, 16, 16, 16, Layout::NN);
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  MeasureOptions mo;
  mo.min_reps = 1, mo.max_reps = 1, mo.min_time_s = 0;
  GemmProblem one = *GemmProblem::create(w.element());
  std::string partial = measureKernelHere(*p, [&](float* a, float* b, float* c) { one.runBlas(a, b, c); }, mo);
  EXPECT_NE(partial.find("wrong_result"), std::string::npos) << partial;
  EXPECT_NE(partial.find("C[1][0][0]"), std::string::npos) << partial;
  std::string whole = measureKernelHere(*p, [&](float* a, float* b, float* c) { p->runBlas(a, b, c); }, mo);
  EXPECT_NE(whole.find("\"ok\""), std::string::npos) << whole;
}

// The transposed-B route (NT, pack_b = 1): B packed by a transpose once per call. Every point of
// the route on small NT shapes, batched and not, one and two threads, compiled and verified;
// its constraints against a brute force.
TEST(BatchMatmul, TransposedBRouteCompilesAndVerifies) {
  std::mt19937_64 rng(5);
  for (GemmWorkload w : {bmm(3, 24, 64, 48, Layout::NT), bmm(2, 7, 32, 16, Layout::NT), bmm(1, 32, 48, 32, Layout::NT)}) {
    for (bool as_gemm : {false, true}) {
      if (as_gemm && w.batch != 1) continue;
      GemmWorkload x = as_gemm ? w.element() : w;
      for (int threads : {1, 2}) {
        Space s = buildCpuGemmSpace(x, hostCpu(), threads);
        const int pb = s.knobIndex("pack_b");
        ASSERT_GE(pb, 0);
        ASSERT_EQ(s.knobs()[size_t(pb)].values.size(), 2u) << x.key();
        std::vector<Candidate> route;
        for (uint64_t i = 0; i < s.size(); ++i) {
          Candidate c = s.at(i);
          if (s.valueOr(c, "pack_b", 0) != 1) continue;
          auto km = s.knobMap(c);
          EXPECT_EQ(km["outer_order"], 0);
          EXPECT_EQ(km["pack_a"], 0);
          EXPECT_EQ(km["tile_n"] % 16, 0);
          route.push_back(c);
        }
        ASSERT_FALSE(route.empty()) << x.key();
        std::shuffle(route.begin(), route.end(), rng);
        route.resize(std::min<size_t>(route.size(), threads == 1 ? 4 : 2));
        for (const Candidate& c : route) {
          // On two threads the transpose of B is parallel too (a forall), not one thread's work;
          // panel first (unbatched, two panels per thread), it runs in the product's forall.
          const bool panel_first = !x.batched() && x.n / s.valueOr(c, "tile_n", 1) >= 2 * threads;
          EXPECT_EQ(emitCpuGemmSchedule(x, s, c).find("tile_using_forall %btr") != std::string::npos,
                    threads > 1 && !panel_first)
              << x.key() << " " << s.keyOf(c);
          Measurement m = compileAndMeasure(x, s, c, threads, "route");
          EXPECT_EQ(m.status, MeasureStatus::Ok) << x.key() << " " << s.keyOf(c) << ": " << m.message;
        }
      }
    }
  }
  // K not a multiple of 16: no route.
  GemmWorkload odd = bmm(2, 16, 32, 24, Layout::NT);
  Space s = buildCpuGemmSpace(odd, hostCpu());
  for (uint64_t i = 0; i < s.size(); ++i) EXPECT_EQ(s.valueOr(s.at(i), "pack_b", 0), 0);
}

// A register tile that tile_m leaves partial (6 rows over 32: AVX2's 6 x 2-vector tile) is peeled
// in a batched matmul, NN and on the transposed-B route, as in a GEMM: the main loop's tiles
// unmasked, the remainder masked. Until 2026-11-30 every tile of such a block was masked and
// its accumulators went through memory at each K step (2.6-4.0 GFLOP/s against 31-55 peeled on
// attention shapes, AMD EPYC Zen 3). Compiled and verified, one and two threads.
TEST(BatchMatmul, PartialRegisterTilesArePeeled) {
  for (Layout l : {Layout::NN, Layout::NT}) {
    GemmWorkload w = bmm(2, 32, 64, 32, l);
    for (int threads : {1, 2}) {
      Space s = buildCpuGemmSpace(w, hostCpu(), threads);
      const int64_t rn = s.knobs()[size_t(s.knobIndex("reg_n"))].values[1];
      std::map<std::string, int64_t> km = {{"tile_m", 32}, {"tile_n", 64}, {"tile_k", 32}, {"reg_m", 6}, {"reg_n", rn},
                                           {"unroll_k", 1}, {"reg_loop_order", 0}, {"pack_b", l == Layout::NT ? 1 : 0},
                                           {"outer_order", 0}, {"pack_a", 0}};
      if (threads > 1) km["threads"] = threads;
      auto c = s.fromMap(km);
      ASSERT_TRUE(c.ok()) << c.error();
      ASSERT_TRUE(s.isValid(*c)) << s.keyOf(*c);
      const std::string script = emitCpuGemmSchedule(w, s, *c);
      EXPECT_NE(script.find("transform.loop.peel"), std::string::npos) << w.key() << " " << s.keyOf(*c);
      Measurement m = compileAndMeasure(w, s, *c, threads, "bpeel");
      EXPECT_EQ(m.status, MeasureStatus::Ok) << w.key() << " " << s.keyOf(*c) << ": " << m.message;
    }
  }
}

// C's zero fill runs inside the parallel blocks, not as a memset of the whole of C on one thread
// before them (until 2026-12-01: BERT's 12x128x64x128 P.V on 2 threads ran at 1.3x its one-thread
// speed with it, 1.9x without; AMD EPYC Zen 5). With the whole of K in the register tiles the
// accumulators start as zeros and no memset is left (NN: whole and peeled tiles; the transposed-B
// route: whole tiles); otherwise the transposed-B route zeroes each block of C in the block (LLVM
// may make a memset of a block's zero stores); NN with K chunks keeps one pass before the blocks (a memset of
// the whole of C: in blocks on two threads it measured the same on GEMMs, 1024^3-2048^3, Zen 5).
// Verified, one and two threads; on two, the entry function (not the parallel loop's body) calls
// no memset but that pass.
TEST(BatchMatmul, ZeroFillRunsInTheParallelBlocks) {
  struct Case {
    Layout layout;
    int64_t tile_k, reg_m;
  };
  const std::vector<Case> cases = {{Layout::NN, 32, 8}, {Layout::NN, 32, 6}, {Layout::NT, 32, 8},
                                   {Layout::NT, 32, 6}, {Layout::NT, 16, 6}, {Layout::NN, 16, 8}};
  for (const Case& cs : cases) {
    GemmWorkload w = bmm(3, 32, 64, 32, cs.layout);
    for (int threads : {1, 2}) {
      Space s = buildCpuGemmSpace(w, hostCpu(), threads);
      const int64_t rn = s.knobs()[size_t(s.knobIndex("reg_n"))].values[1];
      std::map<std::string, int64_t> km = {{"tile_m", 32},         {"tile_n", 64},   {"tile_k", cs.tile_k},
                                           {"reg_m", cs.reg_m},    {"reg_n", rn},    {"unroll_k", 1},
                                           {"reg_loop_order", 0},  {"outer_order", 0}, {"pack_a", 0},
                                           {"pack_b", cs.layout == Layout::NT ? 1 : 0}};
      if (threads > 1) km["threads"] = threads;
      auto c = s.fromMap(sextant::test::fitRegisterTile(s, km));  // (8 rows x 2 vectors do not fit AVX2's registers)
      ASSERT_TRUE(c.ok()) << c.error();
      ASSERT_TRUE(s.isValid(*c)) << s.keyOf(*c);
      const std::string name = w.key() + " " + s.keyOf(*c) + " threads " + std::to_string(threads);
      const std::string so = sextant::test::tmpPath("bfill.so");
      CompileOutcome out = compileCpuGemm(w.payloadMlir(), emitCpuGemmSchedule(w, s, *c), so, threads);
      ASSERT_TRUE(out.ok) << name << ": " << out.stage << ": " << out.message.substr(0, 3000);
      const std::string tools = SEXTANT_LLVM_TOOLS;
      const bool nn = cs.layout == Layout::NN, whole_k = cs.tile_k == w.k;
      const std::string entry_memsets = sextant::test::commandOutput(
          tools + "/llvm-objdump -d --disassemble-symbols=sextant_gemm " + so + " | grep -c 'call.*<memset@plt>'");
      if (whole_k && (nn || 32 % cs.reg_m == 0)) {
        EXPECT_EQ(sextant::test::commandOutput(tools + "/llvm-nm -D --undefined-only " + so + " | grep -c memset"), "0\n")
            << name;
      }
      if (threads > 1 || (nn && !whole_k)) {
        EXPECT_EQ(entry_memsets, nn && !whole_k ? "1\n" : "0\n") << name;
      }
      std::filesystem::remove(so);
      Measurement m = compileAndMeasure(w, s, *c, threads, "bfill");
      EXPECT_EQ(m.status, MeasureStatus::Ok) << name << ": " << m.message;
    }
  }
}

// An unbatched NT GEMM with at least two panels of B per thread packs each panel in the forall over
// the panels, then runs the blocks of rows against it (until 2026-12-01 all of B was transposed
// once before the product: 128x4096x4096 at 0.56x oneDNN on Zen 5). Whole K and K chunks, whole
// and peeled register tiles, both register loop orders, one and two threads: compiled and
// verified; one panel per thread keeps the single transpose.
TEST(BatchMatmul, TransposedBRoutePacksEachPanelInItsIteration) {
  struct Case {
    int64_t tile_n, tile_k, reg_m, reg_order;
  };
  GemmWorkload w = bmm(1, 32, 128, 64, Layout::NT).element();
  for (int threads : {1, 2})
    for (const Case& cs : {Case{32, 64, 8, 0}, Case{32, 32, 6, 1}, Case{16, 64, 6, 0}, Case{64, 16, 8, 1}, Case{128, 64, 8, 0}}) {
      if (threads > 1 && cs.tile_n == w.n) continue;  // (one block of columns: not a 2-thread point)
      Space s = buildCpuGemmSpace(w, hostCpu(), threads);
      std::map<std::string, int64_t> km = {{"tile_m", 32},         {"tile_n", cs.tile_n}, {"tile_k", cs.tile_k},
                                           {"reg_m", cs.reg_m},    {"reg_n", 16},         {"unroll_k", 1},
                                           {"reg_loop_order", cs.reg_order}, {"outer_order", 0}, {"pack_a", 0},
                                           {"pack_b", 1}};
      if (threads > 1) km["threads"] = threads;
      auto c = s.fromMap(sextant::test::fitRegisterTile(s, km));
      ASSERT_TRUE(c.ok()) << c.error();
      ASSERT_TRUE(s.isValid(*c)) << s.keyOf(*c);
      const std::string name = w.key() + " " + s.keyOf(*c) + " threads " + std::to_string(threads);
      const bool panel_first = w.n / cs.tile_n >= 2 * threads;
      EXPECT_EQ(emitCpuGemmSchedule(w, s, *c).find("fuse_into_containing_op %bpack into %blocks") != std::string::npos,
                panel_first)
          << name;
      Measurement m = compileAndMeasure(w, s, *c, threads, "panel");
      EXPECT_EQ(m.status, MeasureStatus::Ok) << name << ": " << m.message;
    }
}

// The zero fill of a panel-first block (K in chunks: the fill is not in the register tiles) is
// vectorized row by row: vectorized whole, a block of M x tile_n floats became one vector that
// LLVM unrolled into one store per vector (1024^3 NT, tile_n 512: 65,536 stores, 81 s of compile
// on AVX2). Here 512 x 128 floats per block: 4,096-8,192 stores before, a loop of 8-16 now.
TEST(BatchMatmul, TransposedBRouteFillsItsBlocksRowByRow) {
  GemmWorkload w = bmm(1, 512, 256, 64, Layout::NT).element();
  Space s = buildCpuGemmSpace(w, hostCpu());
  auto c = s.fromMap(sextant::test::fitRegisterTile(
      s, {{"tile_m", 64}, {"tile_n", 128}, {"tile_k", 32}, {"reg_m", 8}, {"reg_n", 16}, {"unroll_k", 1},
          {"reg_loop_order", 0}, {"outer_order", 0}, {"pack_a", 0}, {"pack_b", 1}}));
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(s.isValid(*c)) << s.keyOf(*c);
  const std::string script = emitCpuGemmSchedule(w, s, *c);
  ASSERT_NE(script.find("fuse_into_containing_op %bpack into %blocks"), std::string::npos) << "not panel first";
  const std::string so = sextant::test::tmpPath("fillrows.so");
  CompileOutcome out = compileCpuGemm(w.payloadMlir(), script, so);
  ASSERT_TRUE(out.ok) << out.stage << ": " << out.message.substr(0, 3000);
  const std::string stores = sextant::test::commandOutput(std::string(SEXTANT_LLVM_TOOLS) + "/llvm-objdump -d " + so +
                                                          " | grep -cE 'vmov(ups|aps)[[:space:]]+%[xyz]mm[0-9]+,'");
  EXPECT_LT(std::stoi(stores), 1000) << "vector stores in the object: " << stores;
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  Measurement m = sextant::test::measureBriefly(*p, so);  // (the object compiled above, verified)
  EXPECT_EQ(m.status, MeasureStatus::Ok) << m.message;
  std::filesystem::remove(so);
}
