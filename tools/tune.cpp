// `tune`: the Sextant command line. See `tune --help` and the README.
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
#include "sextant/runtime/isolation.h"
#include "sextant/search/evaluator.h"
#include "sextant/search/strategy.h"
#include "sextant/search/tuner.h"
#include "commands.h"

using namespace sextant;
using json = nlohmann::json;

namespace {

constexpr const char* kDefaultShape = "512x512x512";
constexpr int64_t kDefaultTrials = 200;

std::atomic<bool> g_stop{false};
std::atomic<int> g_signals{0};

void onSignal(int) {
  g_stop.store(true);
  requestStop();  // the compile or measurement in flight is killed; committed batches are kept
  if (g_signals.fetch_add(1) >= 1) {
    // Second Ctrl-C: stop now. Everything committed so far is safe in the database.
    killAllChildren();
    const char msg[] = "\nsextant: stopped (second interrupt); committed records are kept\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(130);
  }
  const char msg[] = "\nsextant: interrupt: finishing the current candidate, then saving (Ctrl-C again to stop now)\n";
  (void)!write(2, msg, sizeof msg - 1);
}

using cli::fail;

int64_t availableMemory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return int64_t(8) << 30;
}

std::string fmtDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  int64_t t = int64_t(s + 0.5);
  char buf[32];
  if (t >= 3600) snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(t / 3600), (long long)(t % 3600 / 60));
  else if (t >= 60) snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(t / 60), (long long)(t % 60));
  else snprintf(buf, sizeof buf, "%llds", (long long)t);
  return buf;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, f, v);
  return buf;
}

struct WorkloadArgs {
  std::string op = "gemm", shape, dtype = "f32", layout = "NN", target = "cpu", db = "sextant.db";
};

Result<GemmWorkload> makeWorkload(const WorkloadArgs& a) {
  if (a.op != "gemm") return Error{"unknown op '" + a.op + "' (known: gemm)"};
  return makeGemmWorkload(a.shape.empty() ? kDefaultShape : a.shape, a.dtype, a.layout);
}

void addWorkloadOptions(CLI::App* app, WorkloadArgs& a, bool with_db_default) {
  app->add_option("--op", a.op, "operation to tune (gemm)")->capture_default_str();
  app->add_option("--shape", a.shape,
                  std::string("GEMM sizes MxNxK (default: ") + kDefaultShape + ", tuned in about 2-3 minutes)");
  app->add_option("--dtype", a.dtype, "input element type: f32 (CPU); f16, bf16 for GPU targets")
      ->capture_default_str();
  app->add_option("--layout", a.layout, "storage of A and B: NN, NT (B transposed), TN (A transposed)")
      ->capture_default_str();
  app->add_option("--target", a.target, "where to tune: " + join(knownTargetNames(), ", "))->capture_default_str();
  auto* db = app->add_option("--db", a.db, "schedule database (SQLite file)");
  if (with_db_default) db->capture_default_str();
}

json recordJson(const RecordRow& r) {
  return json{{"record_id", r.id},
              {"run_id", r.run_id},
              {"schedule_id", r.schedule_id},
              {"gflops", r.gflops},
              {"median_s", r.median_s},
              {"cv", r.cv},
              {"repetitions", r.times_s.size()},
              {"knobs", json::parse(r.knobs, nullptr, false)},
              {"compile_s", r.compile_s}};
}

