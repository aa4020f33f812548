// Search strategies behind one interface. The tuning loop asks a strategy for a batch of
// candidates, measures them, and tells it the results; adding a strategy never touches the loop.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "sextant/codegen/space.h"
#include "sextant/common/result.h"

namespace sextant {

struct Observation {
  Candidate candidate;
  bool ok = false;     // measured and verified
  double gflops = 0;   // throughput when ok
  double learned_gflops = 0;  // what the cost model learns when not gflops (0: gflops; the transfer
                              // experiment's --labels fastest sets learnedThroughput)
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  virtual std::string name() const = 0;
  // Up to `n` distinct valid candidates whose flat ids (Space::encode) are not in `tried`.
  // Fewer, or none, once the space is exhausted. Deterministic given the seed, the history of
  // propose/observe calls and `tried`.
  virtual std::vector<Candidate> propose(const Space& space, const std::unordered_set<uint64_t>& tried,
                                         size_t n) = 0;
  // Results of measured candidates, including those known before this run (on resume).
  virtual void observe(const Space& space, const std::vector<Observation>& results) {}
  // What the strategy wants the user to know at the end (skips, warm start); may be empty.
  virtual std::string report() const { return ""; }
};

// What model-based strategies need beyond the space: the cost model's features of a candidate.
// Tuning data of other workloads or targets, for the Glimpse-style prior ("glimpse" strategy).
struct PriorRecord {
  std::map<std::string, int64_t> knobs;  // knob name -> value
  double score = 0;    // throughput / the best of its own workload and target, in [0, 1]
  double weight = 1;   // similarity of its target to this one (Blueprint distance; 1: same kind)
  std::string workload;  // key of the workload it was measured on (empty: unknown, as similar as can be)
};

// How much a prior record of workload `from` says about tuning workload `to`, in (0, 1]: 1 for the
// same op, layout and dtypes at any distance-0 shape, x exp(-d / 8) for d = the sum over M, N, K of
// |log2 ratio|, x 0.1 for another layout (the best tiles of NN and NT differ: issue #11's live
// check), x 0.5 for other dtypes. Empty or unparsable keys: 1.
double workloadSimilarity(const std::string& from, const std::string& to);

struct StrategyContext {
  std::function<std::vector<float>(const Candidate&)> features;
  int num_features = 0;
  int feature_version = 0;  // of `features` (a saved or pretrained model must match)
  std::string model_path;  // where a model-based strategy keeps its model (warm start); empty: nowhere
  // A pretrained cost model (tune costmodel train) that model-based strategies start from when there
  // is no saved model of this workload: the first batch is ranked by it, and it is fine-tuned on
  // the workload's records; its frozen copy is blended in with weight mix / (mix + own records).
  std::string pretrained_path;  // empty: none (cold start)
  double pretrained_mix = 32;
  std::vector<PriorRecord> prior;  // other workloads'/targets' records; empty: a uniform prior
  std::string workload;            // key of the workload tuned (glimpse weighs the prior by similarity to it)
  double acquisition_k = 1.0;      // glimpse: optimise mean + k * ensemble spread
  double regression_weight = -1;   // cost model's regression loss weight (< 0: its default)
  int epochs = -1;                 // cost model's epochs per fit (<= 0: its default)
};

std::vector<std::string> strategyNames();  // for --help
Result<std::unique_ptr<SearchStrategy>> makeStrategy(const std::string& name, uint64_t seed,
                                                     const StrategyContext& ctx = {});

}  // namespace sextant
