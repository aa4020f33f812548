// End-to-end: the real `tune` binary on the real JIT path (MLIR -> native code -> measured and
// verified), plus every kind of bad input.
#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <chrono>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

using json = nlohmann::json;
using namespace e2e;

namespace {

// One line on stderr, starting "tune: error:", no trace of an abort.
void expectCleanError(const Outcome& r, const std::string& needle) {
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(r.err.rfind("tune: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos);
}

}  // namespace

TEST(EndToEnd, TunesASmallGemmAndReportsHonestJson) {
  std::string db = tmp("e2e.db");
  removeDb(db);
  Outcome r = tune("--op gemm --target cpu --shape 64x128x64 --trials 6 --batch 3 --min-time 0.01 --report json --quiet --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["workload"], "gemm:NN:64x128x64:f32*f32->f32");
  EXPECT_EQ(j["target"].get<std::string>().rfind("cpu:", 0), 0u);
  EXPECT_EQ(j["trials"], 6);
  EXPECT_EQ(j["db"], db);
  for (const char* k : {"failures", "best", "default", "reference"}) EXPECT_TRUE(j.contains(k)) << k;
  ASSERT_TRUE(j["best"].is_object());
  double g = j["best"]["gflops"];
  EXPECT_GT(g, 0.5);      // slower than this is no compiled kernel
  EXPECT_LT(g, 5000.0);   // faster than this is no measurement
  EXPECT_TRUE(j["best"]["knobs"].contains("tile_m"));
  EXPECT_GT(j["best"]["schedule_id"].get<int64_t>(), 0);
  EXPECT_GT(j["default"]["gflops"].get<double>(), 0.5);
  // The reference libraries (issue #35): OpenBLAS, oneDNN and BLIS each listed, measured or named
  // as not measured with the reason; the reference is the fastest measured one.
  ASSERT_TRUE(j["libraries"].is_array()) << r.out;
  double fastest = 0;
  std::set<std::string> names;
  for (const auto& l : j["libraries"]) {
    names.insert(l["name"].get<std::string>());
    if (l["status"] == "ok") {
      fastest = std::max(fastest, l["gflops"].get<double>());
      EXPECT_EQ(l["threads"], 1);
      EXPECT_FALSE(l["kernels"].get<std::string>().empty()) << l;
    } else {
      EXPECT_EQ(l["status"], "not measured") << l;  // never a silent gap
      EXPECT_FALSE(l["reason"].get<std::string>().empty()) << l;
    }
    // tune links LibTorch, which loads OpenBLAS before main(): the reference must still run the
    // host's kernels, not the generic fallback (a 4x slower peer would flatter every ratio).
    if (l["name"] == "openblas") {
      EXPECT_EQ(l["kernels"].get<std::string>().find("Prescott"), std::string::npos) << l;
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"openblas", "onednn", "blis"}));
  EXPECT_DOUBLE_EQ(j["reference"]["gflops"].get<double>(), fastest);
  EXPECT_GT(j["reference"]["gflops"].get<double>(), 0.5);
  // The ratio comes from head-to-head rounds run after the winner was picked.
  ASSERT_TRUE(j.contains("head_to_head")) << r.out;
  // ... on one thread call by call: the median of the back-to-back call pairs' ratios (as many
  // as the winner's head-to-head repetitions), over as many rounds as the final comparison's.
  EXPECT_EQ(j["head_to_head"]["call_by_call"], true) << r.out;
  EXPECT_EQ(j["head_to_head"]["round_ratios"].size(), j["final_rounds"].get<size_t>()) << r.out;
  auto rr = j["head_to_head"]["pair_ratios"].get<std::vector<double>>();
  ASSERT_EQ(rr.size(), j["head_to_head"]["tuned"]["repetitions"].get<size_t>()) << r.out;
  ASSERT_GE(rr.size(), j["final_rounds"].get<size_t>() * 5) << r.out;
  std::sort(rr.begin(), rr.end());
  const double median_ratio = rr.size() % 2 ? rr[rr.size() / 2] : 0.5 * (rr[rr.size() / 2 - 1] + rr[rr.size() / 2]);
  EXPECT_NEAR(j["ratio_to_reference"].get<double>(), median_ratio, 1e-9);
  EXPECT_DOUBLE_EQ(j["best"]["gflops"].get<double>(), j["head_to_head"]["tuned"]["gflops"].get<double>());
  EXPECT_EQ(j["machine"].get<std::string>().rfind("cpu:", 0), 0u);
  // The FMA peak measured after the run, and the shares of it: a kernel cannot beat the peak.
  ASSERT_TRUE(j.contains("fma_peak")) << r.out;
  EXPECT_EQ(j["fma_peak"]["measured"], true);
  EXPECT_EQ(j["fma_peak"]["threads"], 1);
  EXPECT_GT(j["fma_peak"]["gflops"].get<double>(), 1.0);
  EXPECT_GT(j["best"]["share_of_fma_peak"].get<double>(), 0.0);
  EXPECT_LT(j["best"]["share_of_fma_peak"].get<double>(), 1.05);
  EXPECT_LT(j["reference"]["share_of_fma_peak"].get<double>(), 1.05);

  // Records: 6 in the database, each with repetition times; ok ones verified.
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records"), 6);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE status='ok' AND json_array_length(times) >= 5 "
                         "AND max_abs_err < 0.01 AND gflops > 0"),
            6 - j["failures"].get<int64_t>());
  // The untuned default is one of the run's trials (the first), so the tuned best cannot be a
  // schedule slower than it.
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE id = (SELECT min(id) FROM records) AND candidate = '" +
                         j["default"]["knobs"].get<std::string>() + "'"),
            1);
  // Final comparison: default, the libraries and the 3 best candidates, each re-measured in 3
  // interleaved rounds; then the winner and the fastest library head to head. Every candidate of
  // the final comparison is confirmed: its record keeps the repetitions.
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM baselines WHERE name = 'default'"), 1);
  EXPECT_GE(queryInt(db, "SELECT count(*) FROM baselines WHERE name IN ('openblas', 'onednn', 'blis')"), 1);
  // (3 best, plus the untuned default's record when it is not among them)
  const int64_t tuned_rows = queryInt(db, "SELECT count(*) FROM baselines WHERE name = 'tuned' AND record_id IS NOT NULL");
  EXPECT_GE(tuned_rows, 3);
  EXPECT_LE(tuned_rows, 4);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM baselines WHERE name = 'tuned' AND detail = '" +
                         j["default"]["knobs"].get<std::string>() + "'"),
            1);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM baselines WHERE name LIKE 'head-to-head:%'"), 2);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE confirmations > 0 AND confirmed_gflops > 0"), tuned_rows);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE machine = '" + j["machine"].get<std::string>() + "'"), 6);
  EXPECT_GE(queryInt(db, "SELECT min(json_array_length(times)) FROM baselines"), 15);  // 3 rounds x >= 5
  EXPECT_TRUE(j["best"].contains("search_gflops"));
  EXPECT_GE(j["best"]["repetitions"].get<int64_t>(), 15);

  // show and best read it back.
  Outcome show = tune("show --db " + db);
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("gemm:NN:64x128x64"), std::string::npos);
  Outcome best = tune("best --op gemm --shape 64x128x64 --target cpu --db " + db);
  EXPECT_EQ(best.code, 0) << best.err;
  EXPECT_NE(best.out.find("transform.tune.knob<\"tile_m\">"), std::string::npos);

  // The best schedule, fed back with --schedule, is measured again and recorded.
  std::string sched = tmp("best.mlir");
  std::ofstream(sched) << best.out;
  Outcome again = tune("--schedule " + sched + " --shape 64x128x64 --min-time 0.01 --quiet --db " + db);
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("GFLOP/s measured"), std::string::npos) << again.out;
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records"), 7);
  std::filesystem::remove(sched);

  // A second run with the same settings measures new candidates only.
  Outcome second = tune("--shape 64x128x64 --trials 4 --min-time 0.01 --quiet --report json --db " + db);
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(queryInt(db, "SELECT count(*) - count(DISTINCT candidate) FROM records WHERE candidate NOT LIKE 'custom:%' "
                         "AND run_id IN (SELECT id FROM runs WHERE strategy='random')"),
            0);
  removeDb(db);
}

