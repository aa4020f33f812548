// Studies, workers and claims (issue #17): several `tune worker` processes, on one machine or
// many, tuning one workload together over one database (PostgreSQL for many machines). A claim is
// a lease on a candidate: taken in a write transaction (so two workers never hold one candidate),
// extended by the holder's heartbeat, released in the transaction that stores its records (so a
// measured candidate is never claimed again), and re-issued once its lease expires (its worker
// died). The same SQL on both engines (sql_engine.h).
#include <algorithm>
#include <chrono>
#include <ctime>

#include "sextant/db/database.h"
#include "sql_engine.h"

namespace sextant {

using dbengine::Query;

namespace {

// Records of a study: those of the runs its workers made.
const char* kStudyRecords = "(SELECT count(*) FROM records x JOIN runs u ON u.id = x.run_id WHERE u.study_id = s.id)";

}  // namespace

Result<int64_t> Database::createStudy(const StudyRow& st) {
  Query q(db_,
          "INSERT INTO studies(workload_id, target_id, strategy, trials, args, status, created_at) "
          "VALUES((SELECT id FROM workloads WHERE key=?), (SELECT id FROM targets WHERE key=?), ?,?,?, 'open', ?) "
          "RETURNING id");
  q.bind(1, st.workload_key).bind(2, st.target_key).bind(3, st.strategy).bind(4, st.trials).bind(5, st.args)
      .bind(6, nowIso8601());
  if (!q.row()) return Error{db_->explain(q.failed() ? q.error() : "no study id returned")};
  return q.i64(0);
}

Result<std::vector<StudyRow>> Database::studies() {
  for (;;) {
    auto r = studiesOnce();
    if (r || !reconnected(r.error())) return r;
  }
}

Result<std::vector<StudyRow>> Database::studiesOnce() {
  Query q(db_, std::string("SELECT s.id, w.key, t.key, s.strategy, s.trials, s.args, s.status, s.created_at, ") +
                   kStudyRecords +
                   ", (SELECT count(*) FROM claims c WHERE c.study_id = s.id) FROM studies s "
                   "JOIN workloads w ON w.id = s.workload_id JOIN targets t ON t.id = s.target_id ORDER BY s.id");
  std::vector<StudyRow> out;
  while (q.row()) {
    StudyRow s;
    s.id = q.i64(0), s.workload_key = q.text(1), s.target_key = q.text(2), s.strategy = q.text(3);
    s.trials = q.i64(4), s.args = q.text(5), s.status = q.text(6), s.created_at = q.text(7);
    s.records = q.i64(8), s.claims = q.i64(9);
    out.push_back(s);
  }
  if (q.failed()) return Error{db_->explain(q.error())};
  return out;
}

Status Database::finishStudy(int64_t study_id) {
  Query q(db_, "UPDATE studies SET status='finished' WHERE id=?");
  q.bind(1, study_id);
  if (!q.done()) return Error{db_->explain(q.error())};
  return okStatus();
}

Result<ClaimResult> Database::claimCandidates(int64_t study_id, const std::string& worker, double lease_s,
                                              int max_attempts, const std::vector<std::string>& wanted) {
  for (;;) {
    auto r = claimCandidatesOnce(study_id, worker, lease_s, max_attempts, wanted);
    if (r || !reconnected(r.error())) return r;
  }
}

Result<ClaimResult> Database::claimCandidatesOnce(int64_t study_id, const std::string& worker, double lease_s,
                                                  int max_attempts, const std::vector<std::string>& wanted) {
  if (auto s = db_->beginWrite(); !s) return Error{s.error()};
  auto fail = [&](const std::string& e) {
    exec("ROLLBACK");
    return Error{db_->explain(e)};
  };
  auto server_now = serverNow();  // leases run on the database's clock, never a client's
  if (!server_now) return fail(server_now.error());
  const double now = *server_now;
  ClaimResult out;
  // Expired claims first: re-issued to this worker, or given up after max_attempts workers.
  {
    Query q(db_, "SELECT candidate, attempts FROM claims WHERE study_id=? AND expires<? ORDER BY id");
    q.bind(1, study_id).bind(2, now);
    std::vector<std::pair<std::string, int64_t>> expired;
    while (q.row()) expired.push_back({q.text(0), q.i64(1)});
    if (q.failed()) return fail(q.error());
    for (const auto& [cand, attempts] : expired) {
      if (attempts >= max_attempts) {
        Query d(db_, "DELETE FROM claims WHERE study_id=? AND candidate=?");
        d.bind(1, study_id).bind(2, cand);
        if (!d.done()) return fail(d.error());
        out.abandoned.push_back(cand);
      } else {
        Query u(db_, "UPDATE claims SET worker=?, expires=?, attempts=attempts+1 WHERE study_id=? AND candidate=?");
        u.bind(1, worker).bind(2, now + lease_s).bind(3, study_id).bind(4, cand);
        if (!u.done()) return fail(u.error());
        out.reissued.push_back(cand);
      }
    }
  }
  // Room left in the study: trials - records - claims (abandoned ones will be recorded).
  int64_t room = 0;
  {
    Query q(db_, std::string("SELECT s.trials - ") + kStudyRecords +
                     " - (SELECT count(*) FROM claims c WHERE c.study_id = s.id) FROM studies s WHERE s.id=?");
    q.bind(1, study_id);
    if (!q.row()) return fail(q.failed() ? q.error() : "no study " + std::to_string(study_id));
    room = q.i64(0) - int64_t(out.abandoned.size());
  }
  for (const std::string& cand : wanted) {
    if (room <= 0) break;
    // (records by workload, target and candidate: the records' index)
    Query seen(db_,
               "SELECT (SELECT count(*) FROM claims WHERE study_id=? AND candidate=?) + "
               "(SELECT count(*) FROM records x JOIN runs u ON u.id = x.run_id JOIN studies s ON s.id = u.study_id "
               "WHERE s.id=? AND x.workload_id = s.workload_id AND x.target_id = s.target_id AND x.candidate=?)");
    seen.bind(1, study_id).bind(2, cand).bind(3, study_id).bind(4, cand);
    if (!seen.row()) return fail(seen.error());
    if (seen.i64(0) > 0) continue;
    Query ins(db_, "INSERT INTO claims(study_id, candidate, worker, expires, attempts) VALUES(?,?,?,?,1)");
    ins.bind(1, study_id).bind(2, cand).bind(3, worker).bind(4, now + lease_s);
    if (!ins.done()) return fail(ins.error());
    out.claimed.push_back(cand);
    --room;
  }
  if (auto s = exec("COMMIT"); !s) return Error{s.error()};
  return out;
}

Result<std::set<std::string>> Database::claimedCandidates(int64_t study_id) {
  for (;;) {
    auto r = claimedCandidatesOnce(study_id);
    if (r || !reconnected(r.error())) return r;
  }
}

Result<std::set<std::string>> Database::claimedCandidatesOnce(int64_t study_id) {
  Query q(db_, "SELECT candidate FROM claims WHERE study_id=?");
  q.bind(1, study_id);
  std::set<std::string> out;
  while (q.row()) out.insert(q.text(0));
  if (q.failed()) return Error{db_->explain(q.error())};
  return out;
}

Status Database::registerWorker(const WorkerRow& w) {
  Query q(db_,
          "INSERT INTO workers(name, host, pid, device, study_id, started_at, heartbeat) VALUES(?,?,?,?,?,?," +
              db_->nowSql() + ") ON CONFLICT(name) DO UPDATE SET study_id=excluded.study_id, heartbeat=excluded.heartbeat");
  q.bind(1, w.name).bind(2, w.host).bind(3, w.pid).bind(4, w.device).bind(5, w.study_id).bind(6, nowIso8601());
  if (!q.done()) return Error{db_->explain(q.error())};
  return okStatus();
}

Status Database::heartbeat(const std::string& worker, double lease_s) {
  for (;;) {
    Status s = heartbeatOnce(worker, lease_s);
    if (s || !reconnected(s.error())) return s;
  }
}

Status Database::heartbeatOnce(const std::string& worker, double lease_s) {
  if (auto s = db_->beginWrite(); !s) return s;
  auto server_now = serverNow();
  if (!server_now) {
    exec("ROLLBACK");
    return Error{server_now.error()};
  }
  const double now = *server_now;
  Query w(db_, "UPDATE workers SET heartbeat=? WHERE name=?");
  w.bind(1, now).bind(2, worker);
  Query c(db_, "UPDATE claims SET expires=? WHERE worker=?");
  c.bind(1, now + lease_s).bind(2, worker);
  if (!w.done() || !c.done()) {
    std::string e = w.failed() ? w.error() : c.error();
    exec("ROLLBACK");
    return Error{db_->explain(e)};
  }
  return exec("COMMIT");
}

Result<std::vector<WorkerRow>> Database::workers() {
  auto server_now = serverNow();
  if (!server_now) return Error{server_now.error()};
  const double now = *server_now;
  Query q(db_, "SELECT name, host, pid, device, coalesce(study_id, 0), started_at, heartbeat, measured FROM workers ORDER BY id");
  std::vector<WorkerRow> out;
  while (q.row()) {
    WorkerRow w;
    w.name = q.text(0), w.host = q.text(1), w.pid = q.i64(2), w.device = q.text(3), w.study_id = q.i64(4);
    w.started_at = q.text(5), w.heartbeat_age_s = now - q.f64(6), w.measured = q.i64(7);
    std::tm tm{};
    if (strptime(w.started_at.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) {
      double up = std::max(1.0, q.f64(6) - double(timegm(&tm)));  // started -> last heartbeat
      w.per_minute = 60.0 * double(w.measured) / up;
    }
    out.push_back(w);
  }
  if (q.failed()) return Error{db_->explain(q.error())};
  return out;
}

}  // namespace sextant
