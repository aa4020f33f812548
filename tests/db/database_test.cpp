#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
#include <sqlite3.h>
#include <algorithm>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "sextant/db/database.h"

using namespace sextant;

namespace {
struct TempDb {
  std::string path;
  explicit TempDb(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("sextant-dbtest-" + std::to_string(getpid()) + "-" + name))
                 .string()) {
    cleanup();
  }
  ~TempDb() { cleanup(); }
  void cleanup() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
};

void seed(Database& db) {
  ASSERT_TRUE(db.upsertWorkload({"gemm:NN:8x8x8:f32*f32->f32", "gemm", 8, 8, 8, "f32", "f32", "f32", "NN", 1024}).ok());
  ASSERT_TRUE(db.upsertTarget({"cpu:x86_64-avx512", "cpu", "x86_64-avx512", "test", "avx512"}).ok());
}

const std::string kMachine = "cpu:test:avx512:Vendor-1-2:2c";

RunRow run(const std::string& strategy = "random", int64_t seed = 1) {
  RunRow r;
  r.machine = kMachine;
  r.workload_key = "gemm:NN:8x8x8:f32*f32->f32";
  r.target_key = "cpu:x86_64-avx512";
  r.strategy = strategy;
  r.seed = seed;
  r.space = "s";
  r.space_fingerprint = "fp";
  r.trials_requested = 10;
  r.tool_version = "t";
  r.llvm_version = "22";
  r.host = "h";
  return r;
}

RecordRow record(int64_t run_id, const std::string& cand, double gflops, const std::string& status = "ok") {
  RecordRow r;
  r.run_id = run_id;
  r.workload_key = "gemm:NN:8x8x8:f32*f32->f32";
  r.target_key = "cpu:x86_64-avx512";
  r.candidate = cand;
  r.knobs = "{\"a\":1}";
  r.schedule = "schedule for " + cand;
  r.status = status;
  r.times_s = {0.001, 0.002, 0.0015};
  r.median_s = 0.0015;
  r.cv = 0.1;
  r.gflops = gflops;
  r.compile_s = 0.2;
  r.tool_version = "t";
  r.llvm_version = "22";
  r.cpu_model = "cpu";
  r.device = "dev";
  r.machine = kMachine;
  return r;
}
}  // namespace

TEST(Database, RoundTripsRecords) {
  TempDb t("rt.db");
  auto db = Database::open(t.path);
  ASSERT_TRUE(db.ok()) << db.error();
  EXPECT_EQ(db->schemaVersion(), kSchemaVersion);
  seed(*db);
  auto id = db->beginRun(run());
  ASSERT_TRUE(id.ok()) << id.error();
  auto ins = db->insertRecords({record(*id, "a=1", 10), record(*id, "a=2", 30), record(*id, "a=3", 0, "crash")});
  ASSERT_TRUE(ins.ok()) << ins.error();
  auto recs = db->records("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512", true);
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 3u);
  EXPECT_EQ((*recs)[1].candidate, "a=2");
  EXPECT_EQ((*recs)[1].times_s, (std::vector<double>{0.001, 0.002, 0.0015}));
  EXPECT_EQ((*recs)[1].schedule, "schedule for a=2");
  EXPECT_EQ((*recs)[2].status, "crash");
  auto best = db->best("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512", kMachine);
  ASSERT_TRUE(best.ok() && best->has_value());
  EXPECT_EQ((*best)->candidate, "a=2");
  auto tried = db->triedCandidates("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512", kMachine);
  EXPECT_EQ(tried->size(), 3u);

  // Reopen: everything is still there.
  db = Database::open(t.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->records("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512")->size(), 3u);
  auto runs = db->runs();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].records, 3);
  EXPECT_EQ((*runs)[0].ok_records, 2);
  EXPECT_DOUBLE_EQ((*runs)[0].best_gflops, 30);
}

TEST(Database, FindsUnfinishedRunsForResume) {
  TempDb t("resume.db");
  auto db = Database::open(t.path);
  ASSERT_TRUE(db.ok());
  seed(*db);
  auto done = db->beginRun(run());
  ASSERT_TRUE(db->finishRun(*done, "finished").ok());
  auto none = db->findUnfinishedRun("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512", "random", 1, "fp", kMachine);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto killed = db->beginRun(run());  // never finished (as after kill -9)
  db->insertRecords({record(*killed, "a=1", 5)});
  auto found = db->findUnfinishedRun("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512", "random", 1, "fp", kMachine);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->id, *killed);
  EXPECT_EQ((*found)->records, 1);
  // Other settings do not resume it.
  EXPECT_FALSE(db->findUnfinishedRun("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512", "random", 2, "fp", kMachine)->has_value());
}

