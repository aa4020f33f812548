// Measuring GPU GEMM kernels on the real device: a CUDA backend on the CUDA Driver API and a HIP
// backend on the HIP module API, both loaded with dlopen at run time (the same binary runs on a
// machine without any GPU software and reports "no CUDA device found (...)"), the measurement
// harness shared by both (L2 flush, GPU-event timing, repetitions, deadline, verification) and
// the loop over a whole bundle that rewrites the results file after every kernel.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sextant/codegen/workload.h"
#include "sextant/common/result.h"
#include "sextant/hwspec/gpu_target.h"
#include "sextant/runtime/bundle.h"
#include "sextant/runtime/gemm_host.h"

namespace sextant {

using DevicePtr = uint64_t;

struct LaunchDims {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
  // Vulkan: the subgroup size the kernel was compiled for and its pipeline must require (the
  // space's `subgroup` knob; VkPipelineShaderStageRequiredSubgroupSizeCreateInfo); 0: the
  // device's default. Other devices: ignored (their subgroups are the architecture's).
  uint32_t subgroup_size = 0;
};

// A module loaded on the device and the function in it.
struct LoadedKernel {
  void* module = nullptr;
  void* function = nullptr;
  KernelResources resources;
  std::string log;  // the JIT's info log (PTX), if any
};

enum class EventState { Done, Pending, Failed };

// A vendor library GEMM on the device's queue (cuBLAS), measured as a reference.
class GemmPeer {
 public:
  virtual ~GemmPeer() = default;
  virtual std::string name() const = 0;  // "cublas"
  // Enqueues C = A * B for the workload (row-major C, layouts as in GemmWorkload).
  virtual Status enqueue(const GemmWorkload& w, DevicePtr a, DevicePtr b, DevicePtr c) = 0;
};

// One GPU as the measurement harness sees it: memory, modules, launches and two timing events
// (0: start, 1: stop), all on one in-order queue (the legacy default stream). Implemented by the
// CUDA and HIP backends below, and by fakes in the tests.
class GpuDevice {
 public:
  virtual ~GpuDevice() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual Result<DevicePtr> allocate(size_t bytes) = 0;
  virtual void release(DevicePtr p) = 0;
  virtual Status copyToDevice(DevicePtr dst, const void* src, size_t bytes) = 0;  // blocking
  virtual Status copyToHost(void* dst, DevicePtr src, size_t bytes) = 0;  // blocking; call only when idle
  virtual Status fill(DevicePtr dst, uint8_t value, size_t bytes) = 0;    // enqueued
  // Loads a module (PTX is JIT-compiled by the driver) and looks up `name`; fills resources.
  virtual Result<LoadedKernel> load(const std::string& image, KernelFormat format, const std::string& name) = 0;
  virtual void unload(LoadedKernel& k) = 0;
  // Checks the launch against the kernel's and the device's limits and opts in to dynamic shared
  // memory above 48 KiB where the API wants it.
  virtual Status prepare(LoadedKernel& k, const LaunchDims& d) = 0;
  // args: one pointer per kernel parameter, to its value (the CUDA kernelParams convention).
  virtual Status launch(const LoadedKernel& k, const LaunchDims& d, void** args) = 0;  // enqueued
  virtual Status record(int event) = 0;
  virtual EventState query(int event, std::string& error) = 0;
  virtual Result<double> elapsedSeconds() = 0;  // from event 0 to event 1
  // Before a timed launch: evicts the L2 with the scratch buffer (>= 2x the L2). The default
  // writes it (memset, enqueued), which leaves the L2 full of dirty lines that are written back
  // during the timed launch; the CUDA backend reads the buffer with a kernel instead, so the L2
  // holds clean lines only. `value` changes between calls (memset fallback).
  virtual Status flushL2(DevicePtr scratch, size_t bytes, uint8_t value) { return fill(scratch, value, bytes); }
  // Keeps the queue busy for about `seconds` (enqueued), so that the start event that follows is
  // recorded when the timed launch is already queued: no launch latency inside the timing. The
  // default does nothing.
  virtual Status busyWait(double seconds) { return okStatus(); }
  // Seconds added to the deadline of a kernel's first launch, for drivers that compile the shader
  // at its first dispatch (lavapipe: ~6 s for the largest unrolled tiles here, more under load).
  virtual double firstLaunchAllowance() const { return 0; }
  // How flushL2 / busyWait work on this device, for the results file.
  virtual std::string timingMethod() const { return "L2 flush: memset of the scratch buffer; no busy-wait before the start event"; }
  // After a kernel failed on the device (illegal address, ...): resets the device so that the
  // next kernels can run. Every allocation and module is gone afterwards.
  virtual Status recover() { return Error{"this device cannot be reset"}; }
  // A TMA tensor map over the buffer at `base` (the wgmma route's kernel arguments): the 128-byte
  // CUtensorMap, which the caller copies to device memory. An error says why there is none.
  using TensorMapBytes = std::array<uint8_t, 128>;
  virtual Result<TensorMapBytes> encodeTensorMap(const TensorMapSpec& t, DevicePtr base) {
    return Error{"this device has no TMA tensor maps"};
  }
  // The vendor BLAS on this device (cuBLAS for CUDA); an error says why there is none.
  virtual Result<std::unique_ptr<GemmPeer>> openPeer() { return Error{"no vendor BLAS for this device"}; }
};

// Opens device `ordinal`. Errors, never a crash or a link-time dependency:
//   "no CUDA device found (libcuda.so.1 not loadable: <dlerror>)", "no CUDA device found (cuInit: ...)",
//   "no HIP device found (libamdhip64.so not loadable: ...)", "no HIP device found (hipInit: ...)".
Result<std::unique_ptr<GpuDevice>> openCudaDevice(int ordinal = 0);
Result<std::unique_ptr<GpuDevice>> openHipDevice(int ordinal = 0);
// Vulkan compute (vulkan_device.cpp): libvulkan.so.1 loaded at run time ($SEXTANT_VULKAN_LIB
// overrides the path); SEXTANT_VULKAN_VALIDATION=1 enables the Khronos validation layer and makes
// any message it emits an error. "no Vulkan device found (...)" when there is none.
Result<std::unique_ptr<GpuDevice>> openVulkanDevice(int ordinal = 0);
// What `tune hw show vulkan` lists, and what the Vulkan schedule space takes from a device.
struct VulkanDeviceProps {
  int index = 0;
  std::string name;            // "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;            // "cpu" (emulated: lavapipe), "discrete-gpu", "integrated-gpu", ...
  std::string api_version, driver_version;
  uint32_t vendor_id = 0;
  VulkanLimits limits;         // workgroup invocations and size, workgroup memory, subgroup size
  int64_t max_groups[3] = {0, 0, 0};
  float timestamp_period_ns = 0;
  bool float16 = false;            // shaderFloat16 and storageBuffer16BitAccess
  bool cooperative_matrix = false; // VK_KHR_cooperative_matrix (its shapes: limits.coop_matrix_shapes)
  uint32_t api = 0;                // VkPhysicalDeviceProperties::apiVersion
  // The device is older than 1.3 and has VK_EXT_subgroup_size_control: it is enabled at creation.
  bool subgroup_control_ext = false;
};
Result<std::vector<VulkanDeviceProps>> listVulkanDevices();
// The devices as a description (JSON, format "sextant-vulkan-devices") that tune --vulkan-device
// reads on another machine: `tune hw show vulkan --json`, `tune-runner --describe-vulkan`.
std::string vulkanDevicesJson(const std::vector<VulkanDeviceProps>& devices);
// The properties of a device openVulkanDevice opened (nullptr for any other device).
const VulkanDeviceProps* vulkanDeviceProps(const GpuDevice& d);
// Its pipeline cache on disk (runtime/src/vulkan_internal.h): the file ("" when not kept) and
// whether an earlier process's data seeded it. nullopt for any other device.
struct VulkanPipelineCacheFile {
  std::string path;
  bool loaded = false;
};
std::optional<VulkanPipelineCacheFile> vulkanPipelineCacheFile(const GpuDevice& d);
// vendor: "nvidia" (CUDA), "amd" (HIP) or "vulkan".
Result<std::unique_ptr<GpuDevice>> openGpuDevice(const std::string& vendor, int ordinal = 0);

// Whether kernels built for `arch` in `format` can run on the device: PTX for an older NVIDIA
// architecture runs on a newer one (JIT), a cubin only within its major version (sm_80 on sm_86),
// "a"-suffixed targets (sm_90a) only on exactly that architecture, AMD code objects only on the
// same gfx target. The error names both architectures.
Status checkArchCompatible(const std::string& arch, KernelFormat format, const DeviceInfo& device);

struct GpuMeasureOptions {
  int warmup = 2;            // untimed launches; the first one's result is verified
  int min_reps = 10;         // timed repetitions, at least
  int max_reps = 1000;       // and at most
  double min_time_s = 0.5;   // keep repeating until the timed launches add up to this
  double timeout_s = 10;     // deadline for each launch to complete
  bool flush_l2 = true;      // write a scratch buffer of >= 2x the L2 before each repetition
  uint64_t seed = 42;        // inputs
  CheckPolicy check;         // which entries of C are verified
  double rtol = -1, atol = -1;  // < 0: defaultTolerance(workload)
};

enum class GpuStatus { Ok, WrongResult, LoadError, LaunchError, Timeout, Skipped };
const char* gpuStatusName(GpuStatus s);  // "ok", "wrong_result", "load_error", "launch_error", "timeout", "skipped"

struct GpuMeasurement {
  GpuStatus status = GpuStatus::Skipped;
  std::string message;
  std::vector<double> times_s;
  double median_s = 0, cv = 0, gflops = 0, max_abs_err = 0;
  int64_t checked_entries = 0;
  int64_t verified = 0;  // times C was checked (1: first launch; 2: also after the timed repetitions)
  std::string loaded;    // what was loaded: "cubin", "ptx", "hsaco", "ptx (fallback: ...)"
  std::optional<KernelResources> resources;
  bool ok() const { return status == GpuStatus::Ok; }
};

struct KernelLaunchSpec {
  std::string id;
  std::string image;  // the module's bytes (PTX text, cubin, code object)
  KernelFormat format = KernelFormat::Ptx;
  std::string fallback_ptx;  // loaded (JIT) when a cubin image is refused; "" for none
  std::string kernel_name;
  std::vector<KernelArg> args;
  LaunchDims dims;
};

// The harness. Holds the current workload's buffers on the device (A, B, C and the flush
// scratch buffer) and knows when the device is lost: after a launch that missed its deadline
// the kernel may still be running and nothing more can be done with the context, so every later
// measurement is "skipped". A kernel that fails on the device (a fault) resets it (recover())
// and the run goes on.
class GemmBench {
 public:
  GemmBench(GpuDevice& dev, GpuMeasureOptions o);
  ~GemmBench();  // frees the device buffers, unless the device is lost
  GemmBench(const GemmBench&) = delete;
  GemmBench& operator=(const GemmBench&) = delete;

