// The summary a CPU tuning run ends with (text or JSON): the confirmed best, the untuned default,
// every reference library with its figure, the head-to-head ratio against the fastest of them, and
// the share of the measured FMA peak (issue #35).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "sextant/codegen/ops.h"
#include "sextant/hwspec/target.h"
#include "tune_internal.h"
#include "tune_summary.h"

using json = nlohmann::json;

namespace sextant::cli {
namespace {

double ratio(double a, double b) { return b > 0 && a > 0 ? a / b : 0.0; }

json baselineJson(const BaselineRow* b) {
  return b ? json{{"gflops", b->gflops}, {"median_s", b->median_s}, {"cv", b->cv}, {"repetitions", b->times_s.size()},
                  {"status", b->status}}
           : json(nullptr);
}

// The final-comparison row of a library configuration (null if it was not measured).
const BaselineRow* rowOf(const TuneSummary& sum, const CpuLibrary& lib, const std::string& detail) {
  for (const auto& b : sum.final)
    if (b.name == lib.name && b.detail == detail) return &b;
  return nullptr;
}

}  // namespace

int reportTune(const TuneReport& in) {
  const TuneArgs& a = in.args;
  const TuneSummary& sum = *in.sum;
  const GemmWorkload& w = in.workload;
  const BaselineRow* def_b = sum.finalOf("default");
  const BaselineRow* fin = sum.finalBestTuned();
  const BaselineRow* ref = sum.fastestLibrary();
  const BaselineRow* h2h_tuned = sum.head_to_head.size() == 2 ? &sum.head_to_head[0] : nullptr;
  const BaselineRow* h2h_ref = sum.head_to_head.size() == 2 ? &sum.head_to_head[1] : nullptr;
  const bool h2h = sum.ratioToReference() > 0;
  // The reported best is the final comparison's winner, its figure from the head-to-head rounds
  // (measured after it was chosen: no selection bias), else the final comparison's, else the
  // single search-time measurement (labelled "not confirmed").
  const std::optional<RecordRow>& best = sum.best_confirmed ? sum.best_confirmed : sum.best_this_run;
  const double best_g = h2h ? h2h_tuned->gflops : fin ? fin->gflops : best ? best->gflops : 0;
  const double ref_g = h2h ? h2h_ref->gflops : ref ? ref->gflops : 0;
  const double reference_ratio = h2h ? sum.ratioToReference() : 0;
  const std::string ref_name = ref ? ref->detail : "";

  if (a.report == "json") {
    json j;
    j["workload"] = w.key();
    j["target"] = in.target.key();
    j["threads"] = in.threads;
    j["device"] = in.device;
    j["cpu_model"] = in.cpu.model;
    j["machine"] = in.machine;
    j["run_id"] = sum.run_id;
    j["resumed"] = sum.resumed;
    j["trials"] = sum.trials;
    j["failures"] = sum.failures;
    j["rejected"] = sum.rejected;
    j["not_measured"] = sum.not_measured;
    j["interrupted"] = sum.interrupted;
    j["final_comparison"] = !sum.final.empty();
    j["space_exhausted"] = sum.exhausted;
    j["space_size"] = in.space_size;
    j["strategy"] = a.strategy;
    if (!sum.strategy_report.empty()) j["strategy_report"] = sum.strategy_report;
    j["seed"] = a.seed;
    j["elapsed_s"] = sum.elapsed_s;
    j["best"] = best ? recordJson(*best) : json(nullptr);
    if (best) {
      j["best"]["search_gflops"] = best->gflops;  // its measurement during the search
      j["best"]["confirmed"] = fin != nullptr;
      if (fin) {
        j["best"]["final_gflops"] = fin->gflops;  // pooled final-comparison rounds (where it was chosen)
        j["best"]["final_call_by_call"] = fin->paired;  // those rounds call by call beside the reference
        j["best"]["median_s"] = fin->median_s;
        j["best"]["cv"] = fin->cv;
        j["best"]["repetitions"] = fin->times_s.size();
      }
      if (h2h) j["best"]["head_to_head_gflops"] = h2h_tuned->gflops;
      j["best"]["gflops"] = best_g;
    }
    j["final_rounds"] = a.final_rounds;
    j["best_in_db"] = sum.best ? recordJson(*sum.best) : json(nullptr);
    if (sum.best) {
      j["best_in_db"]["confirmed_gflops"] = sum.best->confirmed_gflops;
      j["best_in_db"]["measurements"] = sum.best->measurements();
      j["best_in_db"]["machine"] = sum.best->machine;
    }
    j["default"] = baselineJson(def_b);
    if (def_b) j["default"]["knobs"] = def_b->detail;
    json libs = json::array();
    for (const CpuLibrary& lib : in.libraries) {
      const std::string detail = lib.describe(in.threads, in.uses_gemv, in.workload.batched());
      json l{{"name", lib.name}, {"config", lib.config}, {"version", lib.version}, {"kernels", lib.kernels},
             {"routine", lib.routine}, {"threads", in.threads}, {"description", detail}};
      const BaselineRow* b = lib.available ? rowOf(sum, lib, detail) : nullptr;
      if (!lib.available) l["status"] = "not measured", l["reason"] = lib.missing;
      else if (!b) l["status"] = "not measured", l["reason"] = sum.final.empty() ? "no final comparison" : "";
      else {
        l["status"] = b->status;
        if (!b->message.empty()) l["message"] = b->message;
        l["gflops"] = b->gflops, l["median_s"] = b->median_s, l["cv"] = b->cv, l["repetitions"] = b->times_s.size();
        l["fastest"] = b == ref;
      }
      libs.push_back(l);
    }
    j["libraries"] = libs;
    j["reference"] = baselineJson(ref);
    if (ref) {
      j["reference"]["name"] = ref->detail;
      j["reference"]["library"] = ref->name;
      if (h2h) j["reference"]["head_to_head_gflops"] = h2h_ref->gflops;
    }
    if (h2h)
      j["head_to_head"] = {{"rounds", a.final_rounds},
                           {"call_by_call", h2h_tuned->paired},
                           {"tuned", baselineJson(h2h_tuned)},
                           {"reference", baselineJson(h2h_ref)},
                           {"ratio", reference_ratio},
                           {"round_ratios", sum.roundRatios()},
                           {"pair_ratios", sum.pairRatios()}};
    if (in.peak.gflops > 0) {
      j["fma_peak"] = {{"gflops", in.peak.gflops}, {"isa", in.peak.isa}, {"threads", in.peak.threads}, {"measured", true}};
      if (j["best"].is_object()) j["best"]["share_of_fma_peak"] = ratio(best_g, in.peak.gflops);
      if (ref) j["reference"]["share_of_fma_peak"] = ratio(ref_g, in.peak.gflops);
    }
    j["speedup_over_default"] = def_b ? ratio(fin ? fin->gflops : best_g, def_b->gflops) : 0.0;
    // Tuned / the fastest library, from the head-to-head rounds (0: they did not run).
    j["ratio_to_reference"] = reference_ratio;
    // The same from the final comparison, where the winner was picked (biased upwards).
    j["ratio_to_reference_final"] = fin && ref ? ratio(fin->gflops, ref->gflops) : 0.0;
    j["measured"] = true;
    j["db"] = in.db_shown;
    std::cout << j.dump(2) << "\n";
    return sum.interrupted ? 130 : 0;
  }

  printf("\nSextant tuning summary%s\n", sum.interrupted ? " (interrupted: resume by running the same command)" : "");
  printf("  workload   %s  (%.3f GFLOP per call)\n", w.key().c_str(), w.flops() / 1e9);
  printf("  target     %s  (%s; %s)\n", in.target.key().c_str(), in.device.c_str(), in.cpu.model.c_str());
  printf("  machine    %s\n", in.machine.c_str());
  printf("  run        #%lld: %s, seed %llu, %lld trials, %lld failures, %s%s\n", (long long)sum.run_id,
         a.strategy.c_str(), (unsigned long long)a.seed, (long long)sum.trials, (long long)sum.failures,
         fmtDuration(sum.elapsed_s).c_str(),
         sum.resumed ? (", resumed with " + std::to_string(sum.resumed_records) + " records").c_str() : "");
  if (!sum.strategy_report.empty()) printf("  strategy   %s\n", sum.strategy_report.c_str());
  if (sum.exhausted) printf("             the space (%llu schedules) is fully explored\n", (unsigned long long)in.space_size);
  if (best && fin) {
    if (h2h)
      printf("  best       %.1f GFLOP/s  (measured again head to head with the reference after it won: median of %zu\n"
             "             repetitions over %d rounds, cv %.1f%%; %.1f in the final comparison%s, %.1f when found)\n",
             best_g, h2h_tuned->times_s.size(), a.final_rounds, 100 * h2h_tuned->cv, fin->gflops,
             fin->paired ? " (call by call beside it)" : "", best->gflops);
    else
      printf("  best       %.1f GFLOP/s  (confirmed: median of %zu repetitions over %d interleaved rounds, cv %.1f%%;\n"
             "             %.1f GFLOP/s when found)\n",
             fin->gflops, fin->times_s.size(), a.final_rounds, 100 * fin->cv, best->gflops);
    printf("             record %lld, schedule %lld: %s\n", (long long)best->id, (long long)best->schedule_id,
           best->candidate.c_str());
  } else if (best) {
    printf("  best       %.1f GFLOP/s  (one measurement during the search, median of %zu repetitions, cv %.1f%%;\n"
           "             NOT confirmed: no final comparison ran; record %lld)\n             %s\n",
           best->gflops, best->times_s.size(), 100 * best->cv, (long long)best->id, best->candidate.c_str());
  } else {
    printf("  best       no candidate of this run was measured successfully\n");
  }
  if (def_b) {
    if (def_b->status == "ok")
      printf("  default    %.1f GFLOP/s  untuned default schedule (%s) -> speed-up %.2fx\n", def_b->gflops,
             def_b->detail.c_str(), ratio(fin ? fin->gflops : best_g, def_b->gflops));
    else
      printf("  default    failed: %s\n", def_b->status.c_str());
  }
  if (!sum.final.empty()) {
    printf("  libraries  final comparison, same threads and layout (the fastest is the reference):\n");
    for (const CpuLibrary& lib : in.libraries) {
      const std::string detail = lib.describe(in.threads, in.uses_gemv, in.workload.batched());
      const BaselineRow* b = lib.available ? rowOf(sum, lib, detail) : nullptr;
      if (!lib.available)
        printf("             %-10s not measured: %s\n", lib.name.c_str(), lib.missing.c_str());
      else if (!b)
        printf("             %-10s not measured\n", lib.id().c_str());
      else if (b->status != "ok")
        printf("             %-10s failed (%s): %s\n", lib.id().c_str(), b->status.c_str(), b->message.substr(0, 200).c_str());
      else
        printf("             %7.1f GFLOP/s  %s%s\n", b->gflops, detail.c_str(), b == ref ? "  <- reference" : "");
    }
  }
  if (h2h) {
    const std::vector<double> rr = sum.roundRatios();
    std::string spread;
    if (rr.size() > 1) {
      char buf[64];
      snprintf(buf, sizeof buf, " (%.2f-%.2fx)", *std::min_element(rr.begin(), rr.end()),
               *std::max_element(rr.begin(), rr.end()));
      spread = buf;
    }
    const std::vector<double> pr = sum.pairRatios();
    if (!pr.empty()) {
      std::vector<double> q = pr;
      std::sort(q.begin(), q.end());
      printf("  reference  tuned / %s %.2fx  (head to head after the final comparison, call by call: the\n"
             "             median of %zu back-to-back call pairs' ratios, middle half %.2f-%.2fx, rounds%s;\n"
             "             pooled %.1f vs %.1f GFLOP/s; %.2fx in the final comparison)\n",
             ref_name.substr(0, ref_name.find(" (")).c_str(), reference_ratio, pr.size(), q[q.size() / 4],
             q[q.size() - 1 - q.size() / 4], spread.empty() ? "" : spread.c_str(),
             h2h_tuned->gflops, h2h_ref->gflops, ratio(fin->gflops, ref->gflops));
    } else
      printf("  reference  tuned / %s %.2fx  (head to head after the final comparison: the median of %zu\n"
             "             alternating rounds' ratios%s; pooled %.1f vs %.1f GFLOP/s; %.2fx in the final comparison)\n",
             ref_name.substr(0, ref_name.find(" (")).c_str(), reference_ratio, rr.size(), spread.c_str(),
             h2h_tuned->gflops, h2h_ref->gflops, ratio(fin->gflops, ref->gflops));
  } else if (ref && fin)
    printf("  reference  tuned / %s %.2fx  (final comparison)\n", ref_name.c_str(), ratio(fin->gflops, ref->gflops));
  else if (!sum.final.empty() && !ref)
    printf("  reference  no library could be measured\n");
  if (in.peak.gflops > 0)
    printf("  peak       %.1f GFLOP/s  %s peak of %d thread%s (%s), measured after the run -> tuned %.0f%%%s\n",
           in.peak.gflops,
           in.peak.isa == "amx_bf16"   ? "AMX bf16 (tdpbf16ps)"
           : in.peak.isa == "amx_int8" ? "AMX int8 (tdpbssd; integer ops)"
                                       : "f32 FMA",
           in.peak.threads,
           in.peak.threads == 1 ? "" : "s", in.peak.isa.c_str(),
           100 * ratio(best_g, in.peak.gflops),
           ref ? (", reference " + std::to_string(int(std::lround(100 * ratio(ref_g, in.peak.gflops)))) + "%").c_str() : "");
  if (sum.best && best && sum.best->id != best->id)
    printf("  database   this machine's best for the workload is record %lld (run %lld): %.1f GFLOP/s %s\n",
           (long long)sum.best->id, (long long)sum.best->run_id, sum.best->figure(),
           sum.best->confirmed() ? "confirmed" : "measured once, not confirmed");
  printf("  db         %s  (tune show --db %s; tune best ... --db %s)\n", in.db_shown.c_str(), in.db_shown.c_str(),
         in.db_shown.c_str());
  // What every result was checked against: OpenBLAS, or (a convolution) direct loops in double.
  const char* against = opOf(in.workload).referenceName(in.workload);
  if (a.study > 0)
    printf("All figures are measurements on this machine by this worker of study %lld: medians of repeated\n"
           "calls with the operands flushed from the caches, every result verified against %s (workers\n"
           "run no final comparison).\n",
           (long long)a.study, against);
  else if (sum.final.empty())
    printf("All figures are single measurements on this machine during the search (medians of repeated calls\n"
           "with the operands flushed from the caches, verified against %s); no final comparison ran%s.\n",
           against, sum.interrupted ? " (interrupted)" : "");
  else
    printf("All figures are measurements on this machine in this run: medians of repeated calls with the\n"
           "operands flushed from the caches before each call, every result verified against %s; best,\n"
           "default and the libraries were re-measured side by side in the final comparison%s.\n",
           against, sum.final_paired.empty() ? "" : " (the tuned\ncandidates also call by call beside the fastest library, which picked the winner)");
  return sum.interrupted ? 130 : 0;
}

}  // namespace sextant::cli
