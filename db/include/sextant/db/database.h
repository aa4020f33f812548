// The schedule database: SQLite (WAL, one transaction per batch), a versioned schema with
// migrations. Holds workloads, targets, tuning runs, records (one per candidate tried, failures
// included) and baselines (the untuned default and the BLAS peer, measured in each run).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sextant/common/result.h"

namespace sextant {
namespace dbengine {
class Conn;
}

constexpr int kSchemaVersion = 4;
// Records measured into a database of this schema or newer carry schedules this version still
// reads as they were (v2 only added the stats column, v3 studies, workers and claims, v4 the
// measuring machine, confirmations and record uids).
constexpr int kOldestCompatibleSchema = 1;
// A "running" run of another host whose last batch was committed less than this ago (database
// clock) is taken as alive: never resumed (taken over) by this host.
constexpr double kRunAliveWindowS = 1800;

struct WorkloadRow {
  std::string key;  // canonical workload key
  std::string op;   // "gemm"
  int64_t m = 0, n = 0, k = 0;
  std::string dtype_a, dtype_b, dtype_c, layout;
  double flops = 0;
};

struct TargetRow {
  std::string key;  // canonical target key ("cpu:x86_64-avx512")
  std::string name, arch, device, features;
};

struct RunRow {
  int64_t id = 0;
  std::string workload_key, target_key;
  std::string strategy;
  int64_t seed = 0;
  std::string space, space_fingerprint;
  int64_t trials_requested = 0;
  std::string status;  // running, finished, interrupted, failed
  std::string started_at, finished_at;
  std::string args;    // JSON of the command line options
  std::string tool_version, llvm_version, host;
  std::string machine;                  // the machine that measures it (machineKey; issue #35)
  int64_t owner_pid = 0;                // the process running it (on `host`) while status is running
  double heartbeat_age_s = -1;          // filled by queries: seconds since its last committed batch
                                        // (server clock; -1: never)
  int64_t study_id = 0;                 // the study a worker ran it for (0: none)
  int64_t records = 0, ok_records = 0;  // filled by queries (predicted records not counted;
                                        // ok_records: measured and verified)
  int64_t unmeasured = 0;               // GPU kernels compiled but not run (--measure none/bundle)
  double best_gflops = 0;               // filled by queries
};

struct RecordRow {
  int64_t id = 0;
  int64_t run_id = 0;
  std::string workload_key, target_key;
  std::string candidate;   // canonical knob string (Space::keyOf)
  std::string knobs;       // JSON object of knob values
  std::string schedule;    // the exact Transform script
  int64_t schedule_id = 0;
  std::string status;      // ok, compile_error, crash, timeout, wrong_result, load_error,
                           // rejected (GPU pre-flight), not_measured (compiled only), ...
  std::string source = "measured";  // measured | predicted | compiled (GPU kernels compiled and
                                    // analysed but not run: --measure none / bundle)
  std::string message;
  std::vector<double> times_s;
  double median_s = 0, cv = 0, gflops = 0, compile_s = 0, max_abs_err = 0;
  std::string tool_version, llvm_version, cpu_model, device, created_at;
  int schema_version = kSchemaVersion;  // of the database the record was measured into
  std::string stats = "{}";  // JSON: GPU compile statistics (registers, spills, shared memory,
                             // occupancy, pre-flight verdict); {} for CPU records
  // The machine that measured it (issue #35): "cpu:LLVM:ISA:VENDOR-FAMILY-MODEL:Nc" (machineKey in
  // hwspec), "gpu:..." for GPU measurements, "cpu:LLVM:ISA:?" for records from before schema 4
  // whose machine is only partly known, "unknown", or "none" (not measured: predicted, compiled).
  std::string machine = "unknown";
  // The confirmed figure: every repetition of the final comparisons it took part in (pooled), how
  // many final comparisons measured it, and the GFLOP/s of the pooled median (0: never confirmed,
  // or a confirmation failed). See rankOf.
  int64_t confirmations = 0;
  std::vector<double> confirmed_times;
  double confirmed_gflops = 0;
  std::string uid;  // unique per record, set when it is first stored (idempotent commits)

