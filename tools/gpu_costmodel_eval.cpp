// `tune costmodel eval` for GPU targets: across targets (--train-target: does the Blueprint carry a
// model to another device?) and across the shapes of one target (leave one shape out: would a
// model trained on the other shapes' measurements have found this shape's best?).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "gpu_samples.h"
#include "sextant/costmodel/model.h"
#include "sextant/db/database.h"

namespace sextant::cli {

namespace {

// The expected best of k distinct picks drawn uniformly from `v` (exact: the i-th smallest is the
// maximum of the draw with probability C(i-1, k-1) / C(n, k)).
double expectedBestOfRandom(std::vector<double> v, size_t k) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (k >= n) return v.back();
  double e = 0, p = 1;  // p = C(i-1, k-1) / C(n, k); at i = k it is 1 / C(n, k) = prod (k-j) / (n-j)
  for (size_t j = 0; j < k; ++j) p *= double(k - j) / double(n - j);
  for (size_t i = k; i <= n; ++i) {
    e += p * v[i - 1];
    p *= double(i) / double(i - k + 1);  // C(i, k-1) / C(i-1, k-1) = i / (i - k + 1)
  }
  return e;
}

}  // namespace

// tune costmodel eval --train-target A --target B: a model trained on every measured record of GPU
// target A ranks target B's records, once with the Blueprint of each record's device as input and
// once without (zeros in its place).
int cmdModelEvalCrossTarget(const ModelEvalArgs& a) {
  auto ta = resolveTarget(a.train_target);
  if (!ta) return fail(ta.error());
  auto tb = resolveTarget(a.target);
  if (!tb) return fail(tb.error());
  if (!ta->isGpu() || !tb->isGpu()) return fail("--train-target compares GPU targets (both must be GPU targets)");
  if (ta->key() == tb->key()) return fail("--train-target and --target name the same target");
  auto db = Database::open(a.db, false);
  if (!db) return fail(db.error());
  auto recs = db->allRecords(false);
  if (!recs) return fail(recs.error());
  printf("Cross-target cost model (%s): trained on every measured record of %s, ranking %s's records.\n"
         "pick = measured GFLOP/s of the model's top-1 / the best, per workload of %s.\n\n",
         a.db.c_str(), ta->key().c_str(), tb->key().c_str(), tb->key().c_str());
  printf("%-36s %-10s %7s %8s %8s %8s\n", "workload", "blueprint", "records", "tau", "top-1", "pick");
  bool any = false;
  for (bool blueprint : {true, false}) {
    auto train_by = gpuSamples(*recs, [&](const RecordRow& r) { return r.target_key == ta->key(); }, blueprint);
    auto test_by = gpuSamples(*recs, [&](const RecordRow& r) { return r.target_key == tb->key(); }, blueprint);
    std::vector<Sample> train;
    for (auto& [k, v] : train_by) train.insert(train.end(), v.begin(), v.end());
    int ok = 0;
    for (auto& smp : train) ok += !smp.failed;
    if (ok < 16) return fail(a.db + ": fewer than 16 successful measured records of " + ta->key() + " to train on");
    CostModel m(int(train.front().x.size()));
    m.fit(train);
    for (auto& [wkey, v] : test_by) {
      std::vector<std::vector<float>> xs;
      std::vector<double> truth, pred;
      for (auto& smp : v)
        if (!smp.failed) xs.push_back(smp.x), truth.push_back(smp.gflops);
      if (truth.size() < 2) continue;
      any = true;
      for (auto& q : m.predict(xs)) pred.push_back(q.mean);
      size_t best = size_t(std::max_element(truth.begin(), truth.end()) - truth.begin());
      size_t top = size_t(std::max_element(pred.begin(), pred.end()) - pred.begin());
      printf("%-36s %-10s %7zu %8.3f %8s %8.3f\n", wkey.substr(0, wkey.find('@')).c_str(), blueprint ? "with" : "without", truth.size(),
             kendallTau(truth, pred), top == best ? "yes" : "no", truth[top] / truth[best]);
    }
  }
  if (!any) return fail(a.db + ": no measured records of " + tb->key() + " to evaluate on");
  return 0;
}

