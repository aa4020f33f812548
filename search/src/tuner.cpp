#include "sextant/search/tuner.h"

#include <map>
#include <tuple>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace sextant {

Status registerWorkloadAndTarget(Database& db, const GemmWorkload& w, const Target& t, const std::string& device,
                                 const std::string& features) {
  WorkloadRow wr{w.key(), opKindName(w.op), w.m, w.n, w.k, dtypeName(w.a_type), dtypeName(w.b_type), dtypeName(w.c_type),
                 layoutName(w.layout), w.flops()};
  if (auto s = db.upsertWorkload(wr); !s) return s;
  return db.upsertTarget(TargetRow{t.key(), t.name, t.arch, device, features});
}

std::string hostName() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

const BaselineRow* TuneSummary::finalOf(const std::string& name) const {
  for (const auto& b : final)
    if (b.name == name) return &b;
  return nullptr;
}

const BaselineRow* TuneSummary::finalBestTuned() const {
  const BaselineRow* best = nullptr;
  for (const auto& b : final_paired)
    if (b.status == "ok" && b.gflops > 0 && (!best || b.gflops > best->gflops)) best = &b;
  if (best) return best;
  for (const auto& b : final)
    if (b.name == "tuned" && b.status == "ok" && (!best || b.gflops > best->gflops)) best = &b;
  return best;
}

bool TuneSummary::isLibrary(const BaselineRow& b) const {
  return std::find(library_names.begin(), library_names.end(), b.name) != library_names.end();
}

const BaselineRow* TuneSummary::fastestLibrary() const {
  const BaselineRow* best = nullptr;
  for (const auto& b : final)
    if (isLibrary(b) && b.status == "ok" && (!best || b.gflops > best->gflops)) best = &b;
  return best;
}

std::vector<double> TuneSummary::roundRatios() const {
  std::vector<double> out;
  if (head_to_head.size() != 2 || head_to_head[0].status != "ok" || head_to_head[1].status != "ok") return out;
  const auto& t = head_to_head[0].round_median_s;
  const auto& r = head_to_head[1].round_median_s;
  for (size_t i = 0; i < t.size() && i < r.size(); ++i)
    if (t[i] > 0 && r[i] > 0) out.push_back(r[i] / t[i]);
  return out;
}

std::vector<double> TuneSummary::pairRatios() const {
  std::vector<double> out;
  if (head_to_head.size() != 2 || head_to_head[0].status != "ok" || head_to_head[1].status != "ok" ||
      !head_to_head[0].paired || !head_to_head[1].paired)
    return out;
  const auto& t = head_to_head[0].times_s;
  const auto& r = head_to_head[1].times_s;
  for (size_t i = 0; i < t.size() && i < r.size(); ++i)
    if (t[i] > 0 && r[i] > 0) out.push_back(r[i] / t[i]);
  return out;
}

// Call by call (pairRatios), each pair's two calls are taken back to back, so a change of the
// machine's speed that lasts longer than a call (tens of milliseconds) cancels in its ratio.
// Otherwise the median of the rounds' paired ratios: each round measures the two back to back, so a phase of
// the machine (a neighbour's load, a frequency change) that lasts seconds slows both sides of a
// round alike and cancels in its ratio. Pooling every repetition instead lets such a phase weigh
// by how many repetitions fell into it, which differs between the two (a slow call gets fewer).
double TuneSummary::ratioToReference() const {
  if (head_to_head.size() != 2 || head_to_head[0].status != "ok" || head_to_head[1].status != "ok" ||
      head_to_head[1].gflops <= 0)
    return 0;
  std::vector<double> ratios = pairRatios();
  if (ratios.empty()) ratios = roundRatios();
  if (ratios.empty()) return head_to_head[0].gflops / head_to_head[1].gflops;
  double median = 0, cv = 0;
  summarize(ratios, median, cv);
  return median;
}

