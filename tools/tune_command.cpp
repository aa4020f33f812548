// `tune` (the tuning command itself): checks, evaluator, strategy context, the tuning loop and the summary.
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/suite.h"
#include "sextant/codegen/workload.h"
#include "sextant/common/strings.h"
#include "sextant/costmodel/features.h"
#include "sextant/db/database.h"
#include "sextant/db/interchange.h"
#include "sextant/hwspec/target.h"
#include "sextant/runtime/blas.h"
#include "sextant/runtime/cpu_runner.h"
#include "sextant/runtime/fma_peak.h"
#include "sextant/runtime/isolation.h"
#include "sextant/search/evaluator.h"
#include "sextant/search/strategy.h"
#include "sextant/search/transfer.h"
#include "sextant/search/tuner.h"
#include "commands.h"
#include "tune_internal.h"

using json = nlohmann::json;

namespace sextant::cli {

int64_t availableMemory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return int64_t(8) << 30;
}

namespace {
class ProgressLine {
 public:
  explicit ProgressLine(bool quiet) : quiet_(quiet), tty_(isatty(2)) {}
  void update(const TuneProgress& p) {
    if (quiet_) return;
    std::string line;
    if (p.phase == "final") {
      line = "final comparison: best candidates, untuned default and OpenBLAS, interleaved...";
    } else {
      line = "[" + std::to_string(p.done) + "/" + std::to_string(p.total) + "] failures " +
             std::to_string(p.failures) + " | best " + fmt("%.1f", p.best_gflops) + " GFLOP/s | elapsed " +
             fmtDuration(p.elapsed_s) + " | ETA " + (p.done > 0 ? fmtDuration(p.eta_s) : "?");
    }
    if (tty_) {
      fprintf(stderr, "\r\033[K%s", line.c_str());
    } else if (p.phase != last_phase_ || p.done % 10 == 0 || p.done == p.total) {
      fprintf(stderr, "%s\n", line.c_str());
    }
    last_phase_ = p.phase;
    fflush(stderr);
  }
  void end() {
    if (!quiet_ && tty_) fprintf(stderr, "\n");
  }

 private:
  bool quiet_, tty_;
  std::string last_phase_;
};

}  // namespace