TEST(EndToEnd, InterruptedRunKeepsRecordsAndResumes) {
  std::string db = tmp("resume.db");
  removeDb(db);
  std::string cmd = std::string(TUNE_BIN) + " --shape 128x128x128 --trials 40 --batch 4 --min-time 0.01 --quiet --db " + db;
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), nullptr);
    _exit(127);
  }
  // Wait until some batches are committed, then interrupt as Ctrl-C would.
  for (int i = 0; i < 600 && queryInt(db, "SELECT count(*) FROM records") < 8; ++i) usleep(100000);
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  int64_t kept = queryInt(db, "SELECT count(*) FROM records");
  EXPECT_GE(kept, 8);
  EXPECT_LT(kept, 40);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM runs WHERE status='interrupted'"), 1);

  // The same command resumes the same run and completes it without measuring anything twice.
  // (While the first process was alive, a second one would have been refused: see
  // SecondProcessDoesNotResumeALiveRun.)
  Outcome r = tune("--shape 128x128x128 --trials 40 --batch 4 --min-time 0.01 --quiet --report json --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_TRUE(j["resumed"].get<bool>());
  EXPECT_EQ(j["trials"], 40);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records"), 40);
  EXPECT_EQ(queryInt(db, "SELECT count(DISTINCT candidate) FROM records"), 40);
  removeDb(db);
}

