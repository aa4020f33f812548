// The only module that uses MLIR: payload + Transform script -> native code. The functions here
// run in whatever process calls them; the tuner calls them inside an isolated child process
// because an LLVM fatal error aborts the process that hits it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "sextant/common/result.h"

namespace sextant {

struct CompileOutcome {
  bool ok = false;
  std::string stage;    // where it failed: parse_payload, parse_schedule, transform, lower,
                        // translate, codegen, link
  std::string message;  // MLIR/LLVM diagnostics
  double seconds = 0;   // wall time of the whole compilation
  int64_t object_bytes = 0;
};

// Applies `schedule` (a module with @__transform_main) to `payload`, lowers to LLVM, optimizes
// (O3) for the host CPU's real features and writes a shared object exporting
// `_mlir_ciface_sextant_gemm` to `so_path`.
CompileOutcome compileCpuGemm(const std::string& payload, const std::string& schedule,
                              const std::string& so_path);

// Parses a schedule and returns the `selected` value of every transform.tune.knob in it.
// Fails with the parser's diagnostic for text that does not parse.
Result<std::map<std::string, int64_t>> readScheduleKnobs(const std::string& schedule);

std::string llvmVersion();        // e.g. "22.1.8"
std::string llvmHostCpuName();    // e.g. "sapphirerapids"
std::string llvmHostFeatures();   // "+avx512f,+fma,..." (enabled features only)

}  // namespace sextant