int cmdTune(const TuneArgs& a, const std::string& argv_json) {
  if (a.trials <= 0) return fail("--trials must be at least 1 (got " + std::to_string(a.trials) + ")");
  if (a.final_rounds < 0 || a.final_top_k < 0) return fail("--final-rounds and --final-top must not be negative");
  if (a.min_time < 0 || a.timeout < 0) return fail("--min-time and --timeout must not be negative");
  if (a.batch <= 0) return fail("--batch must be at least 1");
  if (a.time_budget < 0) return fail("--time-budget must not be negative");
  if (a.report != "text" && a.report != "json") return fail("--report must be text or json");
  auto w = makeWorkload(a.w);
  if (!w) return fail(w.error());
  auto target = resolveTarget(a.w.target);
  if (!target) return fail(target.error());
  if (target->isGpu()) {
    if (!a.schedule_file.empty()) return fail("--schedule is for the cpu target in this version");
    if (a.threads != 1) return fail("--threads is for the cpu target (GPU kernels run on the device)");
    if (a.pretrained != "default" && a.pretrained != "none")
      return fail("--pretrained models are for the cpu target in this version (GPU tuning starts cold)");
    cli::GpuTuneArgs g;
    g.shape = a.w.shape.empty() ? kDefaultShape : a.w.shape, g.dtype = a.w.dtype, g.layout = a.w.layout, g.target = a.w.target, g.db = a.w.db;
    g.measure = a.measure, g.out = a.out, g.strategy = a.strategy, g.seed = a.seed, g.trials = a.trials;
    g.time_budget = a.time_budget, g.batch = a.batch, g.jobs = a.jobs, g.fresh = a.fresh, g.quiet = a.quiet;
    g.report = a.report, g.timeout = a.timeout > 0 ? a.timeout : 10.0, g.args_json = argv_json;
    g.min_time = a.min_time;
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    return cli::cmdTuneGpu(g, g_stop);
  }
  if (a.measure != "device") return fail("--measure " + a.measure + " is for GPU targets; the cpu target is measured here");
  const int threads = a.threads == 0 ? hostCpu().logical_cores : a.threads;
  if (threads < 1 || threads > hostCpu().logical_cores)
    return fail("--threads " + std::to_string(a.threads) + ": this machine has " + std::to_string(hostCpu().logical_cores) +
                " logical cores (measurements use all the threads asked for, with nothing else running)");
  target->arch = cpuArchWithThreads(target->arch, threads);
  if (!a.out.empty()) return fail("--out is for --measure bundle on GPU targets");
  if (w->a_type != DType::F32) return fail("the cpu target tunes f32 GEMM only (got --dtype " + a.w.dtype + ")");
  if (auto s = validateForMemory(*w, availableMemory()); !s) return fail(s.error());
  {
    auto names = strategyNames();
    if (std::find(names.begin(), names.end(), a.strategy) == names.end())
      return fail("unknown strategy '" + a.strategy + "' (known: " + join(names, ", ") + ")");
  }

  std::string schedule_text;
  std::map<std::string, int64_t> schedule_knobs;
  if (!a.schedule_file.empty()) {
    std::ifstream f(a.schedule_file);
    if (!f) return fail(a.schedule_file + ": cannot read the schedule file");
    std::stringstream ss;
    ss << f.rdbuf();
    schedule_text = ss.str();
    auto knobs = readScheduleKnobs(schedule_text);
    if (!knobs) {
      std::string msg = knobs.error();
      std::replace(msg.begin(), msg.end(), '\n', ' ');
      return fail(a.schedule_file + ": " + msg);
    }
    schedule_knobs = *knobs;
  }

  auto db = Database::open(a.w.db);
  if (!db) return fail(db.error());

  const HostCpu& cpu = hostCpu();
  const std::string device = llvmHostCpuName();
  if (auto s = registerWorkloadAndTarget(*db, *w, *target, device, cpu.vector_isa); !s) return fail(s.error());
  Space space = buildCpuGemmSpace(*w, cpu, threads);
  if (space.size() == 0) return fail("the schedule space for " + w->key() + " is empty");

  auto problem = GemmProblem::create(*w);
  if (!problem) return fail(problem.error());

  MeasureOptions mo;
  mo.min_time_s = a.min_time;
  mo.timeout_s = a.timeout > 0 ? a.timeout : 30.0;
  mo.blas_threads = threads;
  CpuEvaluatorOptions eo;
  eo.measure = mo;
  eo.jobs = a.jobs;
  CpuEvaluator evaluator(*w, space, *problem, eo);

  TuneContext ctx{*db, *w, *target, space, evaluator, device, cpu.model, llvmVersion()};
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);

  // --schedule FILE: measure one given schedule and record it.
  if (!schedule_text.empty()) {
    auto cand = space.fromMap(schedule_knobs);
    std::string key = cand && space.isValid(*cand) ? space.keyOf(*cand)
                                                   : "custom:" + a.schedule_file;
    if (!a.quiet) std::cerr << "compiling and measuring " << a.schedule_file << "...\n";
    Evaluation e = evaluator.evaluateSchedule(schedule_text);
    RunRow run;
    run.workload_key = w->key();
    run.target_key = target->key();
    run.strategy = "schedule-file";
    run.seed = 0;
    run.space = space.name();
    run.space_fingerprint = space.fingerprint();
    run.trials_requested = 1;
    run.args = argv_json;
    run.tool_version = SEXTANT_VERSION;
    run.llvm_version = llvmVersion();
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    run.host = host;
    auto run_id = db->beginRun(run);
    if (!run_id) return fail(run_id.error());
    RecordRow r = recordOf(ctx, *run_id, key, json(schedule_knobs).dump(), e);
    if (auto s = db->insertRecords({r}); !s) return fail(s.error());
    db->finishRun(*run_id, "finished");
    if (a.report == "json") {
      std::cout << json{{"workload", w->key()}, {"target", target->key()}, {"schedule", a.schedule_file},
                        {"status", e.status}, {"message", e.message}, {"gflops", e.measurement.gflops},
                        {"median_s", e.measurement.median_s}, {"cv", e.measurement.cv},
                        {"compile_s", e.compile_s}, {"db", a.w.db}}
                       .dump(2)
                << "\n";
    } else if (e.status == "ok") {
      printf("%s: %.2f GFLOP/s measured (median of %zu repetitions, cv %.1f%%), compiled in %.2f s; recorded in %s\n",
             a.schedule_file.c_str(), e.measurement.gflops, e.measurement.times_s.size(), 100 * e.measurement.cv,
             e.compile_s, a.w.db.c_str());
    } else {
      std::string msg = e.message;
      std::replace(msg.begin(), msg.end(), '\n', ' ');
      fprintf(stderr, "tune: %s: %s: %s\n", a.schedule_file.c_str(), e.status.c_str(), msg.substr(0, 600).c_str());
    }
    return e.status == "ok" ? 0 : 1;
  }

  Candidate def = defaultCpuCandidate(space);
  std::vector<Contender> references = {
      {"default", space.keyOf(def), 0, evaluator.measurer(emitCpuGemmSchedule(*w, space, def))},
      {"openblas", problem->referenceName(threads), 0, [&] { return measureOpenBlas(*problem, mo); }},
  };
  ConfirmFactory confirm = [&](const RecordRow& r) {
    return Contender{"tuned", r.candidate, r.id, evaluator.measurer(r.schedule)};
  };

  TuneOptions o;
  if (a.study > 0) {  // one worker of a study (tune worker)
    o.study_id = a.study, o.worker = a.worker_name, o.db_path = a.w.db;
    o.lease_s = a.lease, o.heartbeat_s = a.heartbeat;
  }
  o.strategy = a.strategy;
  o.seed = a.seed;
  o.trials = a.trials;
  o.time_budget_s = a.time_budget;
  o.batch = a.batch;
  o.resume = !a.fresh;
  o.args_json = argv_json;
  o.final_rounds = a.final_rounds;
  o.final_top_k = a.final_top_k;
  // The default is one of the trials (tuned >= default).
  if (a.study == 0) o.first_candidate = def;
  o.strategy_context.num_features = int(cpuGemmFeatureNames().size());
  o.strategy_context.feature_version = kCpuFeatureVersion;
  // The features describe this CPU as the pretrained model's records describe theirs (the table
  // for known machine kinds, else this machine's own description).
  const HostCpu feature_cpu = cpuOfRecords(device, device, cpu);
  o.strategy_context.features = [&, feature_cpu](const Candidate& c) {
    return cpuGemmFeatures(*w, space, c, feature_cpu);
  };
  {
    std::string warning;
    auto pre = cli::resolvePretrained(a.pretrained, &warning);
    if (!pre) return fail(pre.error());
    o.strategy_context.pretrained_path = *pre;
    if (!warning.empty() && !a.quiet) fprintf(stderr, "tune: warning: %s\n", warning.c_str());
  }
  o.strategy_context.model_path = costModelPath(a.w.db, target->key(), w->key());
  if (a.strategy == "glimpse") {
    // The prior: other workloads' records on this CPU (weight 1) and on other CPUs (0.5).
    auto all = db->allRecords(false);
    if (!all) return fail(all.error());
    const std::string tk = target->key();
    o.strategy_context.prior = priorFromRecords(*all, w->key(), tk, [&](const std::string& k) {
      return k == tk ? 1.0 : k.rfind("cpu:", 0) == 0 ? 0.5 : 0.0;
    });
    // And the prior shipped beside the pretrained model (its training records), so that a fresh
    // database has one too.
    const std::string& pre = o.strategy_context.pretrained_path;
    if (!pre.empty() && std::filesystem::exists(priorPathOf(pre))) {
      auto shipped = loadPrior(priorPathOf(pre), device);
      if (!shipped) return fail(shipped.error());
      o.strategy_context.prior.insert(o.strategy_context.prior.end(), shipped->begin(), shipped->end());
    }
  }
  ProgressLine progress(a.quiet);
  if (!a.quiet)
    fprintf(stderr, "tuning %s on %s (%s, %s): space of %llu schedules, %lld trials, strategy %s, seed %llu\n",
            w->key().c_str(), target->key().c_str(), device.c_str(), cpu.model.c_str(),
            (unsigned long long)space.size(), (long long)a.trials, a.strategy.c_str(), (unsigned long long)a.seed);
  auto sum = tune(ctx, o, references, confirm, g_stop, [&](const TuneProgress& p) { progress.update(p); });
  progress.end();
  if (!sum) return fail(sum.error());

  const BaselineRow* def_b = sum->finalOf("default");
  const BaselineRow* blas_b = sum->finalOf("openblas");
  const BaselineRow* fin = sum->finalBestTuned();
  // The reported best is the confirmed one: its record, with the pooled final-comparison figures.
  const std::optional<RecordRow>& best = sum->best_confirmed ? sum->best_confirmed : sum->best_this_run;
  double best_g = fin ? fin->gflops : (best ? best->gflops : 0);
  auto ratio = [](double a, double b) { return b > 0 && a > 0 ? a / b : 0.0; };
  // The FMA peak of as many threads, measured right after the final comparison (about a second;
  // not for workers, which run none, nor after Ctrl-C): the summary gives the tuned kernel's and
  // the reference's share of it.
  FmaPeak peak;
  if (a.study == 0 && !sum->interrupted && best_g > 0) peak = measureFmaPeak(threads, 0.15, 3);
  const bool ref_ok = blas_b && blas_b->status == "ok";
  auto finalJson = [](const BaselineRow* b) {
    return b ? json{{"gflops", b->gflops}, {"median_s", b->median_s}, {"cv", b->cv}, {"repetitions", b->times_s.size()},
                    {"status", b->status}}
             : json(nullptr);
  };

  if (a.report == "json") {
    json j;
    j["workload"] = w->key();
    j["target"] = target->key();
    j["threads"] = threads;
    j["device"] = device;
    j["cpu_model"] = cpu.model;
    j["run_id"] = sum->run_id;
    j["resumed"] = sum->resumed;
    j["trials"] = sum->trials;
    j["failures"] = sum->failures;
    j["rejected"] = sum->rejected;
    j["not_measured"] = sum->not_measured;
    j["interrupted"] = sum->interrupted;
    j["space_exhausted"] = sum->exhausted;
    j["space_size"] = space.size();
    j["strategy"] = a.strategy;
    if (!sum->strategy_report.empty()) j["strategy_report"] = sum->strategy_report;
    j["seed"] = a.seed;
    j["elapsed_s"] = sum->elapsed_s;
    j["best"] = best ? recordJson(*best) : json(nullptr);
    if (best && fin) {
      j["best"]["search_gflops"] = best->gflops;  // its measurement during the search
      j["best"]["gflops"] = fin->gflops;          // pooled final-comparison measurement
      j["best"]["median_s"] = fin->median_s;
      j["best"]["cv"] = fin->cv;
      j["best"]["repetitions"] = fin->times_s.size();
    }
    j["final_rounds"] = a.final_rounds;
    j["best_in_db"] = sum->best ? recordJson(*sum->best) : json(nullptr);
    j["default"] = finalJson(def_b);
    if (def_b) j["default"]["knobs"] = def_b->detail;
    j["reference"] = finalJson(blas_b);
    if (blas_b) j["reference"]["name"] = blas_b->detail;
    if (peak.gflops > 0) {
      j["fma_peak"] = {{"gflops", peak.gflops}, {"isa", peak.isa}, {"threads", peak.threads}, {"measured", true}};
      if (j["best"].is_object()) j["best"]["share_of_fma_peak"] = ratio(best_g, peak.gflops);
      if (ref_ok) j["reference"]["share_of_fma_peak"] = ratio(blas_b->gflops, peak.gflops);
    }
    j["speedup_over_default"] = def_b ? ratio(best_g, def_b->gflops) : 0.0;
    j["ratio_to_reference"] = blas_b ? ratio(best_g, blas_b->gflops) : 0.0;
    j["measured"] = true;
    j["db"] = a.w.db;
    std::cout << j.dump(2) << "\n";
    return sum->interrupted ? 130 : 0;
  }

  printf("\nSextant tuning summary%s\n", sum->interrupted ? " (interrupted: resume by running the same command)" : "");
  printf("  workload   %s  (%.3f GFLOP per call)\n", w->key().c_str(), w->flops() / 1e9);
  printf("  target     %s  (%s; %s)\n", target->key().c_str(), device.c_str(), cpu.model.c_str());
  printf("  run        #%lld: %s, seed %llu, %lld trials, %lld failures%s, %s%s\n", (long long)sum->run_id,
         a.strategy.c_str(), (unsigned long long)a.seed, (long long)sum->trials, (long long)sum->failures,
         (sum->rejected || sum->not_measured ? ", " + std::to_string(sum->rejected) + " rejected, " +
                                                   std::to_string(sum->not_measured) + " not measured"
                                             : std::string())
             .c_str(),
         fmtDuration(sum->elapsed_s).c_str(),
         sum->resumed ? (", resumed with " + std::to_string(sum->resumed_records) + " records").c_str() : "");
  if (!sum->strategy_report.empty()) printf("  strategy   %s\n", sum->strategy_report.c_str());
  if (sum->exhausted) printf("             the space (%llu schedules) is fully explored\n", (unsigned long long)space.size());
  if (best && fin) {
    printf("  best       %.1f GFLOP/s  (confirmed: median of %zu repetitions over %d interleaved rounds, cv %.1f%%;\n"
           "             %.1f GFLOP/s when found; record %lld, schedule %lld)\n",
           fin->gflops, fin->times_s.size(), a.final_rounds, 100 * fin->cv, best->gflops, (long long)best->id,
           (long long)best->schedule_id);
    printf("             %s\n", best->candidate.c_str());
  } else if (best) {
    printf("  best       %.1f GFLOP/s  (median of %zu repetitions, cv %.1f%%; record %lld, schedule %lld; not confirmed)\n",
           best->gflops, best->times_s.size(), 100 * best->cv, (long long)best->id, (long long)best->schedule_id);
    printf("             %s\n", best->candidate.c_str());
  } else {
    printf("  best       no candidate of this run was measured successfully\n");
  }
  if (def_b) {
    if (def_b->status == "ok")
      printf("  default    %.1f GFLOP/s  untuned default schedule (%s) -> speed-up %.2fx\n", def_b->gflops,
             def_b->detail.c_str(), ratio(best_g, def_b->gflops));
    else
      printf("  default    failed: %s\n", def_b->status.c_str());
  }
  if (blas_b) {
    if (blas_b->status == "ok")
      printf("  reference  %.1f GFLOP/s  %s -> tuned / reference %.2fx\n", blas_b->gflops, blas_b->detail.c_str(),
             ratio(best_g, blas_b->gflops));
    else
      printf("  reference  failed: %s\n", blas_b->status.c_str());
  }
  if (peak.gflops > 0)
    printf("  peak       %.1f GFLOP/s  f32 FMA peak of %d thread%s (%s), measured after the run -> tuned %.0f%%%s\n",
           peak.gflops, peak.threads, peak.threads == 1 ? "" : "s", peak.isa.c_str(), 100 * ratio(best_g, peak.gflops),
           ref_ok ? (", reference " + std::to_string(int(std::lround(100 * ratio(blas_b->gflops, peak.gflops)))) + "%").c_str()
                  : "");
  if (sum->best && best && sum->best->id != best->id)
    printf("  database   highest single search-time measurement for this workload: %.1f GFLOP/s (record %lld, run "
           "%lld);\n             the best above is the one that held up in the final comparison\n",
           sum->best->gflops, (long long)sum->best->id, (long long)sum->best->run_id);
  printf("  db         %s  (tune show --db %s; tune best ... --db %s)\n", a.w.db.c_str(), a.w.db.c_str(),
         a.w.db.c_str());
  if (a.study > 0)
    printf("All figures are measurements on this machine by this worker of study %lld: medians of repeated\n"
           "calls with the operands flushed from the caches, every result verified against OpenBLAS (workers\n"
           "run no final comparison).\n",
           (long long)a.study);
  else
    printf("All figures are measurements on this machine in this run: medians of repeated calls with the\n"
           "operands flushed from the caches before each call, every result verified against OpenBLAS; best,\n"
           "default and reference were re-measured side by side in the final comparison.\n");
  return sum->interrupted ? 130 : 0;
}

// tune --suite FILE: every workload of a suite in turn (the other options apply to each).
}  // namespace sextant::cli
