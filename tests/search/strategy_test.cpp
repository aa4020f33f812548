#include <gtest/gtest.h>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/search/strategy.h"

using namespace sextant;

namespace {
Space smallSpace() {
  GemmWorkload w;
  w.m = 32, w.n = 32, w.k = 32;
  HostCpu cpu;
  cpu.vector_bits = 512;
  cpu.vector_registers = 32;
  return buildCpuGemmSpace(w, cpu);
}
}  // namespace

TEST(Strategy, RandomIsDeterministicGivenTheSeed) {
  Space s = smallSpace();
  auto a = makeStrategy("random", 42), b = makeStrategy("random", 42), c = makeStrategy("random", 43);
  std::unordered_set<uint64_t> none;
  auto pa = (*a)->propose(s, none, 20), pb = (*b)->propose(s, none, 20), pc = (*c)->propose(s, none, 20);
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
}

TEST(Strategy, NeverProposesTriedOrDuplicateCandidatesAndExhaustsTheSpace) {
  Space s = smallSpace();
  for (const char* name : {"random", "exhaustive"}) {
    auto st = makeStrategy(name, 5);
    ASSERT_TRUE(st.ok());
    std::unordered_set<uint64_t> tried;
    for (int round = 0; round < 10000; ++round) {
      auto batch = (*st)->propose(s, tried, 17);
      if (batch.empty()) break;
      for (auto& c : batch) {
        ASSERT_TRUE(s.isValid(c));
        ASSERT_TRUE(tried.insert(s.encode(c)).second) << name << ": proposed twice";
      }
    }
    EXPECT_EQ(tried.size(), s.size()) << name;
  }
}

TEST(Strategy, UnknownNameIsAnError) {
  auto st = makeStrategy("ppo", 1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("known: random, exhaustive"), std::string::npos);
}
