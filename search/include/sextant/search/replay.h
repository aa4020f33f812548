// Replay: a runner that answers from a recorded dataset (what each candidate measured when the
// dataset was collected) instead of the device, for reproducible comparisons of search methods.
// A candidate missing from the dataset is an explicit miss (status "replay_miss"), never a
// made-up time; replayed results carry source "replay" and are never written to a database as
// measurements (the experiment harness keeps them in memory).
#pragma once

#include <map>
#include <set>
#include <string>

#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/search/evaluator.h"

namespace sextant {

struct ReplayEntry {
  bool ok = false;
  double gflops = 0;
  std::vector<double> times_s;
  double compile_s = 0;  // recorded compile time (for wall-time estimates of a replayed search)
};

struct ReplayWorkload {
  GemmWorkload workload;
  std::string target_key;
  std::map<std::string, ReplayEntry> by_candidate;  // Space::keyOf -> what was recorded
  double best_gflops = 0;
  std::string device;     // the records' device (LLVM CPU name for CPU records): one machine per entry
  std::string cpu_model;
};

struct ReplayDataset {
  std::string origin;
  std::vector<ReplayWorkload> workloads;
};

// Reads measured records from a database (.db), or a JSON-lines export (.jsonl, .jsonl.gz).
// Only measured records count; a candidate measured several times keeps its best ok result.
Result<ReplayDataset> loadReplayDataset(const std::string& path, const std::string& target_key = "");

// The records keyed by `space`'s canonical keys (Space::keyOf of Space::fromKey: knobs that a
// record predates read as their "as before" value), so that a search over the space finds records
// made before its newer knobs existed. Keys the space cannot read are dropped.
ReplayWorkload withSpaceKeys(const ReplayWorkload& w, const Space& space);

// The space restricted to the dataset's candidates (searching a recorded uniform sample of a
// space = searching that sample); each knob keeps only the values recorded.
Space restrictToDataset(const Space& space, const ReplayWorkload& w);

class ReplayEvaluator : public Evaluator {
 public:
  ReplayEvaluator(const Space& space, const ReplayWorkload& data) : space_(space), data_(data) {}
  std::vector<Evaluation> evaluate(const std::vector<Candidate>& batch, const std::atomic<bool>& stop,
                                   const std::function<void(size_t, const Evaluation&)>& on_result) override;
  int64_t misses() const { return misses_; }

 private:
  const Space& space_;
  const ReplayWorkload& data_;
  int64_t misses_ = 0;
};

}  // namespace sextant
