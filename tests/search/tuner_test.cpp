// The tuning loop with a synthetic evaluator and synthetic references (issue #35): another
// machine's records are neither "tried" nor the best here; the final comparison confirms the
// candidates it measures, names the fastest library the reference (oneDNN where it is fastest), and
// a library that fails there is never the reference; the ratio comes from head-to-head rounds.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <gtest/gtest.h>
#include <optional>
#include <unistd.h>

#include "spaces.h"

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/search/tuner.h"

using namespace sextant;

namespace {

const std::string kHere = "cpu:test:avx512:Vendor-1-1:2c";
const std::string kThere = "cpu:other:avx512:Vendor-9-9:64c";

// A "measurement" that takes `seconds` for every repetition (5 of them).
Measurement timed(double flops, double seconds) {
  Measurement m;
  m.status = MeasureStatus::Ok;
  m.times_s = std::vector<double>(5, seconds);
  m.median_s = seconds;
  m.gflops = flops / seconds / 1e9;
  return m;
}

// Every candidate runs at a speed given by its knobs (deterministic, no noise).
class SyntheticEvaluator : public Evaluator {
 public:
  SyntheticEvaluator(const Space& s, double flops) : s_(s), flops_(flops) {}
  static double speed(const std::string& key) { return 10.0 + double(std::hash<std::string>{}(key) % 1000) / 10.0; }
  std::vector<Evaluation> evaluate(const std::vector<Candidate>& batch, const std::atomic<bool>&,
                                   const std::function<void(size_t, const Evaluation&)>& on_result) override {
    std::vector<Evaluation> out;
    for (size_t i = 0; i < batch.size(); ++i) {
      Evaluation e;
      e.status = "ok";
      e.schedule = "// " + s_.keyOf(batch[i]);
      const double g = s_.keyOf(batch[i]) == slow_key ? 1.0 : speed(s_.keyOf(batch[i]));
      e.measurement = timed(flops_, flops_ / (g * 1e9));
      measured.push_back(s_.keyOf(batch[i]));
      if (on_result) on_result(i, e);
      out.push_back(e);
    }
    return out;
  }
  std::vector<std::string> measured;
  std::string slow_key;  // measures at 1 GFLOP/s during the search

 private:
  const Space& s_;
  double flops_;
};

struct TempDb {
  std::string path = (std::filesystem::temp_directory_path() / ("sextant-tuner-" + std::to_string(getpid()) + ".db")).string();
  TempDb() { cleanup(); }
  ~TempDb() { cleanup(); }
  void cleanup() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
};

// A fresh database with a 32^3 workload on the cpu target registered, and its space.
class Tuner : public ::testing::Test {
 protected:
  void SetUp() override {
    w.m = 32, w.n = 32, w.k = 32;
    auto opened = Database::open(t.path);
    ASSERT_TRUE(opened.ok()) << opened.error();
    db.emplace(std::move(*opened));
    auto resolved = resolveTarget("cpu");
    ASSERT_TRUE(resolved.ok());
    target = *resolved;
    ASSERT_TRUE(registerWorkloadAndTarget(*db, w, *target, "test", "avx512").ok());
  }
  // Another fresh database (file `f`) with the workload and target registered.
  Database freshDatabase(const TempDb& f) {
    auto opened = Database::open(f.path);
    if (!opened.ok()) std::abort();
    Database d = std::move(*opened);
    EXPECT_TRUE(registerWorkloadAndTarget(d, w, *target, "test", "avx512").ok());
    return d;
  }
  // A fresh database, evaluator and context for one run beside the fixture's.
  struct FreshRun {
    TempDb file;
    Database d;
    SyntheticEvaluator ev;
    TuneContext ctx;
    FreshRun(Tuner& t) : d(t.freshDatabase(file)), ev(t.space, t.w.flops()),
                         ctx{d, t.w, *t.target, t.space, ev, "test", "Test CPU", "22", kHere} {}
  };
  std::unique_ptr<FreshRun> freshRun() { return std::make_unique<FreshRun>(*this); }
  // A random-strategy run of `trials` in batches of 8, `top` finalists.
  static TuneOptions randomRun(int64_t trials, int top) {
    TuneOptions o;
    o.strategy = "random";
    o.trials = trials;
    o.batch = 8;
    o.final_top_k = top;
    return o;
  }
  TempDb t;
  GemmWorkload w;
  std::optional<Database> db;
  std::optional<Target> target;
  Space space = testing_spaces::avx512Space(32, 32, 32);
};

}  // namespace

