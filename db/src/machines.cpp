// Which machine measured a record, and which record is the best (issue #35): machine keys and
// their matching, the ranking of confirmed and single measurements, confirmations from final
// comparisons, the machines of a database, and the database's clock.
#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "sextant/db/database.h"
#include "sql_engine.h"

namespace sextant {

using dbengine::Query;

namespace {

int rankClass(const RecordRow& r) {
  if (r.confirmations == 0) return 1;
  return r.confirmed_gflops > 0 ? 2 : 0;
}

double medianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

bool ranksAbove(const RecordRow& a, const RecordRow& b) {
  const int ca = rankClass(a), cb = rankClass(b);
  if (ca != cb) return ca > cb;
  if (a.figure() != b.figure()) return a.figure() > b.figure();
  return a.id < b.id;
}

bool machineMatches(const std::string& machine, const std::string& filter) {
  if (filter.empty() || machine == filter) return true;
  if (machine.size() <= filter.size() || machine.compare(0, filter.size(), filter) != 0) return false;
  return filter.back() == ':' || machine[filter.size()] == ':';
}

std::string legacyMachineOf(const RecordRow& r, const std::string& target_arch) {
  if (r.source != "measured") return "none";
  if (r.device.empty()) return "unknown";
  if (r.target_key.rfind("cpu:", 0) == 0) {
    // arch "x86_64-avx512" or "x86_64-avx512-t2": the ISA is the middle field
    std::string isa = target_arch;
    if (auto dash = isa.find('-'); dash != std::string::npos) isa = isa.substr(dash + 1);
    if (auto t = isa.find("-t"); t != std::string::npos) isa = isa.substr(0, t);
    return "cpu:" + r.device + ":" + (isa.empty() ? "?" : isa) + ":?";
  }
  return "gpu:" + r.device + ":?";
}

Status Database::confirmRecord(int64_t record_id, const std::vector<double>& times, bool failed) {
  for (;;) {
    if (auto s = db_->beginWrite(); !s) return s;
    auto fail = [&](const std::string& e) -> Status {
      exec("ROLLBACK");
      return Error{db_->explain(e)};
    };
    Query q(db_,
            "SELECT r.confirmed_times, r.confirmations, r.confirmed_gflops, w.flops FROM records r "
            "JOIN workloads w ON w.id = r.workload_id WHERE r.id=?");
    q.bind(1, record_id);
    if (!q.row()) {
      if (q.failed()) {
        std::string e = q.error();
        exec("ROLLBACK");
        if (reconnected(e)) continue;
        return Error{db_->explain(e)};
      }
      return fail("no record " + std::to_string(record_id));
    }
    auto j = nlohmann::json::parse(q.text(0), nullptr, false);
    std::vector<double> pooled = j.is_array() ? j.get<std::vector<double>>() : std::vector<double>{};
    const int64_t confirmations = q.i64(1) + 1;
    const bool failed_before = q.i64(1) > 0 && q.f64(2) <= 0;
    const double flops = q.f64(3);
    pooled.insert(pooled.end(), times.begin(), times.end());
    const double median = medianOf(pooled);
    // A record that failed a confirmation once stays failed: it is not trusted again.
    const double gflops = failed || failed_before || median <= 0 ? 0.0 : flops / median / 1e9;
    Query u(db_, "UPDATE records SET confirmations=?, confirmed_times=?, confirmed_gflops=? WHERE id=?");
    u.bind(1, confirmations).bind(2, nlohmann::json(pooled).dump()).bind(3, gflops).bind(4, record_id);
    if (!u.done()) return fail(u.error());
    return exec("COMMIT");
  }
}

Result<std::vector<MachineRow>> Database::machines() {
  Query q(db_,
          "SELECT machine, count(*), sum(CASE WHEN status='ok' THEN 1 ELSE 0 END), "
          "sum(CASE WHEN confirmations > 0 AND confirmed_gflops > 0 THEN 1 ELSE 0 END), min(created_at), "
          "max(created_at) FROM records WHERE source='measured' GROUP BY machine ORDER BY min(created_at), machine");
  std::vector<MachineRow> out;
  while (q.row()) out.push_back(MachineRow{q.text(0), q.i64(1), q.i64(2), q.i64(3), q.text(4), q.text(5)});
  if (q.failed()) return Error{db_->explain(q.error())};
  return out;
}

Result<double> Database::serverNow() {
  Query q(db_, "SELECT " + db_->nowSql());
  if (!q.row()) return Error{db_->explain(q.error())};
  return q.f64(0);
}

// Schema 4's data step, inside the migration's transaction: old records get the machine their
// fields tell (legacyMachineOf, never this machine's full key), runs the machine of their
// records, and records that old final comparisons re-measured ("tuned" baselines) get those
// measurements as their confirmations.
Status Database::migrateV4Data() {
  if (auto s = exec("UPDATE records SET machine='none' WHERE source != 'measured'"); !s) return s;
  struct Group {
    std::string device, target_key, arch;
    int64_t target_id;
  };
  std::vector<Group> groups;
  {
    Query q(db_,
            "SELECT DISTINCT r.device, t.key, t.arch, t.id FROM records r JOIN targets t ON t.id = r.target_id "
            "WHERE r.source = 'measured'");
    while (q.row()) groups.push_back({q.text(0), q.text(1), q.text(2), q.i64(3)});
    if (q.failed()) return Error{db_->explain(q.error())};
  }
  for (const Group& g : groups) {
    RecordRow r;
    r.source = "measured", r.device = g.device, r.target_key = g.target_key;
    Query u(db_, "UPDATE records SET machine=? WHERE source='measured' AND device=? AND target_id=?");
    u.bind(1, legacyMachineOf(r, g.arch)).bind(2, g.device).bind(3, g.target_id);
    if (!u.done()) return Error{db_->explain(u.error())};
  }
  // Confirmations: every "tuned" row of the old final comparisons, pooled per record.
  struct Confirmation {
    std::vector<double> times;
    int64_t count = 0;
    bool failed = false;
    double flops = 0;
  };
  std::map<int64_t, Confirmation> conf;
  {
    Query q(db_,
            "SELECT b.record_id, b.times, b.status, w.flops FROM baselines b JOIN records r ON r.id = b.record_id "
            "JOIN workloads w ON w.id = r.workload_id WHERE b.name = 'tuned' AND b.record_id IS NOT NULL ORDER BY b.id");
    while (q.row()) {
      Confirmation& c = conf[q.i64(0)];
      ++c.count;
      c.flops = q.f64(3);
      if (q.text(2) != "ok") {
        c.failed = true;
        continue;
      }
      auto j = nlohmann::json::parse(q.text(1), nullptr, false);
      if (j.is_array())
        for (const auto& t : j)
          if (t.is_number()) c.times.push_back(t.get<double>());
    }
    if (q.failed()) return Error{db_->explain(q.error())};
  }
  for (const auto& [id, c] : conf) {
    const double median = medianOf(c.times);
    const double gflops = c.failed || median <= 0 ? 0.0 : c.flops / median / 1e9;
    Query u(db_, "UPDATE records SET confirmations=?, confirmed_times=?, confirmed_gflops=? WHERE id=?");
    u.bind(1, c.count).bind(2, nlohmann::json(c.times).dump()).bind(3, gflops).bind(4, id);
    if (!u.done()) return Error{db_->explain(u.error())};
  }
  return exec(
      "UPDATE runs SET machine = coalesce((SELECT x.machine FROM records x WHERE x.run_id = runs.id AND "
      "x.source = 'measured' ORDER BY x.id LIMIT 1), 'unknown')");
}

}  // namespace sextant
