// Issue #35 at the database: which machine measured a record, the confirmed best against a lucky
// outlier, idempotent commits, claims taken over by another worker, the migration of an old
// database (every record kept, machines and confirmations filled in), masked passwords, and
// reading commands that write nothing into an empty file.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include "sextant/db/database.h"
#include "sextant/db/interchange.h"

using namespace sextant;

namespace {

const std::string kW = "gemm:NN:64x64x64:f32*f32->f32";  // 524288 FLOPs
const std::string kT = "cpu:x86_64-avx512";
const std::string kHere = "cpu:znver4:avx512:AuthenticAMD-25-17:2c";
const std::string kThere = "cpu:znver5:avx512:AuthenticAMD-26-2:2c";

struct TempDb {
  std::string path;
  explicit TempDb(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("sextant-mtest-" + std::to_string(getpid()) + "-" + name))
                 .string()) {
    cleanup();
  }
  ~TempDb() { cleanup(); }
  void cleanup() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
};

Database freshDb(const TempDb& t) {
  auto db = Database::open(t.path);
  EXPECT_TRUE(db.ok()) << db.error();
  EXPECT_TRUE(db->upsertWorkload({kW, "gemm", 64, 64, 64, "f32", "f32", "f32", "NN", 524288}).ok());
  EXPECT_TRUE(db->upsertTarget({kT, "cpu", "x86_64-avx512", "znver4", "avx512"}).ok());
  return std::move(*db);
}

int64_t beginRun(Database& db, const std::string& machine, int64_t study = 0) {
  RunRow r;
  r.workload_key = kW, r.target_key = kT, r.strategy = "random", r.seed = 1, r.space = "s";
  r.space_fingerprint = "fp", r.trials_requested = 10, r.tool_version = "t", r.llvm_version = "22", r.host = "h";
  r.machine = machine, r.study_id = study;
  auto id = db.beginRun(r);
  EXPECT_TRUE(id.ok()) << id.error();
  return id.ok() ? *id : 0;
}

// A record measured at `gflops` (its times agree: 524288 FLOPs).
RecordRow record(int64_t run, const std::string& cand, double gflops, const std::string& machine) {
  RecordRow r;
  r.run_id = run, r.workload_key = kW, r.target_key = kT, r.candidate = cand, r.knobs = "{\"a\":1}";
  r.schedule = "schedule " + cand, r.status = "ok";
  r.median_s = 524288 / (gflops * 1e9);
  r.times_s = {r.median_s};
  r.gflops = gflops, r.tool_version = "t", r.llvm_version = "22", r.cpu_model = "AMD EPYC", r.device = "znver4";
  r.machine = machine;
  return r;
}

std::vector<RecordRow> all(Database& db) { return *db.records(kW, kT, true); }

int64_t idOf(Database& db, const std::string& cand) {
  for (const auto& r : all(db))
    if (r.candidate == cand) return r.id;
  return 0;
}

// Repetitions whose median gives `gflops`.
std::vector<double> timesFor(double gflops) {
  double t = 524288 / (gflops * 1e9);
  return {t * 0.99, t, t * 1.01};
}

void sqlite(const std::string& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
  sqlite3_close(raw);
}

}  // namespace

TEST(Machines, MatchingIsByKeyOrAPrefixOfWholeFields) {
  EXPECT_TRUE(machineMatches(kHere, ""));
  EXPECT_TRUE(machineMatches(kHere, kHere));
  EXPECT_TRUE(machineMatches(kHere, "cpu:znver4"));
  EXPECT_TRUE(machineMatches("cpu:znver4:avx512:?", "cpu:znver4"));
  EXPECT_FALSE(machineMatches("cpu:znver45:avx512:?", "cpu:znver4"));  // a whole field, not a prefix of one
  EXPECT_FALSE(machineMatches(kThere, kHere));
  EXPECT_FALSE(machineMatches("cpu:znver4:avx512:?", kHere)) << "a migrated record is never this machine's";
}

TEST(Machines, LegacyRecordsGetThePartOfTheMachineTheyTell) {
  RecordRow r;
  r.source = "measured", r.device = "znver4", r.target_key = "cpu:x86_64-avx512-t2";
  EXPECT_EQ(legacyMachineOf(r, "x86_64-avx512-t2"), "cpu:znver4:avx512:?");
  r.device = "";
  EXPECT_EQ(legacyMachineOf(r, "x86_64-avx512"), "unknown");
  r.device = "NVIDIA H100 (sm_90, driver 12.4)", r.target_key = "h100:sm_90";
  EXPECT_EQ(legacyMachineOf(r, "sm_90"), "gpu:NVIDIA H100 (sm_90, driver 12.4):?");
  r.source = "compiled";
  EXPECT_EQ(legacyMachineOf(r, "sm_90"), "none");
}

