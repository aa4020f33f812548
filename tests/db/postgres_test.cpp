// The schedule database on PostgreSQL (issue #17), against a real server started for the tests
// (pg_server.h): the same schema, migrations and semantics as SQLite, a lossless round trip
// SQLite -> PostgreSQL -> SQLite, processes creating one database at once, and one clear line
// (within 10 s) for an unreachable server, a refused login, a foreign database and a newer schema.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "pg_server.h"
#include "sextant/db/database.h"
#include "sextant/db/interchange.h"

using namespace sextant;

namespace {

pgtest::PgServer* server = nullptr;

class Postgres : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server = new pgtest::PgServer(); }
  static void TearDownTestSuite() {
    delete server;
    server = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(server->error().empty()) << server->error(); }
  // A fresh database on the server for one test.
  std::string freshDb(const std::string& name) {
    EXPECT_TRUE(server->createDatabase(name)) << name;
    return server->url(name);
  }
};

const char* kW = "gemm:NN:64x32x16:f32*f32->f32";
const char* kT = "cpu:x86_64-avx512";

void fill(Database& db, int records) {
  ASSERT_TRUE(db.upsertWorkload({kW, "gemm", 64, 32, 16, "f32", "f32", "f32", "NN", 65536}).ok());
  ASSERT_TRUE(db.upsertTarget({kT, "cpu", "x86_64-avx512", "AMD EPYC", "+avx512f"}).ok());
  RunRow run;
  run.workload_key = kW, run.target_key = kT, run.strategy = "model", run.seed = 7, run.space = "cpu_gemm_v3";
  run.space_fingerprint = "abc", run.trials_requested = records, run.args = "{\"trials\":3}";
  run.tool_version = "t", run.llvm_version = "22.1.8", run.host = "h", run.owner_pid = 42;
  auto id = db.beginRun(run);
  ASSERT_TRUE(id.ok()) << id.error();
  std::vector<RecordRow> rs;
  for (int i = 0; i < records; ++i) {
    RecordRow r;
    r.run_id = *id, r.workload_key = kW, r.target_key = kT;
    r.candidate = "tile_m=" + std::to_string(8 << i);
    r.knobs = "{\"tile_m\":" + std::to_string(8 << i) + "}";
    r.schedule = "// schedule with 'quotes' and ? marks " + std::to_string(i);
    r.status = i == 1 ? "compile_error" : "ok";
    r.message = i == 1 ? "it's broken?" : "";
    r.times_s = {1.0 / 3 + i, 2.5e-7, 0.1};
    r.median_s = 1.0 / 3 + i, r.cv = 0.0123456789012345, r.gflops = 123.456789012345 * (i + 1);
    r.compile_s = 0.75, r.max_abs_err = 1.5e-6;
    r.tool_version = "t", r.llvm_version = "22.1.8", r.cpu_model = "AMD EPYC", r.device = "cpu";
    r.created_at = "2026-11-24T01:02:0" + std::to_string(i) + "Z";
    r.stats = i == 2 ? "{\"registers\":64}" : "{}";
    rs.push_back(r);
  }
  ASSERT_TRUE(db.insertRecords(rs).ok());
  BaselineRow b;
  b.run_id = *id, b.name = "openblas", b.detail = "OpenBLAS 0.3.21 SkylakeX", b.status = "ok", b.times_s = {0.5};
  b.median_s = 0.5, b.gflops = 99.5;
  ASSERT_TRUE(db.insertBaseline(b).ok());
  ASSERT_TRUE(db.finishRun(*id, "finished").ok());
}

// Everything a record carries, except its id (databases number rows themselves).
std::string describe(const RecordRow& r) {
  std::string s = r.workload_key + "|" + r.target_key + "|" + r.candidate + "|" + r.knobs + "|" + r.schedule + "|" +
                  r.status + "|" + r.source + "|" + r.message + "|";
  char buf[64];
  for (double t : r.times_s) snprintf(buf, sizeof buf, "%.17g,", t), s += buf;
  for (double v : {r.median_s, r.cv, r.gflops, r.compile_s, r.max_abs_err}) snprintf(buf, sizeof buf, "|%.17g", v), s += buf;
  return s + "|" + r.tool_version + "|" + r.llvm_version + "|" + r.cpu_model + "|" + r.device + "|" + r.created_at +
         "|" + std::to_string(r.schema_version) + "|" + r.stats;
}

}  // namespace

