// The learned cost model: an ensemble of small MLPs (LibTorch, hidden behind this header), each
// trained on a bootstrap of the measurements with
//   - a pairwise ranking loss (RankNet) within each workload,
//   - a regression of normalised throughput (GFLOP/s / best GFLOP/s of the workload), the score
//     the search maximises,
//   - a failure head (probability that a candidate fails to compile, crashes or is wrong).
// Predictions give the ensemble mean, its spread (standard deviation across members) and the
// mean failure probability.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sextant/common/result.h"

namespace sextant {

struct Sample {
  std::vector<float> x;
  float gflops = 0;  // measured throughput (ignored when failed)
  bool failed = false;
  int group = 0;     // workload: ranks and normalisation are within a group
  float weight = 1;  // relative weight: each member's bootstrap draws samples in proportion to it
};

struct Prediction {
  float mean = 0;    // normalised throughput (1 = the best seen for the workload)
  float spread = 0;  // standard deviation across ensemble members
  float p_fail = 0;
};

struct CostModelOptions {
  int members = 5;
  int hidden = 32;
  int epochs = 150;           // per fit; online updates use `update_epochs`
  int update_epochs = 40;
  double lr = 3e-3;
  // A lighter regression term (0.2, 100 epochs) ranks held-out records better (Kendall tau
  // 0.72-0.74 vs 0.69-0.71 at 25% training data) but made every model-based search strategy worse
  // in the replay experiment (model 1.19x -> 1.03x, ppo 1.16x -> 0.81x SA's measurements to 95%):
  // the search needs the score scale. `tune costmodel eval --regression-weight --epochs` tries others.
  double rank_weight = 1.0, regression_weight = 1.0, failure_weight = 0.3;
  uint64_t seed = 1;
  int feature_version = 0;  // of the features it is trained on (saved; a loader checks it)
};

// Version of the saved model format (meta: features, members, hidden, trained, format, feature
// version). Files of another format are refused with a message naming the file.
constexpr int kCostModelFormat = 2;

class CostModel {
 public:
  explicit CostModel(int num_features, CostModelOptions o = {});
  CostModel(CostModel&&) noexcept;
  CostModel& operator=(CostModel&&) noexcept;
  ~CostModel();

  int numFeatures() const;
  int featureVersion() const;
  bool trained() const;
  // Trains from scratch (fit) or continues from the current weights (update, the online step
  // after every measured batch, or fine-tuning a pretrained model). Feature standardisation
  // (mean, standard deviation) is computed by fit and kept by update, since the weights depend
  // on it; a feature that is (nearly) constant in the fitted data (std < 0.05: the workload's
  // sizes when one workload was seen) is centred but not scaled, so that other values of it
  // later (another workload) reach the networks as differences of a few units, not 1e6, and its
  // first-layer weights start at 0: the model is neutral about it until updates show its effect.
  void fit(const std::vector<Sample>& data);
  void update(const std::vector<Sample>& data);
  std::vector<Prediction> predict(const std::vector<std::vector<float>>& x) const;

  Status save(const std::string& path) const;
  static Result<CostModel> load(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The fastest timed call's throughput, flops / min(times), when the times are known, else
// `gflops` (the median call's, what records report). Interference on a shared machine only ever
// adds time, so the fastest call repeats better (on the Zen 5 replay datasets, split-half Kendall
// tau 0.84-0.98 against 0.56-0.97 for the median), and a model trained on it ranks held-out records
// slightly better; but searches guided by it reached 95% of the best median later in a replay
// A/B, so tune's models learn the median and this is the experiment's `--labels fastest`
// (docs/costmodel.md).
double learnedThroughput(double flops, const std::vector<double>& times_s, double gflops);

// Kendall's tau-b between two score lists (ties counted as neither concordant nor discordant).
// A saved model for features of `num_features` and version `feature_version`; refused with one
// line naming the file when it does not exist, is not a model, or was trained on other features.
Result<CostModel> loadPretrained(const std::string& path, int num_features, int feature_version);

// Ranking pairs for one ensemble member: pairs of positions in `rows` (the member's bootstrap
// resample: row indices, repeats allowed) holding two different successful rows of the same
// group; up to 4 per row of a group, at most 4096 per group.
std::vector<std::pair<int64_t, int64_t>> rankingPairs(const std::vector<int64_t>& rows, const std::vector<int>& group,
                                                      const std::vector<bool>& ok, uint64_t seed);

// LibTorch's intra-op threads (experiments running independent searches side by side set 1).
void setCostModelThreads(int n);

double kendallTau(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace sextant