// The 64^3 case: record 1 confirmed at 63.1; record 7 found at 66.4 (lucky), 62.8 when
// confirmed. Best, export and show must ship record 1; a record measured once at 70 does not beat
// a confirmed one; a record whose confirmation failed ranks below everything.
TEST(Machines, TheConfirmedBestBeatsALuckyOutlier) {
  TempDb t("confirmed.db");
  Database db = freshDb(t);
  int64_t run = beginRun(db, kHere);
  ASSERT_TRUE(db.insertRecords({record(run, "one", 61.0, kHere), record(run, "seven", 66.4, kHere),
                                record(run, "flaky", 80.0, kHere)})
                  .ok());
  ASSERT_TRUE(db.confirmRecord(idOf(db, "one"), timesFor(63.1), false).ok());
  ASSERT_TRUE(db.confirmRecord(idOf(db, "seven"), timesFor(62.8), false).ok());
  ASSERT_TRUE(db.confirmRecord(idOf(db, "flaky"), {}, /*failed=*/true).ok());
  auto best = db.best(kW, kT, kHere);
  ASSERT_TRUE(best.ok() && *best) << best.error();
  EXPECT_EQ((*best)->candidate, "one");
  EXPECT_NEAR((*best)->figure(), 63.1, 1e-6);
  EXPECT_EQ((*best)->measurements(), 2);
  ASSERT_TRUE(db.insertRecords({record(run, "lucky-once", 70.0, kHere)}).ok());
  EXPECT_EQ((*db.best(kW, kT, kHere))->candidate, "one") << "measured once does not beat confirmed";
  // A second confirmation pools the repetitions: the figure is the median of all of them.
  ASSERT_TRUE(db.confirmRecord(idOf(db, "seven"), timesFor(64.5), false).ok());
  ASSERT_TRUE(db.confirmRecord(idOf(db, "seven"), timesFor(64.6), false).ok());
  auto seven = all(db)[1];
  EXPECT_EQ(seven.confirmations, 3);
  EXPECT_EQ(seven.confirmed_times.size(), 9u);
  EXPECT_GT(seven.confirmed_gflops, 63.1);  // the median of the 9 repetitions: 63.96
  EXPECT_LT(seven.confirmed_gflops, 64.6);
  EXPECT_EQ((*db.best(kW, kT, kHere))->candidate, "seven");
  // The same ranking in memory (export ranks with ranksAbove).
  std::vector<RecordRow> rs = all(db);
  std::sort(rs.begin(), rs.end(), ranksAbove);
  EXPECT_EQ(rs.front().candidate, "seven");
  EXPECT_EQ(rs.back().candidate, "flaky");
  // A failed confirmation is for good.
  ASSERT_TRUE(db.confirmRecord(idOf(db, "flaky"), timesFor(90), false).ok());
  EXPECT_EQ(all(db)[2].confirmed_gflops, 0.0);
}

// Another machine's records (imported, merged, a shared server) are not this machine's: not its
// best, not "tried" here; every machine's with "".
TEST(Machines, AnotherMachinesRecordsAreNotThisMachines) {
  TempDb t("machines.db");
  Database db = freshDb(t);
  int64_t theirs = beginRun(db, kThere), mine = beginRun(db, kHere);
  ASSERT_TRUE(db.insertRecords({record(theirs, "a", 200.78, kThere), record(theirs, "b", 150, kThere)}).ok());
  ASSERT_TRUE(db.insertRecords({record(mine, "c", 100, kHere)}).ok());
  EXPECT_EQ((*db.best(kW, kT, kHere))->candidate, "c");
  EXPECT_EQ((*db.best(kW, kT, ""))->candidate, "a");
  EXPECT_EQ((*db.best(kW, kT, "cpu:znver5"))->candidate, "a");
  EXPECT_FALSE(*db.best(kW, kT, "cpu:znver3"));
  EXPECT_EQ(*db.triedCandidates(kW, kT, kHere), (std::set<std::string>{"c"}));
  EXPECT_EQ(db.triedCandidates(kW, kT, "")->size(), 3u);
  auto machines = db.machines();
  ASSERT_TRUE(machines.ok());
  ASSERT_EQ(machines->size(), 2u);
  // A run of this machine is not resumed by another.
  EXPECT_FALSE(*db.findUnfinishedRun(kW, kT, "random", 1, "fp", "cpu:other"));
  EXPECT_EQ((*db.findUnfinishedRun(kW, kT, "random", 1, "fp", kHere))->id, mine);
  // The records file carries the machine and the confirmations (format 2).
  ASSERT_TRUE(db.confirmRecord(idOf(db, "c"), timesFor(101), false).ok());
  auto text = exportRecordsJsonl(db, {});
  ASSERT_TRUE(text.ok());
  TempDb t2("machines2.db");
  auto db2 = Database::open(t2.path);
  ASSERT_TRUE(db2.ok());
  ASSERT_TRUE(importRecordsJsonl(*db2, *text, "x").ok());
  auto b2 = db2->best(kW, kT, kHere);
  ASSERT_TRUE(b2.ok() && *b2);
  EXPECT_EQ((*b2)->candidate, "c");
  EXPECT_TRUE((*b2)->confirmed());
  EXPECT_NEAR((*b2)->figure(), 101, 1e-6);
}

