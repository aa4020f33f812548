// The `tune` subcommands that move schedules out of Sextant (export, import, merge, compile), the
// model and hardware commands, and GPU tuning and result import.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "sextant/common/result.h"
#include "sextant/hwspec/gpu_target.h"

namespace CLI {
class App;
}

namespace sextant {
struct HostCpu;
struct DeviceInfo;
struct BundleManifest;
}

namespace sextant::cli {

// This machine's key (machineKey of the host CPU and LLVM's name for it).
std::string thisMachine();
// What --machine means (issue #35): "this" (the default) -> this machine's key (for a GPU target:
// "", every GPU machine's records, each naming its machine); "any" -> "" (every machine); anything
// else is a key or a prefix of whole fields ("cpu:znver4").
std::string machineFilter(const std::string& option, bool gpu_target);
// One line for a command that found nothing of this machine: which other machines have records,
// and the --machine option that uses them.
std::string otherMachinesHint(const std::vector<std::string>& keys);

struct ExportArgs {
  std::string db = "sextant.db", target = "cpu", format = "transform", out;
  bool include_predicted = false, allow_stale = false;
  int threads = 1;  // cpu: the records of tune --threads N (target cpu:ARCH-tN)
  std::string machine = "this";  // whose measurements: this machine's, "any", or a key (prefix)
};
int cmdExport(const ExportArgs& a);
int cmdImport(const std::string& file, const std::string& db);
int cmdMerge(const std::string& a, const std::string& b, const std::string& out);

struct CompileArgs {
  std::string input, db = "sextant.db", target = "cpu", out;
  std::string library_out;  // also write the library that was applied
  int threads = 1;          // cpu: the records tuned with tune --threads N (target cpu:ARCH-tN)
  bool allow_stale = false;  // use stale records (re-emitted from their knobs) instead of the default
  std::string machine = "this";  // whose measurements (see ExportArgs)
  std::string input_shapes;      // ONNX inputs: "x=1,3,224,224;..." (dynamic dimensions)
  bool fuse_epilogues = true;    // cpu: the ops' epilogues fused into their tiles (--no-epilogue-fusion)
  std::string vulkan_device;     // vulkan: compile for a described device (FILE[:N], tune hw show vulkan --json)
  bool profile = false;          // cpu .so: time each op on every call (OUT.profile.json beside it)
};
int cmdCompile(const CompileArgs& a);
// tune profile SO (tools/profile_command.cpp): a network compiled with --profile, called and timed
// op by op.
struct ProfileArgs {
  std::string so, report = "text";
  double min_time = 1.0;
  int top = 25;
};
int cmdProfile(const ProfileArgs& a);
// A module to compile: MLIR text, or an ONNX model (FILE.onnx) imported as MLIR.
Result<std::string> moduleText(const std::string& path, const std::string& input_shapes);

// tune model FILE (tools/model_command.cpp): a network's tasks tuned under one budget, compiled, measured.
struct ModelArgs {
  std::string input, db = "sextant.db", out, emit_mlir, input_shapes;
  std::string check;  // PREFIX: PREFIX.in<i>.f32 inputs, PREFIX.out<i>.f32 expected outputs
  std::string strategy = "glimpse", scheduler = "gradient", report = "text", pretrained = "default";
  int64_t trials = -1;  // total (this machine's records of the tasks); -1: per_task x tasks; 0: no tuning
  int per_task = 32;
  int batch = 8;        // trials per round
  int jobs = 0, threads = 1;
  uint64_t seed = 1;
  double time_budget = 0, min_time = 0.1, model_min_time = 1.0;
  bool quiet = false;
  bool profile = false;  // also compile the tuned network with a per-op clock and print where its time goes
  bool fuse_epilogues = true;  // (CompileArgs)
};
int cmdModel(const ModelArgs& a, const std::string& argv_json);

struct ModelEvalArgs {
  std::string db = "sextant.db", target = "cpu";
  std::string train_target;  // cross-target: train on this GPU target's records, evaluate on `target`
  int min_records = 100;
  int seeds = 5;
  double regression_weight = -1;  // < 0: the tuner's default
  int epochs = -1;
};
int cmdModelEval(const ModelEvalArgs& a);  // model_commands.cpp

// tune costmodel train (tools/costmodel_commands.cpp): a CPU cost model across workloads and machines.
struct ModelTrainArgs {
  std::vector<std::string> data, exclude;
  std::string out;
  int epochs = 300, max_per_workload = 2000;
  uint64_t seed = 1;
  std::string args_json = "[]";
};
int cmdModelTrain(const ModelTrainArgs& a);
// The pretrained model shipped with the tool (datasets/models/cpu_gemm.costmodel, or
// $SEXTANT_PRETRAINED), and what --pretrained OPTION means: "none" -> "" (cold start); "default"
// or "" -> the shipped model if usable, else "" with *warning set; a path -> it, or the error.
std::string shippedPretrainedPath();
Result<std::string> resolvePretrained(const std::string& option, std::string* warning);
int cmdModelEvalCrossTarget(const ModelEvalArgs& a);  // gpu_costmodel_eval.cpp
int cmdModelEvalGpu(const ModelEvalArgs& a);          // gpu_costmodel_eval.cpp: across one GPU target's workloads

int cmdHwList();
int cmdHwShow(const std::string& name, bool as_json = false);
// The live GPUs (CUDA / HIP, opened at run time) against the device table.
int cmdHwCheck();
// Every Vulkan device and its limits (hw_commands.cpp); as_json: the description that
// --vulkan-device reads on another machine.
int cmdHwShowVulkan(bool as_json = false);
// A device of such a description (FILE or FILE:N): what the Vulkan space takes from it.
Result<VulkanLimits> readVulkanDeviceFile(const std::string& spec);
// One device entry as JSON text (what a Vulkan bundle's manifest keeps: the device its kernels were
// compiled for) and back; origin names the text in errors.
std::string vulkanDeviceJson(const VulkanLimits& l);
Result<VulkanLimits> parseVulkanDevice(const std::string& device_json, const std::string& origin);
// Kernels compiled for the Vulkan device device_json ("" none named) may join the bundle m at out
// only if its kernels were compiled for the same one (gpu_commands.cpp).
Status sameBundleDevice(const BundleManifest& m, const std::string& device_json, const std::string& out);
// --vulkan-device SPEC for target t: the described device's limits and class applied to g (nothing
// when SPEC is empty); an error for another target or an unreadable description.
Status applyVulkanDeviceFile(GpuTargetInfo& g, const Target& t, const std::string& spec, VulkanLimits* applied = nullptr);

// tune bundle (tools/bundle_command.cpp): chosen GPU candidates compiled into a kernel bundle.
struct BundleArgs {
  std::string target, shape, dtype = "f16", layout = "NN", routes = "all", out;
  std::string vulkan_device;  // vulkan: compile for a described device (FILE[:N])
  int64_t random = 30;
  bool with_default = true;
  uint64_t seed = 1;
  int jobs = 0;
};
CLI::App* addBundleCommand(CLI::App& app, BundleArgs& a);
int cmdBundle(const BundleArgs& a, const std::atomic<bool>& stop);

// GPU tuning (tools/gpu_commands.cpp): the same loop with the GPU evaluator.
// The default search strategy (CPU and GPU): the best of issue #11's transfer experiment
// (experiments/transfer.sh; docs/search.md#transfer-learning-issue-11).
inline constexpr const char* kDefaultStrategy = "glimpse";

struct GpuTuneArgs {
  std::string op = "gemm";  // gemm, or batch_matmul (Vulkan)
  std::string shape, dtype, layout, target, db;
  std::string measure = "device";  // device | none | bundle
  std::string out;                 // bundle directory (--measure bundle)
  std::string vulkan_device;       // FILE[:N]: a described Vulkan device's limits and class (none/bundle)
  std::string strategy = kDefaultStrategy;
  uint64_t seed = 1;
  int64_t trials = 200;
  double time_budget = 0;
  int batch = 16, jobs = 0;
  bool fresh = false, quiet = false;
  std::string report = "text";
  double min_time = 0.5, timeout = 10;
  std::string args_json = "{}";
  // One worker of a study (tune worker; Vulkan): as TuneArgs' study fields.
  int64_t study = 0;
  std::string worker_name;
  double lease = 30, heartbeat = 5;
};
int cmdTuneGpu(const GpuTuneArgs& a, const std::atomic<bool>& stop);
// Reads a bundle's results file (tune-runner) into the database as measured records.
// vulkan_device: FILE[:N], the description a Vulkan bundle was compiled for where its manifest names none.
int cmdImportResults(const std::string& dir, const std::string& results, const std::string& db,
                     const std::string& vulkan_device = "");
// The machine key of a GPU's measurements: "gpu:NAME:ARCH:driver-VERSION" (issue #35).
std::string gpuMachineKey(const DeviceInfo& d);

int fail(const std::string& msg);
sextant::HostCpu cpuForTargetArch(const std::string& arch);  // the CPU a target key's arch describes  // prints "tune: error: MSG", returns 2

}  // namespace sextant::cli
