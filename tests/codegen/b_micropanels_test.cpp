// The B micro-panel route (pack_b = 2, issue #35; codegen/src/cpu_route_b_micropanels.cpp): where
// the space offers it, and every loop order it takes compiled and verified against the reference,
// with and without the A copy, with a peeled register loop, on one and two threads. The spaces are
// built for a synthetic AVX2 CPU (the route is offered there only), so the tests run on any x86
// host with AVX2.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cpu_compile_helpers.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/ops.h"
#include "test_cpus.h"

using namespace sextant;

namespace {

GemmWorkload gemm(const std::string& shape, const std::string& layout = "NN") {
  auto w = makeGemmWorkload(shape, "f32", layout);
  EXPECT_TRUE(w.ok()) << w.error();
  return *w;
}

std::vector<int64_t> packBValues(const Space& s) {
  const int i = s.knobIndex("pack_b");
  return i < 0 ? std::vector<int64_t>{} : s.knobs()[size_t(i)].values;
}

}  // namespace

TEST(BMicroPanels, OfferedOnAvx2NnGemmsOnly) {
  const std::vector<int64_t> with = {0, 1, 2}, without = {0, 1};
  EXPECT_EQ(packBValues(buildCpuGemmSpace(gemm("1024x1024x1024"), test::avx2())), with);
  EXPECT_EQ(packBValues(buildCpuGemmSpace(gemm("1024x1024x1024"), test::avx2(), 2)), with);
  // AVX-512 (not measured there), B transposed or A transposed, a weight: as before.
  EXPECT_EQ(packBValues(buildCpuGemmSpace(gemm("1024x1024x1024"), test::avx512())), without);
  EXPECT_EQ(packBValues(buildCpuGemmSpace(gemm("1024x1024x1024", "NT"), test::avx2())), without);
  EXPECT_EQ(packBValues(buildCpuGemmSpace(gemm("1024x1024x1024", "TN"), test::avx2())), without);
  GemmWorkload wt = gemm("196x256x2304");
  wt.weights = true;
  EXPECT_EQ(packBValues(buildCpuGemmSpace(wt, test::avx2())), without);
}

// Every outer loop order, A copied or read in place, on a shape whose register loop over M is
// peeled (6 rows over 200) and whose K chunk is not a power of two (136): the script packs B in
// micro-panels (pack_transpose of the outer dims, fused into the K chunk's loop), the kernel
// compiles with no memrefCopy left and computes what the reference computes.
TEST(BMicroPanels, EveryLoopOrderCompilesAndVerifies) {
  GemmWorkload w = gemm("200x160x136");
  Space s = buildCpuGemmSpace(w, test::avx2());
  for (int64_t order : {0, 1, 2})
    for (int64_t pack_a : {0, 1}) {
      const std::string name = "outer_order " + std::to_string(order) + ", pack_a " + std::to_string(pack_a);
      SCOPED_TRACE(name);
      auto c = s.fromMap({{"tile_m", 200}, {"tile_n", 32}, {"tile_k", 136}, {"reg_m", 6}, {"reg_n", 16}, {"unroll_k", 4},
                          {"reg_loop_order", order % 2}, {"pack_b", 2}, {"outer_order", order}, {"pack_a", pack_a}});
      ASSERT_TRUE(c.ok()) << c.error();
      ASSERT_TRUE(s.isValid(*c)) << s.keyOf(*c);
      const std::string script = emitCpuGemmSchedule(w, s, *c);
      EXPECT_NE(script.find("pack_transpose %bpack0 with_compute_op(%p0) outer_perm = [1, 0]"), std::string::npos) << script;
      EXPECT_NE(script.find("fuse_into_containing_op %bpack_f into %kc"), std::string::npos) << script;
      EXPECT_NE(script.find("transform.loop.peel"), std::string::npos) << "200 rows in tiles of 6: the remainder peeled";
      test::expectCompilesAndVerifies(w, script, name, "micropanels_" + std::to_string(order) + std::to_string(pack_a) + ".so");
    }
}

// Four-vector register tiles (reg_n 32) and two threads (the micro-panels packed in each thread's
// blocks).
TEST(BMicroPanels, WideTilesOnTwoThreadsVerify) {
  GemmWorkload w = gemm("128x256x64");
  Space s = buildCpuGemmSpace(w, test::avx2(), 2);
  for (int64_t order : {0, 2}) {
    SCOPED_TRACE("outer_order " + std::to_string(order));
    auto c = s.fromMap({{"tile_m", 64}, {"tile_n", 128}, {"tile_k", 64}, {"reg_m", 2}, {"reg_n", 32}, {"unroll_k", 2},
                        {"reg_loop_order", 0}, {"pack_b", 2}, {"outer_order", order}, {"pack_a", 0}, {"threads", 2}});
    ASSERT_TRUE(c.ok()) << c.error();
    ASSERT_TRUE(s.isValid(*c)) << s.keyOf(*c);
    const std::string script = emitCpuGemmSchedule(w, s, *c);
    EXPECT_NE(script.find("sextant.num_threads"), std::string::npos);
    test::expectCompilesAndVerifies(w, script, "two threads", "micropanels_t2_" + std::to_string(order) + ".so");
  }
}