// A row's pooled figures from its repetitions: median, cv and GFLOP/s.
static void poolRow(BaselineRow& row, double flops) {
  summarize(row.times_s, row.median_s, row.cv);
  row.gflops = row.median_s > 0 ? flops / row.median_s / 1e9 : 0;
}

// Measures every contender in interleaved rounds and pools each one's repetitions. `alternate`:
// odd rounds go in reverse order (A B, B A, ...), so that neither of two contenders always runs
// right after the other.
static std::vector<BaselineRow> finalComparison(const std::vector<Contender>& contenders, int rounds, double flops,
                                                const std::atomic<bool>& stop, bool alternate = false) {
  std::vector<BaselineRow> rows(contenders.size());
  for (size_t i = 0; i < contenders.size(); ++i) {
    rows[i].name = contenders[i].name;
    rows[i].detail = contenders[i].detail;
    rows[i].record_id = contenders[i].record_id;
    rows[i].status = "ok";
  }
  for (int r = 0; r < rounds && !stop.load(); ++r) {
    for (size_t j = 0; j < contenders.size() && !stop.load(); ++j) {
      const size_t i = alternate && r % 2 ? contenders.size() - 1 - j : j;
      if (rows[i].status != "ok") continue;
      Measurement m = contenders[i].measure();
      if (!m.ok()) {
        rows[i].status = measureStatusName(m.status);
        rows[i].message = m.message;
        continue;
      }
      rows[i].times_s.insert(rows[i].times_s.end(), m.times_s.begin(), m.times_s.end());
      double round_median = 0, round_cv = 0;
      summarize(m.times_s, round_median, round_cv);
      rows[i].round_median_s.push_back(round_median);
    }
  }
  for (auto& row : rows)
    if (row.status == "ok") poolRow(row, flops);
  return rows;
}

// The head-to-head call by call: each round one process measures the winner and the library in
// alternating calls (Contender::measure_paired). Empty when it cannot (nothing compiled, a failed
// pair): the caller measures in alternating rounds instead.
static std::vector<BaselineRow> pairedHeadToHead(const Contender& tuned, const Contender& lib, int rounds, double flops,
                                                 const std::atomic<bool>& stop) {
  if (!tuned.shared_object || !lib.measure_paired) return {};
  const std::string so = tuned.shared_object();
  if (so.empty()) return {};
  std::vector<BaselineRow> rows(2);
  const Contender* who[2] = {&tuned, &lib};
  for (int i = 0; i < 2; ++i) {
    rows[size_t(i)].name = who[i]->name;
    rows[size_t(i)].detail = who[i]->detail;
    rows[size_t(i)].record_id = who[i]->record_id;
    rows[size_t(i)].status = "ok";
    rows[size_t(i)].paired = true;
  }
  for (int r = 0; r < rounds && !stop.load(); ++r) {
    auto [mt, ml] = lib.measure_paired(so);
    if (!mt.ok() || !ml.ok() || mt.times_s.size() != ml.times_s.size()) return {};
    int i = 0;
    for (const Measurement* m : {&mt, &ml}) {
      BaselineRow& row = rows[size_t(i++)];
      row.times_s.insert(row.times_s.end(), m->times_s.begin(), m->times_s.end());
      row.round_median_s.push_back(m->median_s);
    }
  }
  for (auto& row : rows) poolRow(row, flops);
  return rows;
}