// ---------------------------------------------------------------------------------------------
// tune show
int cmdShow(const std::string& db_path) {
  auto db = Database::open(db_path, /*create=*/false);
  if (!db) return fail(db.error());
  auto runs = db->runs();
  if (!runs) return fail(runs.error());
  if (runs->empty()) {
    std::cout << db_path << ": no tuning runs yet\n";
    return 0;
  }
  printf("%-5s %-36s %-20s %-11s %-12s %9s %9s %10s %10s\n", "run", "workload", "target", "strategy", "status",
         "records", "failures", "unmeasured", "best GF/s");
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& r : *runs) {
    printf("%-5lld %-36s %-20s %-11s %-12s %9lld %9lld %10lld %10.1f\n", (long long)r.id, r.workload_key.c_str(),
           r.target_key.c_str(), (r.strategy + ":" + std::to_string(r.seed)).c_str(), r.status.c_str(),
           (long long)r.records, (long long)(r.records - r.ok_records - r.unmeasured), (long long)r.unmeasured,
           r.best_gflops);
    std::pair<std::string, std::string> p{r.workload_key, r.target_key};
    if (std::find(pairs.begin(), pairs.end(), p) == pairs.end()) pairs.push_back(p);
  }
  printf("\nBest measured schedule per workload and target:\n");
  for (const auto& [w, t] : pairs) {
    auto best = db->best(w, t);
    if (!best) return fail(best.error());
    if (!*best) {
      printf("  %s on %s: no successful measurement\n", w.c_str(), t.c_str());
      continue;
    }
    const RecordRow& b = **best;
    printf("  %s on %s: %.1f GFLOP/s (record %lld, run %lld, cv %.1f%%)\n    %s\n", w.c_str(), t.c_str(), b.gflops,
           (long long)b.id, (long long)b.run_id, 100 * b.cv, b.candidate.c_str());
  }
  return 0;
}

// tune best
int cmdBest(const WorkloadArgs& a) {
  auto w = makeWorkload(a);
  if (!w) return fail(w.error());
  auto t = resolveTarget(a.target);
  if (!t) return fail(t.error());
  auto db = Database::open(a.db, /*create=*/false);
  if (!db) return fail(db.error());
  auto best = db->best(w->key(), t->key());
  if (!best) return fail(best.error());
  if (!*best) return fail("no measured schedule for " + w->key() + " on " + t->key() + " in " + a.db);
  const RecordRow& b = **best;
  std::cout << "// best measured: " << fmt("%.2f", b.gflops) << " GFLOP/s (median of " << b.times_s.size()
            << " repetitions, record " << b.id << ", run " << b.run_id << ", " << b.created_at << ")\n"
            << b.schedule;
  return 0;
}

// ---------------------------------------------------------------------------------------------
struct TuneArgs {
  WorkloadArgs w;
  int64_t trials = kDefaultTrials;
  double time_budget = 0;
  uint64_t seed = 1;
  std::string strategy = "model";  // the replay experiment's winner at 95% (README)
  int batch = 16;
  int jobs = 0;
  std::string report = "text";
  std::string schedule_file;
  bool fresh = false;
  bool quiet = false;
  double min_time = 0.2;
  double timeout = 0;  // 0: the target's default (cpu 30 s, GPU 10 s per launch)
  int final_rounds = 3;
  int final_top_k = 3;
  std::string measure = "device";
  std::string out;
  std::string suite;  // tune every workload of this suite file
  std::string pretrained = "default";  // --pretrained PATH|none|default
};

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
  Space space = buildCpuGemmSpace(*w, cpu);
  if (space.size() == 0) return fail("the schedule space for " + w->key() + " is empty");

  auto problem = GemmProblem::create(*w);
  if (!problem) return fail(problem.error());

  MeasureOptions mo;
  mo.min_time_s = a.min_time;
  mo.timeout_s = a.timeout > 0 ? a.timeout : 30.0;
  CpuEvaluatorOptions eo;
  eo.measure = mo;
  eo.jobs = a.jobs;
  CpuEvaluator evaluator(*w, space, *problem, eo);

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
    RecordRow r;
    r.run_id = *run_id;
    r.workload_key = w->key();
    r.target_key = target->key();
    r.candidate = key;
    r.knobs = json(schedule_knobs).dump();
    r.schedule = schedule_text;
    r.status = e.status;
    r.message = e.message;
    r.times_s = e.measurement.times_s;
    r.median_s = e.measurement.median_s;
    r.cv = e.measurement.cv;
    r.gflops = e.measurement.gflops;
    r.compile_s = e.compile_s;
    r.max_abs_err = e.measurement.max_abs_err;
    r.tool_version = SEXTANT_VERSION;
    r.llvm_version = llvmVersion();
    r.cpu_model = cpu.model;
    r.device = device;
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
      {"openblas", problem->blas().describe(), 0, [&] { return measureOpenBlas(*problem, mo); }},
  };
  ConfirmFactory confirm = [&](const RecordRow& r) {
    return Contender{"tuned", r.candidate, r.id, evaluator.measurer(r.schedule)};
  };

  TuneOptions o;
  o.strategy = a.strategy;
  o.seed = a.seed;
  o.trials = a.trials;
  o.time_budget_s = a.time_budget;
  o.batch = a.batch;
  o.resume = !a.fresh;
  o.args_json = argv_json;
  o.final_rounds = a.final_rounds;
  o.final_top_k = a.final_top_k;
  o.strategy_context.num_features = int(cpuGemmFeatureNames().size());
  o.strategy_context.feature_version = kCpuFeatureVersion;
  o.strategy_context.features = [&](const Candidate& c) { return cpuGemmFeatures(*w, space, c, cpu); };
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
  }
  TuneContext ctx{*db, *w, *target, space, evaluator, device, cpu.model, llvmVersion()};
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
  auto finalJson = [](const BaselineRow* b) {
    return b ? json{{"gflops", b->gflops}, {"median_s", b->median_s}, {"cv", b->cv}, {"repetitions", b->times_s.size()},
                    {"status", b->status}}
             : json(nullptr);
  };

  if (a.report == "json") {
    json j;
    j["workload"] = w->key();
    j["target"] = target->key();
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
  if (sum->best && best && sum->best->id != best->id)
    printf("  database   highest single search-time measurement for this workload: %.1f GFLOP/s (record %lld, run "
           "%lld);\n             the best above is the one that held up in the final comparison\n",
           sum->best->gflops, (long long)sum->best->id, (long long)sum->best->run_id);
  printf("  db         %s  (tune show --db %s; tune best ... --db %s)\n", a.w.db.c_str(), a.w.db.c_str(),
         a.w.db.c_str());
  printf("All figures are measurements on this machine in this run: medians of repeated calls with the\n"
         "operands flushed from the caches before each call, every result verified against OpenBLAS; best,\n"
         "default and reference were re-measured side by side in the final comparison.\n");
  return sum->interrupted ? 130 : 0;
}