TEST(Database, BatchIsAllOrNothing) {
  TempDb t("atomic.db");
  auto db = Database::open(t.path);
  seed(*db);
  auto id = db->beginRun(run());
  auto bad = record(*id, "a=2", 1);
  bad.workload_key = "no-such-workload";  // violates NOT NULL on workload_id
  EXPECT_FALSE(db->insertRecords({record(*id, "a=1", 1), bad}).ok());
  EXPECT_EQ(db->records("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512")->size(), 0u);
}

TEST(Database, RejectsFilesThatAreNotSextantDatabases) {
  TempDb t("junk.db");
  { std::ofstream(t.path) << "this is not a database, just some text that is long enough to have a header......"; }
  auto db = Database::open(t.path);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().find("not a SQLite database"), std::string::npos) << db.error();

  TempDb other("other.db");
  sqlite3* raw;
  sqlite3_open(other.path.c_str(), &raw);
  sqlite3_exec(raw, "CREATE TABLE x(y)", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto db2 = Database::open(other.path);
  ASSERT_FALSE(db2.ok());
  EXPECT_NE(db2.error().find("not a Sextant"), std::string::npos) << db2.error();
}

TEST(Database, TruncatedDatabaseIsAClearError) {
  TempDb t("truncated.db");
  {
    auto db = Database::open(t.path);
    ASSERT_TRUE(db.ok());
    seed(*db);
    auto id = db->beginRun(run());
    std::vector<RecordRow> many;
    for (int i = 0; i < 300; ++i) many.push_back(record(*id, "a=" + std::to_string(i), i));
    ASSERT_TRUE(db->insertRecords(many).ok());
  }
  // Checkpoint the WAL into the main file, then cut the file in half.
  sqlite3* raw;
  sqlite3_open(t.path.c_str(), &raw);
  sqlite3_exec(raw, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto size = std::filesystem::file_size(t.path);
  ASSERT_GT(size, 8192u);
  std::filesystem::resize_file(t.path, size / 2);
  auto db = Database::open(t.path);
  std::string err;
  if (!db.ok()) {
    err = db.error();
  } else {
    auto recs = db->records("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512");
    ASSERT_FALSE(recs.ok()) << "a truncated database read back " << recs->size() << " records without an error";
    err = recs.error();
  }
  EXPECT_NE(err.find(t.path), std::string::npos) << err;
  EXPECT_NE(err.find("corrupt"), std::string::npos) << err;
}

TEST(Database, RejectsANewerSchema) {
  TempDb t("newer.db");
  { ASSERT_TRUE(Database::open(t.path).ok()); }
  sqlite3* raw;
  sqlite3_open(t.path.c_str(), &raw);
  sqlite3_exec(raw, "UPDATE meta SET value='99' WHERE key='schema_version'", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto db = Database::open(t.path);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().find("schema version 99"), std::string::npos) << db.error();
}

TEST(Database, UnwritableLocationIsAClearError) {
  auto db = Database::open("/nonexistent-dir/sub/x.db");
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().find("/nonexistent-dir/sub/x.db"), std::string::npos);
  EXPECT_FALSE(Database::open("/tmp/definitely-missing.db", /*create=*/false).ok());
}

TEST(Database, ConcurrentWritersLoseNothing) {
  TempDb t("concurrent.db");
  {
    auto db = Database::open(t.path);
    seed(*db);
  }
  auto writer = [&](int w) {
    auto db = Database::open(t.path);
    ASSERT_TRUE(db.ok()) << db.error();
    auto id = db->beginRun(run("random", w));
    ASSERT_TRUE(id.ok()) << id.error();
    for (int b = 0; b < 20; ++b) {
      std::vector<RecordRow> batch;
      for (int i = 0; i < 10; ++i) {
        std::string cand = std::to_string(w);  // "W-N", built in steps (GCC 12 -Wrestrict false positive)
        cand += '-';
        cand += std::to_string(b * 10 + i);
        batch.push_back(record(*id, cand, i));
      }
      auto s = db->insertRecords(batch);
      ASSERT_TRUE(s.ok()) << s.error();
    }
  };
  std::thread a(writer, 1), b(writer, 2), c(writer, 3);
  a.join(), b.join(), c.join();
  auto db = Database::open(t.path);
  EXPECT_EQ(db->records("gemm:NN:8x8x8:f32*f32->f32", "cpu:x86_64-avx512")->size(), 600u);
  EXPECT_EQ(db->runs()->size(), 3u);
}

