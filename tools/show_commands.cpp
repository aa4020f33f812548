// `tune show`, `tune best`, `tune --suite` and `tune dataset collect`.
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
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
#include "tune_internal.h"

using json = nlohmann::json;

namespace sextant::cli {

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
int cmdShow(const std::string& db_path, const std::string& machine_option) {
  auto db = Database::open(db_path, /*create=*/false);
  if (!db) return fail(db.error());
  const std::string me = thisMachine(), cpu_filter = machineFilter(machine_option, false),
                    gpu_filter = machineFilter(machine_option, true);
  // Which machines measured what (issue #35): a database may hold several machines' records
  // (import, merge, a shared server); figures of different machines are not comparable.
  auto machines = db->machines();
  if (!machines) return fail(machines.error());
  auto runs = db->runs();
  if (!runs) return fail(runs.error());
  if (machines->empty() && runs->empty()) {
    std::cout << db->path() << ": no records yet\n";
    return 0;
  }
  if (!machines->empty()) {
    printf("Machines whose measurements the database holds (this one: %s):\n", me.c_str());
    for (const auto& m : *machines)
      printf("  %-44s %7lld records, %7lld ok, %4lld confirmed  %s%s\n", m.key.c_str(), (long long)m.records,
             (long long)m.ok, (long long)m.confirmed, m.key == me ? "THIS MACHINE; " : "",
             describeMachineKey(m.key).c_str());
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  if (!runs->empty()) {
    printf("\n%-5s %-36s %-20s %-11s %-12s %9s %9s %10s %10s\n", "run", "workload", "target", "strategy", "status",
           "records", "failures", "unmeasured", "best GF/s");
    for (const auto& r : *runs) {
      printf("%-5lld %-36s %-20s %-11s %-12s %9lld %9lld %10lld %10.1f%s\n", (long long)r.id, r.workload_key.c_str(),
             r.target_key.c_str(), (r.strategy + ":" + std::to_string(r.seed)).c_str(), r.status.c_str(),
             (long long)r.records, (long long)(r.records - r.ok_records - r.unmeasured), (long long)r.unmeasured,
             r.best_gflops, r.machine == me ? "" : ("  (on " + r.machine + ")").c_str());
      std::pair<std::string, std::string> p{r.workload_key, r.target_key};
      if (std::find(pairs.begin(), pairs.end(), p) == pairs.end()) pairs.push_back(p);
    }
  }
  // Workloads with records but no run here (imported, merged) too.
  auto all = db->allRecords(false);
  if (!all) return fail(all.error());
  std::map<std::pair<std::string, std::string>, std::set<std::string>> machines_of;
  for (const auto& r : *all) {
    std::pair<std::string, std::string> p{r.workload_key, r.target_key};
    if (std::find(pairs.begin(), pairs.end(), p) == pairs.end()) pairs.push_back(p);
    if (r.source == "measured" && r.status == "ok") machines_of[p].insert(r.machine);
  }
  printf("\nBest schedule per workload and target, %s (confirmed figures first: docs/database.md):\n",
         cpu_filter.empty() ? "of every machine's measurements"
                            : ("of the measurements of " + cpu_filter + (gpu_filter.empty() ? " (GPU targets: every GPU's)" : "")).c_str());
  for (const auto& [w, t] : pairs) {
    const std::string& filter = t.rfind("cpu:", 0) == 0 ? cpu_filter : gpu_filter;
    auto best = db->best(w, t, filter);
    if (!best) return fail(best.error());
    std::vector<std::string> others;
    for (const auto& m : machines_of[{w, t}])
      if (!machineMatches(m, filter)) others.push_back(m);
    const std::string also = others.empty() ? "" : "\n    also measured by " + join(others, ", ") + " (--machine KEY)";
    if (!*best) {
      printf("  %s on %s: no successful measurement%s%s\n", w.c_str(), t.c_str(),
             filter.empty() ? "" : " by this machine", also.c_str());
      continue;
    }
    const RecordRow& b = **best;
    const std::string how = b.confirmed() ? "confirmed, " + std::to_string(b.measurements()) + " measurements"
                                          : "measured once, not confirmed";
    printf("  %s on %s: %.1f GFLOP/s (%s; record %lld, run %lld%s)\n    %s%s\n", w.c_str(), t.c_str(), b.figure(),
           how.c_str(), (long long)b.id, (long long)b.run_id,
           filter == b.machine || b.machine == me ? "" : (", " + b.machine).c_str(), b.candidate.c_str(), also.c_str());
  }
  // Studies and their workers (tune --workers, tune worker).
  auto studies = db->studies();
  if (!studies) return fail(studies.error());
  if (!studies->empty()) {
    printf("\nStudies (tune worker joins the open ones):\n");
    for (const auto& s : *studies)
      printf("  study %-4lld %-36s %-20s %-10s %lld/%lld records, %lld claimed now\n", (long long)s.id,
             s.workload_key.c_str(), s.target_key.c_str(), s.status.c_str(), (long long)s.records, (long long)s.trials,
             (long long)s.claims);
  }
  auto workers = db->workers();
  if (!workers) return fail(workers.error());
  if (!workers->empty()) {
    printf("\nWorkers:\n  %-28s %-20s %-6s %-16s %9s %9s %14s\n", "worker", "host", "study", "device", "measured",
           "per min", "last heartbeat");
    for (const auto& w : *workers)
      printf("  %-28s %-20s %-6lld %-16s %9lld %9.1f %12.0f s ago\n", w.name.c_str(), w.host.c_str(),
             (long long)w.study_id, w.device.c_str(), (long long)w.measured, w.per_minute, w.heartbeat_age_s);
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
  const std::string filter = machineFilter(a.machine, t->isGpu());
  auto best = db->best(w->key(), t->key(), filter);
  if (!best) return fail(best.error());
  if (!*best) {
    std::vector<std::string> others;
    auto recs = db->records(w->key(), t->key());
    if (!recs) return fail(recs.error());
    for (const auto& r : *recs)
      if (r.source == "measured" && r.status == "ok" && !machineMatches(r.machine, filter) &&
          std::find(others.begin(), others.end(), r.machine) == others.end())
        others.push_back(r.machine);
    return fail("no measured schedule for " + w->key() + " on " + t->key() + " in " + db->path() +
                (filter.empty() ? "" : " by machine " + filter) + otherMachinesHint(others));
  }
  const RecordRow& b = **best;
  std::cout << "// best measured: " << fmt("%.2f", b.figure()) << " GFLOP/s, "
            << (b.confirmed() ? "confirmed in a final comparison (median of " +
                                    std::to_string(b.confirmed_times.size()) + " repetitions over " +
                                    std::to_string(b.confirmations) + " re-measurement" +
                                    (b.confirmations == 1 ? "" : "s") + "; " + fmt("%.2f", b.gflops) + " when found)"
                              : "measured once, not confirmed (median of " + std::to_string(b.times_s.size()) +
                                    " repetitions)")
            << "\n// record " << b.id << ", run " << b.run_id << ", " << b.created_at << ", machine " << b.machine
            << "\n"
            << b.schedule;
  return 0;
}

// ---------------------------------------------------------------------------------------------
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
    t.w.op = opKindName(w.op);
    t.w.shape = w.shapeString();
    t.w.dtype = dtypeName(w.a_type);
    t.w.layout = layoutName(w.layout);
    t.w.weights = (a.w.weights || w.weights) && !w.batched();  // --weights, or a suite key with :weights
    if (a.workers >= 0) t.workers = 0;  // one study per workload; the workers below take them in turn
    int rc = a.workers >= 0 ? cmdMakeStudy(t, argv_json) : cmdTune(t, argv_json);
    if (rc == 130) return rc;
    worst = std::max(worst, rc);
    ++(rc == 0 ? done : failed);
  }
  if (a.workers > 0) {
    const int bad = runLocalWorkers(a.w.db, a.workers, 0);
    fprintf(stderr, "suite %s: %d studies tuned by %d local workers%s\n", suite->name.c_str(), done, a.workers,
            bad ? (" (" + std::to_string(bad) + " stopped with an error)").c_str() : "");
    return bad ? 1 : worst;
  }
  fprintf(stderr, "suite %s: %d workloads %s, %d failed (see above), %d skipped\n", suite->name.c_str(), done,
          a.workers == 0 ? "made into studies" : "tuned", failed, skipped);
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
  // A new run for the rest: resuming an interrupted one would count its records a second time
  // (they are in `have` already). The records already measured are never drawn again.
  t.fresh = true;
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
            {"machine", thisMachine()},
            {"logical_cores", hostCpu().logical_cores},
            {"cpu", {{"l1d_bytes", hostCpu().l1d_bytes}, {"l2_bytes", hostCpu().l2_bytes},
                     {"l3_bytes", hostCpu().l3_bytes}, {"cache_source", hostCpu().cache_source},
                     {"vector_bits", hostCpu().vector_bits}, {"vector_registers", hostCpu().vector_registers}}},
            {"host", host},
            {"tool_version", SEXTANT_VERSION},
            {"llvm_version", llvmVersion()},
            {"command", json::parse(argv_json)}};
  std::ofstream(out + ".provenance.json") << prov.dump(2) << "\n";
  printf("wrote %lld records of %s to %s (provenance: %s.provenance.json; database %s)\n", (long long)n,
         wl->key().c_str(), out.c_str(), out.c_str(), t.w.db.c_str());
  return 0;
}

}  // namespace sextant::cli
