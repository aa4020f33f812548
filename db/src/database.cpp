#include "sextant/db/database.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "sql_engine.h"

namespace sextant {
namespace {

using dbengine::Query;

std::string timesJson(const std::vector<double>& t) { return nlohmann::json(t).dump(); }
std::vector<double> timesFrom(const std::string& s) {
  auto j = nlohmann::json::parse(s, nullptr, false);
  std::vector<double> out;
  if (!j.is_array()) return out;
  for (const auto& t : j)
    if (t.is_number()) out.push_back(t.get<double>());  // (a non-finite time was stored as null)
  return out;
}

}  // namespace

std::string nowIso8601() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Database::Database() = default;
Database::Database(Database&& o) noexcept = default;
Database& Database::operator=(Database&& o) noexcept = default;
Database::~Database() = default;

Status Database::exec(const std::string& sql) { return db_->exec(sql); }

bool Database::isServerUrl(const std::string& path) { return dbengine::isPostgresUrl(path); }

const std::string& Database::engine() const {
  static const std::string sqlite = "sqlite", pg = "postgresql";
  return db_ && db_->engine() == "postgresql" ? pg : sqlite;
}

Result<Database> Database::open(const std::string& path, bool create) {
  Database d;
  d.path_ = dbengine::isPostgresUrl(path) ? dbengine::shownUrl(path) : path;
  auto c = dbengine::isPostgresUrl(path) ? dbengine::openPostgres(path) : dbengine::openSqlite(path, create);
  if (!c) return Error{c.error()};
  d.db_ = std::move(*c);
  // Switching a fresh file to WAL, and the first migration, may meet another process doing the
  // same: SQLite can answer "database is locked" at once there (a lock upgrade it will not wait
  // for), so these steps are retried for up to 30 s.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int attempt = 0;; ++attempt) {
    // (WAL after the schema: a reading command on an empty file fails in migrate with nothing
    // written to the file.)
    const bool sqlite = d.db_->engine() == "sqlite";
    Status st = sqlite ? d.exec("PRAGMA foreign_keys=ON;") : okStatus();
    if (st) st = d.migrate(create);
    if (st && sqlite) st = d.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    if (st) break;
    if (!d.db_->retryable(st.error()) || std::chrono::steady_clock::now() > deadline) return Error{st.error()};
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + 10 * (attempt % 8)));
  }
  return Result<Database>(std::move(d));
}

int Database::schemaVersion() const {
  Query q(db_, "SELECT value FROM meta WHERE key='schema_version'");
  if (!q.ok() || !q.row()) return 0;
  return std::atoi(q.text(0).c_str());
}

Status Database::upsertWorkload(const WorkloadRow& w) {
  Query s(db_,
         "INSERT INTO workloads(key, op, m, n, k, dtype_a, dtype_b, dtype_c, layout, flops) "
         "VALUES(?,?,?,?,?,?,?,?,?,?) ON CONFLICT(key) DO NOTHING");
  s.bind(1, w.key).bind(2, w.op).bind(3, w.m).bind(4, w.n).bind(5, w.k).bind(6, w.dtype_a).bind(7, w.dtype_b)
      .bind(8, w.dtype_c).bind(9, w.layout).bind(10, w.flops);
  if (!s.done()) return Error{db_->explain(s.error())};
  return okStatus();
}

Status Database::upsertTarget(const TargetRow& t) {
  Query s(db_,
         "INSERT INTO targets(key, name, arch, device, features) VALUES(?,?,?,?,?) "
         "ON CONFLICT(key) DO UPDATE SET device=excluded.device, features=excluded.features");
  s.bind(1, t.key).bind(2, t.name).bind(3, t.arch).bind(4, t.device).bind(5, t.features);
  if (!s.done()) return Error{db_->explain(s.error())};
  return okStatus();
}

