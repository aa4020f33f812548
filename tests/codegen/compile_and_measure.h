// Compiles candidate c of w's space into a shared object and measures it (verified against the
// reference: every batch element, every output pixel); a compile failure is a test failure.
#pragma once

#include <filesystem>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/runtime/cpu_runner.h"

namespace sextant::testing_support {

inline Measurement compileAndMeasure(const GemmWorkload& w, const Space& s, const Candidate& c, int threads,
                                     const std::string& name) {
  const std::string so = (std::filesystem::temp_directory_path() /
                          ("sextant-op-" + std::to_string(getpid()) + "-" + name + ".so")).string();
  CompileOutcome out = compileCpuGemm(w.payloadMlir(), emitCpuGemmSchedule(w, s, c), so, threads);
  Measurement m;
  if (!out.ok) {
    ADD_FAILURE() << name << " " << w.key() << " " << s.keyOf(c) << ": " << out.stage << ": "
                  << out.message.substr(0, 3000);
    return m;
  }
  auto p = GemmProblem::create(w);
  EXPECT_TRUE(p.ok()) << p.error();
  MeasureOptions mo;
  mo.min_reps = 1, mo.max_reps = 2, mo.min_time_s = 0.001;
  m = measureSharedObject(*p, so, mo);
  std::filesystem::remove(so);
  return m;
}

}  // namespace sextant::testing_support