TEST_F(Tuner, OtherMachinesRecordsAreTransferDataAndTheFastestLibraryIsTheReference) {
  const double flops = w.flops();

  // Another machine measured 40 candidates of this workload, every one at an impossible 9999.
  SyntheticEvaluator ev(space, flops);
  auto strategy = makeStrategy("random", 7);
  std::unordered_set<uint64_t> none;
  auto theirs = (*strategy)->propose(space, none, 40);
  {
    RunRow run;
    run.workload_key = w.key(), run.target_key = target->key(), run.strategy = "random", run.space = space.name();
    run.space_fingerprint = space.fingerprint(), run.tool_version = "t", run.llvm_version = "22", run.host = "far";
    run.machine = kThere;
    auto rid = db->beginRun(run);
    ASSERT_TRUE(rid.ok());
    std::vector<RecordRow> rows;
    for (const auto& c : theirs) {
      RecordRow r;
      r.run_id = *rid, r.workload_key = w.key(), r.target_key = target->key(), r.candidate = space.keyOf(c);
      r.knobs = "{}", r.schedule = "// theirs", r.status = "ok", r.times_s = {flops / 9999e9}, r.median_s = flops / 9999e9;
      r.gflops = 9999, r.tool_version = "t", r.llvm_version = "22", r.cpu_model = "far", r.device = "other";
      r.machine = kThere;
      rows.push_back(r);
    }
    ASSERT_TRUE(db->insertRecords(rows).ok());
  }

  TuneContext ctx{*db, w, *target, space, ev, "test", "Test CPU", "22", kHere};
  TuneOptions o;
  o.strategy = "random";
  o.seed = 7;  // the same proposals as the other machine's: they must be measured here again
  o.trials = 24;
  o.batch = 8;
  o.final_top_k = 2;
  std::vector<Contender> refs = {
      {"default", "def", 0, [&] { return timed(flops, flops / 5e9); }, false},
      {"openblas", "OpenBLAS (test)", 0, [&] { return timed(flops, flops / 80e9); }, true},
      {"onednn", "oneDNN (test)", 0, [&] { return timed(flops, flops / 100e9); }, true},
      {"blis", "BLIS (broken)", 0,
       [] {
         Measurement m;
         m.status = MeasureStatus::Crash;
         m.message = "killed by SIGSEGV";
         return m;
       },
       true},
  };
  ConfirmFactory confirm = [&](const RecordRow& r) {
    const double g = SyntheticEvaluator::speed(r.candidate);
    return Contender{"tuned", r.candidate, r.id, [&, g] { return timed(flops, flops / (g * 1e9)); }, false};
  };
  std::atomic<bool> stop{false};
  auto sum = tune(ctx, o, refs, confirm, stop, nullptr);
  ASSERT_TRUE(sum.ok()) << sum.error();

  // The other machine's candidates were measured here again (its 9999s are not this machine's).
  std::set<std::string> measured(ev.measured.begin(), ev.measured.end());
  int again = 0;
  for (const auto& c : theirs) again += measured.count(space.keyOf(c)) ? 1 : 0;
  EXPECT_GT(again, 10) << "the same seed proposes the other machine's candidates; they are not 'tried' here";
  ASSERT_TRUE(sum->best.has_value());
  EXPECT_EQ(sum->best->machine, kHere);
  EXPECT_LT(sum->best->figure(), 200);
  // The reference: oneDNN (fastest), not the crashed BLIS.
  ASSERT_NE(sum->fastestLibrary(), nullptr);
  EXPECT_EQ(sum->fastestLibrary()->name, "onednn");
  EXPECT_EQ(sum->finalOf("blis")->status, "crash");
  // Head to head: the winner against oneDNN, in rounds of their own.
  ASSERT_EQ(sum->head_to_head.size(), 2u);
  EXPECT_EQ(sum->head_to_head[1].name, "onednn");
  const double winner = SyntheticEvaluator::speed(sum->best_confirmed->candidate);
  EXPECT_NEAR(sum->ratioToReference(), winner / 100.0, 1e-6);
  // Every tuned candidate of the final comparison is confirmed in the database.
  auto recs = db->records(w.key(), target->key());
  int confirmed = 0;
  for (const auto& r : *recs)
    if (r.machine == kHere && r.confirmed()) ++confirmed;
  EXPECT_EQ(confirmed, 2);
  EXPECT_TRUE(sum->best_confirmed->confirmed());
  EXPECT_EQ(sum->best_confirmed->confirmations, 1) << "the final comparison";
  EXPECT_EQ(sum->best->id, sum->best_confirmed->id) << "the database's best is the final comparison's winner";
}

