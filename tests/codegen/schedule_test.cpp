#include <gtest/gtest.h>

#include "sextant/codegen/cpu_schedule.h"

using namespace sextant;

TEST(CpuSchedule, ScriptRecordsSelectedKnobValues) {
  HostCpu cpu;
  cpu.vector_bits = 256;  // AVX2: 8 f32 lanes, 16 registers
  cpu.vector_registers = 16;
  GemmWorkload w;
  w.m = w.n = w.k = 512;
  Space s = buildCpuGemmSpace(w, cpu);
  EXPECT_EQ(s.knobs()[4].values, (std::vector<int64_t>{8, 16, 32}));
  auto c = s.fromMap({{"tile_m", 64}, {"tile_n", 256}, {"tile_k", 128}, {"reg_m", 4}, {"reg_n", 16},
                      {"unroll_k", 4}, {"reg_loop_order", 0}});
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(s.isValid(*c));
  std::string text = emitCpuGemmSchedule(w, s, *c);
  EXPECT_NE(text.find("transform.tune.knob<\"tile_m\"> = 64 : i64 from options = [8, 16, 32, 64, 128, 256, 512]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("transform.tune.knob<\"reg_n\"> = 16 : i64 from options = [8, 16, 32]"), std::string::npos);
  EXPECT_NE(text.find("vector_sizes [%reg_m, %reg_n, %unroll_k]"), std::string::npos);
  EXPECT_EQ(text.find("interchange"), std::string::npos);  // reg_loop_order = 0
  EXPECT_NE(text.find("hoist_loop_invariant_subsets"), std::string::npos);
  EXPECT_NE(text.find(w.key()), std::string::npos);
}
