// The only module that uses MLIR: payload + Transform script -> native code. The functions here
// run in whatever process calls them; the tuner calls them inside an isolated child process
// because an LLVM fatal error aborts the process that hits it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// Applies a Transform library (entry @__transform_main; empty text: none) to a whole module,
// lowers it for the host CPU, and writes a shared object (or, for a path ending in ".o", an object
// file). Every public function gets a C interface (`_mlir_ciface_NAME`).
CompileOutcome compileModuleCpu(const std::string& module, const std::string& library, const std::string& out_path);

// A GEMM-like op found in a module: linalg.matmul, linalg.batch_matmul, or a linalg.generic
// contraction that is a matmul.
struct FoundOp {
  std::string op_name;   // "linalg.matmul", "linalg.generic", ...
  std::string location;  // "file:line:col"
  bool supported = false;
  std::string reason;    // why not, when unsupported
  int64_t m = 0, n = 0, k = 0, batch = 0;
  std::string a_type, b_type, c_type;  // element types ("f32", "f16", "bf16", ...)
  std::string layout;                  // "NN", "NT", "TN"
};
Result<std::vector<FoundOp>> findGemmOps(const std::string& module, const std::string& filename);

// Parses and verifies a Transform library; the error carries the diagnostics.
Status validateTransformLibrary(const std::string& library);

// Parses a schedule and returns the `selected` value of every transform.tune.knob in it.
// Fails with the parser's diagnostic for text that does not parse.
Result<std::map<std::string, int64_t>> readScheduleKnobs(const std::string& schedule);

std::string llvmVersion();        // e.g. "22.1.8"
std::string llvmHostCpuName();    // e.g. "sapphirerapids"
std::string llvmHostFeatures();   // "+avx512f,+fma,..." (enabled features only)

}  // namespace sextant