// Issue #35: the run's candidates call by call beside the fastest library, in interleaved rounds
// (round r measures each candidate once, odd rounds in reverse order). A Zen 4 default job shipped a
// winner that led the interleaved final comparison (1.00x oneDNN) and measured 0.91-0.92x called
// alternately with oneDNN, where the run's other two finalists measured 0.98-0.99x
// (experiments/results/default_job_winners_ab_zen4.txt): how a kernel runs next to another one is
// how it runs in a program, so that is what picks the winner and confirms its record. Returns one
// row per index of `tuned` (status not "ok" where a pair failed); empty when no candidate could be
// paired (none compiled, or every pair failed).
static std::vector<BaselineRow> pairedFinal(const std::vector<const Contender*>& tuned, const Contender& lib, int rounds,
                                            double flops, const std::atomic<bool>& stop) {
  std::vector<BaselineRow> rows(tuned.size());
  std::vector<std::string> so(tuned.size());
  bool any = false;
  for (size_t i = 0; i < tuned.size(); ++i) {
    rows[i].name = tuned[i]->name, rows[i].detail = tuned[i]->detail, rows[i].record_id = tuned[i]->record_id;
    rows[i].paired = true;
    so[i] = tuned[i]->shared_object ? tuned[i]->shared_object() : "";
    rows[i].status = so[i].empty() ? "compile_error" : "ok";
    any = any || !so[i].empty();
  }
  if (!any) return {};
  for (int r = 0; r < rounds && !stop.load(); ++r)
    for (size_t j = 0; j < tuned.size() && !stop.load(); ++j) {
      const size_t i = r % 2 ? tuned.size() - 1 - j : j;
      if (rows[i].status != "ok") continue;
      auto [mt, ml] = lib.measure_paired(so[i]);
      if (!mt.ok() || !ml.ok()) {
        rows[i].status = measureStatusName(mt.ok() ? ml.status : mt.status);
        rows[i].message = mt.ok() ? ml.message : mt.message;
        continue;
      }
      rows[i].times_s.insert(rows[i].times_s.end(), mt.times_s.begin(), mt.times_s.end());
      rows[i].round_median_s.push_back(mt.median_s);
    }
  bool measured = false;
  for (auto& row : rows)
    if (row.status == "ok" && !row.times_s.empty()) poolRow(row, flops), measured = measured || row.gflops > 0;
  return measured ? rows : std::vector<BaselineRow>{};
}

std::string costModelPath(const std::string& db_path, const std::string& target_key, const std::string& workload_key) {
  // A database on a server has no file to keep the model beside: the model is fit from the
  // records (all workers') at the start of each run instead.
  if (Database::isServerUrl(db_path)) return "";
  std::string t = target_key + "." + workload_key;
  for (char& ch : t)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-') ch = '_';
  return db_path + "." + t + ".costmodel";
}

std::vector<PriorRecord> priorFromRecords(const std::vector<RecordRow>& records, const std::string& workload_key,
                                          const std::string& target_key, const std::string& machine,
                                          const std::function<double(const std::string&)>& target_weight) {
  using Group = std::tuple<std::string, std::string, std::string>;  // workload, target, machine
  std::map<Group, double> best;
  auto own = [&](const RecordRow& r) {
    return r.workload_key == workload_key && r.target_key == target_key && r.machine == machine;
  };
  for (const auto& r : records)
    if (r.source == "measured" && r.status == "ok" && !own(r)) {
      double& b = best[{r.workload_key, r.target_key, r.machine}];
      b = std::max(b, r.gflops);
    }
  std::vector<PriorRecord> out;
  for (const auto& r : records) {
    auto it = best.find({r.workload_key, r.target_key, r.machine});
    if (it == best.end() || r.status != "ok" || r.source != "measured" || it->second <= 0) continue;
    double w = target_weight ? target_weight(r.target_key) : 1.0;
    if (r.workload_key == workload_key) w *= 0.5;  // this workload, measured by another machine
    if (w <= 0) continue;
    auto j = nlohmann::json::parse(r.knobs, nullptr, false);
    if (!j.is_object()) continue;
    PriorRecord p;
    for (auto& [k, v] : j.items())
      if (v.is_number_integer()) p.knobs[k] = v.get<int64_t>();
    p.score = r.gflops / it->second;
    p.weight = w;
    p.workload = r.workload_key;
    out.push_back(std::move(p));
  }
  return out;
}

