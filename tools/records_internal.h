// Helpers shared by the commands that turn database records into libraries (export in
// commands.cpp, compile in compile_command.cpp). Internal to tools/.
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>
#include <string>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/library.h"
#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/common/result.h"
#include "sextant/db/database.h"
#include "sextant/hwspec/target.h"

namespace sextant::cli {

Result<std::string> readFile(const std::string& path);
// Writes through a temporary file and a rename: a reader never sees half a file.
Status writeFileAtomically(const std::string& path, const std::string& text);

// A tuned record turned into a library entry; empty error = usable. `stale` explains why the
// record may no longer compile as measured.
struct Resolved {
  std::optional<LibraryEntry> entry;
  std::string stale;  // non-empty: why it is stale
  std::string error;  // non-empty: unusable
};

// The schedule space a target tunes a workload in, and the library kind of its schedules.
struct TargetSpace {
  Space space;
  LibraryEntry::Kind kind = LibraryEntry::Kind::Cpu;
  std::string error;
};
LibraryEntry::Kind gpuLibraryKind(const Target& t);  // Nvidia, Amd or Vulkan
TargetSpace spaceFor(const GemmWorkload& w, const Target& t);
Resolved resolveRecord(const RecordRow& r, const Target& target);

// The workload of an op tune compile supports (error: why it has none): a convolution's from its
// descriptor, a batched matmul's or a GEMM's (compile_command.cpp).
Result<GemmWorkload> workloadOf(const FoundOp& op);

struct CompileArgs;
// tune compile's CPU part (compile_command.cpp): the module with the database's best schedules
// (untuned: the default schedules) compiled to a.out; print: the per-op report. 0 or an exit code.
int compileCpuModule(const CompileArgs& a, const Target& target, const std::string& text,
                     const std::vector<FoundOp>& ops, Database& db, bool untuned, bool print);

// The model's arguments for measuring it: an ONNX model's inputs and outputs, or (MLIR) the memref
// arguments of @forward (all filled with random values; outputs are overwritten).
struct Signature {
  std::vector<std::vector<int64_t>> inputs, outputs;
};
Result<Signature> mlirSignature(const std::string& text);

// A profiled network (tools/profile_command.cpp). OUT.profile.json, written beside a shared object
// compiled with --profile: its ops by clock id, and the arguments to call it with.
std::string profileSidecar(const std::string& so_path);
Status writeProfileSidecar(const std::string& so_path, const std::vector<ProfiledOp>& ops, const Signature& sig);
// Runs a profiled network and prints (or, json, returns in `out`) each op's time, the kinds' sums
// and the whole call's; min_time_s of timed calls.
Result<nlohmann::json> profileNetwork(const std::string& so_path, double min_time_s);
void printProfile(const nlohmann::json& p, int top);

}  // namespace sextant::cli