// On a noisy machine the untuned default can measure low during the search and high in the final
// comparison: its record is a contender there, so the winner is never slower than the default.
TEST_F(Tuner, TheDefaultIsAContenderForTheBest) {
  const double flops = w.flops();
  SyntheticEvaluator ev(space, flops);
  TuneContext ctx{*db, w, *target, space, ev, "test", "Test CPU", "22", kHere};
  TuneOptions o;
  o.strategy = "random";
  o.trials = 16;
  o.batch = 8;
  o.final_top_k = 2;
  o.first_candidate = defaultCpuCandidate(space, w);
  const std::string def_key = space.keyOf(*o.first_candidate);
  ev.slow_key = def_key;  // last of the run during the search: not among its top k
  ConfirmFactory confirm = [&](const RecordRow& r) {
    // In the final comparison the default runs at 999 GFLOP/s, everything else at its search speed.
    const double g = r.candidate == def_key ? 999.0 : SyntheticEvaluator::speed(r.candidate);
    return Contender{"tuned", r.candidate, r.id, [&, g] { return timed(flops, flops / (g * 1e9)); }, false};
  };
  std::vector<Contender> refs = {{"openblas", "OpenBLAS (test)", 0, [&] { return timed(flops, flops / 80e9); }, true}};
  std::atomic<bool> stop{false};
  auto sum = tune(ctx, o, refs, confirm, stop, nullptr);
  ASSERT_TRUE(sum.ok()) << sum.error();
  ASSERT_TRUE(sum->best_confirmed.has_value());
  EXPECT_EQ(sum->best_confirmed->candidate, def_key);
  EXPECT_NEAR(sum->finalBestTuned()->gflops, 999.0, 1e-6);
}

// Seeds (Vulkan: IREE's per-vendor configurations) are measured right after the default, in the
// first batch, before any proposal of the strategy, and never again.
TEST_F(Tuner, SeedsAreMeasuredFirst) {
  SyntheticEvaluator ev(space, w.flops());
  TuneContext ctx{*db, w, *target, space, ev, "test", "Test CPU", "22", kHere};
  TuneOptions o;
  o.strategy = "random";
  o.trials = 8;
  o.batch = 4;
  o.final_top_k = 0;
  o.first_candidate = defaultCpuCandidate(space, w);
  for (uint64_t i = 0; o.seeds.size() < 3 && i < space.size(); i += space.size() / 7 + 1)
    if (space.at(i) != *o.first_candidate) o.seeds.push_back(space.at(i));
  ASSERT_EQ(o.seeds.size(), 3u);
  std::atomic<bool> stop{false};
  auto sum = tune(ctx, o, {}, nullptr, stop, nullptr);
  ASSERT_TRUE(sum.ok()) << sum.error();
  ASSERT_EQ(ev.measured.size(), 8u);
  EXPECT_EQ(ev.measured[0], space.keyOf(*o.first_candidate));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(ev.measured[1 + i], space.keyOf(o.seeds[i]));
  for (size_t i = 4; i < ev.measured.size(); ++i)
    for (const Candidate& s : o.seeds) EXPECT_NE(ev.measured[i], space.keyOf(s)) << "a seed measured twice";
}

