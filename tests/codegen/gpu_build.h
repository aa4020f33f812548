// Helpers of the GPU code-generation tests: one candidate of a target's space compiled as the
// tuner compiles it (compileGpuGemm), and small text utilities.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <unistd.h>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/gpu_schedule.h"

namespace sextant::testing_codegen {

inline std::string tmpPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sextant-gpu-test-" + std::to_string(getpid()) + "-" + name))
      .string();
}
inline std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
inline int count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

struct Built {
  CompileOutcome out;
  GpuKernelInfo info;
  GpuPlan plan;
  std::string object, path;
};

inline Built build(const std::string& target, const std::string& key, const std::string& knobs) {
  Built b;
  auto t = resolveTarget(target);
  EXPECT_TRUE(t.ok());
  auto g = gpuTargetInfo(*t);
  EXPECT_TRUE(g.ok());
  auto w = parseWorkloadKey(key);
  EXPECT_TRUE(w.ok()) << w.error();
  Space s = buildGpuGemmSpace(*w, *g);
  auto c = s.fromKey(knobs);
  EXPECT_TRUE(c.ok()) << c.error();
  if (!c.ok()) return b;
  EXPECT_TRUE(s.isValid(*c)) << knobs;
  b.plan = *planGpuGemm(*w, s, *c);
  GpuCompileRequest r = gpuCompileRequest(*w, s, *c, b.plan, *g);
  r.keep_ir = true;
  b.path = r.out_path = tmpPath(std::to_string(rand()) + (r.nvidia ? ".ptx" : ".hsaco"));
  b.out = compileGpuGemm(r, b.info);
  if (b.out.ok) b.object = slurp(b.path);
  return b;
}

}  // namespace sextant::testing_codegen
