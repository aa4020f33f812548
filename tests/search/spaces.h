// Test spaces: the CPU GEMM space of an AVX-512 host model (32 vector registers), independent of
// the machine the tests run on, and knob-index features for model-based strategies.
#pragma once

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/search/strategy.h"

namespace sextant::testing_spaces {

inline Space avx512Space(int64_t m, int64_t n, int64_t k) {
  GemmWorkload w;
  w.m = m, w.n = n, w.k = k;
  HostCpu cpu;
  cpu.vector_bits = 512;
  cpu.vector_registers = 32;
  return buildCpuGemmSpace(w, cpu);
}
// ~20,000 valid candidates: the space the strategy tests search, frozen as the CPU space of
// 256x512x128 was when they were written (eight knobs; the CPU space has grown since: loop orders,
// A packing, peeled register tiles), so that the space, its optimum and "192 measurements = under
// 2% of it" stay what the tests expect.
inline Space syntheticSpace() {
  std::vector<Knob> k = {{"tile_m", {8, 16, 32, 64, 128, 256}, ""}, {"tile_n", {16, 32, 64, 128, 256, 512}, ""},
                         {"tile_k", {16, 32, 64, 128}, ""},         {"reg_m", {1, 2, 4, 8, 16}, ""},
                         {"reg_n", {16, 32, 64}, ""},                {"unroll_k", {1, 2, 4, 8}, ""},
                         {"reg_loop_order", {0, 1}, ""},             {"pack_b", {0, 1}, "", 0}};
  auto divides = [](int a, int b) {
    return Constraint{"divides", {a, b}, [a, b](const std::vector<int64_t>& v) { return v[size_t(b)] % v[size_t(a)] == 0; }};
  };
  std::vector<Constraint> c = {divides(3, 0), divides(4, 1), divides(5, 2),
                               {"registers", {3, 4}, [](const std::vector<int64_t>& v) {
                                  return v[3] * (v[4] / 16) + v[4] / 16 <= 32;
                                }}};
  return Space("cpu_gemm_v1", k, c);
}
inline GemmWorkload syntheticWorkload() {
  GemmWorkload w;
  w.m = 256, w.n = 512, w.k = 128;
  return w;
}

inline StrategyContext indexFeatures(const Space& s) {
  StrategyContext ctx;
  ctx.num_features = int(s.knobs().size());
  ctx.features = [](const Candidate& c) { return std::vector<float>(c.begin(), c.end()); };
  return ctx;
}

}  // namespace sextant::testing_spaces