TEST(EndToEnd, BadInputGetsOneClearLine) {
  std::string db = tmp("bad.db");
  removeDb(db);
  expectCleanError(tune("--op conv --db " + db), "unknown op 'conv'");
  expectCleanError(tune("--target tpu --db " + db), "unknown target 'tpu'");
  // A GPU target without its GPU: says so and names the other measurement modes.
  expectCleanError(tune("--target mi300 --dtype f16 --db " + db), "no HIP device found");
  expectCleanError(tune("--target h100 --dtype f16 --db " + db), "--measure none");
  expectCleanError(tune("--target h100 --measure bundle --db " + db), "needs --out DIR");
  expectCleanError(tune("--target h100 --measure sometimes --db " + db), "unknown --measure mode");
  expectCleanError(tune("--target mi300 --measure bundle --out " + std::string(DATA_DIR) + "/not_a_bundle --db " + db), "not_a_bundle");
  expectCleanError(tune("--target h100 --shape 1000x1000x1000 --measure none --db " + db), "multiples of 16");
  expectCleanError(tune("--measure none --db " + db), "for GPU targets");
  EXPECT_NE(tune("hw check").out.find("no CUDA device found"), std::string::npos);
  expectCleanError(tune("import-results /nonexistent/bundle --db " + db), "/nonexistent/bundle");
  expectCleanError(tune("--dtype f64 --db " + db), "unknown dtype 'f64'");
  expectCleanError(tune("--dtype f16 --db " + db), "tunes f32 ops and bf16 x bf16 -> f32 and s8 x s8 -> s32 GEMMs");
  // bf16 goes to the AMX route (issue #37): a shape of partial tiles (or, without AMX, the CPU) is refused.
  expectCleanError(tune("--dtype bf16 --shape 40x64x64 --db " + db), "AMX");
  expectCleanError(tune("--shape 12x34 --db " + db), "malformed shape");
  expectCleanError(tune("--shape 0x16x16 --db " + db), "must be positive");
  expectCleanError(tune("--shape -4x16x16 --db " + db), "");
  expectCleanError(tune("--shape 1000000x1000000x1000000 --db " + db), "memory");
  expectCleanError(tune("--trials 0 --db " + db), "--trials must be at least 1");
  expectCleanError(tune("--strategy magic --db " + db), "unknown strategy");
  expectCleanError(tune("--db /nonexistent/dir/x.db --trials 1"), "/nonexistent/dir/x.db");

  std::string junk = tmp("junk.db");
  std::ofstream(junk) << std::string(4096, 'x');
  expectCleanError(tune("--trials 1 --db " + junk), "not a SQLite database");
  std::filesystem::remove(junk);

  std::string newer = tmp("newer.db");
  removeDb(newer);
  ASSERT_EQ(tune("show --db " + newer).code, 2);  // missing database: error, nothing created
  EXPECT_FALSE(std::filesystem::exists(newer));
  {
    sqlite3* h;
    sqlite3_open(newer.c_str(), &h);
    sqlite3_close(h);
  }
  ASSERT_EQ(tune("--shape 16x16x16 --trials 1 --min-time 0.001 --quiet --db " + newer).code, 0);
  {
    sqlite3* h;
    sqlite3_open(newer.c_str(), &h);
    sqlite3_exec(h, "UPDATE meta SET value='7' WHERE key='schema_version'", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  expectCleanError(tune("show --db " + newer), "schema version 7");
  removeDb(newer);

  std::string bad_sched = tmp("bad.mlir");
  std::ofstream(bad_sched) << "module { not mlir at all";
  expectCleanError(tune("--schedule " + bad_sched + " --shape 16x16x16 --db " + db), "does not parse");
  std::filesystem::remove(bad_sched);
  expectCleanError(tune("--schedule /nonexistent.mlir --db " + db), "cannot read");
  expectCleanError(tune("best --shape 16x16x16 --db /nonexistent.db"), "no such database");
  removeDb(db);
}

TEST(EndToEnd, ModelGuidedStrategyTrainsOnlineAndNeverRepeats) {
  std::string db = tmp("model.db");
  removeDb(db);
  // 16 random candidates train the model; the third batch is chosen by it.
  Outcome r = tune("--shape 64x128x64 --strategy model --trials 24 --batch 8 --min-time 0.01 --final-rounds 0 "
                   "--quiet --report json --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["trials"], 24);
  EXPECT_EQ(j["strategy"], "model");
  EXPECT_EQ(queryInt(db, "SELECT count(DISTINCT candidate) FROM records"), 24);
  removeDb(db);
}

// Issue #11: glimpse on a fresh database draws from the prior written beside the pretrained model
// (`tune costmodel train` writes MODEL.prior.json); without a pretrained model it has no prior; a
// corrupt prior file is one clear line naming it.
TEST(EndToEnd, GlimpseOnAFreshDatabaseUsesThePriorBesideThePretrainedModel) {
  const std::string dir = tmp("prior-model");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Outcome t = tune("costmodel train --data " DATASETS_DIR "/cpu/zen5/replay_512x512x512.jsonl.gz --epochs 2 "
                   "--max-per-workload 200 -o " + dir + "/m.costmodel");
  ASSERT_EQ(t.code, 0) << t.err << t.out;
  ASSERT_TRUE(std::filesystem::exists(dir + "/m.costmodel.prior.json")) << t.out;
  auto run = [&](const std::string& pretrained) {
    const std::string db = dir + "/fresh.db";
    removeDb(db);
    return tune("--shape 64x128x64 --strategy glimpse --trials 8 --batch 8 --min-time 0.01 --final-rounds 0 "
                "--quiet --report json --pretrained " + pretrained + " --db " + db);
  };
  Outcome with = run(dir + "/m.costmodel");
  ASSERT_EQ(with.code, 0) << with.err;
  const std::string rep = json::parse(with.out).value("strategy_report", "");
  EXPECT_NE(rep.find("drawn from the prior"), std::string::npos) << rep;
  EXPECT_EQ(rep.find("no prior data"), std::string::npos) << rep;
  Outcome without = run("none");
  ASSERT_EQ(without.code, 0) << without.err;
  EXPECT_NE(json::parse(without.out).value("strategy_report", "").find("no prior data"), std::string::npos);
  std::ofstream(dir + "/m.costmodel.prior.json") << "{\"format\": \"something else\"}";
  expectCleanError(run(dir + "/m.costmodel"), "m.costmodel.prior.json");
  std::filesystem::remove_all(dir);
}

// Issue #12: Ctrl-C stops within the candidate in flight (its compile or measurement is killed),
// not after the rest of the batch; the batches committed so far are kept.
TEST(EndToEnd, CtrlCStopsWithinTheCandidateInFlight) {
  std::string db = tmp("sigint.db");
  removeDb(db);
  std::string cmd = std::string(TUNE_BIN) +
                    " --shape 512x512x512 --trials 64 --batch 16 --min-time 0.3 --jobs 1 --quiet --db " + db;
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), nullptr);
    _exit(127);
  }
  // One batch committed, the next one being compiled (16 compiles one at a time, then 16
  // measurements of >= 0.3 s: an interrupt that waited for the batch would take seconds).
  for (int i = 0; i < 1200 && queryInt(db, "SELECT count(*) FROM records") < 16; ++i) usleep(50000);
  usleep(500000);
  auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130);
  std::cout << "SIGINT to exit: " << secs << " s\n";
  EXPECT_LT(secs, 3.0) << "the rest of the batch was compiled or measured after Ctrl-C";
  EXPECT_GE(queryInt(db, "SELECT count(*) FROM records"), 16);
  EXPECT_LT(queryInt(db, "SELECT count(*) FROM records"), 64);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE status != 'ok'"), 0)
      << "the interrupted candidate must not be recorded as a failure; the records that are not ok:\n"
      << queryRows(db, "SELECT candidate, status, message, median_s FROM records WHERE status != 'ok'");
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM runs WHERE status='interrupted'"), 1);
  removeDb(db);
}

TEST(EndToEnd, SecondProcessDoesNotResumeALiveRun) {
  std::string db = tmp("live.db");
  removeDb(db);
  std::string args = " --shape 128x128x128 --trials 400 --batch 4 --min-time 0.01 --quiet --db " + db;
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl("/bin/sh", "sh", "-c", ("exec " + std::string(TUNE_BIN) + args).c_str(), nullptr);
    _exit(127);
  }
  for (int i = 0; i < 600 && queryInt(db, "SELECT count(*) FROM records") < 4; ++i) usleep(100000);
  Outcome second = tune(args);
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_EQ(second.code, 2) << second.out;
  EXPECT_NE(second.err.find("is being tuned by process " + std::to_string(pid)), std::string::npos) << second.err;
  EXPECT_EQ(queryInt(db, "SELECT count(*) - count(DISTINCT candidate) FROM records"), 0);
  removeDb(db);
}
