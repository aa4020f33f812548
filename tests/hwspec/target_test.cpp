#include <gtest/gtest.h>

#include "sextant/hwspec/target.h"

using namespace sextant;

TEST(HostCpu, ParsesCpuInfo) {
  const char* text =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU\ncpu MHz\t\t: 2100.000\n"
      "flags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw\n\n"
      "processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU\nflags\t\t: fpu\n\n";
  HostCpu c = parseCpuInfo(text);
  EXPECT_EQ(c.model, "Test CPU");
  EXPECT_EQ(c.logical_cores, 2);
  EXPECT_EQ(c.vector_isa, "avx512");
  EXPECT_EQ(c.f32Lanes(), 16);
  EXPECT_EQ(c.vector_registers, 32);
  HostCpu avx2 = parseCpuInfo("processor : 0\nflags : sse2 avx avx2 fma\n");
  EXPECT_EQ(avx2.vector_isa, "avx2");
  EXPECT_EQ(avx2.f32Lanes(), 8);
}

// The identity records carry (issue #35): CPU, ISA, vendor, family, model and cores; machines of one
// kind share it, other CPUs do not.
TEST(HostCpu, MachineKeyNamesTheCpuItsFamilyModelAndCores) {
  const char* zen5 =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"
      "flags\t\t: fpu avx2 fma avx512f\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n\n";
  HostCpu c = parseCpuInfo(zen5);
  EXPECT_EQ(c.family, 26);
  EXPECT_EQ(c.model_number, 2);
  EXPECT_EQ(machineKey(c, "znver5"), "cpu:znver5:avx512:AuthenticAMD-26-2:2c");
  HostCpu zen4 = c;
  zen4.family = 25, zen4.model_number = 17;
  EXPECT_NE(machineKey(zen4, "znver4"), machineKey(c, "znver5"));
  EXPECT_NE(describeMachineKey("cpu:znver5:avx512:AuthenticAMD-26-2:2c").find("2 logical cores"), std::string::npos);
  EXPECT_NE(describeMachineKey("cpu:znver4:avx512:?").find("before schema 4"), std::string::npos);
  EXPECT_EQ(machineKey(hostCpu(), "x").rfind("cpu:x:", 0), 0u);
}

TEST(HostCpu, LiveHostIsDescribed) {
  const HostCpu& c = hostCpu();
  EXPECT_GE(c.logical_cores, 1);
  EXPECT_FALSE(c.vector_isa.empty());
  EXPECT_GT(c.lastLevelCacheBytes(), 0);
}

TEST(Target, ResolvesNamesAndRejectsUnknownOnes) {
  auto cpu = resolveTarget("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->kind, TargetKind::Cpu);
  EXPECT_EQ(cpu->key().rfind("cpu:x86_64-", 0), 0u);
  auto bad = resolveTarget("tpu9");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("known: cpu, h100"), std::string::npos);
  // Every name a user may type resolves; aliases share one canonical key.
  for (const auto& n : knownTargetNames()) EXPECT_TRUE(resolveTarget(n).ok()) << n;
  auto mi = resolveTarget("MI300X");
  ASSERT_TRUE(mi.ok());
  EXPECT_EQ(mi->kind, TargetKind::Amd);
  EXPECT_EQ(mi->key(), "mi300:gfx942");
  EXPECT_EQ(resolveTarget("gfx942")->key(), mi->key());
  EXPECT_EQ(resolveTarget("sm_90")->key(), "h100:sm_90");
  EXPECT_EQ(resolveTarget("sm_80")->device, "a100-80gb");
  EXPECT_EQ(resolveTarget("h200")->arch, "sm_90");
  // Vulkan: one key for every device; vulkan:N picks the device.
  EXPECT_EQ(resolveTarget("vulkan")->key(), "vulkan:spirv1.3");
  EXPECT_EQ(resolveTarget("vulkan")->device, "0");
  EXPECT_EQ(resolveTarget("Vulkan:2")->device, "2");
  EXPECT_EQ(resolveTarget("vulkan:2")->key(), "vulkan:spirv1.3");
  EXPECT_FALSE(resolveTarget("vulkan:x").ok());
  EXPECT_FALSE(resolveTarget("vulkan:").ok());
}

// Zen 4 (family 25 with AVX-512) splits 512-bit operations into halves; Zen 5, Zen 3 (no AVX-512)
// and Intel do not (M = 1's GEMV default reads it).
TEST(HostCpu, OnlyZen4SplitsWideVectors) {
  auto cpu = [](const char* vendor, int family, const char* flags) {
    return parseCpuInfo(std::string("processor\t: 0\nvendor_id\t: ") + vendor + "\ncpu family\t: " +
                        std::to_string(family) + "\nmodel\t\t: 17\nflags\t\t: " + flags + "\n");
  };
  EXPECT_TRUE(splitsWideVectors(cpu("AuthenticAMD", 25, "fpu avx2 fma avx512f")));
  EXPECT_FALSE(splitsWideVectors(cpu("AuthenticAMD", 25, "fpu avx2 fma")));
  EXPECT_FALSE(splitsWideVectors(cpu("AuthenticAMD", 26, "fpu avx2 fma avx512f")));
  EXPECT_FALSE(splitsWideVectors(cpu("GenuineIntel", 6, "fpu avx2 fma avx512f")));
}
