// Transform-dialect libraries: tuned schedules in the form a compiler consumes as is. One
// matcher named sequence per workload (by structure: a rank-3 contraction with a float
// multiply-add body, its M/N/K loop sizes and the bit widths of its operands), one action named
// sequence per workload (the schedule), and an entry point combining them with
// transform.foreach_match. Stock `mlir-opt --transform-interpreter
// --transform-preload-library=transform-library-paths=LIB` applies it.
//
// Upstream match ops cannot compare indexing maps or element types beyond their bit width, so
// NN/NT/TN of the same sizes, and f16 vs bf16, look alike to a matcher: emitLibrary refuses to put
// two such workloads in one library rather than apply the wrong one silently.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/common/result.h"

namespace sextant {

struct LibraryEntry {
  GemmWorkload workload;
  Space space;
  Candidate candidate;
  std::string source = "tuned";                   // tuned | default | predicted
  int64_t batch = 0;                              // > 0: a batched GEMM with this batch size
  enum class Kind { Cpu, Nvidia, Amd, Vulkan } kind = Kind::Cpu;  // whose schedule space `space` is
  std::map<std::string, std::string> provenance;  // tool, llvm, target, measured_at, gflops, record
  // CPU, not batched: the measured script's actions, applied instead of the ones the generator
  // emits for `candidate` today (set when the generator has changed since the record was measured).
  std::string actions;
  // CPU: the op's C is not initialised by a linalg.fill (it accumulates into C): actions that leave
  // the init alone (no zero fill fused into the tiles), matched after the entries of its workload
  // that fuse it.
  bool keeps_init = false;
};

// What a matcher can tell apart: loop sizes (batch included) and operand bit widths.
std::string matcherSignature(const GemmWorkload& w, int64_t batch = 0);

// GPU entries (gpu_schedule.h) also need the GEMM's C initialised by a linalg.fill (it is fused
// into the kernel) and the op alone in its function (the launch is built per function); the
// matcher checks the first, a second scheduled GEMM in one function fails the transform loudly.
// fuse_epilogues (tune compile's CPU libraries): each CPU schedule also gets a variant for its op
// followed by an elementwise epilogue in place on its result (bias, activation, residual add, as
// the ONNX importer writes them), which tiles the epilogue with the op's outermost tiles and fuses
// the op into each tile (into each register tile, when the schedule's fill is in its register
// tiles and nothing is packed: epilogueActions); exported libraries keep the op-only form.
Result<std::string> emitTransformLibrary(const std::vector<LibraryEntry>& entries, const std::string& title,
                                         bool fuse_epilogues = false);
// The actions of a CPU schedule rewritten for that variant (empty: it has none); `threaded`: its
// space has the threads knob (the op's zero fill then goes into each block too).
// in_registers (if given): whether the epilogue went into the register tiles (a GEMM schedule whose
// fill is in them; its op must then be a linalg.matmul, which the matcher checks).
std::string epilogueActions(const std::string& actions, bool threaded, bool* in_registers = nullptr);

}  // namespace sextant
