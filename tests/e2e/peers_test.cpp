// Issue #34: the entry point other searchers use (`tune --knobs`: one knob assignment compiled,
// verified and recorded exactly as a candidate of a run; `tune --print-space`), and the peer
// scripts' "not installed" path (experiments/peers/, run with a Python that lacks the peer).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

  // Outside the space: one line naming the violated constraint; nothing recorded.
  Outcome bad = tune("--shape 128x128x64 --knobs tile_m=8,tile_n=16,tile_k=16,reg_m=8,reg_n=32,unroll_k=1,reg_loop_order=0 "
                     "--db " + b);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("not in the space"), std::string::npos) << bad.err;
  EXPECT_EQ(queryInt(b, "SELECT count(*) FROM records"), 1);
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