TEST_F(Postgres, SameSemanticsAsSqlite) {
  auto db = Database::open(freshDb("semantics"));
  ASSERT_TRUE(db.ok()) << db.error();
  EXPECT_EQ(db->engine(), "postgresql");
  EXPECT_EQ(db->schemaVersion(), kSchemaVersion);
  fill(*db, 3);
  auto recs = db->records(kW, kT, true);
  ASSERT_TRUE(recs.ok()) << recs.error();
  ASSERT_EQ(recs->size(), 3u);
  EXPECT_EQ((*recs)[1].message, "it's broken?");
  EXPECT_EQ((*recs)[0].schedule, "// schedule with 'quotes' and ? marks 0");
  EXPECT_DOUBLE_EQ((*recs)[0].times_s[0], 1.0 / 3);  // doubles survive exactly
  auto best = db->best(kW, kT, "");
  ASSERT_TRUE(best.ok() && *best);
  EXPECT_EQ((*best)->candidate, "tile_m=32");  // the fastest ok one, not the compile error
  auto tried = db->triedCandidates(kW, kT, "");
  ASSERT_TRUE(tried.ok());
  EXPECT_EQ(tried->size(), 3u);
  auto runs = db->runs();
  ASSERT_TRUE(runs.ok()) << runs.error();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].records, 3);
  EXPECT_EQ((*runs)[0].ok_records, 2);
  EXPECT_EQ((*runs)[0].status, "finished");
  EXPECT_DOUBLE_EQ((*runs)[0].best_gflops, 123.456789012345 * 3);
  auto bl = db->baselines((*runs)[0].id);
  ASSERT_TRUE(bl.ok() && bl->size() == 1u);
  EXPECT_EQ((*bl)[0].detail, "OpenBLAS 0.3.21 SkylakeX");
  // Reopening finds the schema in place; a second run resumes as on SQLite.
  auto again = Database::open(server->url("semantics"));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->records(kW, kT)->size(), 3u);
}

TEST_F(Postgres, RoundTripSqlitePostgresSqliteIsLossless) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("sextant-pg-rt-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  auto a = Database::open(dir + "/a.db");
  ASSERT_TRUE(a.ok()) << a.error();
  fill(*a, 4);
  auto pg = Database::open(freshDb("roundtrip"));
  ASSERT_TRUE(pg.ok()) << pg.error();
  auto m1 = mergeDatabase(*pg, *a);
  ASSERT_TRUE(m1.ok()) << m1.error();
  EXPECT_EQ(m1->inserted, 4);
  auto c = Database::open(dir + "/c.db");
  ASSERT_TRUE(c.ok());
  auto m2 = mergeDatabase(*c, *pg);
  ASSERT_TRUE(m2.ok()) << m2.error();
  EXPECT_EQ(m2->inserted, 4);
  auto ra = a->allRecords(true), rc = c->allRecords(true);
  ASSERT_TRUE(ra.ok() && rc.ok());
  ASSERT_EQ(ra->size(), rc->size());
  for (size_t i = 0; i < ra->size(); ++i) EXPECT_EQ(describe((*ra)[i]), describe((*rc)[i]));
  // Merging again finds only duplicates.
  auto m3 = mergeDatabase(*pg, *a);
  ASSERT_TRUE(m3.ok());
  EXPECT_EQ(m3->inserted, 0);
  EXPECT_EQ(m3->duplicates, 4);
  std::filesystem::remove_all(dir);
}

