// One worker of a study (issue #17): the tuning loop of tune() with claims. Before each batch the
// worker learns what every worker has recorded (one cost model per worker, refit from the shared
// records: the database is the model's state), proposes candidates that nobody has recorded or
// holds, claims them (expired claims of dead workers first), compiles and measures only what it
// got, and stores the records and releases its claims in one transaction. A heartbeat thread on
// its own connection keeps the claims' leases alive while the batch compiles and measures.
#include <chrono>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "sextant/search/tuner.h"

namespace sextant {

namespace {

// Renews the worker's leases every heartbeat_s until destroyed, on its own connection. A watchdog
// raises `halt` when the user stops (Ctrl-C) or when no renewal has succeeded for a whole lease
// (`lost`): the database is unreachable, the claims may be re-issued to another worker, so this
// one must stop measuring them.
class Heartbeat {
 public:
  Heartbeat(const TuneOptions& o, const std::atomic<bool>& stop) : o_(o), stop_user_(stop) {
    last_ok_ = now();
    renew_ = std::thread([this] {
      auto db = Database::open(o_.db_path, false);
      while (!done_.load()) {
        if (db && db->heartbeat(o_.worker, o_.lease_s)) last_ok_ = now();
        for (int i = 0; i < int(o_.heartbeat_s * 20) && !done_.load(); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    watch_ = std::thread([this] {
      while (!done_.load()) {
        if (stop_user_.load()) halt = true;
        if (now() - last_ok_.load() > o_.lease_s) lost = halt = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~Heartbeat() {
    done_ = true;
    watch_.join();
    renew_.join();  // may wait for a reconnection attempt to give up
  }
  double sinceLastRenewal() const { return now() - last_ok_.load(); }
  // After a lost lease has been dealt with: measuring may start again once renewals succeed.
  void rearm() {
    last_ok_ = now();
    lost = false;
    halt = stop_user_.load();
  }
  std::atomic<bool> halt{false}, lost{false};

 private:
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  const TuneOptions& o_;
  const std::atomic<bool>& stop_user_;
  std::atomic<bool> done_{false};
  std::atomic<double> last_ok_{0};
  std::thread renew_, watch_;
};

}  // namespace

Result<bool> workerLoop(TuneContext& ctx, const TuneOptions& o, SearchStrategy& strategy,
                        std::unordered_set<uint64_t>& tried, int64_t run_id, const std::atomic<bool>& stop,
                        const std::function<void(int64_t, int64_t, double)>& progress) {
  Heartbeat hb(o, stop);
  int64_t failures = 0;
  double best = 0;
  for (;;) {
    if (stop.load()) return false;
    // Where the study stands.
    auto studies = ctx.db.studies();
    if (!studies) return Error{studies.error()};
    const StudyRow* st = nullptr;
    for (const auto& s : *studies)
      if (s.id == o.study_id) st = &s;
    if (!st) return Error{"no study " + std::to_string(o.study_id) + " in the database"};
    if (progress) progress(st->records, failures, best);
    if (st->records >= st->trials) return false;
    // What the other workers learnt.
    // (This machine's records, and the study's own of any machine: another machine's records
    // outside the study are not "tried" here, issue #35.)
    auto known = ctx.db.records(ctx.workload.key(), ctx.target.key());
    if (!known) return Error{known.error()};
    auto runs = ctx.db.runs();
    if (!runs) return Error{runs.error()};
    std::unordered_set<int64_t> study_runs;
    for (const auto& r : *runs)
      if (r.study_id == o.study_id) study_runs.insert(r.id);
    std::vector<Observation> news;
    for (const auto& r : *known) {
      auto c = ctx.space.fromKey(r.candidate);
      if (!c || !ctx.space.isValid(*c) || r.source == "predicted") continue;
      if (r.machine != ctx.machine && !study_runs.count(r.run_id)) continue;
      if (tried.insert(ctx.space.encode(*c)).second && (r.source == "measured" || r.status == "compile_error"))
        news.push_back({*c, r.status == "ok", r.gflops});
      if (r.status == "ok" && r.source == "measured") best = std::max(best, r.gflops);
    }
    if (!news.empty()) strategy.observe(ctx.space, news);
    // Propose around what is held by others, then claim.
    auto held = ctx.db.claimedCandidates(o.study_id);
    if (!held) return Error{held.error()};
    std::unordered_set<uint64_t> avoid = tried;
    for (const auto& k : *held)
      if (auto c = ctx.space.fromKey(k); c && ctx.space.isValid(*c)) avoid.insert(ctx.space.encode(*c));
    const size_t n = size_t(std::max<int64_t>(1, std::min<int64_t>(o.batch, st->trials - st->records - st->claims)));
    auto proposed = strategy.propose(ctx.space, avoid, n);
    std::vector<std::string> keys;
    for (const auto& c : proposed) keys.push_back(ctx.space.keyOf(c));
    auto got = ctx.db.claimCandidates(o.study_id, o.worker, o.lease_s, o.max_attempts, keys);
    if (!got) return Error{got.error()};
    // Given up: recorded as failures, never retried.
    std::vector<RecordRow> given_up;
    for (const auto& k : got->abandoned) {
      Evaluation e;
      e.status = "crash";
      e.source = "measured";
      e.message = "its compilation or measurement stopped " + std::to_string(o.max_attempts) +
                  " workers (their leases expired while they held it); not retried";
      auto c = ctx.space.fromKey(k);
      std::string knobs = c ? nlohmann::json(ctx.space.knobMap(*c)).dump() : "{}";
      given_up.push_back(recordOf(ctx, run_id, k, knobs, e));
      ++failures;
    }
    if (!given_up.empty())
      if (auto s = ctx.db.insertRecords(given_up); !s) return Error{s.error()};
    std::vector<Candidate> batch;
    for (const auto* list : {&got->reissued, &got->claimed})
      for (const auto& k : *list)
        if (auto c = ctx.space.fromKey(k); c && ctx.space.isValid(*c)) batch.push_back(*c);
    if (batch.empty()) {
      if (proposed.empty() && held->empty()) {  // the space is exhausted: no worker can add to the study
        if (auto s = ctx.db.finishStudy(o.study_id); !s) return Error{s.error()};
        return true;
      }
      // Everything left is held by other workers (or the study is full): wait for them.
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    auto results = ctx.evaluator.evaluate(batch, hb.halt, [](size_t, const Evaluation&) {});
    const bool lost = hb.lost.load();
    if (lost) {  // its claims may be another worker's by now, and a frozen process's timings are wrong
      fprintf(stderr,
              "worker %s: could not renew its lease for %d s (lease %d s; database unreachable, or this process "
              "was stopped): stopped measuring; the batch's %zu measurement(s) are discarded and its %zu "
              "candidates go back to the study\n",
              o.worker.c_str(), int(hb.sinceLastRenewal()), int(o.lease_s), results.size(), batch.size());
      results.clear();
    }
    std::vector<RecordRow> rows;
    std::vector<Observation> obs;
    for (size_t i = 0; i < results.size(); ++i) {
      const Evaluation& e = results[i];
      rows.push_back(recordOf(ctx, run_id, ctx.space.keyOf(batch[i]), nlohmann::json(ctx.space.knobMap(batch[i])).dump(), e));
      tried.insert(ctx.space.encode(batch[i]));
      if (e.status != "ok" && e.status != "not_measured" && e.status != "rejected") ++failures;
      else best = std::max(best, e.measurement.gflops);
      if (e.source == "measured" || e.status == "rejected" || e.status == "compile_error")
        obs.push_back({batch[i], e.status == "ok", e.measurement.gflops});
    }
    // The records and the release of this worker's claims: one transaction, which drops the
    // records of candidates another worker took over meanwhile. Candidates the batch did not
    // finish (Ctrl-C) go back to the study at once.
    auto dropped = ctx.db.insertClaimedRecords(rows, o.worker, o.study_id);
    if (!dropped) return Error{dropped.error()};
    if (*dropped > 0)
      fprintf(stderr, "worker %s: %lld measurement(s) not recorded: their leases had expired and another worker "
                      "took the candidates over\n", o.worker.c_str(), (long long)*dropped);
    strategy.observe(ctx.space, obs);
    if (lost) hb.rearm();  // the database answered the commit: go on with fresh claims
  }
}

}  // namespace sextant
