// tune --workers N (make a study, run N local workers) and tune worker (join studies): several
// processes, on one machine or many, tuning one workload together over one database (issue #17).
// The coordination is in the database (db/src/studies.cpp: claims with leases) and the loop in
// search/src/worker.cpp; this file turns a study back into the tune command that made it.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/common/strings.h"
#include "sextant/search/strategy.h"
#include "sextant/hwspec/target.h"
#include "sextant/search/tuner.h"
#include "tune_internal.h"

namespace sextant::cli {

using nlohmann::json;

int runLocalWorkers(const std::string& db, int n, int64_t study_id) {
  // Each compiles on one core: they share this machine.
  std::vector<pid_t> kids;
  for (int i = 0; i < n; ++i) {
    pid_t p = fork();
    if (p < 0) break;
    if (p == 0) {
      std::string study = std::to_string(study_id);
      const char* argv[] = {"tune", "worker", "--db", db.c_str(), "--study", study.c_str(), "--jobs", "1", "--quiet", nullptr};
      execv("/proc/self/exe", const_cast<char* const*>(argv));
      _exit(127);
    }
    kids.push_back(p);
  }
  int failed = n - int(kids.size());
  for (pid_t p : kids) {
    int status = 0;
    waitpid(p, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed;
}

int cmdMakeStudy(const TuneArgs& a, const std::string& argv_json) {
  if (a.trials <= 0) return fail("--trials must be at least 1");
  auto w = makeWorkload(a.w);
  if (!w) return fail(w.error());
  auto target = resolveTarget(a.w.target);
  if (!target) return fail(target.error());
  // Vulkan: every worker measures on its own machine's Vulkan device (records carry its machine
  // key). CUDA and HIP studies are not offered: use --measure bundle and tune-runner there.
  const bool vulkan = target->kind == TargetKind::Vulkan;
  if (target->isGpu() && !vulkan)
    return fail("studies tune the cpu and vulkan targets in this version (for " + target->name +
                ": --measure bundle, tune-runner on the GPU machine, tune import-results)");
  if (vulkan && (a.threads != 1 || a.measure != "device"))
    return fail("a vulkan study measures on each worker's device: --threads and --measure do not apply");
  const int threads = vulkan ? 1 : a.threads == 0 ? hostCpu().logical_cores : a.threads;
  if (!vulkan) target->arch = cpuArchWithThreads(target->arch, threads);
  {
    auto names = strategyNames();
    if (std::find(names.begin(), names.end(), a.strategy) == names.end())
      return fail("unknown strategy '" + a.strategy + "' (known: " + join(names, ", ") + ")");
  }
  auto db = Database::open(a.w.db);
  if (!db) return fail(db.error());
  if (vulkan) {
    auto g = gpuTargetInfo(*target);
    if (!g) return fail(g.error());
    if (!vulkanSupportsTypes(*w)) return fail("the vulkan target tunes f32 and f16 GEMMs with f32 results only");
    if (auto s = registerWorkloadAndTarget(*db, *w, *target, g->display, g->chip); !s) return fail(s.error());
  } else if (auto s = registerWorkloadAndTarget(*db, *w, *target, llvmHostCpuName(), hostCpu().vector_isa); !s) {
    return fail(s.error());
  }
  json args{{"op", opKindName(w->op)}, {"shape", w->shapeString()},
            {"dtype", a.w.dtype}, {"layout", a.w.layout}, {"weights", w->weights}, {"target", a.w.target}, {"strategy", a.strategy},
            {"trials", a.trials}, {"batch", a.batch}, {"min_time", a.min_time}, {"timeout", a.timeout},
            {"threads", threads}, {"seed", a.seed}, {"pretrained", a.pretrained}, {"argv", json::parse(argv_json)}};
  StudyRow st;
  st.workload_key = w->key(), st.target_key = target->key(), st.strategy = a.strategy, st.trials = a.trials;
  st.args = args.dump();
  auto id = db->createStudy(st);
  if (!id) return fail(id.error());
  printf("study %lld: %s on %s, %lld trials, strategy %s\n  workers join with: tune worker --db %s\n", (long long)*id,
         w->key().c_str(), target->key().c_str(), (long long)a.trials, a.strategy.c_str(), db->path().c_str());
  fflush(stdout);
  if (a.workers <= 0) return 0;
  const int failed = runLocalWorkers(a.w.db, a.workers, *id);
  auto studies = db->studies();
  if (!studies) return fail(studies.error());
  for (const auto& s : *studies)
    if (s.id == *id) printf("study %lld: %lld of %lld trials recorded by %d workers%s\n", (long long)s.id,
                            (long long)s.records, (long long)s.trials, a.workers,
                            failed ? (" (" + std::to_string(failed) + " stopped with an error)").c_str() : "");
  auto best = db->best(w->key(), target->key(), thisMachine());
  if (best && *best)
    printf("  best of this machine's measurements %.1f GFLOP/s (record %lld, %s): %s\n", (*best)->figure(),
           (long long)(*best)->id, (*best)->confirmed() ? "confirmed" : "measured once", (*best)->candidate.c_str());
  return failed ? 1 : 0;
}

int cmdWorker(const WorkerArgs& a) {
  if (a.lease <= 0 || a.heartbeat <= 0 || a.heartbeat >= a.lease)
    return fail("--heartbeat must be positive and shorter than --lease");
  auto db = Database::open(a.db, false);
  if (!db) return fail(db.error());
  const std::string name = hostName() + ":" + std::to_string(getpid());
  std::string target_key;  // studies' target keys start with it (cpu:ARCH-tN for threaded ones)
  if (!a.target.empty()) {
    auto t = resolveTarget(a.target);
    if (!t) return fail(t.error());
    target_key = t->key();
  }
  int tuned = 0;
  for (;;) {
    auto studies = db->studies();
    if (!studies) return fail(studies.error());
    const StudyRow* pick = nullptr;
    for (const auto& s : *studies) {
      if (a.study && s.id != a.study) continue;
      if (!target_key.empty() && s.target_key.rfind(target_key, 0) != 0) continue;
      if (s.status == "open" && s.records < s.trials) {
        pick = &s;
        break;
      }
    }
    if (!pick) {
      if (!a.quiet || tuned == 0)
        printf("worker %s: no open study left in %s (tuned %d)\n", name.c_str(), db->path().c_str(), tuned);
      return 0;
    }
    auto args = json::parse(pick->args, nullptr, false);
    if (!args.is_object()) return fail("study " + std::to_string(pick->id) + ": unreadable arguments");
    TuneArgs t;
    t.w.db = a.db;
    t.w.op = args.value("op", "gemm"), t.w.shape = args.value("shape", ""), t.w.dtype = args.value("dtype", "f32"), t.w.layout = args.value("layout", "NN");
    t.w.target = args.value("target", "cpu");
    t.w.weights = args.value("weights", false);
    t.strategy = args.value("strategy", std::string(kDefaultStrategy));
    t.trials = pick->trials;
    t.batch = args.value("batch", 16);
    t.min_time = args.value("min_time", 0.2), t.timeout = args.value("timeout", 0.0);
    t.threads = args.value("threads", 1);
    t.seed = args.value("seed", uint64_t(1)) * 1000003u + uint64_t(getpid());  // workers explore apart
    t.pretrained = args.value("pretrained", std::string("default"));
    t.jobs = a.jobs, t.quiet = a.quiet, t.fresh = true, t.final_rounds = 0;
    t.study = pick->id, t.worker_name = name, t.lease = a.lease, t.heartbeat = a.heartbeat;
    WorkerRow wr;
    wr.name = name, wr.host = hostName(), wr.pid = getpid(), wr.study_id = pick->id;
    auto st = resolveTarget(t.w.target);
    wr.device = st && st->isGpu() ? t.w.target : llvmHostCpuName();  // a GPU worker: its target (vulkan:N)
    if (auto s = db->registerWorker(wr); !s) return fail(s.error());
    const int64_t id = pick->id;
    int rc = cmdTune(t, json{{"worker", name}, {"study", id}}.dump());
    if (rc != 0) return rc;
    ++tuned;
    auto after = db->studies();
    if (!after) return fail(after.error());
    for (const auto& s : *after)
      if (s.id == id && s.records >= s.trials) db->finishStudy(id);
    if (a.study) return 0;
  }
}

}  // namespace sextant::cli