  // Makes `p` the current problem: (re)allocates A, B, C and the flush buffer and uploads A and
  // B. `p` must outlive its use.
  Status setProblem(const GemmHostProblem& p);
  GpuMeasurement measureKernel(const KernelLaunchSpec& k);
  GpuMeasurement measurePeer(GemmPeer& peer);

  bool lost() const { return lost_; }
  const std::string& lostReason() const { return lost_reason_; }
  bool problemReady() const { return ready_; }
  int generation() const { return generation_; }  // how many times the device was reset
  Tolerance tolerance() const;
  const GpuMeasureOptions& options() const { return o_; }

 private:
  // False (with the reason in m) when the device is lost or has no workload.
  bool canMeasure(GpuMeasurement& m) const;
  GpuMeasurement run(const std::string& what, const std::function<Status()>& enqueue);
  EventState waitFor(int event, std::string& error, double extra_s = 0);
  void freeBuffers();
  void afterDeviceFailure(GpuMeasurement& m);

  GpuDevice& dev_;
  GpuMeasureOptions o_;
  const GemmHostProblem* p_ = nullptr;
  bool ready_ = false;
  DevicePtr a_ = 0, b_ = 0, c_ = 0, scratch_ = 0;
  size_t scratch_bytes_ = 0;
  int flush_counter_ = 0;
  int generation_ = 0;
  std::string problem_error_;
  bool lost_ = false;
  std::string lost_reason_;
};

struct RunOptions {
  GpuMeasureOptions measure;
  // Stop right after a kernel that failed on the device (the device was reset): the kernels left
  // are not recorded, so that a fresh process can measure them with `resume_from` (tune-runner
  // does this: a reset context that cuBLAS still holds is not trusted).
  bool stop_after_fault = false;
  // Continue an earlier run: its results (all but "skipped") and its ok references are kept and
  // not measured again.
  std::optional<ResultsFile> resume_from;
  double deadline_s = 0;          // > 0: kernels not started by then (steady clock, seconds since
                                  // its epoch) are "skipped" ("time budget")
  bool reference = true;          // measure the vendor BLAS per workload
  std::vector<std::string> only;  // kernel ids; empty: all
  std::string results_path;       // rewritten after every kernel
  std::string runner;             // "tune-runner 0.1.0"
  std::string command;            // argv joined
  nlohmann::json options = nlohmann::json::object();  // recorded as "options"
};

struct RunCallbacks {
  std::function<void(const BundleKernel&)> on_start;  // before a kernel is loaded and measured
  std::function<void(const KernelResult&, size_t done, size_t total)> on_kernel;
  std::function<void(const ReferenceResult&)> on_reference;
  std::function<void(const std::string&)> on_note;
  std::function<bool()> interrupted;  // checked between kernels
};

// Measures the bundle's kernels (those in `only`, if given), grouped by workload in manifest
// order: inputs and reference once per workload, the vendor BLAS first, then every kernel. The
// results file is written before the first kernel and rewritten after every kernel and every
// reference. Kernels not measured because the device was lost, the run interrupted or the time
// budget spent are recorded as "skipped". Returns the final results (fewer than selected when it
// stopped after a fault, see RunOptions::stop_after_fault), or an error when the file cannot be
// written.
Result<ResultsFile> runBundle(GpuDevice& dev, const std::string& bundle_dir, const BundleManifest& m,
                              const RunOptions& o, const RunCallbacks& cb = {});

}  // namespace sextant