  bool confirmed() const { return confirmations > 0 && confirmed_gflops > 0; }
  // The figure to quote: the confirmed one where there is one, else the single measurement.
  double figure() const { return confirmations > 0 ? confirmed_gflops : gflops; }
  // Times measured: the search's measurement plus each final comparison.
  int64_t measurements() const { return (source == "measured" ? 1 : 0) + confirmations; }
};

// How records rank as "the best" (best, export, compile, show; issue #35): a confirmed record (it
// held up in a final comparison) by its confirmed figure, above any record measured only once (by
// that measurement), above a record whose confirmation failed. Ties: the older record.
// True if `a` ranks above `b`.
bool ranksAbove(const RecordRow& a, const RecordRow& b);

// Does a record's machine key match a filter? "" matches every machine; otherwise the key itself,
// or a prefix of whole fields ("cpu:znver4" matches "cpu:znver4:avx512:?").
bool machineMatches(const std::string& machine, const std::string& filter);

// The machine of a record written before schema 4 (or in a version-1 records file), from what it
// carries: CPU records "cpu:LLVM:ISA:?" (LLVM's CPU name was stored as `device`, the ISA is in
// the target's arch), GPU measurements "gpu:DEVICE:?", "none" for what was not measured,
// "unknown" when nothing tells. Never this machine's full key: its family, model and cores are
// not known.
std::string legacyMachineOf(const RecordRow& r, const std::string& target_arch);

// A machine that measured records of a database, and how many.
struct MachineRow {
  std::string key;
  int64_t records = 0, ok = 0, confirmed = 0;
  std::string first, last;  // created_at of its oldest and newest record
};

// A measurement of the final comparison of a run (see TuneOptions::final_rounds).
struct BaselineRow {
  int64_t run_id = 0;
  std::string name;       // "default" (untuned schedule), "openblas", or "tuned" (a confirmed record)
  std::string detail;     // the BLAS configuration, or the knobs
  int64_t record_id = 0;  // for "tuned": the record confirmed
  std::string status, message;
  std::vector<double> times_s;
  double median_s = 0, cv = 0, gflops = 0;
  std::string created_at;
  std::vector<double> round_median_s;  // the median of each round's repetitions (not stored)
  bool paired = false;  // a head-to-head row measured call by call: times_s[i] of both rows taken
                        // back to back (not stored)
};

// A study (issue #17): a workload and target tuned together by workers (tune worker), up to
// `trials` records in all; the tune command line that made it in `args` (JSON).
struct StudyRow {
  int64_t id = 0;
  std::string workload_key, target_key, strategy, args, status = "open", created_at;
  int64_t trials = 0;
  int64_t records = 0, claims = 0;  // filled by queries
};
struct WorkerRow {
  std::string name, host, device, started_at;
  int64_t pid = 0, study_id = 0, measured = 0;
  double heartbeat_age_s = 0;  // filled by queries: seconds since its last heartbeat
  double per_minute = 0;       // filled by queries: candidates recorded per minute since it started
};
// What claimCandidates got: new claims, expired claims of other workers taken over (re-issued),
// and expired claims given up on (their measurement stopped `max_attempts` workers: to be
// recorded as failures by the caller).
struct ClaimResult {
  std::vector<std::string> claimed, reissued, abandoned;
};

class Database {
 public:
  // Opens (creating if needed) a database: a SQLite file, or a PostgreSQL database given as
  // postgresql://USER[:PASSWORD]@HOST[:PORT]/NAME (the same schema, migrations and SQL; issue #17).
  // Errors name the file or server and the problem: not a SQLite file, not a Sextant database, a
  // newer schema, not writable, unreachable server, refused login.
  static Result<Database> open(const std::string& path, bool create = true);
  // Is `path` a server URL (postgresql://...) rather than a SQLite file?
  static bool isServerUrl(const std::string& path);
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  Database(const Database&) = delete;
  ~Database();

  const std::string& path() const { return path_; }
  const std::string& engine() const;  // "sqlite" or "postgresql"
  int schemaVersion() const;

  Status upsertWorkload(const WorkloadRow& w);
  Status upsertTarget(const TargetRow& t);

  Result<int64_t> beginRun(const RunRow& r);
  // The latest run with these settings that did not finish (interrupted or killed), if any.
  // (On the same machine: a run measured elsewhere is never resumed here.)
  Result<std::optional<RunRow>> findUnfinishedRun(const std::string& workload_key, const std::string& target_key,
                                                  const std::string& strategy, int64_t seed,
                                                  const std::string& space_fingerprint, const std::string& machine);
  // Takes over an unfinished run (resume).
  Status claimRun(int64_t run_id, const std::string& host, int64_t pid);
  // Atomically (one IMMEDIATE transaction, so that processes starting together serialise): with
  // `resume`, takes over the latest unfinished run with r's settings unless `owned_by_live` says
  // its owner still runs (then an error naming it; a run of another host counts as running while
  // its last committed batch is younger than kRunAliveWindowS); else, or when there is none,
  // begins a new run.
  struct RunClaim {
    int64_t id = 0;
    bool resumed = false;
    int64_t records = 0;  // of the resumed run
  };
  Result<RunClaim> claimOrBeginRun(const RunRow& r, bool resume,
                                   const std::function<bool(const RunRow&)>& owned_by_live);
  Status finishRun(int64_t run_id, const std::string& status);

  // One transaction for the whole batch: all of it is stored or none. Idempotent: each record gets
  // a uid before the first attempt, so a batch sent again after a lost COMMIT acknowledgement
  // (PostgreSQL reconnection) is not stored twice. The batch's runs get a heartbeat (server clock).
  Status insertRecords(const std::vector<RecordRow>& records);
  Status insertBaseline(const BaselineRow& b);

