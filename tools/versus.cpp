// tune --schedule/--knobs ... --versus LIB: the schedule and a reference library measured call by
// call (the head-to-head's pairing, measureLibraryPaired), for hand-written schedules and other
// searchers on a machine whose speed moves.
#include <algorithm>
#include <cstdio>

#include "sextant/common/strings.h"
#include "sextant/runtime/libraries.h"
#include "tune_internal.h"

namespace sextant::cli {

Result<CpuLibrary> versusLibrary(const GemmWorkload& w, const std::string& name) {
  std::vector<std::string> known;
  std::vector<CpuLibrary> libs = cpuLibrariesFor(w);
  // A bare "onednn" on a batched matmul means its matmul primitive, which takes the batch (the
  // suites' final comparison found it the fastest), not dnnl_sgemm once per batch element.
  if (w.batched() && name == "onednn")
    std::stable_partition(libs.begin(), libs.end(), [](const CpuLibrary& l) { return l.config == "matmul"; });
  for (const CpuLibrary& l : libs) {
    known.push_back(l.id());
    if (l.id() != name && l.name != name) continue;
    if (!l.available) return Error{l.id() + " cannot be measured here: " + l.missing};
    return l;
  }
  return Error{"unknown library '" + name + "' for " + w.key() + " (known: " + join(known, ", ") + ")"};
}

Result<Versus> measureVersus(const GemmProblem& p, const CpuLibrary& lib, const std::string& so,
                             const MeasureOptions& mo, int rounds) {
  if (so.empty()) return Error{"the schedule did not compile a second time"};
  Versus v;
  v.library = lib.describe(1, p.usesGemv(), p.workload().batched());
  for (int r = 0; r < std::max(1, rounds); ++r) {
    auto [k, l] = measureLibraryPaired(p, lib, so, mo);
    if (!k.ok()) return Error{"the schedule, measured beside the library: " + std::string(measureStatusName(k.status)) + ": " + k.message};
    if (!l.ok()) return Error{lib.id() + ": " + measureStatusName(l.status) + ": " + l.message};
    for (size_t i = 0; i < k.times_s.size() && i < l.times_s.size(); ++i) {
      v.schedule_s.push_back(k.times_s[i]);
      v.library_s.push_back(l.times_s[i]);
      v.ratios.push_back(l.times_s[i] / k.times_s[i]);
    }
  }
  if (v.ratios.empty()) return Error{"no call pairs were timed"};
  const double flops = p.workload().flops();
  double med = 0, cv = 0;
  summarize(v.ratios, v.ratio, cv);
  summarize(v.schedule_s, med, cv);
  v.schedule_gflops = med > 0 ? flops / med / 1e9 : 0;
  summarize(v.library_s, med, cv);
  v.library_gflops = med > 0 ? flops / med / 1e9 : 0;
  std::vector<double> q = v.ratios;
  std::sort(q.begin(), q.end());
  v.low = q[q.size() / 4], v.high = q[q.size() - 1 - q.size() / 4];
  v.rounds = std::max(1, rounds);
  return v;
}

nlohmann::json versusJson(const Versus& v) {
  return {{"library", v.library},
          {"ratio", v.ratio},
          {"middle_half", {v.low, v.high}},
          {"pairs", v.ratios.size()},
          {"rounds", v.rounds},
          {"schedule_gflops", v.schedule_gflops},
          {"library_gflops", v.library_gflops},
          {"pair_ratios", v.ratios}};
}

void printVersus(const Versus& v) {
  printf("versus %s: schedule / library %.2fx (median of %zu back-to-back call pairs' ratios over %d processes, "
         "middle half %.2f-%.2fx; pooled %.1f vs %.1f GFLOP/s)\n",
         v.library.c_str(), v.ratio, v.ratios.size(), v.rounds, v.low, v.high, v.schedule_gflops, v.library_gflops);
}

}  // namespace sextant::cli
