// `tune model FILE.onnx|FILE.mlir` (issue #32): a network's tunable ops become tasks (one per
// distinct workload, weighted by how often the network runs it), tuned together under one trial
// budget by a task scheduler (search/task_scheduler.h), then the network is compiled with the
// tuned schedules and measured whole, next to the same network with the untuned defaults.
//
// Resumable: the budget counts this machine's records of the model's tasks (earlier runs
// included), so after Ctrl-C the same command goes on where it stopped, and once the budget is
// spent it only compiles and measures.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "records_internal.h"
#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/common/strings.h"
#include "sextant/frontend/onnx_import.h"
#include "sextant/runtime/cpu_runner.h"
#include "sextant/runtime/fma_peak.h"
#include "sextant/runtime/isolation.h"
#include "sextant/runtime/model_runner.h"
#include "sextant/search/evaluator.h"
#include "sextant/search/task_scheduler.h"
#include "sextant/search/tuner.h"
#include "tune_internal.h"

namespace sextant::cli {

using json = nlohmann::json;

namespace {

struct Task {
  GemmWorkload w;
  std::string key;
  Space space;
  std::optional<GemmProblem> problem;
  std::unique_ptr<CpuEvaluator> evaluator;
  TaskState state;             // state.weight: how often the network runs it
  int64_t trials = 0;         // this machine's records of it
  double default_s = 0;       // the untuned default schedule's latency (0: not measured)
  int failed_rounds = 0;      // rounds in a row without one successful measurement
};

double latencyOf(const Task& t, double gflops) { return gflops > 0 ? t.w.flops() / (gflops * 1e9) : INFINITY; }

// Milliseconds, four significant digits.
std::string ms(double s) { return std::isfinite(s) ? fmt("%.4g", s * 1e3) : std::string("-"); }

// The latency this machine measured for a task's untuned default schedule (0: none yet).
double defaultLatency(const std::vector<RecordRow>& recs, const Task& t, const std::string& machine) {
  const std::string def = t.space.keyOf(defaultCpuCandidate(t.space, t.w));
  double s = 0;
  for (const RecordRow& r : recs)
    if (r.source == "measured" && r.machine == machine && r.status == "ok" && r.candidate == def)
      s = latencyOf(t, r.gflops);
  return s;
}

// Reconstructs a task's rounds from the database: the best latency after each run of this
// machine (a round is one run), in the order they were recorded.
Status loadTaskState(Database& db, const Target& target, const std::string& machine, Task& t) {
  auto recs = db.records(t.key, target.key());
  if (!recs) return Error{recs.error()};
  std::sort(recs->begin(), recs->end(), [](const RecordRow& a, const RecordRow& b) { return a.id < b.id; });
  t.default_s = defaultLatency(*recs, t, machine);
  double best = INFINITY;
  int64_t run = -1;
  for (const RecordRow& r : *recs) {
    if (r.source != "measured" || r.machine != machine) continue;
    if (run >= 0 && r.run_id != run) t.state.best_after.push_back(best);
    run = r.run_id;
    ++t.trials;
    if (r.status == "ok") best = std::min(best, latencyOf(t, r.gflops));
  }
  if (run >= 0) t.state.best_after.push_back(best);
  return okStatus();
}

void printTable(const std::vector<Task>& tasks) {
  const double total = estimatedLatency([&] {
    std::vector<TaskState> s;
    for (const Task& t : tasks) s.push_back(t.state);
    return s;
  }());
  printf("%-3s %-62s %6s %6s %9s %9s %11s %6s\n", "#", "task (workload)", "weight", "trials", "GFLOP/s", "best ms",
         "weighted ms", "share");
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    const double best = t.state.best_after.empty() ? INFINITY : t.state.best_after.back();
    std::string key = t.key.size() > 62 ? t.key.substr(0, 59) + "..." : t.key;
    printf("%-3zu %-62s %6d %6lld %9s %9s %11s %5s%%\n", i, key.c_str(), int(t.state.weight), (long long)t.trials,
           std::isfinite(best) ? fmt("%.1f", t.w.flops() / best / 1e9).c_str() : "-", ms(best).c_str(),
           ms(t.state.weight * best).c_str(),
           std::isfinite(total) ? fmt("%.0f", 100 * t.state.weight * best / total).c_str() : "-");
  }
}

}  // namespace

