// Shared parts of the `tune` command line (tools/tune.cpp: main and options; tune_command.cpp:
// the tuning command; show_commands.cpp: show, best, suites and dataset collection).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "sextant/codegen/workload.h"
#include "sextant/common/result.h"
#include "sextant/db/database.h"
#include "sextant/hwspec/target.h"
#include "sextant/runtime/cpu_runner.h"
#include "sextant/runtime/libraries.h"
#include "sextant/search/strategy.h"

namespace CLI {
class App;
}

namespace sextant::cli {

constexpr int64_t kDefaultTrials = 200;

extern std::atomic<bool> g_stop;
void onSignal(int);  // first Ctrl-C: stop the candidate in flight and save; second: exit now

std::string fmtDuration(double s);
std::string fmt(const char* f, double v);

struct WorkloadArgs {
  std::string op = "gemm", shape, dtype = "f32", layout = "NN", target = "cpu", db = "sextant.db";
  std::string machine = "this";  // tune best: whose measurements (--machine)
  bool weights = false;           // --weights: B (the filter) is a constant weight (workload.h)
};
Result<GemmWorkload> makeWorkload(const WorkloadArgs& a);
void addWorkloadOptions(CLI::App* app, WorkloadArgs& a, bool with_db_default);
nlohmann::json recordJson(const RecordRow& r);

// The strategy context of a CPU tuning run of `w` (tune_command.cpp): features, the pretrained and
// the per-workload cost model, Glimpse's prior. Its functions keep references to w and space.
Status cpuStrategyContext(StrategyContext& sc, Database& db, const std::string& db_path, const GemmWorkload& w,
                          const Space& space, const Target& target, const std::string& strategy,
                          const std::string& pretrained, const std::string& device, const HostCpu& cpu,
                          const std::string& machine, bool quiet);

struct TuneArgs {
  WorkloadArgs w;
  int64_t trials = kDefaultTrials;
  double time_budget = 0;
  uint64_t seed = 1;
  std::string strategy = kDefaultStrategy;
  int batch = 16;
  int jobs = 0;
  int threads = 1;  // cpu: threads the kernels run on (a target of its own when > 1)
  std::string report = "text";
  std::string schedule_file;
  std::string knobs;        // --knobs: measure one knob assignment of the space, recorded as a candidate
  bool print_space = false; // --print-space: the space's knobs, values and constraints as JSON, then exit
  std::string versus;       // --versus LIB: with --schedule/--knobs, then LIB and the schedule call by call
  bool fresh = false;
  bool quiet = false;
  double min_time = 0.2;
  double timeout = 0;  // 0: the target's default (cpu 30 s, GPU 10 s per launch)
  int final_rounds = 3;
  int final_top_k = 3;
  std::string measure = "device";
  std::string vulkan_device;  // --vulkan-device FILE[:N]: compile for a described Vulkan device
  std::string out;
  std::string suite;  // tune every workload of this suite file
  std::string pretrained = "default";  // --pretrained PATH|none|default
  int workers = -1;                    // --workers N: make a study (and run N local workers); -1: a plain run
  // Worker mode (set by tune worker): one worker of this study.
  int64_t study = 0;
  std::string worker_name;
  double lease = 30, heartbeat = 5;
};

// tune worker: joins open studies of the database and tunes them with the other workers.
struct WorkerArgs {
  std::string db = "sextant.db";
  int64_t study = 0;  // 0: every open study, in turn, until none is left
  std::string target;  // only studies of this target
  int jobs = 0;
  double lease = 30, heartbeat = 5;
  bool quiet = false;
};
int cmdWorker(const WorkerArgs& a);
// tune --workers N: the study for a's workload (and N local workers, waited for).
int cmdMakeStudy(const TuneArgs& a, const std::string& argv_json);
// N local `tune worker` processes on the database (study 0: every open study in turn), waited
// for; how many failed.
int runLocalWorkers(const std::string& db, int n, int64_t study_id);

// --versus LIB (tools/versus.cpp): a schedule and a reference library measured call by call.
struct Versus {
  std::string library;  // its description
  std::vector<double> schedule_s, library_s, ratios;  // pair i: library_s[i] / schedule_s[i]
  double ratio = 0, low = 0, high = 0;                 // the median ratio, the middle half
  double schedule_gflops = 0, library_gflops = 0;      // pooled medians
  int rounds = 0;
};
Result<CpuLibrary> versusLibrary(const GemmWorkload& w, const std::string& name);
Result<Versus> measureVersus(const GemmProblem& p, const CpuLibrary& lib, const std::string& so,
                             const MeasureOptions& mo, int rounds);
nlohmann::json versusJson(const Versus& v);
void printVersus(const Versus& v);

int cmdTune(const TuneArgs& a, const std::string& argv_json);
int cmdTuneSuite(const TuneArgs& a, const std::string& argv_json);
int cmdShow(const std::string& db_path, const std::string& machine);
int cmdBest(const WorkloadArgs& a);
int cmdDatasetCollect(const WorkloadArgs& w, int64_t count, uint64_t seed, double min_time, int jobs,
                      const std::string& out, const std::string& argv_json);

}  // namespace sextant::cli