// A COMMIT whose acknowledgement was lost is sent again after the reconnection: the records carry
// uids, so the batch is stored once.
TEST(Machines, AReplayedCommitDoesNotDuplicate) {
  TempDb t("replay.db");
  Database db = freshDb(t);
  int64_t run = beginRun(db, kHere);
  std::vector<RecordRow> batch = {record(run, "a", 10, kHere), record(run, "b", 20, kHere)};
  batch[0].uid = "uid-a", batch[1].uid = "uid-b";
  ASSERT_TRUE(db.insertRecords(batch).ok());
  ASSERT_TRUE(db.insertRecords(batch).ok());  // the replay
  EXPECT_EQ(all(db).size(), 2u);
  EXPECT_EQ(all(db)[0].uid, "uid-a");
  // Records without a uid get one each.
  ASSERT_TRUE(db.insertRecords({record(run, "c", 5, kHere), record(run, "d", 5, kHere)}).ok());
  auto rs = all(db);
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_FALSE(rs[2].uid.empty());
  EXPECT_NE(rs[2].uid, rs[3].uid);
}

// A worker whose lease expired and whose candidate another worker took records nothing for it:
// exactly one record per candidate.
TEST(Machines, AClaimTakenOverIsRecordedByItsNewHolderOnly) {
  TempDb t("claims.db");
  Database db = freshDb(t);
  StudyRow st;
  st.workload_key = kW, st.target_key = kT, st.strategy = "random", st.trials = 4, st.args = "{}";
  auto sid = db.createStudy(st);
  ASSERT_TRUE(sid.ok()) << sid.error();
  ASSERT_EQ(db.claimCandidates(*sid, "w1", 0.05, 3, {"c1", "c2"})->claimed.size(), 2u);
  usleep(150 * 1000);  // w1 is silent past its lease (a network cut)
  auto taken = db.claimCandidates(*sid, "w2", 60, 3, {});
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken->reissued, (std::vector<std::string>{"c1", "c2"}));
  int64_t r1 = beginRun(db, kHere, *sid), r2 = beginRun(db, kHere, *sid);
  auto late = db.insertClaimedRecords({record(r1, "c1", 10, kHere), record(r1, "c2", 10, kHere)}, "w1", *sid);
  ASSERT_TRUE(late.ok()) << late.error();
  EXPECT_EQ(*late, 2) << "w1's measurements of candidates it no longer holds are dropped";
  auto holder = db.insertClaimedRecords({record(r2, "c1", 11, kHere), record(r2, "c2", 11, kHere)}, "w2", *sid);
  ASSERT_TRUE(holder.ok());
  EXPECT_EQ(*holder, 0);
  EXPECT_EQ(all(db).size(), 2u);
  for (const auto& r : all(db)) EXPECT_EQ(r.run_id, r2);
}