TEST_F(Postgres, ProcessesCreatingOneDatabaseAtOnceAllSucceed) {
  const std::string url = freshDb("race");
  std::vector<pid_t> kids;
  for (int i = 0; i < 5; ++i) {
    pid_t p = fork();
    if (p == 0) {
      auto db = Database::open(url);
      _exit(db.ok() && db->schemaVersion() == kSchemaVersion ? 0 : 1);
    }
    kids.push_back(p);
  }
  for (pid_t p : kids) {
    int st = 0;
    waitpid(p, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
}

TEST_F(Postgres, BadInputIsOneClearLineWithin10Seconds) {
  auto timed = [](const std::string& url, const std::string& want) {
    auto t0 = std::chrono::steady_clock::now();
    auto db = Database::open(url);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(db.ok()) << url;
    EXPECT_NE(db.error().find(want), std::string::npos) << db.error();
    EXPECT_EQ(db.error().find('\n'), std::string::npos) << db.error();
    EXPECT_LT(s, 10.0) << url;
  };
  // Nothing listens there.
  timed("postgresql://sextant@127.0.0.1:" + std::to_string(pgtest::PgServer::freePort()) + "/x", "cannot connect");
  // No such role (the server refuses the login); the password is not shown.
  timed("postgresql://nobody:secret@127.0.0.1:" + std::to_string(server->port()) + "/sextant_test", "cannot connect");
  {
    auto db = Database::open("postgresql://nobody:secret@127.0.0.1:" + std::to_string(server->port()) + "/sextant_test");
    EXPECT_EQ(db.error().find("secret"), std::string::npos) << db.error();
  }
  // A database that is not Sextant's.
  freshDb("foreign");
  ASSERT_TRUE(server->psql("foreign", "CREATE TABLE invoices(id int)"));
  timed(server->url("foreign"), "not a Sextant schedule database");
  // A newer schema.
  {
    auto db = Database::open(freshDb("newer"));
    ASSERT_TRUE(db.ok());
  }
  ASSERT_TRUE(server->psql("newer", "UPDATE meta SET value='99' WHERE key='schema_version'"));
  timed(server->url("newer"), "newer Sextant");
}

// Claims (issue #17): two workers never hold one candidate, a study never takes more than its
// trials, an expired lease is re-issued, and a candidate that outlived max_attempts leases is given
// up (the caller records it as a failure). On PostgreSQL, as the workers use it.
TEST_F(Postgres, ClaimsLeasesAndTheStudyBudget) {
  auto db = Database::open(freshDb("claims"));
  ASSERT_TRUE(db.ok()) << db.error();
  fill(*db, 1);  // registers the workload and target (one record, outside the study)
  StudyRow st;
  st.workload_key = kW, st.target_key = kT, st.strategy = "random", st.trials = 5, st.args = "{}";
  auto sid = db->createStudy(st);
  ASSERT_TRUE(sid.ok()) << sid.error();
  auto a = db->claimCandidates(*sid, "w1", 60, 2, {"c1", "c2", "c3"});
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->claimed, (std::vector<std::string>{"c1", "c2", "c3"}));
  // w2 cannot take what w1 holds, and only 2 trials are left.
  auto b = db->claimCandidates(*sid, "w2", 60, 2, {"c2", "c4", "c5", "c6"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->claimed, (std::vector<std::string>{"c4", "c5"}));
  EXPECT_EQ(db->claimedCandidates(*sid)->size(), 5u);
  // w1's records release its claims in the same transaction; recorded candidates stay taken.
  RunRow run;
  run.workload_key = kW, run.target_key = kT, run.strategy = "random", run.space = "s", run.space_fingerprint = "f";
  run.tool_version = "t", run.llvm_version = "22", run.host = "h", run.study_id = *sid;
  auto rid = db->beginRun(run);
  ASSERT_TRUE(rid.ok()) << rid.error();
  std::vector<RecordRow> rows;
  for (const char* c : {"c1", "c2", "c3"}) {
    RecordRow r;
    r.run_id = *rid, r.workload_key = kW, r.target_key = kT, r.candidate = c, r.knobs = "{}", r.status = "ok";
    r.tool_version = r.llvm_version = r.cpu_model = r.device = "x";
    rows.push_back(r);
  }
  auto dropped = db->insertClaimedRecords(rows, "w1", *sid);
  ASSERT_TRUE(dropped.ok()) << dropped.error();
  EXPECT_EQ(*dropped, 0);
  EXPECT_EQ(db->claimedCandidates(*sid)->size(), 2u);
  auto c = db->claimCandidates(*sid, "w3", 60, 2, {"c1", "c7"});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->claimed.empty()) << "c1 is recorded and the study is full (3 records + 2 claims)";
  // w2 dies: its leases run out; the next worker gets them back (re-issued), then a third time
  // they are given up.
  auto d = db->claimCandidates(*sid, "w4", 0.05, 2, {});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->reissued.empty()) << "w2's leases have not expired yet";
  ASSERT_TRUE(db->heartbeat("w2", 0.05).ok());  // a short lease, then silence
  usleep(150 * 1000);
  auto e = db->claimCandidates(*sid, "w4", 0.05, 2, {});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->reissued, (std::vector<std::string>{"c4", "c5"}));
  usleep(150 * 1000);
  auto f = db->claimCandidates(*sid, "w5", 60, 2, {});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->abandoned, (std::vector<std::string>{"c4", "c5"}));
  EXPECT_TRUE(db->claimedCandidates(*sid)->empty());
  auto studies = db->studies();
  ASSERT_TRUE(studies.ok() && studies->size() == 1u);
  EXPECT_EQ((*studies)[0].records, 3);
}
