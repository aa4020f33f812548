// GPU candidates: schedule -> staged MLIR compilation (isolated, parallel) -> kernel file
// (PTX / HSACO) -> pre-flight resource check -> one of three measurement modes:
//   none    compile and analyse only; records are source "compiled", status "not_measured" or
//           "rejected" (pre-flight) or "compile_error"; nothing is ever presented as measured.
//   bundle  as none, and the kernels that pass pre-flight are added to a bundle directory
//           (manifest.json + kernels/) that `tune-runner` measures on a machine with the GPU;
//           `tune import-results DIR` brings the measurements back.
//   device  each batch becomes a temporary bundle measured right away by the `tune-runner`
//           binary in a child process (the same runner code; a driver crash cannot take the
//           tuner down), and its results become measured records.
#pragma once

#include <string>

#include "sextant/codegen/gpu_resources.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/search/evaluator.h"

namespace sextant {

enum class GpuMeasureMode { None, Bundle, Device };
Result<GpuMeasureMode> parseGpuMeasureMode(const std::string& s);  // none | bundle | device

struct GpuEvaluatorOptions {
  GpuMeasureMode mode = GpuMeasureMode::None;
  int jobs = 0;                  // parallel compilations; 0: one per core
  double compile_timeout_s = 60;  // a GPU candidate compiles in well under 5 s
  std::string bundle_dir;        // bundle mode: where the bundle is written (appended to)
  std::string runner;            // device mode: the tune-runner binary
  std::vector<std::string> runner_args;  // extra tune-runner options (--min-time ...)
  double runner_timeout_s = 1800;
  std::string work_dir;          // empty: a fresh temporary directory, removed afterwards
  // Vulkan: the description of the device the kernels are compiled for (one device entry, JSON
  // text; tune --vulkan-device), kept in the bundle's manifest; "": this machine's own limits.
  std::string vulkan_device;
};

class GpuEvaluator : public Evaluator {
 public:
  GpuEvaluator(const GemmWorkload& w, const Space& space, const GpuTargetInfo& g, GpuEvaluatorOptions o);
  ~GpuEvaluator() override;
  std::vector<Evaluation> evaluate(const std::vector<Candidate>& batch, const std::atomic<bool>& stop,
                                   const std::function<void(size_t, const Evaluation&)>& on_result) override;
  // The kernel id a candidate gets in bundles ("w<hash of the workload key>-c<its flat id in the
  // space>": stable, and unique in a bundle of several workloads).
  std::string kernelId(const Candidate& c) const;
  int64_t bundled() const { return bundled_; }

 private:
  GemmWorkload w_;
  const Space& space_;
  GpuTargetInfo g_;
  GpuEvaluatorOptions o_;
  std::string ptxas_;
  bool owns_work_dir_ = false;
  int64_t bundled_ = 0;
  uint64_t counter_ = 0;
};

// Where tune-runner is: $SEXTANT_RUNNER, next to this executable (or in runner/ beside it), PATH.
std::string findTuneRunner();

}  // namespace sextant