// Issue #12: processes started at the same moment (released together from a pipe), 50 rounds
// each, from a missing file and from an interrupted run. Every start opens the database (none
// fails), exactly one owns the run, and the others are refused naming the owner.
namespace {
struct RaceOutcome {
  int opened = 0, owners = 0, resumed = 0, refused = 0, other = 0;
  std::string first_error;
};
RaceOutcome race(const std::string& path, int procs, bool seed_first) {
  int start[2], results[2], hold[2];
  EXPECT_EQ(pipe(start), 0);
  EXPECT_EQ(pipe(results), 0);
  EXPECT_EQ(pipe(hold), 0);
  std::vector<pid_t> kids;
  for (int p = 0; p < procs; ++p) {
    pid_t pid = fork();
    if (pid == 0) {
      close(start[1]), close(results[0]), close(hold[1]);
      char c;
      (void)!read(start[0], &c, 1);  // released when the parent closes the pipe
      std::string line;
      auto db = Database::open(path);
      if (!db) {
        line = "E" + db.error();
      } else {
        if (seed_first) {
          (void)db->upsertWorkload({"gemm:NN:8x8x8:f32*f32->f32", "gemm", 8, 8, 8, "f32", "f32", "f32", "NN", 1024});
          (void)db->upsertTarget({"cpu:x86_64-avx512", "cpu", "x86_64-avx512", "test", "avx512"});
        }
        RunRow r = run();
        r.owner_pid = getpid();
        auto live = [](const RunRow& q) { return q.status == "running" && q.owner_pid > 0 && kill(pid_t(q.owner_pid), 0) == 0; };
        auto c = db->claimOrBeginRun(r, true, live);
        if (!c) line = c.error().find("is being tuned by process") != std::string::npos ? "R" : "E" + c.error();
        else line = c->resumed ? "S" : "N";
      }
      line = line.substr(0, 200) + "\n";
      (void)!write(results[1], line.data(), line.size());
      (void)!read(hold[0], &c, 1);  // alive until every process has tried
      _exit(0);
    }
    kids.push_back(pid);
  }
  close(start[0]), close(results[1]), close(hold[0]);
  close(start[1]);  // go
  RaceOutcome o;
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = read(results[0], buf, sizeof buf)) > 0;) {
    all.append(buf, size_t(n));
    if (std::count(all.begin(), all.end(), '\n') == procs) break;
  }
  close(hold[1]);
  for (pid_t k : kids) waitpid(k, nullptr, 0);
  close(results[0]);
  std::stringstream ss(all);
  for (std::string line; std::getline(ss, line);) {
    if (line.empty()) continue;
    o.opened += line[0] != 'E' || line.find("being tuned") != std::string::npos;
    if (line[0] == 'N') ++o.owners;
    else if (line[0] == 'S') ++o.owners, ++o.resumed;
    else if (line[0] == 'R') ++o.refused;
    else {
      ++o.other;
      if (o.first_error.empty()) o.first_error = line;
    }
  }
  return o;
}
// The figures docs/measurement.md cites ("Reliability").
void report(const char* what, const RaceOutcome& t) {
  std::cout << "race " << what << ": 5 processes x 50 rounds: " << t.opened << " of 250 starts opened the database, "
            << t.owners << " owners (one per round), " << t.refused << " refused naming the owner, " << t.other
            << " failed starts\n";
}
}  // namespace

TEST(Database, ProcessesCreatingOneDatabaseTogetherAllStartAndOneOwnsTheRun) {
  RaceOutcome total;
  for (int round = 0; round < 50; ++round) {
    TempDb t("race-new.db");
    RaceOutcome o = race(t.path, 5, true);
    ASSERT_EQ(o.other, 0) << "round " << round << ": " << o.first_error;
    ASSERT_EQ(o.owners, 1) << "round " << round;
    ASSERT_EQ(o.refused, 4) << "round " << round;
    auto db = Database::open(t.path);
    ASSERT_EQ(db->runs()->size(), 1u);
    total.opened += o.opened, total.owners += o.owners, total.refused += o.refused, total.other += o.other;
  }
  report("from a missing file", total);
}

TEST(Database, ProcessesResumingAnInterruptedRunTogetherLeaveOneOwner) {
  RaceOutcome total;
  for (int round = 0; round < 50; ++round) {
    TempDb t("race-resume.db");
    {
      auto db = Database::open(t.path);
      seed(*db);
      RunRow r = run();
      r.owner_pid = 0;
      auto id = db->beginRun(r);
      ASSERT_TRUE(id);
      ASSERT_TRUE(db->finishRun(*id, "interrupted"));
    }
    RaceOutcome o = race(t.path, 5, false);
    ASSERT_EQ(o.other, 0) << "round " << round << ": " << o.first_error;
    ASSERT_EQ(o.owners, 1) << "round " << round;
    ASSERT_EQ(o.resumed, 1) << "round " << round << ": the interrupted run must be resumed, not a new one begun";
    auto db = Database::open(t.path);
    ASSERT_EQ(db->runs()->size(), 1u);
    total.opened += o.opened, total.owners += o.owners, total.refused += o.refused, total.other += o.other;
  }
  report("resuming an interrupted run", total);
}
