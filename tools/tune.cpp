// `tune`: the Sextant command line. See `tune --help` and docs/cli.md.
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
#include "sextant/frontend/onnx_import.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/suite.h"
#include "sextant/codegen/ops.h"
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
#include "tune_internal.h"

using namespace sextant;
using namespace sextant::cli;
using json = nlohmann::json;

namespace sextant::cli {

std::atomic<bool> g_stop{false};
namespace {
std::atomic<int> g_signals{0};
}  // namespace

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
  const char msg[] = "\nsextant: interrupt: stopping the candidate in flight, keeping what is committed (Ctrl-C again to exit now)\n";
  (void)!write(2, msg, sizeof msg - 1);
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

Result<GemmWorkload> makeWorkload(const WorkloadArgs& a) {
  auto op = findOp(a.op);
  if (!op) return Error{op.error()};
  const std::string shape = !a.shape.empty() ? a.shape : (*op)->defaultShape();
  auto w = (*op)->make(shape, a.dtype, a.layout);
  if (!w) return w;
  if (a.weights) {
    if (w->batched()) return Error{"--weights is for gemm and conv2d (a batched matmul's B is an activation)"};
    w->weights = true;
  }
  if (isIntegerType(w->a_type)) {
    auto t = resolveTarget(a.target);
    if (t && t->isGpu()) return Error{"--dtype " + a.dtype + " is for the cpu target (its AMX route); GPU targets take f32, f16, bf16"};
  }
  if (!(*op)->tunesOnGpu()) {
    auto t = resolveTarget(a.target);
    // Batched matmul has GPU schedules on Vulkan only (one batch element per workgroup row, z).
    const bool vulkan_bmm = t && t->kind == TargetKind::Vulkan && w->batched();
    if (t && t->isGpu() && !vulkan_bmm)
      return Error{"--op " + a.op + " has no GPU schedules yet (targets for it: cpu" +
                   std::string(w->batched() ? ", vulkan" : "") + "); docs/ops.md says what is missing"};
  }
  return w;
}

void addWorkloadOptions(CLI::App* app, WorkloadArgs& a, bool with_db_default) {
  std::string ops_help = "operation to tune:";
  std::string shape_help = "sizes:";
  const char* sep = " ";
  for (const OpDef* op : registeredOps()) {
    ops_help += std::string("\n  ") + op->name() + ": " + op->summary();
    shape_help += std::string(sep) + op->name() + " " + op->shapeSyntax() + " (default " + op->defaultShape() +
                  (op->kind() == OpKind::Gemm ? ", tuned in about 2-3 minutes" : "") + ")";
    sep = "; ";
  }
  app->add_option("--op", a.op, ops_help)->capture_default_str();
  app->add_option("--shape", a.shape, shape_help);
  app->add_option("--dtype", a.dtype, "input element type: f32; bf16 (bf16 x bf16 -> f32) for GEMM on a CPU with AMX (docs/amx.md); f16, bf16 for GPU targets")
      ->capture_default_str();
  app->add_option("--layout", a.layout,
                  "storage of A and B: NN, NT (B transposed), TN (A transposed); conv2d: NHWC (HWCF filter, the "
                  "default), NCHW (FCHW filter), NHWC/FHWC")
      ->capture_default_str();
  app->add_flag("--weights", a.weights,
               "B (conv2d: the filter) is a constant weight, as in a network: the kernel may take it stored in "
               "the blocks it reads, arranged once outside the timed calls as `tune compile` does with a "
               "network's weights (key suffix :weights; tune model's tasks have it)");
  app->add_option("--target", a.target, "where to tune: " + join(knownTargetNames(), ", ") +
                  " (vulkan:N: the N-th Vulkan device; Mesa's lavapipe is CPU-emulated and measures no GPU)")
      ->capture_default_str();
  auto* db = app->add_option("--db", a.db, "schedule database (SQLite file)");
  if (with_db_default) db->capture_default_str();
}

}  // namespace sextant::cli

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
  app.add_option("--seed", ta.seed,
                 "the strategy's random seed (a live run also depends on its measurements, so the same seed does "
                 "not repeat it exactly; replays of recorded measurements do)")
      ->capture_default_str();
  app.add_option("--strategy", ta.strategy, "search strategy: " + join(strategyNames(), ", "))
      ->capture_default_str();
  app.add_option("--batch", ta.batch, "candidates compiled and committed together (the plan size)")
      ->capture_default_str();
  app.add_option("--jobs", ta.jobs, "parallel compilations (0: one per core)")->capture_default_str();
  app.add_option("--threads", ta.threads,
                 "cpu: threads the tuned kernels run on, 1 to the cores here (0: all); records go to a target "
                 "of their own (cpu:ARCH-tN) and OpenBLAS is measured with as many threads")
      ->capture_default_str();
  app.add_option("--report", ta.report, "summary format: text or json (json goes to stdout)")
      ->capture_default_str();
  app.add_option("--schedule", ta.schedule_file, "measure this Transform-dialect schedule file instead of tuning");
  app.add_option("--knobs", ta.knobs,
                 "cpu: measure one knob assignment of the space (KNOB=V,... as tune show prints them) instead of "
                 "tuning: compiled, verified and recorded exactly as a candidate of a run (the entry point of "
                 "other searchers, e.g. experiments/peers/optuna_tpe.py)");
  app.add_option("--versus", ta.versus,
                 "cpu, with --schedule or --knobs, 1 thread: then measure the schedule and this reference library "
                 "(openblas, onednn, onednn:matmul, blis:skx, ... as the summary lists them; a batched matmul's bare "
                 "onednn is the matmul primitive) call by call in "
                 "--final-rounds processes, and print the median of the call pairs' ratios (schedule / library)");
  app.add_flag("--print-space", ta.print_space,
               "cpu: print the schedule space of the workload (knobs, their values, constraint names) as JSON and exit");
  app.add_flag("--fresh", ta.fresh, "start a new run even if an unfinished one with the same settings exists");
  app.add_flag("--quiet,-q", ta.quiet, "no progress output");
  app.add_option("--min-time", ta.min_time, "seconds of timed calls per candidate, at least")
      ->capture_default_str();
  app.add_option("--final-rounds", ta.final_rounds,
                 "interleaved rounds of the final comparison (best candidates, default, OpenBLAS, oneDNN, BLIS) and of "
                 "the head-to-head of the winner with the fastest library after it; 0: skip")
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
  app.add_option("--vulkan-device", ta.vulkan_device,
                 "vulkan with --measure bundle|none: compile for the device described in FILE[:N] (tune hw show vulkan "
                 "--json on its machine): its limits, subgroup size, f16 support and class (IREE default) instead of "
                 "lavapipe's");
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

  app.add_option("--workers", ta.workers,
                 "make this a study that workers tune together (tune worker, on this or other machines, same --db; "
                 "PostgreSQL for many machines) and run N local workers (0: only make the study)");

  auto* worker = app.add_subcommand(
      "worker", "join the open studies of a database (tune --workers) and tune them with the other workers; exits "
                "when no open study is left");
  WorkerArgs wa;
  worker->add_option("--db", wa.db, "schedule database: postgresql://USER@HOST[:PORT]/NAME to share it between machines")
      ->capture_default_str();
  worker->add_option("--study", wa.study, "only this study (0: every open one)")->capture_default_str();
  worker->add_option("--target", wa.target, "only studies of this target");
  worker->add_option("--jobs", wa.jobs, "parallel compilations (0: one per core)")->capture_default_str();
  worker->add_option("--lease", wa.lease, "seconds a claimed candidate stays this worker's without a heartbeat")
      ->capture_default_str();
  worker->add_option("--heartbeat", wa.heartbeat, "seconds between heartbeats (renewing the leases)")
      ->capture_default_str();
  worker->add_flag("--quiet,-q", wa.quiet, "no progress output");

  auto* show = app.add_subcommand("show", "list tuning runs and the best schedule per workload and target");
  std::string show_db = "sextant.db", show_machine = "this";
  show->add_option("--db", show_db, "schedule database")->capture_default_str();
  show->add_option("--machine", show_machine, "best schedules of which machine's measurements: \"this\", \"any\", or a "
                   "machine key or its prefix")->capture_default_str();

  auto* bestc = app.add_subcommand("best", "print the best measured schedule (Transform script) for a workload");
  WorkloadArgs bw;
  addWorkloadOptions(bestc, bw, true);
  bestc->add_option("--machine", bw.machine, "whose measurements: \"this\" (this machine's; the default), \"any\", or a machine key or its prefix (e.g. cpu:znver4; tune show lists them)")->capture_default_str();

  auto* exp = app.add_subcommand("export", "write the best schedules as a Transform library (mlir-opt applies it) "
                                          "or all records as JSON lines");
  cli::ExportArgs ea;
  exp->add_option("--db", ea.db, "schedule database")->capture_default_str();
  exp->add_option("--target", ea.target,
                  "target whose schedules to export (cpu, h100, h200, a100, mi300: GPU libraries schedule one GEMM "
                  "per function, C initialised by a linalg.fill, and print the lowering pipeline)")
      ->capture_default_str();
  exp->add_option("--threads", ea.threads, "cpu: export the schedules tuned with tune --threads N (they carry it)")
      ->capture_default_str();
  exp->add_option("--format", ea.format, "transform (a Transform-dialect library) or json (JSON lines)")
      ->capture_default_str();
  exp->add_option("-o,--output", ea.out, "output file")->required();
  exp->add_option("--machine", ea.machine, "whose measurements: \"this\" (this machine's; the default), \"any\", or a machine key or its prefix (e.g. cpu:znver4; tune show lists them)")->capture_default_str();
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
  cmp->add_option("input", ca.input,
                  "MLIR module with linalg.matmul / matmul-like linalg.generic / convolution ops, or an ONNX model "
                  "(FILE.onnx: imported, entry point _mlir_ciface_forward(inputs..., outputs...))")
      ->required();
  cmp->add_option("--input-shape", ca.input_shapes,
                  "ONNX: static shapes for inputs with dynamic dimensions, NAME=D0,D1,... (';' between inputs)");
  cmp->add_option("--db", ca.db, "schedule database")->capture_default_str();
  cmp->add_option("--vulkan-device", ca.vulkan_device,
                  "vulkan: compile for the device described in FILE[:N] (tune hw show vulkan --json): its limits and "
                  "its class's default for untuned GEMMs");
  cmp->add_option("--target", ca.target,
                  "target to compile for; GPU targets turn every GEMM into a kernel (one per function) and refuse "
                  "what cannot become one")
      ->capture_default_str();
  cmp->add_option("-o,--output", ca.out,
                  "cpu: .so (shared object) or .o (object file); GPU: the lowered module (.mlir: host code in the LLVM "
                  "dialect, kernels as gpu.binary), with OUT.FUNCTION.ptx / .hsaco beside it")
      ->required();
  cmp->add_option("--emit-library", ca.library_out, "also write the Transform library that was applied");
  cmp->add_option("--threads", ca.threads,
                  "cpu: use the schedules tuned with tune --threads N (kernels on N threads; libomp is linked)")
      ->capture_default_str();
  cmp->add_option("--machine", ca.machine, "whose measurements: \"this\" (this machine's; the default), \"any\", or a machine key or its prefix (e.g. cpu:znver4; tune show lists them)")->capture_default_str();
  cmp->add_flag("!--no-epilogue-fusion", ca.fuse_epilogues,
                "cpu: compute each op's bias, activation and residual add as a separate pass over its output "
                "instead of on each of its tiles");
  cmp->add_flag("--profile", ca.profile,
                "cpu: time each op of the network on every call (OUT.profile.json describes them; tune profile OUT "
                "prints where the time goes); the clock costs ~40 ns an op");
  cmp->add_flag("--allow-stale", ca.allow_stale,
                "use tuned schedules measured with another LLVM major version, schema or generator (re-emitted "
                "from their knobs), with a warning; without it such a workload gets the default schedule");

  auto* prof = app.add_subcommand("profile", "call a network compiled with tune compile --profile and print where its "
                                              "time goes, op by op and by kind of op");
  ProfileArgs pa;
  prof->add_option("so", pa.so, "the shared object (OUT.so, with OUT.so.profile.json beside it)")->required();
  prof->add_option("--min-time", pa.min_time, "seconds of timed calls")->capture_default_str();
  prof->add_option("--top", pa.top, "ops listed, the slowest first")->capture_default_str();
  prof->add_option("--report", pa.report, "text or json (every op)")->capture_default_str();

  auto* impr = app.add_subcommand("import-results",
                                   "read a bundle's results (tune-runner) into the database as measured records");
  std::string impr_dir, impr_results, impr_db = "sextant.db", impr_vk;
  impr->add_option("dir", impr_dir, "bundle directory (tune --measure bundle --out DIR)")->required();
  impr->add_option("--results", impr_results, "results file (default: DIR/results.json)");
  impr->add_option("--db", impr_db, "database")->capture_default_str();
  impr->add_option("--vulkan-device", impr_vk,
                   "vulkan: the device description FILE[:N] the bundle was compiled for, where its manifest names none "
                   "(bundles made before it did)");
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
  auto* model = app.add_subcommand("costmodel", "the learned cost model (formerly `tune model`)");
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
  model_train->add_option("-o,--output", mt.out,
                          "model file (its provenance goes to FILE.provenance.json, Glimpse's prior to FILE.prior.json)")
      ->required();
  model_train->add_option("--exclude", mt.exclude,
                          "leave out workloads whose 'workload key @ device' contains this text; repeatable");
  model_train->add_option("--epochs", mt.epochs, "training epochs")->capture_default_str();
  model_train->add_option("--max-per-workload", mt.max_per_workload, "records per workload (a random subsample beyond)")
      ->capture_default_str();
  model_train->add_option("--seed", mt.seed, "training seed")->capture_default_str();
  model->require_subcommand(1);

  auto* net = app.add_subcommand(
      "model",
      "tune a network: import it (ONNX, or MLIR with func.func @forward), tune its tasks (one per distinct conv / "
      "matmul workload, weighted by how often it runs) under one trial budget with a task scheduler, compile it with "
      "the tuned schedules and measure it whole against its untuned defaults. Resumable: the budget counts this "
      "machine's records of its tasks, so the same command goes on after Ctrl-C, and tunes no more once it is spent. "
      "ONNX operators: " + join(supportedOnnxOperators(), ", "));
  cli::ModelArgs na;
  net->add_option("file", na.input, "FILE.onnx (opset 13-17, f32, static shapes or --input-shape) or FILE.mlir")
      ->required();
  net->add_option("--db", na.db, "schedule database")->capture_default_str();
  net->add_option("-o,--output", na.out, "the compiled network (default: FILE's stem + .so, here); the untuned one "
                                          "goes to OUT.untuned.so")
      ->capture_default_str();
  net->add_option("--trials", na.trials,
                  "trial budget of the whole network (this machine's records of its tasks, earlier runs included); "
                  "default: --per-task x the number of tasks; 0: compile and measure only");
  net->add_option("--per-task", na.per_task, "default budget per task when --trials is not given")->capture_default_str();
  net->add_option("--batch", na.batch, "trials per round (one round tunes one task)")->capture_default_str();
  net->add_option("--scheduler", na.scheduler,
                  "gradient (MetaSchedule's/Ansor's: weight x expected latency decrease) or round-robin")
      ->capture_default_str();
  net->add_option("--strategy", na.strategy, "search strategy within a task (as tune --strategy)")->capture_default_str();
  net->add_option("--pretrained", na.pretrained, "as tune --pretrained")->capture_default_str();
  net->add_option("--seed", na.seed, "seed of the first round (round r of a task uses seed + r)")->capture_default_str();
  net->add_option("--time-budget", na.time_budget, "seconds of tuning; no new round starts after it (0: none)")
      ->capture_default_str();
  net->add_option("--threads", na.threads, "threads the kernels run on (0: every core)")->capture_default_str();
  net->add_option("--jobs", na.jobs, "parallel compilations (0: one per core)")->capture_default_str();
  net->add_option("--min-time", na.min_time, "seconds of timed calls per candidate")->capture_default_str();
  net->add_option("--model-min-time", na.model_min_time, "seconds of timed calls per whole-network measurement")
      ->capture_default_str();
  net->add_option("--input-shape", na.input_shapes,
                  "ONNX: static shapes for inputs with dynamic dimensions, NAME=D0,D1,... (';' between inputs)");
  net->add_option("--check", na.check,
                  "PREFIX: call the tuned network on PREFIX.in0.f32 (raw f32; .in1 ... for more inputs) and compare "
                  "with PREFIX.out0.f32 ...; exit 1 when an output is off by more than 1e-3 of the largest one");
  net->add_flag("!--no-epilogue-fusion", na.fuse_epilogues,
                "compute each op's bias, activation and residual add as a separate pass over its output instead of "
                "on each of its tiles");
  net->add_flag("--profile", na.profile,
                "after measuring, compile the tuned network again with a clock on each op and print where its time "
                "goes (tune profile)");
  net->add_option("--emit-mlir", na.emit_mlir, "also write the imported module (MLIR, linalg on tensors)");
  net->add_option("--report", na.report, "text or json")->capture_default_str();
  net->add_flag("-q,--quiet", na.quiet, "no progress on stderr");
  net->allow_extras();  // `tune costmodel eval ...` (the old spelling) gets a hint, not a parse error

  auto* hw = app.add_subcommand("hw", "the hardware table: datasheet figures with sources, and Blueprints");
  auto* hw_list = hw->add_subcommand("list", "list the devices of the table and the host CPU");
  auto* hw_show = hw->add_subcommand("show", "every figure of one device, its sources and its Blueprint");
  auto* hw_check = hw->add_subcommand("check", "query this machine's GPUs (CUDA, HIP) and compare them with the table; list its Vulkan devices");
  std::string hw_name;
  hw_show->add_option("name", hw_name, "device name (tune hw list), cpu, or vulkan (every Vulkan device and its limits)")->required();
  bool hw_json = false;
  hw_show->add_flag("--json", hw_json,
                    "vulkan: the devices as JSON, to compile for them on another machine (--vulkan-device FILE)");
  hw->require_subcommand(1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "tune: error: " << e.what() << " (see tune --help)\n";
    return 2;
  }
  if (*worker) return cmdWorker(wa);
  if (*show) return cmdShow(show_db, show_machine);
  if (*prof) {
    if (pa.report != "text" && pa.report != "json") return fail("--report must be text or json");
    return cmdProfile(pa);
  }
  if (*bestc) return cmdBest(bw);
  if (*exp) return cli::cmdExport(ea);
  if (*imp) return cli::cmdImport(imp_file, imp_db);
  if (*mrg) return cli::cmdMerge(mrg_a, mrg_b, mrg_out);
  if (*cmp) return cli::cmdCompile(ca);
  if (*net) {
    if (na.input != "eval" && na.input != "train" && !net->remaining().empty())
      return cli::fail("model: unexpected arguments: " + join(net->remaining(), " ") + " (see tune model --help)");
    json args;
    for (int i = 1; i < argc; ++i) args.push_back(maskSecrets(argv[i]));
    return cli::cmdModel(na, args.dump());
  }
  if (*model_eval) return cli::cmdModelEval(me);
  if (*model_train) {
    json args;
    for (int i = 1; i < argc; ++i) args.push_back(maskSecrets(argv[i]));
    mt.args_json = args.dump();
    return cli::cmdModelTrain(mt);
  }
  if (*impr) return cli::cmdImportResults(impr_dir, impr_results, impr_db, impr_vk);
  if (*bundle_cmd) {
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    return cli::cmdBundle(bundle_args, g_stop);
  }
  if (*dsc) {
    json args;
    for (int i = 1; i < argc; ++i) args.push_back(maskSecrets(argv[i]));
    return cmdDatasetCollect(dw, ds_count, ds_seed, ds_min_time, ds_jobs, ds_out, args.dump());
  }
  if (*hw_list) return cli::cmdHwList();
  if (*hw_show) return cli::cmdHwShow(hw_name, hw_json);
  if (*hw_check) return cli::cmdHwCheck();
  json args;  // stored with the run: never a password (issue #35)
  for (int i = 1; i < argc; ++i) args.push_back(maskSecrets(argv[i]));
  if (!ta.suite.empty()) return cmdTuneSuite(ta, args.dump());
  if (ta.workers >= 0) return cmdMakeStudy(ta, args.dump());
  return cmdTune(ta, args.dump());
}