Result<int64_t> Database::beginRun(const RunRow& r) {
  Query s(db_,
         "INSERT INTO runs(workload_id, target_id, strategy, seed, space, space_fingerprint, trials_requested, "
         "status, started_at, args, tool_version, llvm_version, host, owner_pid, study_id, machine, heartbeat) "
         "VALUES((SELECT id FROM workloads WHERE key=?), (SELECT id FROM targets WHERE key=?), ?,?,?,?,?, "
         "'running', ?,?,?,?,?,?,?,?, " + db_->nowSql() + ") RETURNING id");
  s.bind(1, r.workload_key).bind(2, r.target_key).bind(3, r.strategy).bind(4, r.seed).bind(5, r.space)
      .bind(6, r.space_fingerprint).bind(7, r.trials_requested).bind(8, nowIso8601()).bind(9, r.args)
      .bind(10, r.tool_version).bind(11, r.llvm_version).bind(12, r.host).bind(13, r.owner_pid);
  if (r.study_id) s.bind(14, r.study_id);
  else s.bindNull(14);
  s.bind(15, r.machine.empty() ? std::string("unknown") : r.machine);
  if (!s.row()) return Error{db_->explain(s.failed() ? s.error() : "no run id returned")};
  return s.i64(0);
}

// NOW stands for the engine's clock (Conn::nowSql).
static const char* kRunColumnsTemplate =
    "r.id, w.key, t.key, r.strategy, r.seed, r.space, r.space_fingerprint, r.trials_requested, r.status, "
    "r.started_at, coalesce(r.finished_at, ''), r.args, r.tool_version, r.llvm_version, r.host, "
    "(SELECT count(*) FROM records x WHERE x.run_id = r.id AND x.source != 'predicted'), "
    "(SELECT count(*) FROM records x WHERE x.run_id = r.id AND x.status = 'ok' AND x.source = 'measured'), "
    "coalesce((SELECT max(gflops) FROM records x WHERE x.run_id = r.id AND x.status = 'ok' AND x.source = 'measured'), 0), "
    "r.owner_pid, "
    "(SELECT count(*) FROM records x WHERE x.run_id = r.id AND x.status = 'not_measured'), "
    "r.machine, coalesce(NOW - r.heartbeat, -1), coalesce(r.study_id, 0) "
    "FROM runs r JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = r.target_id ";

static std::string runColumns(const std::unique_ptr<dbengine::Conn>& c) {
  std::string s = kRunColumnsTemplate;
  s.replace(s.find("NOW"), 3, c->nowSql());
  return s;
}

static RunRow runFrom(Query& q) {
  RunRow r;
  r.id = q.i64(0);
  r.workload_key = q.text(1);
  r.target_key = q.text(2);
  r.strategy = q.text(3);
  r.seed = q.i64(4);
  r.space = q.text(5);
  r.space_fingerprint = q.text(6);
  r.trials_requested = q.i64(7);
  r.status = q.text(8);
  r.started_at = q.text(9);
  r.finished_at = q.text(10);
  r.args = q.text(11);
  r.tool_version = q.text(12);
  r.llvm_version = q.text(13);
  r.host = q.text(14);
  r.records = q.i64(15);
  r.ok_records = q.i64(16);
  r.unmeasured = q.i64(19);
  r.best_gflops = q.f64(17);
  r.owner_pid = q.i64(18);
  r.machine = q.text(20);
  r.heartbeat_age_s = q.f64(21);
  r.study_id = q.i64(22);
  return r;
}

Result<std::optional<RunRow>> Database::findUnfinishedRun(const std::string& workload_key,
                                                          const std::string& target_key,
                                                          const std::string& strategy, int64_t seed,
                                                          const std::string& space_fingerprint,
                                                          const std::string& machine) {
  std::string sql = std::string("SELECT ") + runColumns(db_) +
                    "WHERE w.key=? AND t.key=? AND r.strategy=? AND r.seed=? AND r.space_fingerprint=? "
                    "AND r.machine=? AND r.status IN ('running', 'interrupted') ORDER BY r.id DESC LIMIT 1";
  Query q(db_, sql.c_str());
  q.bind(1, workload_key).bind(2, target_key).bind(3, strategy).bind(4, seed).bind(5, space_fingerprint)
      .bind(6, machine.empty() ? std::string("unknown") : machine);
  if (q.row()) return std::optional<RunRow>(runFrom(q));
  return std::optional<RunRow>();
}

Status Database::claimRun(int64_t run_id, const std::string& host, int64_t pid) {
  Query s(db_, "UPDATE runs SET host=?, owner_pid=?, status='running', heartbeat=" + db_->nowSql() + " WHERE id=?");
  s.bind(1, host).bind(2, pid).bind(3, run_id);
  if (!s.done()) return Error{db_->explain(s.error())};
  return okStatus();
}