// A machine whose speed shifts in phases (the Intel Cascade Lake VM: the same schedule measured
// 52-106 GFLOP/s in runs seconds apart, most runs' cv under 2%): two equally fast kernels, both
// measured in a fast first round, a slow second one, and a third in which the phase changed
// between the two. Pooling the repetitions (a slow call gets fewer) calls the winner 1.5x the
// reference; the median of the rounds' paired ratios says 1.0x.
TEST(TunerSummary, HeadToHeadRatioPairsTheRounds) {
  auto row = [](std::vector<std::pair<int, double>> rounds) {
    BaselineRow b;
    b.status = "ok";
    for (auto [reps, t] : rounds) {
      for (int i = 0; i < reps; ++i) b.times_s.push_back(t);
      b.round_median_s.push_back(t);
    }
    summarize(b.times_s, b.median_s, b.cv);
    b.gflops = 1e-3 / b.median_s;
    return b;
  };
  TuneSummary sum;
  sum.head_to_head = {row({{10, 1e-3}, {5, 2e-3}, {10, 1e-3}}), row({{10, 1e-3}, {5, 2e-3}, {5, 2e-3}})};
  EXPECT_NEAR(sum.head_to_head[0].gflops / sum.head_to_head[1].gflops, 1.5, 1e-9) << "what pooling says";
  EXPECT_NEAR(sum.ratioToReference(), 1.0, 1e-9);
  EXPECT_EQ(sum.roundRatios(), (std::vector<double>{1.0, 1.0, 2.0}));
  // A winner really 1.2x faster in every round is 1.2x, whatever the phases.
  sum.head_to_head = {row({{12, 1e-3 / 1.2}, {6, 2e-3 / 1.2}, {12, 1e-3 / 1.2}}), row({{10, 1e-3}, {5, 2e-3}, {10, 1e-3}})};
  EXPECT_NEAR(sum.ratioToReference(), 1.2, 1e-9);
}

// Call by call (issue #35, the Cascade Lake VM, whose speed changes within a second): the ratio is
// the median of the call pairs' ratios, each pair taken back to back, not of the rounds' medians.
TEST(TunerSummary, CallByCallTheRatioIsThePairsMedian) {
  auto row = [](std::vector<double> times) {
    BaselineRow b;
    b.status = "ok", b.paired = true, b.times_s = times;
    summarize(b.times_s, b.median_s, b.cv);
    b.round_median_s = {b.median_s};
    b.gflops = 1e-3 / b.median_s;
    return b;
  };
  TuneSummary sum;
  sum.head_to_head = {row({1, 2, 1}), row({1.0, 1.3, 1.2})};
  EXPECT_EQ(sum.pairRatios(), (std::vector<double>{1.0, 0.65, 1.2}));
  EXPECT_NEAR(sum.roundRatios()[0], 1.2, 1e-9) << "what the round's medians say";
  EXPECT_NEAR(sum.ratioToReference(), 1.0, 1e-9);
  sum.head_to_head[0].paired = sum.head_to_head[1].paired = false;  // measured in rounds: as before
  EXPECT_TRUE(sum.pairRatios().empty());
  EXPECT_NEAR(sum.ratioToReference(), 1.2, 1e-9);
}

// The tuner uses the call-by-call measurement when the winner has a compiled kernel and the
// reference can pair itself with it, and the alternating rounds when the pairing fails.
TEST_F(Tuner, HeadToHeadCallByCallAndItsFallback) {
  const double flops = w.flops();
  for (bool pairing_works : {true, false}) {
    SCOPED_TRACE(pairing_works ? "pairing works" : "pairing fails");
    auto run = freshRun();
    TuneContext& ctx = run->ctx;
    TuneOptions o = randomRun(8, 1);
    std::string paired_with;
    // Alone (the final comparison, the rounds) the library measures 50 GFLOP/s; paired with the
    // winner, each pair says the winner takes 0.8 of the library's time, whatever the phase.
    Contender lib{"onednn", "oneDNN (test)", 0, [&] { return timed(flops, flops / 50e9); }, true};
    lib.measure_paired = [&](const std::string& so) {
      paired_with = so;
      Measurement k = timed(flops, 1e-3), l = timed(flops, 1e-3 / 0.8);
      k.times_s = {1e-3, 2e-3, 1e-3, 2e-3, 1e-3}, l.times_s = {1.25e-3, 2.5e-3, 1.25e-3, 2.5e-3, 1.25e-3};
      if (!pairing_works) k.status = MeasureStatus::Crash;
      return std::make_pair(k, l);
    };
    ConfirmFactory confirm = [&](const RecordRow& r) {
      Contender c{"tuned", r.candidate, r.id, [&] { return timed(flops, flops / 100e9); }, false};
      c.shared_object = [key = r.candidate] { return "/tmp/" + key + ".so"; };
      return c;
    };
    std::atomic<bool> stop{false};
    auto sum = tune(ctx, o, {lib}, confirm, stop, nullptr);
    ASSERT_TRUE(sum.ok()) << sum.error();
    ASSERT_EQ(sum->head_to_head.size(), 2u);
    EXPECT_EQ(paired_with, "/tmp/" + sum->best_confirmed->candidate + ".so");
    EXPECT_EQ(sum->head_to_head[0].paired, pairing_works);
    EXPECT_NEAR(sum->ratioToReference(), pairing_works ? 1.25 : 2.0, 1e-9);
    if (pairing_works) {
      EXPECT_EQ(sum->pairRatios().size(), size_t(5 * o.final_rounds));
    }
  }
}

