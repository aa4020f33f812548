// The tuning loop: budget (trials, time), batches, resume, records, baselines, progress.
// Knows nothing about how candidates are compiled or measured (Evaluator) or chosen (Strategy).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/db/database.h"
#include "sextant/hwspec/target.h"
#include "sextant/search/evaluator.h"
#include "sextant/search/strategy.h"

namespace sextant {

struct TuneOptions {
  std::string strategy = "random";
  uint64_t seed = 1;
  int64_t trials = 64;          // candidates to try in this run (failures count)
  double time_budget_s = 0;     // 0: no time limit
  int batch = 16;               // candidates proposed, compiled and committed together
  bool resume = true;           // continue an unfinished run with the same settings
  // Final comparison: the best `final_top_k` candidates of the run (and the untuned default's
  // record, and this machine's confirmed best of earlier runs), the untuned default and the
  // reference libraries are measured again in
  // `final_rounds` interleaved rounds (A B C A B C ...), so that drift on a noisy machine hits all
  // of them alike; the figures pool those rounds. Where the fastest library can measure a
  // candidate call by call beside itself (CPU), the tuned candidates are measured so in
  // `final_rounds` more interleaved rounds, which pick the winner and confirm the records (issue
  // #35); otherwise the interleaved rounds do both. Then the winner and the fastest library are measured again, head to head, in
  // `final_rounds` rounds of their own (A B B A ...): the reported ratio comes from those, not from
  // the rounds the winner was picked in (no selection bias), as the median of the rounds' paired
  // ratios (robust to a machine whose speed shifts in phases of seconds).
  int final_rounds = 3;
  int final_top_k = 3;
  std::string args_json = "{}"; // the command line, stored with the run
  StrategyContext strategy_context;  // features for model-based strategies
  // GPU kernels compiled but never run (earlier --measure none/bundle runs) are proposed again
  // when this run measures on a device; otherwise they count as tried.
  bool measure_unmeasured = false;
  // Measured in this run's first batch unless the database has it already for this workload (the
  // untuned default: the search's best is then never a schedule slower than the default it found).
  // Ignored by the exhaustive strategy, which keeps the space's order.
  std::optional<Candidate> first_candidate;
  // Measured next (after first_candidate, before the strategy's proposals), those the database
  // does not have for this workload: known-good starting points (Vulkan: IREE's per-vendor
  // configurations). Ignored by the exhaustive strategy.
  std::vector<Candidate> seeds;
  // Worker mode (issue #17; `worker` not empty): this run is one worker of study `study_id`, whose
  // `trials` count the records of every worker. Candidates are claimed before they are compiled
  // (leases of `lease_s`, renewed every `heartbeat_s` by a thread on its own connection to
  // `db_path`), other workers' records are learnt before each batch, and no final comparison runs.
  int64_t study_id = 0;
  std::string worker;
  std::string db_path;
  double lease_s = 30, heartbeat_s = 5;
  int max_attempts = 2;  // a candidate whose lease expired this often is recorded as a failure
};

struct TuneProgress {
  int64_t done = 0, total = 0, failures = 0;
  double best_gflops = 0, elapsed_s = 0, eta_s = 0;
  std::string phase;  // "tuning", "final"
};

// Something measured in the final comparison: a reference point (untuned default schedule, a
// reference library) or a tuned candidate being confirmed.
struct Contender {
  std::string name;    // "default", "tuned", or a library: "openblas", "onednn", "blis"
  std::string detail;  // knobs, library description
  int64_t record_id = 0;
  std::function<Measurement()> measure;  // one measurement (its own repetitions)
  bool library = false;                  // a reference library (the fastest one is the reference)
  // For the head-to-head, call by call (both set: a CPU candidate and a library on one thread):
  // the candidate's compiled kernel ("" when it did not compile), and a library's measurement of
  // itself against such a kernel in one process: {candidate, library}, repetition i of each taken
  // back to back (measureLibraryPaired).
  std::function<std::string()> shared_object{};
  std::function<std::pair<Measurement, Measurement>(const std::string& so)> measure_paired{};
};
// Makes a contender for a record of this run (compiles its schedule).
using ConfirmFactory = std::function<Contender(const RecordRow&)>;

struct TuneSummary {
  int64_t run_id = 0;
  bool resumed = false;
  int64_t resumed_records = 0;  // records the run already had when resumed
  int64_t trials = 0;           // records of this run (including resumed ones)
  int64_t failures = 0;         // of those, failed: compile errors, crashes, timeouts, wrong results,
                                // load/launch errors (not rejected or not_measured ones)
  int64_t rejected = 0;         // refused before measuring (GPU pre-flight: cannot run)
  int64_t not_measured = 0;     // compiled only (--measure none / bundle)
  bool interrupted = false;
  bool exhausted = false;       // the space ran out before the budget
  std::string strategy_report;  // SearchStrategy::report()
  double elapsed_s = 0;
  std::optional<RecordRow> best;           // best measured record of this workload/target (all runs)
  std::optional<RecordRow> best_this_run;  // best of this run during the search
  std::optional<RecordRow> best_confirmed; // the record that won the final comparison
  // Final comparison (empty when interrupted or not run): pooled over the interleaved rounds.
  std::vector<BaselineRow> final;
  std::vector<std::string> library_names;  // which rows of `final` are reference libraries
  // The tuned rows of `final` measured again call by call beside the fastest library, in
  // interleaved rounds (empty where that cannot run: no library, not a CPU kernel): where present
  // they pick the winner (finalBestTuned) and their repetitions confirm the records.
  std::vector<BaselineRow> final_paired;
  // The head-to-head rounds after it: [0] the winner, [1] the fastest library (empty if either
  // is missing or it was interrupted).
  std::vector<BaselineRow> head_to_head;
  const BaselineRow* finalOf(const std::string& name) const;  // "default", "openblas", ...
  const BaselineRow* finalBestTuned() const;                   // highest of final_paired, else of "tuned"
  const BaselineRow* fastestLibrary() const;                   // highest pooled GFLOP/s of a library
  bool isLibrary(const BaselineRow& b) const;
  // Tuned / fastest library, from the head-to-head (0 when it did not run): the median of the
  // call pairs' ratios when it ran call by call (the reference's time / the winner's, each pair
  // taken back to back), else of the rounds' ratios (the reference's round median / the winner's).
  double ratioToReference() const;
  std::vector<double> roundRatios() const;  // each head-to-head round's ratio, in order
  std::vector<double> pairRatios() const;   // each call pair's ratio (empty unless call by call)
};

struct TuneContext {
  Database& db;
  const GemmWorkload& workload;
  const Target& target;
  const Space& space;
  Evaluator& evaluator;
  std::string device;     // e.g. LLVM's host CPU name
  std::string cpu_model;  // /proc/cpuinfo model name
  std::string llvm_version;
  // The machine that measures (machineKey; "gpu:..." for GPUs): its records are what this run
  // has tried and resumes; other machines' records are transfer data (the prior), never "tried".
  std::string machine;
};

// The database record of one evaluation in run `run_id`: `candidate` is its key in the space (or
// a "custom:" key for a schedule file), `knobs_json` its knob values; machine fields from `ctx`.
RecordRow recordOf(const TuneContext& ctx, int64_t run_id, const std::string& candidate, const std::string& knobs_json,
                   const Evaluation& e);

// The worker's batch loop (worker.cpp), called by tune() in worker mode; true if the space ran out.
struct TuneProgress;
Result<bool> workerLoop(TuneContext& ctx, const TuneOptions& o, SearchStrategy& strategy,
                        std::unordered_set<uint64_t>& tried, int64_t run_id, const std::atomic<bool>& stop,
                        const std::function<void(int64_t done, int64_t failures, double best)>& progress);

Result<TuneSummary> tune(TuneContext& ctx, const TuneOptions& o, const std::vector<Contender>& references,
                         const ConfirmFactory& confirm, const std::atomic<bool>& stop,
                         const std::function<void(const TuneProgress&)>& progress);

// Glimpse's prior data: the measured records in `records` other than this workload's on this
// target measured by `machine` (those are the run's own history), each scored against the best
// of its own workload, target and machine, weighted by `target_weight` (e.g. Blueprint similarity
// to the target being tuned; 0 drops a target) and halved for this workload's records of other
// machines (issue #35: transfer data, not this machine's figures).
std::vector<PriorRecord> priorFromRecords(const std::vector<RecordRow>& records, const std::string& workload_key,
                                          const std::string& target_key, const std::string& machine,
                                          const std::function<double(const std::string& target_key)>& target_weight);

// Where model-based strategies keep the cost model of a workload on a target, fine-tuned on its
// records: next to the database, one file per target and workload
// ("DB.cpu_x86_64-avx512.gemm_NN_512x512x512_f32_f32_f32.costmodel"). Workloads do not share it:
// a workload without its own file starts from the pretrained model (--pretrained).
std::string costModelPath(const std::string& db_path, const std::string& target_key, const std::string& workload_key);

// This machine's host name (runs and workers record it).
std::string hostName();

// Stores the workload and target rows (idempotent).
Status registerWorkloadAndTarget(Database& db, const GemmWorkload& w, const Target& t, const std::string& device,
                                 const std::string& features);

}  // namespace sextant