Result<Database::RunClaim> Database::claimOrBeginRun(const RunRow& r, bool resume,
                                                     const std::function<bool(const RunRow&)>& owned_by_live) {
  if (auto s = db_->beginWrite(); !s) return Error{s.error()};
  auto rollback = [&](const std::string& e) {
    exec("ROLLBACK");
    return Error{e};
  };
  RunClaim c;
  if (resume) {
    auto prev = findUnfinishedRun(r.workload_key, r.target_key, r.strategy, r.seed, r.space_fingerprint, r.machine);
    if (!prev) return rollback(prev.error());
    if (*prev) {
      const RunRow& p = **prev;
      if (owned_by_live && owned_by_live(p))
        return rollback("run " + std::to_string(p.id) + " with these settings is being tuned by process " +
                        std::to_string(p.owner_pid) + " on " + p.host + "; wait for it to finish, or stop it");
      // A run of another host cannot be asked whether its process lives: it is taken as alive
      // while it commits batches (its heartbeat; the database's clock).
      if (p.status == "running" && p.host != r.host && p.heartbeat_age_s >= 0 &&
          p.heartbeat_age_s < kRunAliveWindowS)
        return rollback("run " + std::to_string(p.id) + " with these settings is being tuned on host " + p.host +
                        " (process " + std::to_string(p.owner_pid) + ", last batch committed " +
                        std::to_string(int64_t(p.heartbeat_age_s)) + " s ago); wait for it to finish, stop it, or "
                        "start a run of your own with --fresh");
      if (auto s = claimRun(p.id, r.host, r.owner_pid); !s) return rollback(s.error());
      c.id = p.id, c.resumed = true, c.records = p.records;
    }
  }
  if (!c.id) {
    auto id = beginRun(r);
    if (!id) return rollback(id.error());
    c.id = *id;
  }
  if (auto s = exec("COMMIT"); !s) return Error{s.error()};
  return c;
}

Status Database::finishRun(int64_t run_id, const std::string& status) {
  Query s(db_, "UPDATE runs SET status=?, finished_at=? WHERE id=?");
  s.bind(1, status).bind(2, nowIso8601()).bind(3, run_id);
  if (!s.done()) return Error{db_->explain(s.error())};
  return okStatus();
}

Result<int64_t> Database::scheduleId(const std::string& text) {
  Query ins(db_, "INSERT INTO schedules(text) VALUES(?) ON CONFLICT(text) DO NOTHING");
  ins.bind(1, text);
  if (!ins.done()) return Error{db_->explain(ins.error())};
  Query q(db_, "SELECT id FROM schedules WHERE text=?");
  q.bind(1, text);
  if (!q.row()) return Error{db_->explain(q.error())};
  return q.i64(0);
}

// A random 128-bit identifier in hex (records' uids).
static std::string newUid() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  char buf[40];
  snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)rng(), (unsigned long long)rng());
  return buf;
}

// The uids are given once, before the first attempt: a retry after a reconnection sends the same.
static std::vector<RecordRow> withUids(const std::vector<RecordRow>& records) {
  std::vector<RecordRow> out = records;
  for (auto& r : out)
    if (r.uid.empty()) r.uid = newUid();
  return out;
}

bool Database::reconnected(const std::string& error) { return db_->lostAndReconnected(error, 300); }

Status Database::insertRecords(const std::vector<RecordRow>& records) {
  const std::vector<RecordRow> rows = withUids(records);
  for (;;) {
    auto s = insertRecordsOnce(rows, "", 0);
    if (s) return okStatus();
    if (!reconnected(s.error())) return Error{s.error()};
  }
}

Result<int64_t> Database::insertClaimedRecords(const std::vector<RecordRow>& records, const std::string& worker,
                                               int64_t study_id) {
  const std::vector<RecordRow> rows = withUids(records);
  for (;;) {
    auto s = insertRecordsOnce(rows, worker, study_id);
    if (s || !reconnected(s.error())) return s;
  }
}

