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
// ~20,000 valid candidates: the space the strategy tests search, with the eight knobs it had when
// they were written (the loop order and A packing of issue #14, the last two knobs, dropped; no
// constraint reads them), so that the space, its optimum and "192 measurements = under 2% of it"
// stay what the tests expect.
inline Space syntheticSpace() {
  Space full = avx512Space(256, 512, 128);
  std::vector<Knob> knobs = full.knobs();
  while (!knobs.empty() && (knobs.back().name == "outer_order" || knobs.back().name == "pack_a")) knobs.pop_back();
  return Space(full.name(), knobs, full.constraints());
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
