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
#include "sextant/runtime/libraries.h"
#include "sextant/search/evaluator.h"
#include "sextant/search/strategy.h"
#include "sextant/search/transfer.h"
#include "sextant/search/tuner.h"
#include "commands.h"
#include "tune_internal.h"
#include "tune_summary.h"

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
      line = "final comparison: best candidates, untuned default and the reference libraries, interleaved...";
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

Status cpuStrategyContext(StrategyContext& sc, Database& db, const std::string& db_path, const GemmWorkload& w,
                          const Space& space, const Target& target, const std::string& strategy,
                          const std::string& pretrained, const std::string& device, const HostCpu& cpu,
                          const std::string& machine, bool quiet) {
  sc.num_features = int(cpuGemmFeatureNames().size());
  sc.feature_version = kCpuFeatureVersion;
  // The features describe this CPU as the pretrained model's records describe theirs (the table
  // for known machine kinds, else this machine's own description).
  const HostCpu feature_cpu = cpuOfRecords(device, device, cpu);
  sc.features = [&, feature_cpu](const Candidate& c) {
    return cpuGemmFeatures(w, space, c, feature_cpu);
  };
  {
    std::string warning;
    auto pre = cli::resolvePretrained(pretrained, &warning);
    if (!pre) return Error{pre.error()};
    sc.pretrained_path = *pre;
    if (!warning.empty() && !quiet) fprintf(stderr, "tune: warning: %s\n", warning.c_str());
  }
  sc.model_path = costModelPath(db_path, target.key(), w.key());
  if (strategy == "glimpse") {
    // The prior: other workloads' records on this CPU (weight 1) and on other CPUs (0.5).
    auto all = db.allRecords(false);
    if (!all) return Error{all.error()};
    const std::string tk = target.key();
    sc.prior = priorFromRecords(*all, w.key(), tk, machine, [&](const std::string& k) {
      return k == tk ? 1.0 : k.rfind("cpu:", 0) == 0 ? 0.5 : 0.0;
    });
    // And the prior shipped beside the pretrained model (its training records), so that a fresh
    // database has one too.
    const std::string& pre = sc.pretrained_path;
    if (!pre.empty() && std::filesystem::exists(priorPathOf(pre))) {
      auto shipped = loadPrior(priorPathOf(pre), device);
      if (!shipped) return Error{shipped.error()};
      sc.prior.insert(sc.prior.end(), shipped->begin(), shipped->end());
    }
  }
  return okStatus();
}

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
    if (!a.knobs.empty() || a.print_space) return fail("--knobs and --print-space are for the cpu target in this version");
    if (a.threads != 1) return fail("--threads is for the cpu target (GPU kernels run on the device)");
    if (a.pretrained != "default" && a.pretrained != "none")
      return fail("--pretrained models are for the cpu target in this version (GPU tuning starts cold)");
    cli::GpuTuneArgs g;
    g.op = a.w.op, g.shape = w->shapeString(), g.dtype = a.w.dtype, g.layout = a.w.layout, g.target = a.w.target, g.db = a.w.db;
    g.measure = a.measure, g.out = a.out, g.strategy = a.strategy, g.seed = a.seed, g.trials = a.trials;
    g.time_budget = a.time_budget, g.batch = a.batch, g.jobs = a.jobs, g.fresh = a.fresh, g.quiet = a.quiet;
    g.report = a.report, g.timeout = a.timeout > 0 ? a.timeout : 10.0, g.args_json = argv_json;
    g.min_time = a.min_time;
    g.vulkan_device = a.vulkan_device;
    g.study = a.study, g.worker_name = a.worker_name, g.lease = a.lease, g.heartbeat = a.heartbeat;
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    return cli::cmdTuneGpu(g, g_stop);
  }
  if (a.measure != "device") return fail("--measure " + a.measure + " is for GPU targets; the cpu target is measured here");
  if (!a.vulkan_device.empty()) return fail("--vulkan-device is for the vulkan target");
  // bf16 (issue #37): the AMX route.
  const bool amx = w->a_type == DType::BF16 || w->a_type == DType::S8;
  const int threads = a.threads == 0 ? hostCpu().logical_cores : a.threads;
  if (threads < 1 || threads > hostCpu().logical_cores)
    return fail("--threads " + std::to_string(a.threads) + ": this machine has " + std::to_string(hostCpu().logical_cores) +
                " logical cores (measurements use all the threads asked for, with nothing else running)");
  target->arch = cpuArchWithThreads(target->arch, threads);
  if (!a.out.empty()) return fail("--out is for --measure bundle on GPU targets");
  if (!a.versus.empty() && a.schedule_file.empty() && a.knobs.empty())
    return fail("--versus goes with --schedule or --knobs");
  if (!a.versus.empty() && threads != 1) return fail("--versus measures call by call on one thread only (--threads 1)");
  if (auto why = cpuWorkloadUnsupported(*w, hostCpu()); !why.empty()) return fail(why);
  if (amx)
    if (auto s = requestAmxPermission(); !s) return fail(s.error());
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

  const HostCpu& cpu = hostCpu();
  Space space = buildCpuGemmSpace(*w, cpu, threads);
  if (space.size() == 0) return fail("the schedule space for " + w->key() + " is empty");
  if (a.print_space) {
    json knobs = json::array();
    for (const auto& k : space.knobs()) knobs.push_back({{"name", k.name}, {"values", k.values}, {"doc", k.doc}});
    json cons = json::array();
    for (const auto& c : space.constraints()) cons.push_back(c.name);
    std::cout << json{{"workload", w->key()}, {"space", space.name()}, {"fingerprint", space.fingerprint()},
                      {"valid_points", space.size()}, {"knobs", knobs}, {"constraints", cons}}
                     .dump(2)
              << "\n";
    return 0;
  }
  auto db = Database::open(a.w.db);
  if (!db) return fail(db.error());

  const std::string device = llvmHostCpuName();
  if (auto s = registerWorkloadAndTarget(*db, *w, *target, device, cpu.vector_isa); !s) return fail(s.error());
  std::string schedule_label = a.schedule_file;
  if (!a.knobs.empty()) {
    // A knob assignment measured exactly as a candidate of a run: the schedule the tuner would emit.
    if (!schedule_text.empty()) return fail("--knobs and --schedule are exclusive");
    auto cand = space.fromKey(a.knobs);
    if (!cand) return fail("--knobs: " + cand.error());
    if (auto v = space.violations(*cand); !v.empty())
      return fail("--knobs: not in the space of " + w->key() + ": violates " + join(v, "; "));
    schedule_text = emitCpuGemmSchedule(*w, space, *cand);
    schedule_knobs = space.knobMap(*cand);
    schedule_label = "knobs " + space.keyOf(*cand);
  }

  auto problem = GemmProblem::create(*w);
  if (!problem) return fail(problem.error());
  std::optional<CpuLibrary> versus_lib;
  if (!a.versus.empty()) {
    auto lib = versusLibrary(*w, a.versus);
    if (!lib) return fail("--versus: " + lib.error());
    versus_lib = *lib;
  }

  MeasureOptions mo;
  mo.min_time_s = a.min_time;
  mo.timeout_s = a.timeout > 0 ? a.timeout : 30.0;
  mo.blas_threads = threads;
  CpuEvaluatorOptions eo;
  eo.measure = mo;
  eo.jobs = a.jobs;
  CpuEvaluator evaluator(*w, space, *problem, eo);

  const std::string machine = thisMachine();
  TuneContext ctx{*db, *w, *target, space, evaluator, device, cpu.model, llvmVersion(), machine};
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);

  // --schedule FILE: measure one given schedule and record it.
  if (!schedule_text.empty()) {
    auto cand = space.fromMap(schedule_knobs);
    std::string key = cand && space.isValid(*cand) ? space.keyOf(*cand)
                                                   : "custom:" + schedule_label;
    if (!a.quiet) std::cerr << "compiling and measuring " << schedule_label << "...\n";
    Evaluation e = evaluator.evaluateSchedule(schedule_text);
    std::optional<Versus> vs;
    if (e.status == "ok" && versus_lib) {
      if (!a.quiet) std::cerr << "measuring it call by call against " << versus_lib->id() << "...\n";
      auto v = measureVersus(*problem, *versus_lib, evaluator.sharedObject(schedule_text)(), mo, a.final_rounds);
      if (!v) return fail("--versus " + a.versus + ": " + v.error());
      vs = *v;
    }
    RunRow run;
    run.workload_key = w->key();
    run.target_key = target->key();
    run.strategy = a.knobs.empty() ? "schedule-file" : "knobs";
    run.seed = 0;
    run.space = space.name();
    run.space_fingerprint = space.fingerprint();
    run.trials_requested = 1;
    run.args = argv_json;
    run.tool_version = SEXTANT_VERSION;
    run.llvm_version = llvmVersion();
    run.host = hostName();
    run.machine = machine;
    auto run_id = db->beginRun(run);
    if (!run_id) return fail(run_id.error());
    RecordRow r = recordOf(ctx, *run_id, key, json(schedule_knobs).dump(), e);
    if (auto s = db->insertRecords({r}); !s) return fail(s.error());
    db->finishRun(*run_id, "finished");
    if (a.report == "json") {
      std::cout << json{{"workload", w->key()}, {"target", target->key()}, {"schedule", schedule_label},
                        {"status", e.status}, {"message", e.message}, {"gflops", e.measurement.gflops},
                        {"median_s", e.measurement.median_s}, {"cv", e.measurement.cv},
                        {"compile_s", e.compile_s}, {"machine", machine}, {"db", db->path()},
                        {"versus", vs ? versusJson(*vs) : json(nullptr)}}
                       .dump(2)
                << "\n";
    } else if (e.status == "ok") {
      printf("%s: %.2f GFLOP/s measured (median of %zu repetitions, cv %.1f%%), compiled in %.2f s; recorded in %s\n",
             schedule_label.c_str(), e.measurement.gflops, e.measurement.times_s.size(), 100 * e.measurement.cv,
             e.compile_s, db->path().c_str());
      if (vs) printVersus(*vs);
    } else {
      std::string msg = e.message;
      std::replace(msg.begin(), msg.end(), '\n', ' ');
      fprintf(stderr, "tune: %s: %s: %s\n", schedule_label.c_str(), e.status.c_str(), msg.substr(0, 600).c_str());
    }
    return e.status == "ok" ? 0 : 1;
  }

  Candidate def = defaultCpuCandidate(space, *w);
  std::vector<Contender> references = {
      {"default", space.keyOf(def), 0, evaluator.measurer(emitCpuGemmSchedule(*w, space, def)), false},
  };
  // The reference libraries (issue #35): OpenBLAS, oneDNN and BLIS, each at its best, measured
  // interleaved with the tuned candidates; the fastest of them is the reference.
  int libraries = 0;
  for (const CpuLibrary& lib : cpuLibrariesFor(*w)) {
    if (!lib.available) continue;
    ++libraries;
    Contender c{lib.name, lib.describe(threads, problem->usesGemv(), w->batched()), 0,
                [&, lib] { return measureLibrary(*problem, lib, mo); }, true};
    // On one thread the head-to-head measures the winner and the library call by call in one
    // process (the candidate's OpenMP runtime and the libraries' would contend on more).
    if (threads == 1)
      c.measure_paired = [&, lib](const std::string& so) { return measureLibraryPaired(*problem, lib, so, mo); };
    references.push_back(std::move(c));
  }
  if (libraries == 0 && !w->isConv())  // no sextant-libref: OpenBLAS in a forked child, as before it
    references.push_back({"openblas", problem->referenceName(threads), 0, [&] { return measureOpenBlas(*problem, mo); },
                          true});
  ConfirmFactory confirm = [&](const RecordRow& r) {
    Contender c{"tuned", r.candidate, r.id, evaluator.measurer(r.schedule)};
    c.shared_object = evaluator.sharedObject(r.schedule);
    return c;
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
  if (a.study == 0) o.first_candidate = def, o.seeds = cpuSeedCandidates(space, *w);  // then other starting points
  if (auto s = cpuStrategyContext(o.strategy_context, *db, a.w.db, *w, space, *target, a.strategy, a.pretrained, device,
                                  cpu, machine, a.quiet);
      !s)
    return fail(s.error());
  ProgressLine progress(a.quiet);
  if (!a.quiet)
    fprintf(stderr, "tuning %s on %s (%s, %s): space of %llu schedules, %lld trials, strategy %s, seed %llu\n",
            w->key().c_str(), target->key().c_str(), device.c_str(), cpu.model.c_str(),
            (unsigned long long)space.size(), (long long)a.trials, a.strategy.c_str(), (unsigned long long)a.seed);
  auto sum = tune(ctx, o, references, confirm, g_stop, [&](const TuneProgress& p) { progress.update(p); });
  progress.end();
  if (!sum) return fail(sum.error());

  // The FMA peak of as many threads, measured right after the final comparison (about a second;
  // not for workers, which run none, nor after Ctrl-C): the summary gives the tuned kernel's and
  // the reference's share of it.
  TuneReport rep(a, *w, *target, cpu);
  rep.device = device, rep.machine = machine, rep.db_shown = db->path();
  rep.threads = threads;
  rep.space_size = space.size();
  rep.sum = &*sum;
  rep.libraries = cpuLibrariesFor(*w);
  rep.uses_gemv = problem->usesGemv();
  if (a.study == 0 && !sum->interrupted && (sum->best_confirmed || sum->best_this_run))
    rep.peak = amx ? measureAmxPeak(w->a_type == DType::S8, threads, 0.15, 3) : measureFmaPeak(threads, 0.15, 3);
  return reportTune(rep);
}

// tune --suite FILE: every workload of a suite in turn (the other options apply to each).
}  // namespace sextant::cli