Result<int64_t> Database::insertRecordsOnce(const std::vector<RecordRow>& records, const std::string& release_worker,
                                            int64_t study_id) {
  if (records.empty() && release_worker.empty()) return int64_t(0);
  if (auto s = db_->beginWrite(); !s) return Error{s.error()};
  auto fail = [&](const std::string& e) -> Error {
    exec("ROLLBACK");
    return Error{db_->explain(e)};
  };
  int64_t dropped = 0, stored = 0;
  std::set<int64_t> runs;
  for (const RecordRow& r : records) {
    if (!r.uid.empty()) {  // already stored (a COMMIT went through but its acknowledgement was lost)
      Query q(db_, "SELECT count(*) FROM records WHERE uid=?");
      q.bind(1, r.uid);
      if (!q.row()) return fail(q.error());
      if (q.i64(0) > 0) continue;
    }
    if (!release_worker.empty()) {  // a worker records only what it still holds
      Query c(db_, "SELECT count(*) FROM claims WHERE study_id=? AND candidate=? AND worker=?");
      c.bind(1, study_id).bind(2, r.candidate).bind(3, release_worker);
      if (!c.row()) return fail(c.error());
      if (c.i64(0) == 0) {
        ++dropped;
        continue;
      }
    }
    int64_t sid = 0;
    if (!r.schedule.empty()) {
      auto id = scheduleId(r.schedule);
      if (!id) {
        exec("ROLLBACK");
        return Error{id.error()};
      }
      sid = *id;
    }
    Query s(db_,
           "INSERT INTO records(run_id, workload_id, target_id, candidate, knobs, schedule_id, status, source, "
           "message, times, median_s, cv, gflops, compile_s, max_abs_err, tool_version, llvm_version, "
           "cpu_model, device, created_at, schema_version, stats, machine, confirmations, confirmed_times, "
           "confirmed_gflops, uid) VALUES(?, (SELECT id FROM workloads WHERE key=?), "
           "(SELECT id FROM targets WHERE key=?), ?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (r.run_id) s.bind(1, r.run_id);
    else s.bindNull(1);
    s.bind(2, r.workload_key).bind(3, r.target_key).bind(4, r.candidate).bind(5, r.knobs);
    if (sid) s.bind(6, sid);
    else s.bindNull(6);
    s.bind(7, r.status).bind(8, r.source).bind(9, r.message).bind(10, timesJson(r.times_s)).bind(11, r.median_s)
        .bind(12, r.cv).bind(13, r.gflops).bind(14, r.compile_s).bind(15, r.max_abs_err).bind(16, r.tool_version)
        .bind(17, r.llvm_version).bind(18, r.cpu_model).bind(19, r.device)
        .bind(20, r.created_at.empty() ? nowIso8601() : r.created_at).bind(21, int64_t(r.schema_version))
        .bind(22, r.stats.empty() ? std::string("{}") : r.stats)
        .bind(23, r.machine.empty() ? std::string("unknown") : r.machine).bind(24, r.confirmations)
        .bind(25, timesJson(r.confirmed_times)).bind(26, r.confirmed_gflops);
    if (r.uid.empty()) s.bindNull(27);
    else s.bind(27, r.uid);
    if (!s.done()) return fail(s.error());
    ++stored;
    if (r.run_id) runs.insert(r.run_id);
  }
  for (int64_t run : runs) {  // the runs' heartbeats: they are alive (claimOrBeginRun)
    Query h(db_, "UPDATE runs SET heartbeat=" + db_->nowSql() + " WHERE id=?");
    h.bind(1, run);
    if (!h.done()) return fail(h.error());
  }
  if (!release_worker.empty()) {
    Query d(db_, "DELETE FROM claims WHERE worker=?");
    d.bind(1, release_worker);
    if (!d.done()) return fail(d.error());
    Query u(db_, "UPDATE workers SET measured = measured + ? WHERE name=?");
    u.bind(1, stored).bind(2, release_worker);
    if (!u.done()) return fail(u.error());
  }
  if (auto s = exec("COMMIT"); !s) return Error{s.error()};
  return dropped;
}

Status Database::insertBaseline(const BaselineRow& b) {
  Query s(db_,
         "INSERT INTO baselines(run_id, name, detail, status, message, times, median_s, cv, gflops, created_at, "
         "record_id) VALUES(?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, b.run_id).bind(2, b.name).bind(3, b.detail).bind(4, b.status).bind(5, b.message)
      .bind(6, timesJson(b.times_s)).bind(7, b.median_s).bind(8, b.cv).bind(9, b.gflops).bind(10, nowIso8601());
  if (b.record_id) s.bind(11, b.record_id);
  else s.bindNull(11);
  if (!s.done()) return Error{db_->explain(s.error())};
  return okStatus();
}

Result<std::set<std::string>> Database::triedCandidates(const std::string& workload_key,
                                                        const std::string& target_key, const std::string& machine) {
  Query q(db_,
         "SELECT DISTINCT r.candidate, r.machine FROM records r JOIN workloads w ON w.id=r.workload_id "
         "JOIN targets t ON t.id=r.target_id WHERE w.key=? AND t.key=? AND r.source='measured'");
  q.bind(1, workload_key).bind(2, target_key);
  std::set<std::string> out;
  while (q.row())
    if (machineMatches(q.text(1), machine)) out.insert(q.text(0));
  if (q.failed()) return Error{db_->explain(q.error())};
  return out;
}

static const char* kRecordColumns =
    "r.id, coalesce(r.run_id, 0), w.key, t.key, r.candidate, r.knobs, coalesce(r.schedule_id, 0), r.status, "
    "r.source, r.message, r.times, coalesce(r.median_s, 0), coalesce(r.cv, 0), coalesce(r.gflops, 0), "
    "coalesce(r.compile_s, 0), coalesce(r.max_abs_err, 0), r.tool_version, r.llvm_version, r.cpu_model, "
    "r.device, r.created_at, coalesce(s.text, ''), r.schema_version, r.stats, r.machine, r.confirmations, "
    "r.confirmed_times, r.confirmed_gflops, coalesce(r.uid, '') FROM records r JOIN workloads w ON w.id=r.workload_id "
    "JOIN targets t ON t.id=r.target_id LEFT JOIN schedules s ON s.id=r.schedule_id ";

static RecordRow recordFrom(Query& q, bool with_schedule) {
  RecordRow r;
  r.id = q.i64(0);
  r.run_id = q.i64(1);
  r.workload_key = q.text(2);
  r.target_key = q.text(3);
  r.candidate = q.text(4);
  r.knobs = q.text(5);
  r.schedule_id = q.i64(6);
  r.status = q.text(7);
  r.source = q.text(8);
  r.message = q.text(9);
  r.times_s = timesFrom(q.text(10));
  r.median_s = q.f64(11);
  r.cv = q.f64(12);
  r.gflops = q.f64(13);
  r.compile_s = q.f64(14);
  r.max_abs_err = q.f64(15);
  r.tool_version = q.text(16);
  r.llvm_version = q.text(17);
  r.cpu_model = q.text(18);
  r.device = q.text(19);
  r.created_at = q.text(20);
  if (with_schedule) r.schedule = q.text(21);
  r.schema_version = int(q.i64(22));
  r.stats = q.text(23);
  r.machine = q.text(24);
  r.confirmations = q.i64(25);
  r.confirmed_times = timesFrom(q.text(26));
  r.confirmed_gflops = q.f64(27);
  r.uid = q.text(28);
  return r;
}

Result<std::vector<RecordRow>> Database::records(const std::string& workload_key, const std::string& target_key,
                                                 bool include_schedule) {
  for (;;) {
    auto r = recordsOnce(workload_key, target_key, include_schedule);
    if (r || !reconnected(r.error())) return r;
  }
}

Result<std::vector<RecordRow>> Database::recordsOnce(const std::string& workload_key, const std::string& target_key,
                                                     bool include_schedule) {
  std::string sql = std::string("SELECT ") + kRecordColumns + "WHERE w.key=? AND t.key=? ORDER BY r.id";
  Query q(db_, sql.c_str());
  if (!q.ok()) return Error{db_->explain(q.error())};
  q.bind(1, workload_key).bind(2, target_key);
  std::vector<RecordRow> out;
  while (q.row()) out.push_back(recordFrom(q, include_schedule));
  if (q.failed()) return Error{db_->explain(q.error())};
  return out;
}

Result<std::optional<RecordRow>> Database::best(const std::string& workload_key, const std::string& target_key,
                                                const std::string& machine) {
  // Ranked in SQL as ranksAbove ranks (confirmed, then measured once, then failed confirmations),
  // the first of a matching machine taken.
  std::string sql = std::string("SELECT ") + kRecordColumns +
                    "WHERE w.key=? AND t.key=? AND r.status='ok' AND r.source='measured' ORDER BY "
                    "CASE WHEN r.confirmations > 0 AND r.confirmed_gflops > 0 THEN 2 WHEN r.confirmations = 0 THEN 1 "
                    "ELSE 0 END DESC, CASE WHEN r.confirmations > 0 THEN r.confirmed_gflops ELSE r.gflops END DESC, "
                    "r.id ASC";
  Query q(db_, sql.c_str());
  if (!q.ok()) return Error{db_->explain(q.error())};
  q.bind(1, workload_key).bind(2, target_key);
  while (q.row()) {
    RecordRow r = recordFrom(q, true);
    if (machineMatches(r.machine, machine)) return std::optional<RecordRow>(std::move(r));
  }
  if (q.failed()) return Error{db_->explain(q.error())};
  return std::optional<RecordRow>();
}

Result<std::vector<RunRow>> Database::runs() {
  std::string sql = std::string("SELECT ") + runColumns(db_) + "ORDER BY r.id";
  Query q(db_, sql.c_str());
  if (!q.ok()) return Error{db_->explain(q.error())};
  std::vector<RunRow> out;
  while (q.row()) out.push_back(runFrom(q));
  if (q.failed()) return Error{db_->explain(q.error())};
  return out;
}

Result<std::vector<BaselineRow>> Database::baselines(int64_t run_id) {
  Query q(db_,
         "SELECT run_id, name, detail, status, message, times, coalesce(median_s,0), coalesce(cv,0), "
         "coalesce(gflops,0), created_at, coalesce(record_id,0) FROM baselines WHERE run_id=? ORDER BY id");
  q.bind(1, run_id);
  std::vector<BaselineRow> out;
  while (q.row()) {
    BaselineRow b;
    b.run_id = q.i64(0);
    b.name = q.text(1);
    b.detail = q.text(2);
    b.status = q.text(3);
    b.message = q.text(4);
    b.times_s = timesFrom(q.text(5));
    b.median_s = q.f64(6);
    b.cv = q.f64(7);
    b.gflops = q.f64(8);
    b.created_at = q.text(9);
    b.record_id = q.i64(10);
    out.push_back(b);
  }
  if (q.failed()) return Error{db_->explain(q.error())};
  return out;
}

Result<std::vector<RecordRow>> Database::allRecords(bool include_schedule) {
  std::string sql = std::string("SELECT ") + kRecordColumns + "ORDER BY w.key, t.key, r.candidate, r.created_at, r.id";
  Query q(db_, sql.c_str());
  if (!q.ok()) return Error{db_->explain(q.error())};
  std::vector<RecordRow> out;
  while (q.row()) out.push_back(recordFrom(q, include_schedule));
  if (q.failed()) return Error{db_->explain(q.error())};
  return out;
}

Result<std::optional<WorkloadRow>> Database::workload(const std::string& key) {
  Query q(db_, "SELECT key, op, m, n, k, dtype_a, dtype_b, dtype_c, layout, flops FROM workloads WHERE key=?");
  if (!q.ok()) return Error{db_->explain(q.error())};
  q.bind(1, key);
  if (!q.row()) return std::optional<WorkloadRow>();
  return std::optional<WorkloadRow>(WorkloadRow{q.text(0), q.text(1), q.i64(2), q.i64(3), q.i64(4), q.text(5),
                                                q.text(6), q.text(7), q.text(8), q.f64(9)});
}

Result<std::optional<TargetRow>> Database::target(const std::string& key) {
  Query q(db_, "SELECT key, name, arch, device, features FROM targets WHERE key=?");
  if (!q.ok()) return Error{db_->explain(q.error())};
  q.bind(1, key);
  if (!q.row()) return std::optional<TargetRow>();
  return std::optional<TargetRow>(TargetRow{q.text(0), q.text(1), q.text(2), q.text(3), q.text(4)});
}

Result<int64_t> Database::countSame(const RecordRow& r, bool exact) {
  std::string sql =
      "SELECT count(*) FROM records r JOIN workloads w ON w.id=r.workload_id JOIN targets t ON t.id=r.target_id "
      "WHERE w.key=? AND t.key=? AND r.candidate=? AND r.source=?";
  if (exact) sql += " AND r.times=? AND r.created_at=? AND r.status=?";
  Query q(db_, sql.c_str());
  if (!q.ok()) return Error{db_->explain(q.error())};
  q.bind(1, r.workload_key).bind(2, r.target_key).bind(3, r.candidate).bind(4, r.source);
  if (exact) q.bind(5, timesJson(r.times_s)).bind(6, r.created_at).bind(7, r.status);
  if (!q.row()) return Error{db_->explain(q.error())};
  return q.i64(0);
}

}  // namespace sextant
