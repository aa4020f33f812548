// Workers on a real PostgreSQL server (issue #17): three `tune worker` processes tune one study
// together; one is killed with -9 while it holds claims. At the end every candidate of the study
// was measured exactly once, the killed worker's claimed candidates were measured by the others
// (re-issued when its leases expired), and the records number exactly the trials asked.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "../db/pg_server.h"
#include "helpers.h"

using namespace e2e;

namespace {

// psql -At output of one query.
std::string query(const sextant::pgtest::PgServer& s, const std::string& db, const std::string& sql) {
  std::string cmd = "psql -At -h 127.0.0.1 -p " + std::to_string(s.port()) + " -U sextant -d " + db + " -c \"" + sql + "\" 2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

pid_t startWorker(const std::string& url, const std::string& err = "/dev/null", const char* lease = "4",
                  const char* heartbeat = "0.5") {
  fflush(stdout);  // the child must not write the test's buffered output again
  fflush(stderr);
  pid_t p = fork();
  if (p == 0) {
    setpgid(0, 0);
    freopen("/dev/null", "w", stdout);
    freopen(err.c_str(), "w", stderr);
    execl(TUNE_BIN, "tune", "worker", "--db", url.c_str(), "--lease", lease, "--heartbeat", heartbeat, "--jobs", "1",
          "-q", (char*)nullptr);
    _exit(127);
  }
  return p;
}

std::string hostName() {
  char b[256] = {0};
  gethostname(b, sizeof b - 1);
  return b;
}

}  // namespace

TEST(Workers, ThreeWorkersOneKilledEveryCandidateMeasuredOnce) {
  sextant::pgtest::PgServer server;
  ASSERT_TRUE(server.error().empty()) << server.error();
  const std::string url = server.url();
  const int trials = 24;
  Outcome st = tune("--op gemm --shape 96x96x96 --trials " + std::to_string(trials) +
                    " --batch 4 --min-time 0.4 --strategy random --workers 0 --db " + url);
  ASSERT_EQ(st.code, 0) << st.err << st.out;
  EXPECT_NE(st.out.find("study 1:"), std::string::npos) << st.out;
  std::vector<pid_t> w = {startWorker(url), startWorker(url), startWorker(url)};
  // Kill the first worker as soon as it holds claims (mid-batch).
  const std::string victim = hostName() + ":" + std::to_string(w[0]);
  std::set<std::string> held;
  for (int i = 0; i < 400 && held.empty(); ++i) {
    std::string out = query(server, "sextant_test", "SELECT candidate FROM claims WHERE worker='" + victim + "'");
    for (size_t a = 0, b; a < out.size(); a = b + 1) {
      b = out.find('\n', a);
      if (b == std::string::npos) b = out.size();
      if (b > a) held.insert(out.substr(a, b - a));
    }
    if (held.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(held.empty()) << "the first worker never claimed anything";
  kill(w[0], SIGKILL);
  int status = 0;
  waitpid(w[0], &status, 0);
  for (size_t i = 1; i < w.size(); ++i) {
    waitpid(w[i], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker " << i;
  }
  EXPECT_EQ(query(server, "sextant_test", "SELECT count(*) FROM records"), std::to_string(trials));
  EXPECT_EQ(query(server, "sextant_test", "SELECT count(DISTINCT candidate) FROM records"), std::to_string(trials));
  EXPECT_EQ(query(server, "sextant_test", "SELECT count(*) FROM claims"), "0");
  EXPECT_EQ(query(server, "sextant_test", "SELECT status FROM studies WHERE id=1"), "finished");
  // What the killed worker held was measured once, by another worker.
  for (const std::string& c : held) {
    EXPECT_EQ(query(server, "sextant_test", "SELECT count(*) FROM records WHERE candidate='" + c + "'"), "1") << c;
    EXPECT_EQ(query(server, "sextant_test",
                    "SELECT count(*) FROM records r JOIN runs u ON u.id=r.run_id WHERE r.candidate='" + c +
                        "' AND u.owner_pid=" + std::to_string(w[0])),
              "0")
        << c << " was recorded by the killed worker";
  }
  // tune show lists the workers.
  Outcome show = tune("show --db " + url);
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find(victim), std::string::npos) << show.out;
}

// The server restarts under running workers: they say so, wait, reconnect and finish the study;
// nothing is lost or measured twice.
TEST(Workers, SurviveAServerRestart) {
  sextant::pgtest::PgServer server;
  ASSERT_TRUE(server.error().empty()) << server.error();
  const std::string url = server.url();
  const int trials = 16;
  Outcome st = tune("--op gemm --shape 96x96x96 --trials " + std::to_string(trials) +
                    " --batch 2 --min-time 0.4 --strategy random --workers 0 --db " + url);
  ASSERT_EQ(st.code, 0) << st.err << st.out;
  const std::string err0 = tmp("worker0.err"), err1 = tmp("worker1.err");
  std::vector<pid_t> w = {startWorker(url, err0), startWorker(url, err1)};
  // Both workers running (each has opened the database and registered its run) and measuring.
  // Waiting for the first record alone let one worker still be starting when the server went
  // down: it could not open the database and exited with "cannot connect" (2026-11-24, and a
  // fresh-clone .ci/run on 2026-11-26), which is a worker that never ran, not one that lost it.
  const std::string both = "SELECT count(*) FROM runs WHERE owner_pid IN (" + std::to_string(w[0]) + ", " +
                           std::to_string(w[1]) + ")";
  for (int i = 0; i < 400; ++i) {
    if (query(server, "sextant_test", both) == "2" &&
        query(server, "sextant_test", "SELECT count(*) FROM records") != "0")
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(query(server, "sextant_test", both), "2") << "the workers did not start";
  server.stop();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ASSERT_TRUE(server.start());
  int status = 0;
  for (pid_t p : w) {
    waitpid(p, &status, 0);
    // (2026-11-24 and 2026-11-26 a worker exited non-zero here before the wait above covered both.)
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "status " << status << "; the workers said:\n" << slurp(err0) << slurp(err1);
  }
  EXPECT_EQ(query(server, "sextant_test", "SELECT count(*) FROM records"), std::to_string(trials));
  EXPECT_EQ(query(server, "sextant_test", "SELECT count(DISTINCT candidate) FROM records"), std::to_string(trials));
  const std::string said = slurp(err0) + slurp(err1);
  EXPECT_NE(said.find("lost the connection"), std::string::npos) << said;
  EXPECT_NE(said.find("reconnected"), std::string::npos) << said;
  std::filesystem::remove(err0);
  std::filesystem::remove(err1);
}

// Issue #35: a worker that cannot renew its lease (here: frozen with SIGSTOP for longer than its
// lease, as a worker whose network is cut) stops measuring and says so; its candidates go to the
// other worker, and every candidate is recorded exactly once. A password in the database URL is
// never stored, printed or put in the JSON report.
TEST(Workers, ALostLeaseStopsMeasuringAndNoCandidateIsRecordedTwice) {
  sextant::pgtest::PgServer server;
  ASSERT_TRUE(server.error().empty()) << server.error();
  // (The test server trusts local connections: the password is accepted and ignored.)
  const std::string secret = "Pa55w0rd-never-stored";
  std::string url = server.url();
  url.insert(url.find('@'), ":" + secret);
  const int trials = 16;
  Outcome st = tune("--op gemm --shape 96x96x96 --trials " + std::to_string(trials) +
                    " --batch 4 --min-time 0.3 --strategy random --workers 0 --report json --db " + url);
  ASSERT_EQ(st.code, 0) << st.err << st.out;
  EXPECT_EQ((st.out + st.err).find(secret), std::string::npos) << st.out << st.err;
  const std::string err0 = tmp("frozen.err"), err1 = tmp("other.err");
  pid_t frozen = startWorker(url, err0, "1.5", "0.3");
  const std::string name = hostName() + ":" + std::to_string(frozen);
  for (int i = 0; i < 400; ++i) {
    if (query(server, "sextant_test", "SELECT count(*) FROM claims WHERE worker='" + name + "'") != "0") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  kill(-frozen, SIGSTOP);  // its heartbeat stops; its leases run out on the server's clock
  pid_t other = startWorker(url, err1, "1.5", "0.3");
  std::this_thread::sleep_for(std::chrono::seconds(4));
  kill(-frozen, SIGCONT);
  int status = 0;
  for (pid_t p : {frozen, other}) {
    waitpid(p, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(err0) << slurp(err1);
  }
  EXPECT_EQ(query(server, "sextant_test", "SELECT count(*) FROM records"), std::to_string(trials));
  EXPECT_EQ(query(server, "sextant_test", "SELECT count(DISTINCT candidate) FROM records"), std::to_string(trials));
  EXPECT_NE(slurp(err0).find("could not renew its lease"), std::string::npos) << slurp(err0);
  EXPECT_NE(slurp(err0).find("stopped measuring"), std::string::npos) << slurp(err0);
  // The password: nowhere in the database, the output or the report.
  for (const char* sql : {"SELECT count(*) FROM runs WHERE args LIKE '%" , "SELECT count(*) FROM studies WHERE args LIKE '%"})
    EXPECT_EQ(query(server, "sextant_test", std::string(sql) + secret + "%'"), "0") << sql;
  EXPECT_NE(query(server, "sextant_test", "SELECT args FROM studies").find(":***@"), std::string::npos);
  Outcome show = tune("show --db " + url);
  EXPECT_EQ((show.out + show.err).find(secret), std::string::npos);
  Outcome bad = tune("show --db postgresql://sextant:" + secret + "@127.0.0.1:1/nowhere");
  EXPECT_NE(bad.code, 0);
  EXPECT_EQ((bad.out + bad.err).find(secret), std::string::npos) << bad.err;
  EXPECT_EQ((slurp(err0) + slurp(err1)).find(secret), std::string::npos);
  std::filesystem::remove(err0);
  std::filesystem::remove(err1);
}

// A suite with --workers: one study per workload, taken in turn by the local workers; the same on
// SQLite (workers on one machine need no server).
TEST(Workers, SuiteBecomesOneStudyPerWorkloadOnSqlite) {
  const std::string db = tmp("suite-workers.db"), suite = tmp("mini-suite.json");
  removeDb(db);
  std::ofstream(suite) << R"({"format": "sextant-suite", "version": 1, "name": "mini", "description": "two small GEMMs",
    "source": "test", "workloads": [{"name": "a", "key": "gemm:NN:64x64x64:f32*f32->f32"},
                                    {"name": "b", "key": "gemm:NN:96x64x32:f32*f32->f32:weights"}]})";
  Outcome r = tune("--suite " + suite + " --trials 5 --min-time 0.05 --batch 2 --strategy random --workers 2 --db " + db);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  Outcome show = tune("show --db " + db);
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("gemm:NN:64x64x64:f32*f32->f32        cpu"), std::string::npos) << show.out;
  // A weights workload stays one through its study and the workers that take it.
  EXPECT_NE(show.out.find("gemm:NN:96x64x32:f32*f32->f32:weights"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("gemm:NN:96x64x32:f32*f32->f32 "), std::string::npos) << show.out;
  size_t a = show.out.find("Studies"), n = 0;
  for (size_t p = show.out.find("finished   5/5 records", a); p != std::string::npos; p = show.out.find("finished   5/5 records", p + 1)) ++n;
  EXPECT_EQ(n, 2u) << show.out;
  std::filesystem::remove(suite);
  removeDb(db);
}
