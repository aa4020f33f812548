// One worker of a study (issue #17): the tuning loop of tune() with claims. Before each batch the
// worker learns what every worker has recorded (one cost model per worker, refit from the shared
// records: the database is the model's state), proposes candidates that nobody has recorded or
// holds, claims them (expired claims of dead workers first), compiles and measures only what it
// got, and stores the records and releases its claims in one transaction. A heartbeat thread on
// its own connection keeps the claims' leases alive while the batch compiles and measures.
#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "sextant/search/tuner.h"

namespace sextant {

namespace {

// Renews the worker's leases every heartbeat_s until destroyed.
class Heartbeat {
 public:
  Heartbeat(const TuneOptions& o) : o_(o) {
    t_ = std::thread([this] {
      auto db = Database::open(o_.db_path, false);
      while (!stop_.load()) {
        if (db) db->heartbeat(o_.worker, o_.lease_s);
        for (int i = 0; i < int(o_.heartbeat_s * 20) && !stop_.load(); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~Heartbeat() {
    stop_ = true;
    t_.join();
  }

 private:
  const TuneOptions& o_;
  std::atomic<bool> stop_{false};
  std::thread t_;
};

}  // namespace

Result<bool> workerLoop(TuneContext& ctx, const TuneOptions& o, SearchStrategy& strategy,
                        std::unordered_set<uint64_t>& tried, int64_t run_id, const std::atomic<bool>& stop,
                        const std::function<void(int64_t, int64_t, double)>& progress) {
  Heartbeat hb(o);
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
    auto known = ctx.db.records(ctx.workload.key(), ctx.target.key());
    if (!known) return Error{known.error()};
    std::vector<Observation> news;
    for (const auto& r : *known) {
      auto c = ctx.space.fromKey(r.candidate);
      if (!c || !ctx.space.isValid(*c) || r.source == "predicted") continue;
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
    auto results = ctx.evaluator.evaluate(batch, stop, [](size_t, const Evaluation&) {});
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
    // The records and the release of this worker's claims: one transaction. Candidates the batch
    // did not finish (Ctrl-C) go back to the study at once.
    if (auto s = ctx.db.insertRecords(rows, o.worker); !s) return Error{s.error()};
    strategy.observe(ctx.space, obs);
  }
}

}  // namespace sextant
