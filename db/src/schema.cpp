// The schedule database's schema: versioned migrations, each in its own write transaction, and
// the data step of version 4 (issue #35: the machine of old records, their confirmations).
#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "sextant/db/database.h"
#include "sql_engine.h"

namespace sextant {
namespace {

// Schema migrations: kMigrations[i] takes a database from version i to i + 1.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE workloads(
  id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL, op TEXT NOT NULL,
  m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,
  dtype_a TEXT NOT NULL, dtype_b TEXT NOT NULL, dtype_c TEXT NOT NULL, layout TEXT NOT NULL,
  flops REAL NOT NULL);
CREATE TABLE targets(
  id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL, name TEXT NOT NULL, arch TEXT NOT NULL,
  device TEXT NOT NULL, features TEXT NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  target_id INTEGER NOT NULL REFERENCES targets(id),
  strategy TEXT NOT NULL, seed INTEGER NOT NULL, space TEXT NOT NULL, space_fingerprint TEXT NOT NULL,
  trials_requested INTEGER NOT NULL, status TEXT NOT NULL,
  started_at TEXT NOT NULL, finished_at TEXT, args TEXT NOT NULL,
  tool_version TEXT NOT NULL, llvm_version TEXT NOT NULL, host TEXT NOT NULL,
  owner_pid INTEGER NOT NULL DEFAULT 0);
CREATE TABLE schedules(id INTEGER PRIMARY KEY, text TEXT UNIQUE NOT NULL);
CREATE TABLE records(
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id),
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  target_id INTEGER NOT NULL REFERENCES targets(id),
  candidate TEXT NOT NULL, knobs TEXT NOT NULL,
  schedule_id INTEGER REFERENCES schedules(id),
  status TEXT NOT NULL, source TEXT NOT NULL DEFAULT 'measured', message TEXT NOT NULL DEFAULT '',
  times TEXT NOT NULL DEFAULT '[]', median_s REAL, cv REAL, gflops REAL, compile_s REAL, max_abs_err REAL,
  tool_version TEXT NOT NULL, llvm_version TEXT NOT NULL, cpu_model TEXT NOT NULL, device TEXT NOT NULL,
  created_at TEXT NOT NULL, schema_version INTEGER NOT NULL DEFAULT 1);
CREATE INDEX records_by_workload_target ON records(workload_id, target_id, candidate);
CREATE INDEX records_by_run ON records(run_id);
CREATE TABLE baselines(
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
  detail TEXT NOT NULL, record_id INTEGER REFERENCES records(id), status TEXT NOT NULL, message TEXT NOT NULL,
  times TEXT NOT NULL, median_s REAL, cv REAL, gflops REAL, created_at TEXT NOT NULL);
)sql",
    // v2: compile statistics and pre-flight results of GPU kernels (JSON object; {} for CPU).
    R"sql(
ALTER TABLE records ADD COLUMN stats TEXT NOT NULL DEFAULT '{}';
)sql",
    // v3 (issue #17): studies that workers join, the workers, and their leased claims on candidates
    // (studies.cpp). Times of leases and heartbeats are seconds since the epoch (REAL).
    R"sql(
ALTER TABLE runs ADD COLUMN study_id INTEGER;
CREATE TABLE studies(
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  target_id INTEGER NOT NULL REFERENCES targets(id),
  strategy TEXT NOT NULL, trials INTEGER NOT NULL, args TEXT NOT NULL, status TEXT NOT NULL,
  created_at TEXT NOT NULL);
CREATE TABLE workers(
  id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  device TEXT NOT NULL, study_id INTEGER, started_at TEXT NOT NULL, heartbeat REAL NOT NULL,
  measured INTEGER NOT NULL DEFAULT 0);
CREATE TABLE claims(
  id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES studies(id), candidate TEXT NOT NULL,
  worker TEXT NOT NULL, expires REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 1,
  UNIQUE(study_id, candidate));
)sql",
    // v4 (issue #35): the machine that measured each record and run, confirmations (the final
    // comparisons' re-measurements), a uid per record (idempotent commits) and a heartbeat per run
    // (server clock). Old records' machines and confirmations are filled by migrateV4Data.
    R"sql(
ALTER TABLE records ADD COLUMN machine TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE records ADD COLUMN confirmations INTEGER NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN confirmed_times TEXT NOT NULL DEFAULT '[]';
ALTER TABLE records ADD COLUMN confirmed_gflops REAL NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN uid TEXT;
CREATE UNIQUE INDEX records_by_uid ON records(uid);
ALTER TABLE runs ADD COLUMN machine TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE runs ADD COLUMN heartbeat REAL;
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

}  // namespace

using dbengine::Query;

// Each step decides what to do inside its own IMMEDIATE transaction: whether the file is fresh,
// not Sextant's, or at which version, is read under the write lock, so that processes creating
// or migrating one database at the same moment serialise instead of failing.
Status Database::migrate(bool create) {
  for (;;) {
    if (auto s = db_->beginWrite(); !s) return s;
    auto rollback = [&](Status st) {
      exec("ROLLBACK");
      return st;
    };
    auto tables = db_->tables();
    if (!tables) return rollback(Error{tables.error()});
    const bool has_meta = std::find(tables->begin(), tables->end(), "meta") != tables->end();
    int version = 0;
    if (!tables->empty()) {
      if (!has_meta)
        return rollback(Error{db_->explain(std::string("a ") + (db_->engine() == "sqlite" ? "SQLite" : "PostgreSQL") +
                                           " database, but not a Sextant schedule database")});
      version = schemaVersion();
      if (version <= 0) return rollback(Error{db_->explain("the Sextant database has no schema version (corrupt?)")});
      if (version > kSchemaVersion)
        return rollback(Error{db_->explain("schema version " + std::to_string(version) +
                                           " was written by a newer Sextant (this one reads up to " +
                                           std::to_string(kSchemaVersion) + ")")});
    }
    if (version == kSchemaVersion) return exec("COMMIT");
    if (version == 0 && !create)  // a reading command never writes a schema into an empty file
      return rollback(Error{db_->explain("an empty database, not a Sextant schedule database (nothing was written)")});
    if (auto s = exec(db_->ddl(kMigrations[version])); !s) return rollback(s);
    if (version + 1 == 4)
      if (auto s = migrateV4Data(); !s) return rollback(s);
    Query up(db_, "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
                 "ON CONFLICT(key) DO UPDATE SET value=excluded.value");
    up.bind(1, std::to_string(version + 1));
    if (!up.done()) return rollback(Error{db_->explain(up.error())});
    if (auto s = exec("COMMIT"); !s) return s;
  }
}

}  // namespace sextant
