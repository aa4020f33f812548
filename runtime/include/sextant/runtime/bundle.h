// Kernel bundles and results files: how compiled GPU kernels travel to a machine with the GPU
// (tune-runner measures them there) and how the measurements come back. Both are JSON; the
// schema is in runtime/README.md. Readers validate everything and name the file and the problem.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sextant/common/result.h"

namespace sextant {

inline constexpr const char* kBundleFormat = "sextant-bundle";
inline constexpr const char* kResultsFormat = "sextant-results";
inline constexpr int kBundleVersion = 1;
inline constexpr int kResultsVersion = 1;

enum class KernelFormat { Ptx, Cubin, Hsaco, Spirv };
const char* kernelFormatName(KernelFormat f);  // "ptx", "cubin", "hsaco", "spirv" (a Vulkan compute shader)
Result<KernelFormat> parseKernelFormat(const std::string& s);

// A TMA tensor map (CUtensorMap) that the runner encodes on the host for a kernel argument (the
// wgmma route): a 2-D tiled view of buffer A or B; dims and box innermost first.
struct TensorMapSpec {
  char buffer = 'A';                 // 'A' or 'B'
  std::string elem = "f16";          // f16 or bf16
  std::array<int64_t, 2> dims{};     // elements
  int64_t stride_bytes = 0;          // between consecutive rows (dimension 1)
  std::array<int64_t, 2> box{};      // elements
  int64_t swizzle = 128;             // bytes: 0, 32, 64, 128
  bool operator==(const TensorMapSpec&) const = default;
};
// "tmap:A:f16:dims=K,M:stride=BYTES:box=64,BM:swizzle=128" (the compiler's notation) or an error.
Result<TensorMapSpec> parseTensorMapSpec(const std::string& s);

// One kernel argument: a device buffer (A, B or C of the workload), a scalar passed by value, or
// the device address of a tensor map of A or B that the runner makes (128 bytes in device memory).
struct KernelArg {
  enum class Kind { Buffer, I32, I64, TensorMap };
  Kind kind = Kind::Buffer;
  char buffer = 'C';  // 'A', 'B' or 'C' when kind == Buffer
  int64_t value = 0;  // when kind is I32 or I64
  TensorMapSpec tmap; // when kind == TensorMap
  static KernelArg buf(char b) { return KernelArg{Kind::Buffer, b, 0, {}}; }
  static KernelArg i32(int32_t v) { return KernelArg{Kind::I32, 'C', v, {}}; }
  static KernelArg i64(int64_t v) { return KernelArg{Kind::I64, 'C', v, {}}; }
  static KernelArg tensorMap(const TensorMapSpec& t) { return KernelArg{Kind::TensorMap, t.buffer, 0, t}; }
  bool operator==(const KernelArg&) const = default;
};

struct BundleKernel {
  std::string id;           // unique in the bundle
  std::string workload;     // canonical workload key, listed in the manifest's workloads
  std::string file;         // relative to the bundle directory
  KernelFormat format = KernelFormat::Ptx;
  // Optional (nvidia, format cubin): the PTX the cubin was assembled from, loaded (JIT) only when
  // the driver refuses the cubin. "" when absent.
  std::string ptx_file;
  std::string kernel_name;  // symbol in the module
  std::vector<KernelArg> args;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
  // Vulkan: the subgroup size the kernel was compiled for, which its pipeline requires (the space's
  // `subgroup` knob); 0 (or absent): the device's default.
  uint32_t subgroup_size = 0;
  nlohmann::json knobs = nlohmann::json::object();
  std::string schedule_sha;                              // optional ("" when absent)
  nlohmann::json static_stats = nlohmann::json::object();  // "static": free-form compile statistics
  bool operator==(const BundleKernel&) const = default;
};

struct BundleManifest {
  int version = kBundleVersion;
  std::string created_by;  // "sextant 0.1.0"
  std::string created_at;  // ISO-8601 UTC
  std::string target;      // "h100"
  std::string vendor;      // "nvidia" | "amd"
  std::string arch;        // "sm_90", "sm_90a", "gfx942"
  std::vector<std::string> workloads;  // canonical keys
  std::vector<BundleKernel> kernels;
  // Vulkan: the device description the kernels were compiled for (one device entry of a
  // "sextant-vulkan-devices" file, tune --vulkan-device), so that tune import-results rebuilds the
  // space they came from; null: the compiling machine's own (lavapipe's limits).
  nlohmann::json vulkan_device;
  bool operator==(const BundleManifest&) const = default;
};

// The device a results file was measured on.
struct DeviceInfo {
  std::string vendor;          // "nvidia" | "amd" | "vulkan"
  std::string name;            // "NVIDIA H100 80GB HBM3"
  std::string arch;            // "sm_90" (from the compute capability), "gfx942" (gcnArchName)
  std::string driver_version;  // "12.4" (CUDA), HIP's number otherwise
  int64_t sm_count = 0;        // SMs / compute units
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  bool operator==(const DeviceInfo&) const = default;
};

// A kernel's resources as the driver reports them after loading (after PTX JIT): -1 = unknown.
struct KernelResources {
  int64_t registers = -1;             // per thread
  int64_t local_bytes = -1;           // per thread (spills and local arrays)
  int64_t static_shared_bytes = -1;   // per block
  int64_t max_threads_per_block = -1; // the most this kernel can be launched with
  bool operator==(const KernelResources&) const = default;
};

// Statuses of a measured kernel (and of a reference).
inline const std::vector<std::string>& resultStatuses() {
  static const std::vector<std::string> s = {"ok", "wrong_result", "load_error", "launch_error", "timeout", "skipped"};
  return s;
}

struct KernelResult {
  std::string id;
  std::string workload;
  std::string status;  // one of resultStatuses()
  std::string message;
  std::vector<double> times_s;  // every timed repetition
  double median_s = 0;
  double cv = 0;
  double gflops = 0;  // 2*M*N*K / median
  double max_abs_err = 0;
  int64_t checked_entries = 0;
  std::optional<KernelResources> resources;  // null when the kernel did not load
  // What was loaded: "ptx" (JIT by the driver), "cubin", "hsaco", or "ptx (fallback: ...why the
  // cubin was refused)"; "" when nothing loaded (and in files written before this field existed).
  std::string loaded;
  // Times C was verified: 1 after the first launch, 2 when it was checked again after the timed
  // repetitions (a race that corrupts C now and then fails there). 0 in older files.
  int64_t verified = 0;
  bool operator==(const KernelResult&) const = default;
};

struct ReferenceResult {
  std::string workload;
  std::string peer;  // "cublas"
  std::string status;
  std::string message;
  std::vector<double> times_s;
  double median_s = 0;
  double cv = 0;
  double gflops = 0;
  double max_abs_err = 0;
  int64_t checked_entries = 0;
  bool operator==(const ReferenceResult&) const = default;
};

struct ResultsFile {
  int version = kResultsVersion;
  std::string runner;   // "tune-runner 0.1.0"
  std::string date;     // ISO-8601 UTC
  std::string command;  // argv joined with spaces
  std::string host;
  std::optional<DeviceInfo> device;  // null: no device (tune-runner itself never writes that)
  nlohmann::json options = nlohmann::json::object();
  std::vector<KernelResult> results;
  std::vector<ReferenceResult> references;
  std::vector<std::string> notes;  // e.g. why a reference is missing
  bool operator==(const ResultsFile&) const = default;
};

// JSON <-> structs. The from* functions throw nothing: errors name `origin` (a file name) and the
// offending field, e.g. "b/manifest.json: kernels[2].grid: expected an array of 3 positive integers".
nlohmann::json toJson(const BundleManifest& m);
nlohmann::json toJson(const ResultsFile& r);
Result<BundleManifest> manifestFromJson(const nlohmann::json& j, const std::string& origin);
Result<ResultsFile> resultsFromJson(const nlohmann::json& j, const std::string& origin);

// Writes DIR/manifest.json (creating DIR). Kernel files are the caller's (see writeBundle).
Status writeBundleManifest(const std::string& dir, const BundleManifest& m);
// Writes DIR/manifest.json and the given kernel files (path relative to DIR -> contents).
Status writeBundle(const std::string& dir, const BundleManifest& m, const std::map<std::string, std::string>& files);
// Reads and validates DIR/manifest.json; every kernel file must exist.
Result<BundleManifest> readBundle(const std::string& dir);
// The bytes of a kernel's file.
Result<std::string> readKernelFile(const std::string& dir, const BundleKernel& k);

// Results: written atomically (temporary file in the same directory, then rename).
Status writeResults(const std::string& path, const ResultsFile& r);
Result<ResultsFile> readResults(const std::string& path);

// Helpers shared with the runner.
Status writeFileAtomic(const std::string& path, const std::string& contents);
std::string isoTimeUtc();  // "2025-01-31T12:34:56Z"

}  // namespace sextant