// tune --suite FILE: every workload of a suite in turn (the other options apply to each).
int cmdTuneSuite(const TuneArgs& a, const std::string& argv_json) {
  auto suite = loadSuite(a.suite);
  if (!suite) return fail(suite.error());
  auto target = resolveTarget(a.w.target);
  if (!target) return fail(target.error());
  int worst = 0, done = 0, skipped = 0, failed = 0;
  for (const auto& e : suite->entries) {
    if (g_stop.load()) break;
    const GemmWorkload& w = e.workload;
    if (!target->isGpu() && w.a_type != DType::F32) {
      fprintf(stderr, "suite %s: %s skipped (the cpu target tunes f32 GEMM only)\n", suite->name.c_str(), e.name.c_str());
      ++skipped;
      continue;
    }
    fprintf(stderr, "suite %s: %s (%s)\n", suite->name.c_str(), e.name.c_str(), w.key().c_str());
    TuneArgs t = a;
    t.suite.clear();
    t.w.shape = w.shapeString();
    t.w.dtype = dtypeName(w.a_type);
    t.w.layout = layoutName(w.layout);
    int rc = cmdTune(t, argv_json);
    if (rc == 130) return rc;
    worst = std::max(worst, rc);
    ++(rc == 0 ? done : failed);
  }
  fprintf(stderr, "suite %s: %d workloads tuned, %d failed (see above), %d skipped\n", suite->name.c_str(), done,
          failed, skipped);
  return worst;
}