// tune costmodel eval --target <gpu>: for each workload of the target with enough measured records,
// a model trained on the records of that target's other shapes ranks this one's; its first k picks
// against k random picks (exact expectation) and the untuned default.
int cmdModelEvalGpu(const ModelEvalArgs& a) {
  auto t = resolveTarget(a.target);
  if (!t) return fail(t.error());
  auto db = Database::open(a.db, false);
  if (!db) return fail(db.error());
  auto recs = db->allRecords(false);
  if (!recs) return fail(recs.error());
  SpaceCache spaces;  // gpuSamples builds each workload's space; the default schedule below reads it
  auto by = gpuSamples(*recs, [&](const RecordRow& r) { return r.target_key == t->key(); }, true, &spaces);
  const auto g = gpuTargetOfKey(t->key());
  // Out of a workload's training set: every workload of the same op, layout and sizes (the other
  // element types of this shape rank alike and would make the test easy).
  auto shapeOf = [](const std::string& k) { return k.substr(0, k.find(':', k.find(':', k.find(':') + 1) + 1)); };
  printf("Cost model across shapes (%s, target %s, every machine's measurements): for each workload, a model\n"
         "trained on the records of the other shapes (any element type) ranks this one's. pick@k = the best measured GFLOP/s\n"
         "among the model's first k / the best of the workload; random@k = the same for k random picks\n"
         "(expected value); default = the untuned default schedule's measured GFLOP/s / the best (if measured).\n\n",
         a.db.c_str(), t->key().c_str());
  printf("%-36s %7s %7s %7s %7s %7s %8s %8s %8s\n", "workload", "records", "train", "tau", "pick@1", "pick@5",
         "pick@10", "rand@10", "default");
  bool any = false;
  for (auto& [key, test] : by) {
    const std::string wkey = key.substr(0, key.find('@'));
    std::vector<std::vector<float>> xs;
    std::vector<double> truth;
    for (auto& smp : test)
      if (!smp.failed) xs.push_back(smp.x), truth.push_back(smp.gflops);
    if (int(truth.size()) < a.min_records) {
      printf("%-36s %7zu   (fewer than %d successful records: skipped)\n", wkey.c_str(), truth.size(), a.min_records);
      continue;
    }
    std::vector<Sample> train;
    for (auto& [k2, v] : by)
      if (shapeOf(k2) != shapeOf(key)) train.insert(train.end(), v.begin(), v.end());
    int ok = 0;
    for (auto& smp : train) ok += !smp.failed;
    if (ok < 16) {
      printf("%-36s %7zu   (fewer than 16 successful records of other shapes to train on: skipped)\n", wkey.c_str(),
             truth.size());
      continue;
    }
    any = true;
    CostModelOptions mo;
    if (a.regression_weight >= 0) mo.regression_weight = a.regression_weight;
    if (a.epochs > 0) mo.epochs = a.epochs;
    CostModel m(int(train.front().x.size()), mo);
    m.fit(train);
    std::vector<double> pred;
    for (auto& q : m.predict(xs)) pred.push_back(q.mean);
    std::vector<size_t> order(pred.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return pred[x] > pred[y]; });
    const double best = *std::max_element(truth.begin(), truth.end());
    auto pickAt = [&](size_t k) {
      double b = 0;
      for (size_t i = 0; i < std::min(k, order.size()); ++i) b = std::max(b, truth[order[i]]);
      return b / best;
    };
    // The default schedule, where this workload's records have it measured.
    std::string def = "-";
    auto w = parseWorkloadKey(wkey);
    if (g && w) {
      const Space& s = spaces.get(*w, *g);
      const std::string dkey = s.keyOf(defaultGpuCandidate(s));
      for (const auto& r : *recs)
        if (r.target_key == t->key() && r.workload_key == wkey && r.source == "measured" && r.status == "ok" &&
            r.candidate == dkey) {
          char b[32];
          snprintf(b, sizeof b, "%.3f", r.gflops / best);
          def = b;
          break;
        }
    }
    printf("%-36s %7zu %7d %7.3f %7.3f %7.3f %8.3f %8.3f %8s\n", wkey.c_str(), truth.size(), ok, kendallTau(truth, pred),
           pickAt(1), pickAt(5), pickAt(10), expectedBestOfRandom(truth, 10) / best, def.c_str());
  }
  if (!any) return fail(a.db + ": no workload of " + t->key() + " has " + std::to_string(a.min_records) +
                        " successful measured records to evaluate on, and others to train on (a GPU validation "
                        "set has 61-91 per workload: --min-records 20)");
  return 0;
}

}  // namespace sextant::cli