// A database of schema 3 (before issue #35) opens as schema 4 with every record: its machines
// read from what the records carry (never this machine's key), and the records its final
// comparisons re-measured confirmed with those measurements.
TEST(Machines, AMigratedOldDatabaseKeepsEveryRecord) {
  TempDb t("old.db");
  {
    Database db = freshDb(t);
    int64_t run = beginRun(db, kHere);
    ASSERT_TRUE(db.insertRecords({record(run, "fastest-once", 90, kHere), record(run, "confirmed", 70, kHere),
                                  record(run, "failed", 60, kHere)})
                    .ok());
    RecordRow compiled = record(run, "compiled", 1, kHere);
    compiled.source = "compiled", compiled.status = "not_measured", compiled.gflops = 0, compiled.times_s.clear();
    ASSERT_TRUE(db.insertRecords({compiled}).ok());
    BaselineRow ok;
    ok.run_id = run, ok.name = "tuned", ok.detail = "confirmed", ok.record_id = idOf(db, "confirmed");
    ok.status = "ok", ok.times_s = timesFor(72), ok.median_s = ok.times_s[1], ok.gflops = 72;
    ASSERT_TRUE(db.insertBaseline(ok).ok());
    BaselineRow bad = ok;
    bad.record_id = idOf(db, "failed"), bad.status = "crash", bad.times_s.clear();
    ASSERT_TRUE(db.insertBaseline(bad).ok());
  }
  // Back to schema 3: the columns and index of version 4 removed.
  sqlite(t.path,
         "DROP INDEX records_by_uid; ALTER TABLE records DROP COLUMN machine; ALTER TABLE records DROP COLUMN "
         "confirmations; ALTER TABLE records DROP COLUMN confirmed_times; ALTER TABLE records DROP COLUMN "
         "confirmed_gflops; ALTER TABLE records DROP COLUMN uid; ALTER TABLE runs DROP COLUMN machine; ALTER TABLE "
         "runs DROP COLUMN heartbeat; UPDATE meta SET value='3' WHERE key='schema_version';");
  auto db = Database::open(t.path);
  ASSERT_TRUE(db.ok()) << db.error();
  EXPECT_EQ(db->schemaVersion(), 4);
  auto rs = *db->records(kW, kT, true);
  ASSERT_EQ(rs.size(), 4u);
  for (const auto& r : rs) {
    EXPECT_EQ(r.machine, r.source == "measured" ? "cpu:znver4:avx512:?" : "none") << r.candidate;
    EXPECT_FALSE(r.schedule.empty());
  }
  EXPECT_EQ(rs[1].confirmations, 1);
  EXPECT_NEAR(rs[1].confirmed_gflops, 72, 1e-6);
  EXPECT_EQ(rs[2].confirmations, 1);
  EXPECT_EQ(rs[2].confirmed_gflops, 0.0);
  EXPECT_EQ((*db->runs())[0].machine, "cpu:znver4:avx512:?");
  EXPECT_FALSE(*db->best(kW, kT, kHere)) << "no migrated record is this machine's";
  EXPECT_EQ((*db->best(kW, kT, "cpu:znver4"))->candidate, "confirmed");
}

TEST(Machines, PasswordsAreMasked) {
  EXPECT_EQ(maskSecrets("postgresql://sextant:s3cr3t@db.example:5432/tune"), "postgresql://sextant:***@db.example:5432/tune");
  EXPECT_EQ(maskSecrets("--db=postgres://u:p%40ss@h/n --trials 5"), "--db=postgres://u:***@h/n --trials 5");
  EXPECT_EQ(maskSecrets("postgresql://h/n?user=u&password=hunter2&sslmode=require"),
            "postgresql://h/n?user=u&password=***&sslmode=require");
  EXPECT_EQ(maskSecrets("host=h password='a b' dbname=n"), "host=h password=*** dbname=n");
  EXPECT_EQ(maskSecrets("postgresql://u@h/n"), "postgresql://u@h/n");
  EXPECT_EQ(maskSecrets("sextant.db"), "sextant.db");
}

TEST(Machines, AReadingCommandWritesNothingIntoAnEmptyFile) {
  TempDb t("empty.db");
  { std::ofstream f(t.path); }
  auto db = Database::open(t.path, /*create=*/false);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().find("empty"), std::string::npos) << db.error();
  EXPECT_EQ(std::filesystem::file_size(t.path), 0u);
  EXPECT_FALSE(std::filesystem::exists(t.path + "-wal"));
}

// A "running" run of another host is alive while it commits batches (its heartbeat, on the
// database's clock): resuming it from here is refused, naming the host; a silent one (past the
// window) is taken over.
TEST(Machines, ARunningRunOfAnotherHostIsNotTakenOver) {
  TempDb t("hosts.db");
  Database db = freshDb(t);
  RunRow r;
  r.workload_key = kW, r.target_key = kT, r.strategy = "random", r.seed = 1, r.space = "s";
  r.space_fingerprint = "fp", r.trials_requested = 10, r.tool_version = "t", r.llvm_version = "22";
  r.host = "far-away", r.owner_pid = 4242, r.machine = kHere;
  auto first = db.claimOrBeginRun(r, true, nullptr);
  ASSERT_TRUE(first.ok()) << first.error();
  RunRow me = r;
  me.host = "here", me.owner_pid = 1;
  auto refused = db.claimOrBeginRun(me, true, [](const RunRow&) { return false; });
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("far-away"), std::string::npos) << refused.error();
  // Its last batch an hour ago (as after a crash there): taken over.
  sqlite(t.path, "UPDATE runs SET heartbeat = heartbeat - 3600 WHERE id = " + std::to_string(first->id));
  auto taken = db.claimOrBeginRun(me, true, [](const RunRow&) { return false; });
  ASSERT_TRUE(taken.ok()) << taken.error();
  EXPECT_TRUE(taken->resumed);
  EXPECT_EQ(taken->id, first->id);
}