// Issue #35 (a Zen 4 default job shipped a winner that led the interleaved final comparison and
// measured 0.92x oneDNN called alternately with it, where the other finalists measured 0.98-0.99x):
// the tuned candidates are measured again call by call beside the fastest library, and that picks
// the winner, confirms the records and so the database's best. Here the order reverses between the
// two: alone the fastest is the slowest beside the library. When the pairing fails, the interleaved
// rounds pick as before.
TEST_F(Tuner, TheWinnerIsPickedCallByCallBesideTheReference) {
  const double flops = w.flops();
  for (bool pairing_works : {true, false}) {
    SCOPED_TRACE(pairing_works ? "pairing works" : "pairing fails");
    auto run = freshRun();
    TuneContext& ctx = run->ctx;
    TuneOptions o = randomRun(16, 3);
    auto alone = [](const std::string& key) { return SyntheticEvaluator::speed(key); };
    auto beside = [](const std::string& key) { return 200.0 - SyntheticEvaluator::speed(key); };
    int paired_calls = 0;
    Contender lib{"onednn", "oneDNN (test)", 0, [&] { return timed(flops, flops / 150e9); }, true};
    lib.measure_paired = [&](const std::string& so) {
      ++paired_calls;
      const std::string key = so.substr(5, so.size() - 8);  // "/tmp/" KEY ".so"
      Measurement k = timed(flops, flops / (beside(key) * 1e9)), l = timed(flops, flops / 150e9);
      if (!pairing_works) k.status = MeasureStatus::Crash;
      return std::make_pair(k, l);
    };
    ConfirmFactory confirm = [&](const RecordRow& r) {
      Contender c{"tuned", r.candidate, r.id, [&, g = alone(r.candidate)] { return timed(flops, flops / (g * 1e9)); }, false};
      c.shared_object = [key = r.candidate] { return "/tmp/" + key + ".so"; };
      return c;
    };
    std::atomic<bool> stop{false};
    auto sum = tune(ctx, o, {lib}, confirm, stop, nullptr);
    ASSERT_TRUE(sum.ok()) << sum.error();
    std::vector<std::string> finalists;
    for (const auto& row : sum->final)
      if (row.name == "tuned" && row.status == "ok") finalists.push_back(row.detail);
    ASSERT_EQ(finalists.size(), 3u);
    auto by = [&](auto f) {
      return *std::max_element(finalists.begin(), finalists.end(), [&](auto& a, auto& b) { return f(a) < f(b); });
    };
    const std::string expected = pairing_works ? by(beside) : by(alone);
    ASSERT_TRUE(sum->best_confirmed.has_value());
    EXPECT_EQ(sum->best_confirmed->candidate, expected);
    EXPECT_EQ(sum->best->id, sum->best_confirmed->id) << "the database's best follows";
    EXPECT_EQ(sum->finalBestTuned()->paired, pairing_works);
    EXPECT_EQ(sum->final_paired.size(), pairing_works ? 3u : 0u);
    const double g = pairing_works ? beside(expected) : alone(expected);
    EXPECT_NEAR(sum->best->confirmed_gflops, g, 1e-6) << "confirmed by what picked it";
    // Three candidates x 3 rounds (one round each when the pairing fails), then the head-to-head.
    EXPECT_EQ(paired_calls, pairing_works ? 3 * o.final_rounds + o.final_rounds : 3 + 1);
  }
}
