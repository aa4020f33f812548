// Helpers of the CPU compile tests (compiler_test.cpp, gemv_split_test.cpp): compile a schedule
// in process, check the object, run it against the reference.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <gtest/gtest.h>
#include <unistd.h>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/runtime/cpu_runner.h"

namespace sextant::test {

inline std::string tmpPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sextant-test-" + std::to_string(getpid()) + "-" + name))
      .string();
}
// What a shell command prints on stdout.
inline std::string commandOutput(const std::string& cmd) {
  std::string text;
  FILE* f = popen(cmd.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  pclose(f);
  return text;
}

// Compiles `script` for `w` into a shared object, checks that no memrefCopy runtime call is left
// (panel copies must be vector code) and that the kernel's result matches the reference.
// `instruction`: if not empty, the disassembled object must contain it.
inline void expectCompilesAndVerifies(const GemmWorkload& w, const std::string& script, const std::string& name,
                               const std::string& file, const std::string& instruction = "") {
  std::string so = tmpPath(file);
  CompileOutcome out = compileCpuGemm(w.payloadMlir(), script, so);
  ASSERT_TRUE(out.ok) << name << ": " << out.stage << ": " << out.message.substr(0, 3000);
  EXPECT_EQ(commandOutput(std::string(SEXTANT_LLVM_TOOLS) + "/llvm-nm -D --undefined-only " + so + " | grep -c memrefCopy"),
            "0\n")
      << name;
  if (!instruction.empty()) {
    EXPECT_NE(commandOutput(std::string(SEXTANT_LLVM_TOOLS) + "/llvm-objdump -d " + so + " | grep -c " + instruction), "0\n")
        << name << ": no " << instruction;
  }
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  MeasureOptions mo;
  mo.min_reps = 1, mo.max_reps = 2, mo.min_time_s = 0.001;
  Measurement m = measureSharedObject(*p, so, mo);
  EXPECT_EQ(m.status, MeasureStatus::Ok) << name << ": " << m.message;
  std::filesystem::remove(so);
}

// Knob values written for AVX-512 (16-float vectors, 32 vector registers) fitted to this host:
// where the asked register tile is not a valid point here (AVX2: 8-float vectors, 16 registers),
// reg_n becomes the widest of the space's values, at most the one asked for, that makes it valid,
// so that what a test is about (a peel, a packing, a loop order) runs on either kind of CPU. On a
// host where the asked point is valid it is returned unchanged.
inline std::map<std::string, int64_t> fitRegisterTile(const Space& s, std::map<std::string, int64_t> want) {
  const int ri = s.knobIndex("reg_n");
  if (ri < 0 || !want.count("reg_n")) return want;
  auto valid = [&](const std::map<std::string, int64_t>& m) {
    auto c = s.fromMap(m);
    return c.ok() && s.isValid(*c);
  };
  if (valid(want)) return want;
  const auto& values = s.knobs()[size_t(ri)].values;
  for (auto it = values.rbegin(); it != values.rend(); ++it) {
    if (*it > want["reg_n"]) continue;
    auto fitted = want;
    fitted["reg_n"] = *it;
    if (valid(fitted)) return fitted;
  }
  return want;
}

// The valid candidate with these knob values (and `threads` when more than one; the register tile
// fitted to this host: fitRegisterTile); a failure says why.
inline std::optional<Candidate> candidateOf(const Space& s, std::map<std::string, int64_t> want, int threads) {
  if (threads > 1) want["threads"] = threads;
  want = fitRegisterTile(s, want);
  auto found = s.fromMap(want);
  if (!found.ok()) {
    ADD_FAILURE() << found.error();
    return std::nullopt;
  }
  if (!s.isValid(*found)) {
    ADD_FAILURE() << "not a valid candidate: " << s.keyOf(*found);
    return std::nullopt;
  }
  return *found;
}

// A compiled kernel measured briefly through the harness (verified first): its measurement.
inline Measurement measureBriefly(const GemmProblem& p, const std::string& so) {
  MeasureOptions mo;
  mo.min_reps = 2, mo.max_reps = 3, mo.min_time_s = 0.001;
  return measureSharedObject(p, so, mo);
}

}  // namespace sextant::test