int cmdModel(const ModelArgs& a, const std::string& argv_json) {
  if (a.input == "eval" || a.input == "train")
    return fail("the cost-model commands are now `tune costmodel " + a.input + "` (`tune model` tunes a network)");
  if (a.trials < -1) return fail("--trials must not be negative");
  if (a.batch <= 0) return fail("--batch must be at least 1");
  if (a.scheduler != "gradient" && a.scheduler != "round-robin")
    return fail("--scheduler must be gradient or round-robin (got " + a.scheduler + ")");
  if (a.report != "text" && a.report != "json") return fail("--report must be text or json");
  const int threads = a.threads == 0 ? hostCpu().logical_cores : a.threads;
  if (threads < 1 || threads > hostCpu().logical_cores)
    return fail("--threads " + std::to_string(a.threads) + ": this machine has " +
                std::to_string(hostCpu().logical_cores) + " logical cores");
  {
    auto names = strategyNames();
    if (std::find(names.begin(), names.end(), a.strategy) == names.end())
      return fail("unknown strategy '" + a.strategy + "' (known: " + join(names, ", ") + ")");
  }
  const auto t_start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };

  // 1. Import.
  Signature sig;
  std::string text;
  const bool onnx = a.input.size() > 5 && a.input.compare(a.input.size() - 5, 5, ".onnx") == 0;
  if (onnx) {
    auto shapes = parseInputShapes(a.input_shapes);
    if (!shapes) return fail(shapes.error());
    auto m = importOnnx(a.input, *shapes);
    if (!m) return fail(m.error());
    text = m->mlir;
    for (const auto& t : m->inputs) sig.inputs.push_back(t.shape);
    for (const auto& t : m->outputs) sig.outputs.push_back(t.shape);
    if (!a.quiet)
      fprintf(stderr, "imported %s (%s, opset %lld): %lld nodes (%lld folded at import), %.1f MB of weights\n",
              a.input.c_str(), m->producer.empty() ? "unknown producer" : m->producer.c_str(), (long long)m->opset,
              (long long)m->nodes, (long long)m->folded, double(m->weight_bytes) / 1e6);
  } else {
    auto t = moduleText(a.input, a.input_shapes);
    if (!t) return fail(t.error());
    text = *t;
    auto s = mlirSignature(text);
    if (!s) return fail(a.input + ": " + s.error());
    sig = *s;
  }
  if (!a.emit_mlir.empty())
    if (auto s = writeFileAtomically(a.emit_mlir, text); !s) return fail(s.error());

  // 2. Tasks: one per distinct workload. (Complete before any round starts: a task's evaluator and
  // strategy keep references to its workload and space, so `tasks` must not grow after that.)
  auto ops = findGemmOps(text, a.input);
  if (!ops) return fail(ops.error());
  auto target = resolveTarget("cpu");
  if (!target) return fail(target.error());
  target->arch = cpuArchWithThreads(target->arch, threads);
  const HostCpu& cpu = hostCpu();
  std::vector<Task> tasks;
  std::map<std::string, size_t> task_of;
  std::vector<std::string> untouched;
  for (const FoundOp& op : *ops) {
    auto w = op.supported ? workloadOf(op) : Result<GemmWorkload>(Error{op.reason});
    if (w && w->isConv() && convIsGemm(*w)) w = Error{"a 1x1 convolution op (tuned as a GEMM, not applied to conv ops)"};
    if (w && w->a_type != DType::F32) w = Error{std::string(dtypeName(w->a_type)) + " ops are tuned as whole GEMMs only (docs/amx.md)"};
    if (!w) {
      untouched.push_back(op.op_name + " in @" + op.function + ": " + w.error());
      continue;
    }
    const std::string key = w->key();
    if (!task_of.count(key)) {
      task_of[key] = tasks.size();
      tasks.emplace_back();
      tasks.back().w = *w, tasks.back().key = key;
      tasks.back().space = buildCpuGemmSpace(*w, cpu, threads);
      tasks.back().state.weight = 0;  // counted below, one per op
    }
    Task& t = tasks[task_of[key]];
    t.state.weight += 1;
  }
  if (!a.quiet) {
    fprintf(stderr, "%zu tasks from %zu tunable ops", tasks.size(), ops->size() - untouched.size());
    if (!untouched.empty()) fprintf(stderr, " (%zu ops get their default schedule)", untouched.size());
    fprintf(stderr, "\n");
    for (const std::string& u : untouched) fprintf(stderr, "  untuned: %s\n", u.c_str());
  }

  // 3. The database, and what this machine has measured already.
  auto db = Database::open(a.db);
  if (!db) return fail(db.error());
  const std::string device = llvmHostCpuName(), machine = thisMachine();
  int64_t done = 0;
  for (Task& t : tasks) {
    if (auto s = registerWorkloadAndTarget(*db, t.w, *target, device, cpu.vector_isa); !s) return fail(s.error());
    if (auto s = loadTaskState(*db, *target, machine, t); !s) return fail(s.error());
    done += t.trials;
  }
  const int64_t budget = a.trials >= 0 ? a.trials : int64_t(a.per_task) * int64_t(tasks.size());
  SchedulerOptions so;
  so.kind = a.scheduler;

  // 4. Tune: one round (a run of --batch trials) of the task the scheduler picks, until the budget
  // (this machine's records of these tasks), the time budget or Ctrl-C.
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  if (!a.quiet && done < budget)
    fprintf(stderr, "tuning with a budget of %lld trials (%lld done before), scheduler %s, strategy %s, %d thread%s\n",
            (long long)budget, (long long)done, a.scheduler.c_str(), a.strategy.c_str(), threads, threads > 1 ? "s" : "");
  CompileArgs ca;
  ca.input = a.input, ca.db = a.db, ca.threads = threads, ca.fuse_epilogues = a.fuse_epilogues;
  ca.out = a.out.empty() ? std::filesystem::path(a.input).stem().string() + ".so" : a.out;
  // After the warm-up (every task tuned once), the network as tuned so far is compiled and measured
  // once, next to the estimate: how far the sum of the tuned ops is from the whole network.
  json phases = json::array();
  auto all_started = [&] {
    return std::all_of(tasks.begin(), tasks.end(), [](const Task& t) { return !t.state.best_after.empty(); });
  };
  const bool warm_before = all_started();
  auto measurePhase = [&](const std::string& phase) -> Status {
    CompileArgs cp = ca;
    cp.out = ca.out + "." + phase + ".so";
    {
      MachineLock compiling(MachineLock::Mode::Compile);
      if (int rc = compileCpuModule(cp, *target, text, *ops, *db, false, false); rc)
        return Error{"compiling the network after the " + phase};
    }
    ModelRunRequest r;
    r.inputs = sig.inputs, r.outputs = sig.outputs, r.min_time_s = a.model_min_time;
    r.so_path = std::filesystem::absolute(cp.out).string();
    auto m = runModel(r);
    std::error_code ec;
    std::filesystem::remove(cp.out, ec);
    if (!m) return Error{"the network after the " + phase + ": " + m.error()};
    std::vector<TaskState> st;
    for (const Task& x : tasks) st.push_back(x.state);
    const double est = estimatedLatency(st);
    phases.push_back({{"phase", phase}, {"trials", done}, {"estimate_s", std::isfinite(est) ? json(est) : json(nullptr)},
                      {"measured_s", m->median_s}});
    if (!a.quiet)
      fprintf(stderr, "after the %s (%lld trials): estimate %s ms, the whole network measured %s ms\n", phase.c_str(),
              (long long)done, ms(est).c_str(), ms(m->median_s).c_str());
    return okStatus();
  };
  int rounds = 0;
  while (done < budget && !g_stop.load() && !(a.time_budget > 0 && elapsed() >= a.time_budget)) {
    std::vector<TaskState> states;
    for (const Task& t : tasks) states.push_back(t.state);
    const int i = nextTask(states, so);
    if (i < 0) break;
    Task& t = tasks[size_t(i)];
    if (!t.problem) {
      auto p = GemmProblem::create(t.w);
      if (!p) return fail(p.error());
      t.problem.emplace(std::move(*p));
      MeasureOptions mo;
      mo.min_time_s = a.min_time;
      mo.timeout_s = 30;
      mo.blas_threads = threads;
      CpuEvaluatorOptions eo;
      eo.measure = mo;
      eo.jobs = a.jobs;
      t.evaluator = std::make_unique<CpuEvaluator>(t.w, t.space, *t.problem, eo);
    }
    TuneContext ctx{*db, t.w, *target, t.space, *t.evaluator, device, cpu.model, llvmVersion(), machine};
    TuneOptions o;
    o.strategy = a.strategy;
    o.seed = a.seed + uint64_t(t.state.best_after.size());
    o.trials = std::min<int64_t>(a.batch, budget - done);
    o.batch = a.batch;
    o.final_rounds = 0;
    o.args_json = argv_json;
    o.first_candidate = defaultCpuCandidate(t.space, t.w);
    o.seeds = cpuSeedCandidates(t.space, t.w);
    if (auto s = cpuStrategyContext(o.strategy_context, *db, a.db, t.w, t.space, *target, a.strategy, a.pretrained,
                                    device, cpu, machine, true);
        !s)
      return fail(s.error());
    auto sum = tune(ctx, o, {}, nullptr, g_stop, nullptr);
    if (!sum) return fail(sum.error());
    const int64_t added = sum->trials - sum->resumed_records;
    done += added, t.trials += added, ++rounds;
    const double before = t.state.best_after.empty() ? INFINITY : t.state.best_after.back();
    const double best = sum->best ? latencyOf(t, sum->best->gflops) : INFINITY;
    t.state.best_after.push_back(best);
    t.failed_rounds = std::isfinite(best) ? 0 : t.failed_rounds + 1;
    if (sum->exhausted || t.failed_rounds >= 2) t.state.finished = true;
    if (t.default_s == 0)  // the default is the first candidate of a task's first round
      if (auto d = db->records(t.key, target->key())) t.default_s = defaultLatency(*d, t, machine);
    std::vector<TaskState> now;
    for (const Task& x : tasks) now.push_back(x.state);
    const bool warm_now = !warm_before && phases.empty() && all_started() && done < budget && !g_stop.load();
    if (!a.quiet)
      fprintf(stderr, "[%lld/%lld] round %d: task %d (weight %d) %s ms -> %s ms%s | estimate %s ms | %s\n",
              (long long)done, (long long)budget, rounds, i, int(t.state.weight), ms(before).c_str(), ms(best).c_str(),
              t.state.finished ? " (finished)" : "", ms(estimatedLatency(now)).c_str(), fmtDuration(elapsed()).c_str());
    if (warm_now)
      if (auto st = measurePhase("warm-up"); !st) {
        if (!g_stop.load()) return fail(st.error());
        break;  // interrupted while measuring: reported below
      }
  }
  // Ctrl-C: every committed trial is kept; the same command goes on from there.
  auto interrupted = [&] {
    fprintf(stderr, "tune: interrupted after %d rounds; every measured trial is saved in %s, and the same command "
                    "resumes\n", rounds, db->path().c_str());
    return 130;
  };
  if (g_stop.load()) return interrupted();
  const double tune_s = elapsed();

  // 5. Compile (tuned and untuned) and measure the whole network.
  const std::string untuned_so = ca.out + ".untuned.so";
  if (!a.quiet) fprintf(stderr, "compiling the network with the tuned schedules and with the untuned defaults...\n");
  {
    // Compiling holds the machine lock shared, as candidates' compiles do: no Sextant process on
    // this machine measures meanwhile (issue #35).
    MachineLock compiling(MachineLock::Mode::Compile);
    if (int rc = compileCpuModule(ca, *target, text, *ops, *db, /*untuned=*/false, /*print=*/false); rc) return rc;
    CompileArgs cu = ca;
    cu.out = untuned_so;
    if (int rc = compileCpuModule(cu, *target, text, *ops, *db, /*untuned=*/true, /*print=*/false); rc) return rc;
  }
  // Interleaved (untuned, tuned, untuned, tuned), the better median of each; the tuned network's
  // outputs are checked against the untuned one's (the same random inputs).
  ModelRunRequest req;
  req.inputs = sig.inputs, req.outputs = sig.outputs, req.min_time_s = a.model_min_time;
  // --check PREFIX: PREFIX.in<i>.f32 as the inputs, PREFIX.out<i>.f32 as what the outputs must be.
  std::vector<std::vector<float>> check_expected;
  if (!a.check.empty()) {
    for (size_t i = 0; i < sig.inputs.size(); ++i) {
      auto v = readF32File(a.check + ".in" + std::to_string(i) + ".f32");
      if (!v) return fail("--check: " + v.error());
      req.input_data.push_back(std::move(*v));
    }
    for (size_t i = 0; i < sig.outputs.size(); ++i) {
      auto v = readF32File(a.check + ".out" + std::to_string(i) + ".f32");
      if (!v) return fail("--check: " + v.error());
      check_expected.push_back(std::move(*v));
    }
  }
  if (!a.quiet) fprintf(stderr, "measuring the whole network (untuned, tuned, untuned, tuned)...\n");
  std::vector<double> t_tuned, t_untuned;
  double max_err = -1, max_out = 0;
  for (int round = 0; round < 2; ++round) {
    req.so_path = std::filesystem::absolute(untuned_so).string();  // dlopen searches the library path for a bare name
    req.return_outputs = round == 0;
    req.expected.clear();
    auto u = runModel(req);
    if (!u) return g_stop.load() ? interrupted() : fail("the untuned network: " + u.error());
    t_untuned.push_back(u->median_s);
    req.so_path = std::filesystem::absolute(ca.out).string();
    req.return_outputs = false;
    if (round == 0) req.expected = u->outputs;
    auto t = runModel(req);
    if (!t) return g_stop.load() ? interrupted() : fail("the tuned network: " + t.error());
    t_tuned.push_back(t->median_s);
    if (round == 0) max_err = t->max_abs_error, max_out = t->max_abs_expected;
  }
  double check_err = -1, check_big = 0;
  if (!a.check.empty()) {
    req.so_path = std::filesystem::absolute(ca.out).string();
    req.expected = check_expected;
    req.min_time_s = 0, req.min_calls = 1;
    auto c = runModel(req);
    if (!c) return g_stop.load() ? interrupted() : fail("the tuned network: " + c.error());
    check_err = c->max_abs_error, check_big = c->max_abs_expected;
  }
  const double tuned_s = *std::min_element(t_tuned.begin(), t_tuned.end());
  const double untuned_s = *std::min_element(t_untuned.begin(), t_untuned.end());
  double flops = 0;
  for (const Task& t : tasks) flops += t.state.weight * t.w.flops();
  const FmaPeak peak = measureFmaPeak(threads, 0.15, 3);
  std::vector<TaskState> states;
  double default_est = 0;
  for (const Task& t : tasks) {
    states.push_back(t.state);
    default_est += t.state.weight * (t.default_s > 0 ? t.default_s : INFINITY);
  }
  const double est = estimatedLatency(states);
  // --profile: the tuned network again, with a clock on each op (tune profile).
  json profile;
  std::string profiled_so;
  if (a.profile) {
    CompileArgs cp = ca;
    cp.profile = true;
    profiled_so = cp.out = (ca.out.size() > 3 && ca.out.compare(ca.out.size() - 3, 3, ".so") == 0
                                ? ca.out.substr(0, ca.out.size() - 3) : ca.out) + ".profiled.so";
    if (!a.quiet) fprintf(stderr, "profiling the tuned network op by op (%s)...\n", profiled_so.c_str());
    {
      MachineLock compiling(MachineLock::Mode::Compile);
      if (int rc = compileCpuModule(cp, *target, text, *ops, *db, false, false); rc) return rc;
    }
    auto p = profileNetwork(profiled_so, a.model_min_time);
    if (!p) return g_stop.load() ? interrupted() : fail("profiling the tuned network: " + p.error());
    profile = *p;
  }

  if (a.report == "json") {
    json jt = json::array();
    for (const Task& t : tasks)
      jt.push_back({{"workload", t.key}, {"weight", int(t.state.weight)}, {"trials", t.trials}, {"flops", t.w.flops()},
                    {"best_s", t.state.best_after.empty() || !std::isfinite(t.state.best_after.back()) ? json(nullptr)
                                                                                                          : json(t.state.best_after.back())},
                    {"default_s", t.default_s > 0 ? json(t.default_s) : json(nullptr)}, {"rounds", t.state.best_after.size()}});
    json out = {{"model", a.input}, {"tasks", jt}, {"trials", done}, {"budget", budget}, {"scheduler", a.scheduler},
                {"strategy", a.strategy}, {"threads", threads}, {"machine", machine}, {"device", device},
                {"tuning_s", tune_s}, {"rounds_this_run", rounds},
                {"estimate_tuned_s", std::isfinite(est) ? json(est) : json(nullptr)},
                {"estimate_default_s", std::isfinite(default_est) ? json(default_est) : json(nullptr)},
                {"measured_tuned_s", tuned_s}, {"measured_tuned_runs_s", t_tuned},
                {"measured_untuned_s", untuned_s}, {"measured_untuned_runs_s", t_untuned}, {"phases", phases},
                {"max_abs_diff_tuned_vs_untuned", max_err}, {"max_abs_output", max_out},
                {"check", a.check.empty() ? json(nullptr)
                                          : json{{"prefix", a.check}, {"max_abs_error", check_err},
                                                 {"max_abs_expected", check_big},
                                                 {"ok", check_err >= 0 && check_err <= 1e-3 * check_big}}}, {"flops", flops}, {"fma_peak_gflops", peak.gflops},
                {"fma_floor_s", peak.gflops > 0 ? flops / (peak.gflops * 1e9) : 0.0}, {"output", ca.out}};
    if (a.profile) out["profile"] = profile;
    printf("%s\n", out.dump(2).c_str());
    return a.check.empty() || (check_err >= 0 && check_err <= 1e-3 * check_big) ? 0 : 1;
  }
  printf("\n");
  printTable(tasks);
  printf("\nnetwork %s on %s (%s), %d thread%s; %lld trials of %lld (%d rounds this run, %s)\n", a.input.c_str(),
         device.c_str(), machine.c_str(), threads, threads > 1 ? "s" : "", (long long)done, (long long)budget, rounds,
         fmtDuration(tune_s).c_str());
  printf("  measured whole network (best median of 2 interleaved runs each): tuned %s ms, untuned defaults %s ms: "
         "%.2fx\n", ms(tuned_s).c_str(), ms(untuned_s).c_str(), untuned_s / tuned_s);
  printf("  outputs: the tuned network's differ from the untuned one's by at most %.3g (largest |output| %.3g)\n",
         max_err, max_out);
  printf("  estimate (sum of weight x best latency of the tuned ops): tuned %s ms, untuned %s ms; the rest of the "
         "network (untuned ops, layout changes, calls) %s ms\n",
         ms(est).c_str(), ms(default_est).c_str(), std::isfinite(est) ? ms(tuned_s - est).c_str() : "-");
  if (peak.gflops > 0)
    printf("  FMA-bound floor of its %.3g GFLOP at the measured peak (%.0f GFLOP/s): %s ms\n", flops / 1e9, peak.gflops,
           ms(flops / (peak.gflops * 1e9)).c_str());
  const bool check_ok = check_err >= 0 && check_err <= 1e-3 * check_big;
  if (!a.check.empty())
    printf("  check against %s.out*.f32: max abs error %.3g (largest |expected| %.3g): %s\n", a.check.c_str(), check_err,
           check_big, check_ok ? "ok (within 1e-3 of the largest output)" : "FAILED");
  printf("wrote %s (entry point _mlir_ciface_forward) and %s\n", ca.out.c_str(), untuned_so.c_str());
  if (a.profile) {
    printf("\nthe tuned network op by op (compiled again with a clock on each op: %s)\n", profiled_so.c_str());
    printProfile(profile, 25);
  }
  return a.check.empty() || check_ok ? 0 : 1;
}

}  // namespace sextant::cli
