// Coordination overhead of workers (issue #17 goal: claim + commit under 10 ms per candidate with
// 4 workers): W processes on one study of a database (a PostgreSQL URL, or a SQLite file) each
// claim B candidates at a time and commit their records (the record inserts and the claim release
// in one transaction), as tune worker does with --batch B, N candidates each; prints the claim +
// commit time per candidate (the batch's time / B: median and 95th percentile over batches), and
// the total rate. Nothing is compiled or measured: this is the database's share alone.
// Usage: bench_claims DB [--workers W] [--candidates N] [--batch B]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "sextant/db/database.h"

using namespace sextant;

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_claims DB [--workers W] [--candidates N]\n");
    return 2;
  }
  std::string url = argv[1];
  int workers = 4, per = 200, batch = 16;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--workers")) workers = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--candidates")) per = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--batch")) batch = std::max(1, atoi(argv[i + 1]));
  }
  const std::string wk = "gemm:NN:64x64x64:f32*f32->f32", tk = "cpu:bench";
  int64_t study = 0;
  {
    auto db = Database::open(url);
    if (!db) return fprintf(stderr, "%s\n", db.error().c_str()), 2;
    db->upsertWorkload({wk, "gemm", 64, 64, 64, "f32", "f32", "f32", "NN", 524288});
    db->upsertTarget({tk, "cpu", "bench", "bench", ""});
    StudyRow s;
    s.workload_key = wk, s.target_key = tk, s.strategy = "bench", s.trials = int64_t(workers) * per, s.args = "{}";
    auto id = db->createStudy(s);
    if (!id) return fprintf(stderr, "%s\n", id.error().c_str()), 2;
    study = *id;
  }
  int pipes[2];
  if (pipe(pipes) != 0) return 2;
  auto t0 = std::chrono::steady_clock::now();
  for (int w = 0; w < workers; ++w) {
    if (fork() != 0) continue;
    close(pipes[0]);
    auto db = Database::open(url, false);
    if (!db) _exit(1);
    const std::string name = "bench-" + std::to_string(study) + "-" + std::to_string(w);
    RunRow run;
    run.workload_key = wk, run.target_key = tk, run.strategy = "bench", run.space = "s", run.space_fingerprint = "f";
    run.tool_version = "bench", run.llvm_version = "-", run.host = "h", run.study_id = study;
    auto rid = db->beginRun(run);
    if (!rid) _exit(1);
    std::vector<double> ms;
    for (int i = 0; i < per; i += batch) {
      std::vector<std::string> cands;
      for (int j = i; j < std::min(per, i + batch); ++j) cands.push_back("c" + std::to_string(w) + "_" + std::to_string(j));
      auto a = std::chrono::steady_clock::now();
      auto got = db->claimCandidates(study, name, 30, 2, cands);
      if (!got || got->claimed.size() != cands.size()) _exit(1);
      std::vector<RecordRow> rows;
      for (const auto& cand : cands) {
        RecordRow r;
        r.run_id = *rid, r.workload_key = wk, r.target_key = tk, r.candidate = cand, r.knobs = "{}", r.status = "ok";
        r.schedule = "// bench " + cand, r.times_s = {1e-3}, r.median_s = 1e-3, r.gflops = 1;
        r.tool_version = r.llvm_version = r.cpu_model = r.device = "bench";
        rows.push_back(r);
      }
      if (!db->insertClaimedRecords(rows, name, study)) _exit(1);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count() /
                   double(cands.size()));
    }
    if (write(pipes[1], ms.data(), ms.size() * sizeof(double)) < 0) _exit(1);
    _exit(0);
  }
  close(pipes[1]);
  std::vector<double> all;
  double buf[256];
  ssize_t n;
  while ((n = read(pipes[0], buf, sizeof buf)) > 0) all.insert(all.end(), buf, buf + n / ssize_t(sizeof(double)));
  int failed = 0, st = 0;
  while (wait(&st) > 0) failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failed || all.empty()) return fprintf(stderr, "%d workers failed\n", failed), 1;
  std::sort(all.begin(), all.end());
  printf("%d workers x %d candidates, batches of %d: claim + commit per candidate median %.2f ms, p95 %.2f ms, "
         "max %.2f ms; %.0f candidates/s in all\n",
         workers, per, batch, all[all.size() / 2], all[all.size() * 95 / 100], all.back(),
         double(workers) * per / wall);
  return 0;
}