RecordRow recordOf(const TuneContext& ctx, int64_t run_id, const std::string& candidate, const std::string& knobs_json,
                   const Evaluation& e) {
  RecordRow r;
  r.run_id = run_id;
  r.workload_key = ctx.workload.key();
  r.target_key = ctx.target.key();
  r.candidate = candidate;
  r.knobs = knobs_json;
  r.schedule = e.schedule;
  r.status = e.status;
  r.message = e.message;
  r.times_s = e.measurement.times_s;
  r.median_s = e.measurement.median_s;
  r.cv = e.measurement.cv;
  r.gflops = e.measurement.gflops;
  r.compile_s = e.compile_s;
  r.max_abs_err = e.measurement.max_abs_err;
  r.tool_version = SEXTANT_VERSION;
  r.llvm_version = ctx.llvm_version;
  r.cpu_model = ctx.cpu_model;
  r.device = e.device.empty() ? ctx.device : e.device;
  r.source = e.source;
  r.stats = e.stats;
  r.machine = e.source == "measured" ? ctx.machine : "none";
  return r;
}

namespace {

// Stage 1: resume an unfinished run with the same settings, or start a new one: decided and
// claimed in one transaction, so that two processes never own one run.
Status claimRun(TuneContext& ctx, const TuneOptions& o, TuneSummary& sum) {
  RunRow r;
  r.workload_key = ctx.workload.key();
  r.target_key = ctx.target.key();
  r.strategy = o.strategy;
  r.seed = int64_t(o.seed);
  r.space = ctx.space.name();
  r.space_fingerprint = ctx.space.fingerprint();
  r.trials_requested = o.trials;
  r.args = o.args_json;
  r.tool_version = SEXTANT_VERSION;
  r.llvm_version = ctx.llvm_version;
  r.host = hostName();
  r.owner_pid = getpid();
  r.study_id = o.study_id;
  r.machine = ctx.machine;
  // A run still owned by a live process on this machine is not resumed: two processes on one
  // run would measure the same candidates.
  auto live = [](const RunRow& p) {
    return p.status == "running" && p.host == hostName() && p.owner_pid > 0 && p.owner_pid != getpid() &&
           (kill(pid_t(p.owner_pid), 0) == 0 || errno == EPERM);
  };
  auto claim = ctx.db.claimOrBeginRun(r, o.resume, live);
  if (!claim) return Error{claim.error()};
  sum.run_id = claim->id;
  sum.resumed = claim->resumed;
  sum.resumed_records = claim->resumed ? claim->records : 0;
  return okStatus();
}

// Stage 2: what this machine knows already (all its runs) is never measured again, and the
// strategy learns it. Other machines' records are not "tried" here (issue #35): their figures are
// not this machine's; they reach the search as transfer data (the prior) only.
Status learnKnownRecords(TuneContext& ctx, const TuneOptions& o, SearchStrategy& strategy,
                         std::unordered_set<uint64_t>& tried) {
  auto known = ctx.db.records(ctx.workload.key(), ctx.target.key());
  if (!known) return Error{known.error()};
  std::vector<Observation> history;
  for (const auto& r : *known) {
    if (r.source == "predicted") continue;
    if (r.source == "measured" && r.machine != ctx.machine) continue;
    auto c = ctx.space.fromKey(r.candidate);
    if (!c || !ctx.space.isValid(*c)) continue;  // from another space version
    if (o.measure_unmeasured && r.status == "not_measured") continue;
    tried.insert(ctx.space.encode(*c));
    // Compiled-only GPU kernels are not proposed again, but only measurements teach the strategy
    // (a pre-flight rejection is a real failure).
    if (r.source == "measured" || r.status == "rejected" || r.status == "compile_error")
      history.push_back({*c, r.status == "ok", r.gflops});
  }
  strategy.observe(ctx.space, history);
  return okStatus();
}

// The database record of one evaluated candidate of the space.
RecordRow recordOf(const TuneContext& ctx, int64_t run_id, const Candidate& c, const Evaluation& e) {
  return sextant::recordOf(ctx, run_id, ctx.space.keyOf(c), nlohmann::json(ctx.space.knobMap(c)).dump(), e);
}

// Stage 4: this run's counts and its best record; returns its successful records, best first.
Result<std::vector<RecordRow>> countRun(TuneContext& ctx, TuneSummary& sum) {
  auto recs = ctx.db.records(ctx.workload.key(), ctx.target.key(), /*include_schedule=*/true);
  if (!recs) return Error{recs.error()};
  std::vector<RecordRow> ok_this_run;
  for (auto& r : *recs) {
    if (r.run_id != sum.run_id) continue;
    ++sum.trials;
    if (r.status == "ok") ok_this_run.push_back(r);
    else if (r.status == "rejected") ++sum.rejected;
    else if (r.status == "not_measured") ++sum.not_measured;
    else ++sum.failures;
  }
  std::stable_sort(ok_this_run.begin(), ok_this_run.end(),
                   [](const RecordRow& a, const RecordRow& b) { return a.gflops > b.gflops; });
  if (!ok_this_run.empty()) sum.best_this_run = ok_this_run.front();
  return ok_this_run;
}

// Stage 5: the final comparison: references and the run's best candidates (plus this machine's
// confirmed best of earlier runs), interleaved; every tuned candidate measured there is confirmed
// (its record keeps the repetitions); then the winner and the fastest library head to head.
Status finalComparisonStage(TuneContext& ctx, const TuneOptions& o, const std::vector<Contender>& references,
                            const ConfirmFactory& confirm, const std::atomic<bool>& stop,
                            const std::vector<RecordRow>& ok_this_run, TuneSummary& sum) {
  std::vector<Contender> contenders = references;
  for (const auto& c : references)
    if (c.library) sum.library_names.push_back(c.name);
  std::vector<RecordRow> confirming;
  for (int i = 0; i < o.final_top_k && i < int(ok_this_run.size()) && confirm; ++i)
    confirming.push_back(ok_this_run[size_t(i)]);
  auto confirming_has = [&](int64_t id) {
    return std::any_of(confirming.begin(), confirming.end(), [&](const RecordRow& r) { return r.id == id; });
  };
  // The untuned default is one of the run's trials: it is a candidate for the best too, so that the
  // winner is never slower than the default measured beside it (on a noisy machine its search-time
  // figure can rank it below the top k while it measures faster here).
  if (confirm && o.final_top_k > 0 && o.first_candidate) {
    const std::string def_key = ctx.space.keyOf(*o.first_candidate);
    for (const RecordRow& r : ok_this_run)
      if (r.candidate == def_key && !confirming_has(r.id)) confirming.push_back(r);
  }
  if (confirm && o.final_top_k > 0) {
    auto prior = ctx.db.best(ctx.workload.key(), ctx.target.key(), ctx.machine);
    if (!prior) return Error{prior.error()};
    if (*prior && (*prior)->confirmed() && !confirming_has((*prior)->id)) confirming.push_back(**prior);
  }
  for (const RecordRow& r : confirming) contenders.push_back(confirm(r));
  sum.final = finalComparison(contenders, o.final_rounds, ctx.workload.flops(), stop);
  if (stop.load()) {
    sum.final.clear();
    return okStatus();
  }
  // sum.final[i] is contenders[i]'s row. The reference's contender:
  const BaselineRow* lib = sum.fastestLibrary();
  const Contender* reference = lib ? &contenders[size_t(lib - sum.final.data())] : nullptr;
  // The tuned candidates again, call by call beside the reference (pairedFinal): where that runs,
  // it picks the winner and its repetitions confirm the records.
  if (reference && reference->measure_paired && o.final_rounds > 0) {
    std::vector<const Contender*> tuned;
    for (size_t i = 0; i < contenders.size(); ++i)
      if (contenders[i].name == "tuned" && contenders[i].shared_object && sum.final[i].status == "ok")
        tuned.push_back(&contenders[i]);
    if (tuned.size() >= 2)  // one alone: the head-to-head pairs it
      sum.final_paired = pairedFinal(tuned, *reference, o.final_rounds, ctx.workload.flops(), stop);
    if (stop.load()) {
      sum.final.clear(), sum.final_paired.clear();
      return okStatus();
    }
  }
  auto paired_row = [&](int64_t record_id) -> const BaselineRow* {
    for (const auto& p : sum.final_paired)
      if (p.record_id == record_id) return &p;
    return nullptr;
  };
  for (auto& row : sum.final) {
    row.run_id = sum.run_id;
    if (auto s = ctx.db.insertBaseline(row); !s) return s;
    if (row.name != "tuned" || !row.record_id) continue;
    const BaselineRow* p = paired_row(row.record_id);
    const BaselineRow& by = p ? *p : row;
    if (auto s = ctx.db.confirmRecord(row.record_id, by.times_s, by.status != "ok"); !s) return s;
  }
  for (auto& row : sum.final_paired) {
    row.run_id = sum.run_id;
    BaselineRow stored = row;
    stored.name = "final-paired:" + row.name;
    if (auto s = ctx.db.insertBaseline(stored); !s) return s;
  }
  const BaselineRow* fin = sum.finalBestTuned();
  if (fin)
    for (const RecordRow& r : confirming)
      if (r.id == fin->record_id) sum.best_confirmed = r;
  // Head to head: the winner against the fastest library, in rounds of their own.
  if (!fin || !reference || o.final_rounds <= 0) return okStatus();
  std::vector<Contender> pair;
  for (const Contender& c : contenders)
    if (c.name == "tuned" && c.record_id == fin->record_id) pair.push_back(c);
  if (pair.size() != 1) return okStatus();
  pair.push_back(*reference);
  sum.head_to_head = pairedHeadToHead(pair[0], pair[1], o.final_rounds, ctx.workload.flops(), stop);
  if (sum.head_to_head.empty() && !stop.load())
    sum.head_to_head = finalComparison(pair, o.final_rounds, ctx.workload.flops(), stop, /*alternate=*/true);
  if (stop.load()) {
    sum.head_to_head.clear();
    return okStatus();
  }
  for (auto& row : sum.head_to_head) {
    row.run_id = sum.run_id;
    BaselineRow stored = row;
    stored.name = "head-to-head:" + row.name;
    if (auto s = ctx.db.insertBaseline(stored); !s) return s;
  }
  // (The head-to-head rounds are not added to the winner's confirmation: every record is ranked by
  // final comparisons alone, so the database's best is the final comparison's winner.)
  return okStatus();
}

}  // namespace

