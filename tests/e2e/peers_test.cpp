// Issue #34: the entry point other searchers use (`tune --knobs`: one knob assignment compiled,
// verified and recorded exactly as a candidate of a run; `--versus LIB`: then against a library
// call by call; `tune --print-space`), and the peer
// scripts' "not installed" path (experiments/peers/, run with a Python that lacks the peer).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "helpers.h"

using namespace e2e;
using json = nlohmann::json;

TEST(Peers, KnobAssignmentIsRecordedExactlyAsACandidate) {
  const std::string a = tmp("knobs-run.db"), b = tmp("knobs-one.db");
  removeDb(a);
  removeDb(b);
  // One trial of a run: the untuned default candidate.
  Outcome run = tune("--shape 128x128x64 --trials 1 --final-rounds 0 -q --db " + a);
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string key = queryRows(a, "SELECT candidate FROM records WHERE id = 1");
  ASSERT_FALSE(key.empty());
  std::string k = key;
  while (!k.empty() && (k.back() == '\n' || k.back() == ' ')) k.pop_back();
  Outcome one = tune("--shape 128x128x64 --knobs " + k + " -q --report json --db " + b);
  ASSERT_EQ(one.code, 0) << one.err << one.out;
  json r = json::parse(one.out);
  EXPECT_EQ(r["status"], "ok");
  EXPECT_GT(r["gflops"].get<double>(), 0);
  // Same candidate key, same schedule text, measured on this machine, verified.
  EXPECT_EQ(queryRows(b, "SELECT candidate FROM records"), key);
  EXPECT_EQ(queryRows(b, "SELECT s.text FROM records r JOIN schedules s ON r.schedule_id = s.id"),
            queryRows(a, "SELECT s.text FROM records r JOIN schedules s ON r.schedule_id = s.id WHERE r.id = 1"));
  EXPECT_EQ(queryRows(b, "SELECT machine FROM records"), queryRows(a, "SELECT machine FROM records WHERE id = 1"));
  EXPECT_EQ(queryInt(b, "SELECT count(*) FROM records WHERE status = 'ok' AND max_abs_err IS NOT NULL"), 1);
  EXPECT_EQ(queryRows(b, "SELECT strategy FROM runs"), "knobs\n");

  // --versus: then the same schedule and OpenBLAS call by call (issue #35's pairing), as JSON.
  Outcome vs = tune("--shape 128x128x64 --knobs " + k + " --versus openblas --final-rounds 2 -q --report json --db " + b);
  ASSERT_EQ(vs.code, 0) << vs.err << vs.out;
  json v = json::parse(vs.out)["versus"];
  ASSERT_TRUE(v.is_object()) << vs.out;
  EXPECT_EQ(v["rounds"], 2);
  EXPECT_NE(v["library"].get<std::string>().find("OpenBLAS"), std::string::npos) << v;
  EXPECT_GE(v["pairs"].get<size_t>(), 10u) << "at least 5 pairs per process";
  EXPECT_EQ(v["pair_ratios"].size(), v["pairs"].get<size_t>());
  EXPECT_GT(v["ratio"].get<double>(), 0.0);
  EXPECT_LE(v["middle_half"][0].get<double>(), v["ratio"].get<double>());
  EXPECT_GE(v["middle_half"][1].get<double>(), v["ratio"].get<double>());
  EXPECT_EQ(queryInt(b, "SELECT count(*) FROM records"), 2) << "the schedule is recorded as with --knobs alone";
  Outcome nolib = tune("--shape 128x128x64 --knobs " + k + " --versus mkl --db " + b);
  EXPECT_EQ(nolib.code, 2);
  EXPECT_NE(nolib.err.find("unknown library 'mkl'"), std::string::npos) << nolib.err;
  EXPECT_NE(tune("--shape 128x128x64 --versus onednn --db " + b).err.find("--versus goes with --schedule or --knobs"),
            std::string::npos);
  if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
    EXPECT_NE(tune("--shape 128x128x64 --knobs " + k + " --versus onednn --threads 2 --db " + b).err.find("one thread only"),
              std::string::npos);
  }

  // Outside the space: one line naming the violated constraint; nothing recorded.
  Outcome bad = tune("--shape 128x128x64 --knobs tile_m=8,tile_n=16,tile_k=16,reg_m=8,reg_n=32,unroll_k=1,reg_loop_order=0 "
                     "--db " + b);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("not in the space"), std::string::npos) << bad.err;
  EXPECT_EQ(queryInt(b, "SELECT count(*) FROM records"), 2);
  Outcome unknown = tune("--shape 128x128x64 --knobs tile_q=8 --db " + b);
  EXPECT_EQ(unknown.code, 2);

  // The space as JSON: every knob with its values.
  Outcome sp = tune("--shape 128x128x64 --print-space --db " + b);
  ASSERT_EQ(sp.code, 0) << sp.err;
  json space = json::parse(sp.out);
  EXPECT_EQ(space["workload"], "gemm:NN:128x128x64:f32*f32->f32");
  EXPECT_GE(space["knobs"].size(), 7u);
  EXPECT_GT(space["valid_points"].get<int64_t>(), 0);
  removeDb(a);
  removeDb(b);
}

TEST(Peers, ScriptsSayInOneLineWhenTheirPeerIsNotInstalled) {
  // Debian's python3 has neither Optuna nor TVM (they live in experiments/peers/.venv).
  if (sh("/usr/bin/python3 -c 'import optuna' || exit 0; exit 1").code != 0)
    GTEST_SKIP() << "the system Python has optuna: the not-installed path cannot be shown here";
  const std::string dir = std::string(SOURCE_DIR) + "/experiments/peers/";
  Outcome o = sh("/usr/bin/python3 " + dir + "optuna_tpe.py --tune " + std::string(TUNE_BIN) +
                 " --shape 64x64x64 --db x.db --out x.json");
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("optuna is not installed"), std::string::npos) << o.err;
  if (sh("/usr/bin/python3 -c 'import tvm' || exit 0; exit 1").code != 0) GTEST_SKIP() << "the system Python has tvm";
  Outcome t = sh("/usr/bin/python3 " + dir + "tvm_metaschedule.py --shape 64x64x64 --mcpu x --out x.json");
  EXPECT_EQ(t.code, 3);
  EXPECT_NE(t.err.find("apache-tvm is not usable here"), std::string::npos) << t.err;
}