  // Candidates that already have a measured record (any status) for this workload and target on
  // the machines `machine` matches (machineMatches).
  Result<std::set<std::string>> triedCandidates(const std::string& workload_key, const std::string& target_key,
                                                const std::string& machine);
  Result<std::vector<RecordRow>> records(const std::string& workload_key, const std::string& target_key,
                                         bool include_schedule = false);
  // The best measured ("ok", source measured) record for a workload and target among the records
  // of the machines `machine` matches ("" every machine), ranked by ranksAbove.
  Result<std::optional<RecordRow>> best(const std::string& workload_key, const std::string& target_key,
                                        const std::string& machine);
  // A final comparison measured record `record_id` again: its repetitions join the record's
  // confirmed times and its confirmed figure becomes their pooled median (`failed`: the record
  // crashed, timed out or gave a wrong result there: its confirmed figure becomes 0 for good).
  Status confirmRecord(int64_t record_id, const std::vector<double>& times, bool failed);
  // The machines whose records the database holds, with counts.
  Result<std::vector<MachineRow>> machines();
  Result<std::vector<RunRow>> runs();
  Result<std::vector<BaselineRow>> baselines(int64_t run_id);

  // Studies and workers (studies.cpp). Claims are leases on candidates: a worker holds its claims
  // while it heart-beats; a claim whose lease expired is re-issued to the next worker that asks,
  // and given up after `max_attempts` workers. A study never has more records + claims than trials.
  Result<int64_t> createStudy(const StudyRow& s);
  Result<std::vector<StudyRow>> studies();
  Status finishStudy(int64_t study_id);
  Result<ClaimResult> claimCandidates(int64_t study_id, const std::string& worker, double lease_s, int max_attempts,
                                      const std::vector<std::string>& wanted);
  Result<std::set<std::string>> claimedCandidates(int64_t study_id);  // held by any worker
  Status registerWorker(const WorkerRow& w);
  Status heartbeat(const std::string& worker, double lease_s);  // extends its claims too
  Result<std::vector<WorkerRow>> workers();
  // insertRecords for a worker of study `study_id`: in the same transaction, records of candidates
  // the worker no longer holds a claim on are dropped (its lease expired and another worker took
  // the candidate: exactly one of them records it), then its claims are released and its count
  // raised. Returns how many records were dropped.
  Result<int64_t> insertClaimedRecords(const std::vector<RecordRow>& records, const std::string& worker,
                                       int64_t study_id);

  // For export and import.
  Result<std::vector<RecordRow>> allRecords(bool include_schedule);
  Result<std::optional<WorkloadRow>> workload(const std::string& key);
  Result<std::optional<TargetRow>> target(const std::string& key);
  // Records with the same workload, target, candidate and source; `exact` also requires the same
  // measurement (times and timestamp).
  Result<int64_t> countSame(const RecordRow& r, bool exact);
  // Seconds since the epoch on the database's clock (the server's, for PostgreSQL): leases and
  // heartbeats use it, never a client's clock.
  Result<double> serverNow();

 private:
  Database();
  Status exec(const std::string& sql);
  Status migrate(bool create);  // create: an empty database gets the schema (else an error, nothing written)
  Status migrateV4Data();  // machines of old records, confirmations from old final comparisons
  Result<int64_t> scheduleId(const std::string& text);
  // PostgreSQL: after a lost connection, reconnects (waiting up to 5 minutes for the server) and
  // says whether to run the operation again (its transaction was rolled back by the server).
  bool reconnected(const std::string& error);
  // The operations workers repeat, each run again after a reconnection (see above).
  Result<std::vector<RecordRow>> recordsOnce(const std::string& workload_key, const std::string& target_key,
                                             bool include_schedule);
  Result<int64_t> insertRecordsOnce(const std::vector<RecordRow>& records, const std::string& release_worker,
                                    int64_t study_id);
  Result<std::vector<StudyRow>> studiesOnce();
  Result<ClaimResult> claimCandidatesOnce(int64_t study_id, const std::string& worker, double lease_s, int max_attempts,
                                          const std::vector<std::string>& wanted);
  Result<std::set<std::string>> claimedCandidatesOnce(int64_t study_id);
  Status heartbeatOnce(const std::string& worker, double lease_s);
  std::unique_ptr<dbengine::Conn> db_;
  std::string path_;
};

std::string nowIso8601();

// `text` with every password masked (issue #35): a postgresql://USER:PASSWORD@... URL's password,
// and `password=...` (libpq's key=value and URI query forms). Runs' and studies' arguments,
// summaries, reports and errors go through it; libpq still reads PGPASSWORD and ~/.pgpass.
std::string maskSecrets(const std::string& text);

}  // namespace sextant