Result<TuneSummary> tune(TuneContext& ctx, const TuneOptions& o, const std::vector<Contender>& references,
                         const ConfirmFactory& confirm, const std::atomic<bool>& stop,
                         const std::function<void(const TuneProgress&)>& progress) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
  TuneSummary sum;

  StrategyContext sctx = o.strategy_context;
  if (sctx.workload.empty()) sctx.workload = ctx.workload.key();
  auto strategy = makeStrategy(o.strategy, o.seed, sctx);
  if (!strategy) return Error{strategy.error()};
  if (auto s = claimRun(ctx, o, sum); !s) return Error{s.error()};
  std::unordered_set<uint64_t> tried;
  if (auto s = learnKnownRecords(ctx, o, **strategy, tried); !s) return Error{s.error()};

  // Stage 3: the batch loop (propose, compile and measure, commit, learn) until the trials, the
  // time budget or the space run out, or Ctrl-C.
  TuneProgress prog;
  prog.total = o.trials;
  prog.done = sum.resumed_records;
  auto emit = [&] {
    prog.elapsed_s = elapsed();
    if (progress) progress(prog);
  };
  prog.phase = "tuning";
  emit();
  int64_t done = sum.resumed_records;
  int64_t done_this_session = 0;
  const double tuning_start = elapsed();
  if (!o.worker.empty()) {
    auto ex = workerLoop(ctx, o, **strategy, tried, sum.run_id, stop, [&](int64_t d, int64_t f, double b) {
      prog.done = d, prog.failures = f, prog.best_gflops = b;
      emit();
    });
    if (!ex) return Error{ex.error()};
    sum.exhausted = *ex;
    done = o.trials;  // the study's budget is the workers' together: the loop below does not run
  }
  const bool default_first = o.first_candidate && o.strategy != "exhaustive";
  while (done < o.trials && !stop.load()) {
    if (o.time_budget_s > 0 && elapsed() >= o.time_budget_s) break;
    size_t n = size_t(std::min<int64_t>(o.batch, o.trials - done));
    std::vector<Candidate> batch;
    if (default_first && !tried.count(ctx.space.encode(*o.first_candidate)) && ctx.space.isValid(*o.first_candidate)) {
      batch.push_back(*o.first_candidate);
      tried.insert(ctx.space.encode(*o.first_candidate));  // not proposed again by the strategy
      --n;
    }
    if (o.strategy != "exhaustive")
      for (const Candidate& c : o.seeds) {
        if (n == 0) break;
        if (tried.count(ctx.space.encode(c)) || !ctx.space.isValid(c)) continue;
        batch.push_back(c);
        tried.insert(ctx.space.encode(c));
        --n;
      }
    if (n > 0) {
      auto proposed = (*strategy)->propose(ctx.space, tried, n);
      batch.insert(batch.end(), proposed.begin(), proposed.end());
    }
    if (batch.empty()) {
      sum.exhausted = true;
      break;
    }
    auto results = ctx.evaluator.evaluate(batch, stop, [&](size_t i, const Evaluation& e) {
      ++prog.done;
      if (e.status != "ok" && e.status != "not_measured" && e.status != "rejected") ++prog.failures;
      else prog.best_gflops = std::max(prog.best_gflops, e.measurement.gflops);
      double per = (elapsed() - tuning_start) / double(done_this_session + i + 1);
      prog.eta_s = per * double(o.trials - prog.done);
      emit();
    });
    std::vector<RecordRow> rows;
    std::vector<Observation> obs;
    for (size_t i = 0; i < results.size(); ++i) {
      const Evaluation& e = results[i];
      rows.push_back(recordOf(ctx, sum.run_id, batch[i], e));
      tried.insert(ctx.space.encode(batch[i]));
      if (e.source == "measured" || e.status == "rejected" || e.status == "compile_error")
        obs.push_back({batch[i], e.status == "ok", e.measurement.gflops});
    }
    // One transaction per batch: a crash loses at most the batch in flight.
    if (auto s = ctx.db.insertRecords(rows); !s) return Error{s.error()};
    (*strategy)->observe(ctx.space, obs);
    done += int64_t(results.size());
    done_this_session += int64_t(results.size());
  }

  auto ok_this_run = countRun(ctx, sum);
  if (!ok_this_run) return Error{ok_this_run.error()};
  if (!stop.load() && o.final_rounds > 0 && o.worker.empty()) {
    prog.phase = "final";
    emit();
    if (auto s = finalComparisonStage(ctx, o, references, confirm, stop, *ok_this_run, sum); !s)
      return Error{s.error()};
  }

  sum.strategy_report = (*strategy)->report();
  sum.interrupted = stop.load();
  if (auto s = ctx.db.finishRun(sum.run_id, sum.interrupted ? "interrupted" : "finished"); !s) return Error{s.error()};
  auto best = ctx.db.best(ctx.workload.key(), ctx.target.key(), ctx.machine);
  if (!best) return Error{best.error()};
  sum.best = *best;
  if (sum.best_confirmed) {  // with its confirmations as they are now
    auto recs = ctx.db.records(ctx.workload.key(), ctx.target.key(), true);
    if (!recs) return Error{recs.error()};
    for (const auto& r : *recs)
      if (r.id == sum.best_confirmed->id) sum.best_confirmed = r;
  }
  sum.elapsed_s = elapsed();
  return sum;
}

}  // namespace sextant