// tune dataset collect: a random sample (or the whole space) measured into OUT.db, exported.
int cmdDatasetCollect(const WorkloadArgs& w, int64_t count, uint64_t seed, double min_time, int jobs,
                      const std::string& out, const std::string& argv_json) {
  if (count <= 0) return fail("--count must be at least 1");
  const bool gz = out.size() > 3 && out.compare(out.size() - 3, 3, ".gz") == 0;
  if (!(gz || (out.size() > 6 && out.compare(out.size() - 6, 6, ".jsonl") == 0)))
    return fail("the dataset file must end in .jsonl or .jsonl.gz: " + out);
  auto wl = makeWorkload(w);
  if (!wl) return fail(wl.error());
  auto target = resolveTarget(w.target);
  if (!target) return fail(target.error());
  if (target->isGpu()) return fail("dataset collect measures on this machine: cpu only in this version");
  Space space = buildCpuGemmSpace(*wl, hostCpu());
  TuneArgs t;
  t.w = w;
  t.w.db = out + ".db";
  // Resumable: what the database already holds for this workload counts toward --count.
  int64_t have = 0;
  if (std::filesystem::exists(t.w.db)) {
    auto db0 = Database::open(t.w.db, false);
    if (!db0) return fail(db0.error());
    auto recs = db0->records(wl->key(), target->key());
    if (!recs) return fail(recs.error());
    for (const auto& r : *recs) have += r.source == "measured";
  }
  t.trials = std::min<int64_t>(count, int64_t(space.size())) - have;
  t.strategy = uint64_t(count) >= space.size() ? "exhaustive" : "random";
  t.seed = seed;
  t.min_time = min_time;
  t.jobs = jobs;
  t.final_rounds = 0;
  t.report = "json";
  t.quiet = false;
  {
    // The tuning summary (JSON) is not the dataset: keep stdout for the final line.
    std::cout.setstate(std::ios::failbit);
    int rc = t.trials > 0 ? cmdTune(t, argv_json) : 0;
    std::cout.clear();
    if (rc != 0) return rc;
  }
  auto db = Database::open(t.w.db, false);
  if (!db) return fail(db.error());
  ExportOptions eo;
  eo.target_key = target->key();
  eo.workload_key = wl->key();
  auto text = exportRecordsJsonl(*db, eo);
  if (!text) return fail(text.error());
  std::string tmp = out + ".tmp";
  if (gz) {
    FILE* p = popen(("gzip -9 -n -c > " + shellQuote(tmp)).c_str(), "w");
    if (!p) return fail("cannot run gzip");
    fwrite(text->data(), 1, text->size(), p);
    if (pclose(p) != 0) return fail("gzip failed writing " + tmp);
  } else {
    std::ofstream(tmp, std::ios::binary) << *text;
  }
  std::rename(tmp.c_str(), out.c_str());
  int64_t n = std::count(text->begin(), text->end(), '\n') - 1;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  json prov{{"dataset", out},
            {"records", n},
            {"workload", wl->key()},
            {"target", target->key()},
            {"space", space.name()},
            {"space_size", space.size()},
            {"sampling", t.strategy == "exhaustive" ? "the whole space" : "uniform random, without repetition"},
            {"seed", seed},
            {"min_time_s", min_time},
            {"cpu_model", hostCpu().model},
            {"llvm_host_cpu", llvmHostCpuName()},
            {"logical_cores", hostCpu().logical_cores},
            {"host", host},
            {"tool_version", SEXTANT_VERSION},
            {"llvm_version", llvmVersion()},
            {"command", json::parse(argv_json)}};
  std::ofstream(out + ".provenance.json") << prov.dump(2) << "\n";
  printf("wrote %lld records of %s to %s (provenance: %s.provenance.json; database %s)\n", (long long)n,
         wl->key().c_str(), out.c_str(), out.c_str(), t.w.db.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else: OpenBLAS (loaded with LibTorch at start-up) must see its settings.
  configureOpenBlasEnvironment(argv);
  CLI::App app{
      "Sextant: an autotuning compiler. Searches Transform-dialect schedules for an operation, compiles\n"
      "them with MLIR 22 to native code, measures them in isolation, verifies every result and records\n"
      "everything in a SQLite schedule database.\n\n"
      "  tune --op gemm --target cpu                       tune the default GEMM shape on this CPU\n"
      "  tune --op gemm --shape 1024x1024x1024 --trials 300 --db sextant.db\n"
      "  tune --schedule my.mlir --shape 512x512x512       measure one schedule file\n"
      "  tune show --db sextant.db                         runs and best schedules\n"
      "  tune best --op gemm --shape 512x512x512 --db sextant.db   print the best schedule\n"
      "  tune export --db sextant.db --target cpu --format transform -o tuned.mlir\n"
      "  tune compile model.mlir --db sextant.db --target cpu -o model.so\n"
      "  tune compile model.mlir --db sextant.db --target h100 -o model.gpu.mlir   kernels as PTX (HSACO for mi300)\n"
      "  tune import records.jsonl --db sextant.db;  tune merge a.db b.db -o c.db\n"
      "  tune --op gemm --target h100 --dtype f16 --shape 4096x4096x4096 --measure none    compile + analyse\n"
      "  tune --target mi300 --dtype f16 --measure bundle --out b/;  tune-runner b/;  tune import-results b/\n\n"
      "An interrupted run (Ctrl-C, kill) keeps every committed batch; the same command resumes it.\n",
      "tune"};
  app.set_version_flag("--version", std::string("sextant ") + SEXTANT_VERSION + " (LLVM/MLIR " + llvmVersion() + ")");
  TuneArgs ta;
  addWorkloadOptions(&app, ta.w, true);
  app.add_option("--trials", ta.trials, "candidates to try in this run (failures count)")->capture_default_str();
  app.add_option("--time-budget", ta.time_budget, "stop after this many seconds (0: no limit)")
      ->capture_default_str();
  app.add_option("--seed", ta.seed, "random seed; runs are deterministic given the seed")->capture_default_str();
  app.add_option("--strategy", ta.strategy, "search strategy: " + join(strategyNames(), ", "))
      ->capture_default_str();
  app.add_option("--batch", ta.batch, "candidates compiled and committed together (the plan size)")
      ->capture_default_str();
  app.add_option("--jobs", ta.jobs, "parallel compilations (0: one per core)")->capture_default_str();
  app.add_option("--report", ta.report, "summary format: text or json (json goes to stdout)")
      ->capture_default_str();
  app.add_option("--schedule", ta.schedule_file, "measure this Transform-dialect schedule file instead of tuning");
  app.add_flag("--fresh", ta.fresh, "start a new run even if an unfinished one with the same settings exists");
  app.add_flag("--quiet,-q", ta.quiet, "no progress output");
  app.add_option("--min-time", ta.min_time, "seconds of timed calls per candidate, at least")
      ->capture_default_str();
  app.add_option("--final-rounds", ta.final_rounds,
                 "interleaved rounds of the final comparison (best candidates, default, OpenBLAS); 0: skip")
      ->capture_default_str();
  app.add_option("--final-top", ta.final_top_k, "candidates re-measured in the final comparison")
      ->capture_default_str();
  app.add_option("--measure", ta.measure,
                 "GPU targets: device (measure here with tune-runner), none (compile + pre-flight analysis only, "
                 "nothing measured), bundle (also write the kernels to --out DIR for tune-runner elsewhere), "
                 "predicted (as none, then the top 10% by a model trained on other GPU targets' measurements, "
                 "stored as predicted)")
      ->capture_default_str();
  app.add_option("--out", ta.out, "bundle directory for --measure bundle");
  app.add_option("--suite", ta.suite,
                 "tune every workload of a suite file in turn (datasets/suites/*.json); --shape/--dtype/--layout "
                 "come from the suite");
  app.add_option("--pretrained", ta.pretrained,
                 "cost model that model-based strategies start from when the database has no model of this "
                 "workload: 'default' (the shipped one, datasets/models/cpu_gemm.costmodel), a file from tune model "
                 "train, or 'none' (cold start)")
      ->capture_default_str();
  app.add_option("--timeout", ta.timeout, "seconds before a candidate's measurement is killed (default: 30 on the cpu; on GPUs the deadline for one "
                 "kernel launch, 10)")
      ->capture_default_str();

  auto* show = app.add_subcommand("show", "list tuning runs and the best schedule per workload and target");
  std::string show_db = "sextant.db";
  show->add_option("--db", show_db, "schedule database")->capture_default_str();

  auto* bestc = app.add_subcommand("best", "print the best measured schedule (Transform script) for a workload");
  WorkloadArgs bw;
  addWorkloadOptions(bestc, bw, true);

  auto* exp = app.add_subcommand("export", "write the best schedules as a Transform library (mlir-opt applies it) "
                                          "or all records as JSON lines");
  cli::ExportArgs ea;
  exp->add_option("--db", ea.db, "schedule database")->capture_default_str();
  exp->add_option("--target", ea.target,
                  "target whose schedules to export (cpu, h100, h200, a100, mi300: GPU libraries schedule one GEMM "
                  "per function, C initialised by a linalg.fill, and print the lowering pipeline)")
      ->capture_default_str();
  exp->add_option("--format", ea.format, "transform (a Transform-dialect library) or json (JSON lines)")
      ->capture_default_str();
  exp->add_option("-o,--output", ea.out, "output file")->required();
  exp->add_flag("--include-predicted", ea.include_predicted, "also export predicted (never measured) records, marked");
  exp->add_flag("--allow-stale", ea.allow_stale,
                "export schedules measured with another LLVM major version, schema or generator, with a warning");

  auto* imp = app.add_subcommand("import", "merge records from a JSON-lines file (tune export --format json)");
  std::string imp_file, imp_db = "sextant.db";
  imp->add_option("file", imp_file, "records file")->required();
  imp->add_option("--db", imp_db, "database to import into (created if missing)")->capture_default_str();

  auto* mrg = app.add_subcommand("merge", "merge two databases into a third (the same result in either order)");
  std::string mrg_a, mrg_b, mrg_out;
  mrg->add_option("a", mrg_a, "first database")->required();
  mrg->add_option("b", mrg_b, "second database")->required();
  mrg->add_option("-o,--output", mrg_out, "merged database (created if missing)")->required();

  auto* cmp = app.add_subcommand("compile", "compile a module's GEMM ops with the database's best schedules");
  cli::CompileArgs ca;
  cmp->add_option("input", ca.input, "MLIR module with linalg.matmul / matmul-like linalg.generic ops")->required();
  cmp->add_option("--db", ca.db, "schedule database")->capture_default_str();
  cmp->add_option("--target", ca.target,
                  "target to compile for; GPU targets turn every GEMM into a kernel (one per function) and refuse "
                  "what cannot become one")
      ->capture_default_str();
  cmp->add_option("-o,--output", ca.out,
                  "cpu: .so (shared object) or .o (object file); GPU: the lowered module (.mlir: host code in the LLVM "
                  "dialect, kernels as gpu.binary), with OUT.FUNCTION.ptx / .hsaco beside it")
      ->required();
  cmp->add_option("--emit-library", ca.library_out, "also write the Transform library that was applied");

  auto* impr = app.add_subcommand("import-results",
                                   "read a bundle's results (tune-runner) into the database as measured records");
  std::string impr_dir, impr_results, impr_db = "sextant.db";
  impr->add_option("dir", impr_dir, "bundle directory (tune --measure bundle --out DIR)")->required();
  impr->add_option("--results", impr_results, "results file (default: DIR/results.json)");
  impr->add_option("--db", impr_db, "database")->capture_default_str();
  cli::BundleArgs bundle_args;
  auto* bundle_cmd = cli::addBundleCommand(app, bundle_args);
  auto* dataset = app.add_subcommand("dataset", "recorded measurement datasets (for replay experiments)");
  auto* dsc = dataset->add_subcommand(
      "collect", "measure a uniform random sample of a workload's schedules (or all of them) and write the records "
                 "as a dataset (JSON lines, gzip for .gz) with a provenance file beside it; resumable");
  WorkloadArgs dw;
  int64_t ds_count = 2000;
  uint64_t ds_seed = 7;
  double ds_min_time = 0.05;
  int ds_jobs = 0;
  std::string ds_out;
  addWorkloadOptions(dsc, dw, false);
  dsc->add_option("--count", ds_count, "candidates to measure (the whole space if it is smaller)")->capture_default_str();
  dsc->add_option("--seed", ds_seed, "sampling seed")->capture_default_str();
  dsc->add_option("--min-time", ds_min_time, "seconds of timed calls per candidate, at least")->capture_default_str();
  dsc->add_option("--jobs", ds_jobs, "parallel compilations (0: one per core)")->capture_default_str();
  dsc->add_option("-o,--output", ds_out, "dataset file (.jsonl or .jsonl.gz); the database is OUT.db")->required();
  auto* model = app.add_subcommand("model", "the learned cost model");
  auto* model_eval = model->add_subcommand("eval", "rank held-out records with the cost model and report its accuracy");
  cli::ModelEvalArgs me;
  model_eval->add_option("--db", me.db, "schedule database")->capture_default_str();
  model_eval->add_option("--target", me.target, "target whose records to use")->capture_default_str();
  model_eval->add_option("--train-target", me.train_target,
                         "cross-target: train on this GPU target's records, evaluate on --target's (with and "
                         "without the Blueprint input)");
  model_eval->add_option("--min-records", me.min_records, "skip workloads with fewer successful records")
      ->capture_default_str();
  model_eval->add_option("--regression-weight", me.regression_weight,
                          "weight of the regression loss (default: the tuner's, 1.0)");
  model_eval->add_option("--epochs", me.epochs, "training epochs per fit (default: the tuner's, 150)");
  model_eval->add_option("--seeds", me.seeds, "random train/test splits per fraction (results are medians)")
      ->capture_default_str();
  auto* model_train = model->add_subcommand(
      "train", "train one CPU cost model on recorded datasets of many workloads and machines (the pretrained model "
               "tuning runs start from; the shipped one: scripts/train-pretrained.sh)");
  cli::ModelTrainArgs mt;
  model_train->add_option("--data", mt.data, "database (.db) or dataset (.jsonl, .jsonl.gz); repeat for more")
      ->required();
  model_train->add_option("-o,--output", mt.out, "model file (its provenance goes to FILE.provenance.json)")
      ->required();
  model_train->add_option("--exclude", mt.exclude,
                          "leave out workloads whose 'workload key @ device' contains this text; repeatable");
  model_train->add_option("--epochs", mt.epochs, "training epochs")->capture_default_str();
  model_train->add_option("--max-per-workload", mt.max_per_workload, "records per workload (a random subsample beyond)")
      ->capture_default_str();
  model_train->add_option("--seed", mt.seed, "training seed")->capture_default_str();
  model->require_subcommand(1);

  auto* hw = app.add_subcommand("hw", "the hardware table: datasheet figures with sources, and Blueprints");
  auto* hw_list = hw->add_subcommand("list", "list the devices of the table and the host CPU");
  auto* hw_show = hw->add_subcommand("show", "every figure of one device, its sources and its Blueprint");
  auto* hw_check = hw->add_subcommand("check", "query this machine's GPUs (CUDA, HIP) and compare them with the table");
  std::string hw_name;
  hw_show->add_option("name", hw_name, "device name (tune hw list), or cpu")->required();
  hw->require_subcommand(1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "tune: error: " << e.what() << " (see tune --help)\n";
    return 2;
  }
  if (*show) return cmdShow(show_db);
  if (*bestc) return cmdBest(bw);
  if (*exp) return cli::cmdExport(ea);
  if (*imp) return cli::cmdImport(imp_file, imp_db);
  if (*mrg) return cli::cmdMerge(mrg_a, mrg_b, mrg_out);
  if (*cmp) return cli::cmdCompile(ca);
  if (*model_eval) return cli::cmdModelEval(me);
  if (*model_train) {
    json args;
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    mt.args_json = args.dump();
    return cli::cmdModelTrain(mt);
  }
  if (*impr) return cli::cmdImportResults(impr_dir, impr_results, impr_db);
  if (*bundle_cmd) {
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    return cli::cmdBundle(bundle_args, g_stop);
  }
  if (*dsc) {
    json args;
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    return cmdDatasetCollect(dw, ds_count, ds_seed, ds_min_time, ds_jobs, ds_out, args.dump());
  }
  if (*hw_list) return cli::cmdHwList();
  if (*hw_show) return cli::cmdHwShow(hw_name);
  if (*hw_check) return cli::cmdHwCheck();
  json args;
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  if (!ta.suite.empty()) return cmdTuneSuite(ta, args.dump());
  return cmdTune(ta, args.dump());
}
