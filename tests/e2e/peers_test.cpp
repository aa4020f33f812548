// Issue #34: the entry point other searchers use (`tune --knobs`: one knob assignment compiled,
// verified and recorded exactly as a candidate of a run; `--versus LIB`: then against a library
// call by call; `tune --print-space`), and the peer
// scripts' "not installed" path (experiments/peers/, run with a Python that lacks the peer).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <iostream>
#include <vector>

#include "helpers.h"

using namespace e2e;
using json = nlohmann::json;

// A candidate key as queryRows returns it, as `--knobs` takes it (no trailing newline).
static std::string knobsOf(std::string k) {
  while (!k.empty() && (k.back() == '\n' || k.back() == ' ')) k.pop_back();
  return k;
}

TEST(Peers, KnobAssignmentIsRecordedExactlyAsACandidate) {
  const std::string a = tmp("knobs-run.db"), b = tmp("knobs-one.db");
  removeDb(a);
  removeDb(b);
  // One trial of a run: the untuned default candidate.
  Outcome run = tune("--shape 128x128x64 --trials 1 --final-rounds 0 -q --db " + a);
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string key = queryRows(a, "SELECT candidate FROM records WHERE id = 1");
  ASSERT_FALSE(key.empty());
  const std::string k = knobsOf(key);
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

  // A batched matmul against bare "onednn": its matmul primitive (which takes the batch), not
  // dnnl_sgemm once per batch element.
  {
    const std::string c = b + ".bmm";
    removeDb(c);
    ASSERT_EQ(tune("--op batch_matmul --shape 2x64x64x32 --trials 1 --final-rounds 0 -q --db " + c).code, 0);
    const std::string bk = knobsOf(queryRows(c, "SELECT candidate FROM records WHERE id = 1"));
    Outcome bv = tune("--op batch_matmul --shape 2x64x64x32 --knobs " + bk + " --versus onednn --final-rounds 1 -q --report json --db " + c);
    if (bv.err.find("cannot be measured here") != std::string::npos) {
      std::cout << "oneDNN is not installed here: the batched --versus check was not run (" << bv.err << ")\n";
    } else {
      ASSERT_EQ(bv.code, 0) << bv.err << bv.out;
      const std::string lib = json::parse(bv.out)["versus"]["library"].get<std::string>();
      EXPECT_NE(lib.find("matmul primitive"), std::string::npos) << lib;
      EXPECT_EQ(lib.find("once per batch element"), std::string::npos) << lib;
    }
    removeDb(c);
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

// experiments/peers/one_harness/harness.c, which times MetaSchedule's kernel beside Sextant's
// (ms_vs_sextant.sh; TVM is not needed for this part): two objects written by `tune compile` (the
// default schedule and a tuned one) are timed in one process, their results compared bit for bit,
// and each result released with its object's own allocation functions (glibc's free corrupted
// the heap and aborted the first version).
TEST(Peers, OneHarnessTimesTuneCompiledObjectsSideBySide) {
  const std::string db = tmp("one-harness.db"), empty = tmp("one-harness-empty.db"), payload = tmp("one-harness.mlir"),
                    a = tmp("one-harness-a.so"), b = tmp("one-harness-b.so"), bin = tmp("one-harness");
  removeDb(db);
  removeDb(empty);
  {
    std::ofstream p(payload);
    p << "func.func @f(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {\n"
         "  %zero = arith.constant 0.0 : f32\n"
         "  %e = tensor.empty() : tensor<64x48xf32>\n"
         "  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>\n"
         "  %r = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%z : tensor<64x48xf32>) -> "
         "tensor<64x48xf32>\n"
         "  return %r : tensor<64x48xf32>\n}\n";
  }
  ASSERT_EQ(tune("--shape 64x48x32 --trials 3 --final-rounds 0 -q --db " + db).code, 0);
  ASSERT_EQ(tune("--shape 16x16x16 --trials 1 --final-rounds 0 -q --db " + empty).code, 0);  // (another workload)
  Outcome ca = tune("compile " + payload + " --db " + empty + " -o " + a);
  ASSERT_EQ(ca.code, 0) << ca.err;
  Outcome cb = tune("compile " + payload + " --db " + db + " -o " + b);
  ASSERT_EQ(cb.code, 0) << cb.err;
  Outcome cc = sh("cc -O2 " + std::string(SOURCE_DIR) + "/experiments/peers/one_harness/harness.c -o " + bin + " -ldl");
  ASSERT_EQ(cc.code, 0) << cc.err;
  Outcome run = sh(bin + " 64 48 32 " + a + " " + b);
  ASSERT_EQ(run.code, 0) << run.err << run.out;
  int rows = 0;
  for (size_t at = run.out.find("\n"); at != std::string::npos; at = run.out.find("\n", at + 1)) ++rows;
  EXPECT_EQ(rows, 9) << run.out;  // the header, 3 rounds x (warm, flush), the medians (warm, flush)
  EXPECT_NE(run.out.find("flush"), std::string::npos) << run.out;
  for (const auto& p : {payload, a, b, bin}) std::remove(p.c_str());
  removeDb(db);
  removeDb(empty);
}

// The NT layout and the libraries in the one harness (lib_shim.c): Sextant's NT kernel (B stored
// N x K) and oneDNN's matmul primitive, dnnl_sgemm and OpenBLAS behind the same interface must give
// the same C bit for bit (small-integer operands; a library shim with the wrong transpose flag or
// leading dimension differs: a shim built for NN is checked to differ).
TEST(Peers, OneHarnessTimesTheLibrariesOnAnNtGemm) {
  const std::string payload = tmp("one-harness-nt.mlir"), empty = tmp("one-harness-nt.db"), a = tmp("one-harness-nt.so"),
                    bin = tmp("one-harness-nt"), dir = std::string(SOURCE_DIR) + "/experiments/peers/one_harness/";
  removeDb(empty);
  {
    std::ofstream p(payload);
    p << "func.func @f(%a: tensor<16x40xf32>, %b: tensor<48x40xf32>) -> tensor<16x48xf32> {\n"
         "  %zero = arith.constant 0.0 : f32\n"
         "  %e = tensor.empty() : tensor<16x48xf32>\n"
         "  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x48xf32>) -> tensor<16x48xf32>\n"
         "  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> "
         "(d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<16x40xf32>, tensor<48x40xf32>) "
         "outs(%z : tensor<16x48xf32>) -> tensor<16x48xf32>\n"
         "  return %r : tensor<16x48xf32>\n}\n";
  }
  ASSERT_EQ(tune("--shape 8x8x8 --trials 1 --final-rounds 0 -q --db " + empty).code, 0);  // (another workload)
  Outcome ca = tune("compile " + payload + " --db " + empty + " -o " + a);
  ASSERT_EQ(ca.code, 0) << ca.err;
  EXPECT_NE(ca.out.find("gemm:NT:16x48x40"), std::string::npos) << ca.out;
  ASSERT_EQ(sh("cc -O2 " + dir + "harness.c -o " + bin + " -ldl").code, 0);
  std::vector<std::string> libs;
  auto flags = [&](int nt) {
    return " -O2 -fPIC -shared -DSX_M=16 -DSX_N=48 -DSX_K=40 -DSX_NT=" + std::to_string(nt) + " " + dir +
           "lib_shim.c -Wl,--no-as-needed ";
  };
  const std::vector<std::pair<std::string, std::string>> shims = {{"onednn_matmul", "-DSHIM_ONEDNN_MATMUL -ldnnl"},
                                                                  {"dnnl_sgemm", "-DSHIM_DNNL_SGEMM -ldnnl"},
                                                                  {"openblas", "-DSHIM_CBLAS -l:libopenblas.so.0"}};
  for (const auto& [name, f] : shims) {
    const std::string so = tmp("one-harness-" + name + ".so");
    Outcome c = sh("cc" + flags(1) + "-o " + so + " " + f);
    if (c.code != 0) {
      std::cout << "[  NOTE    ] " << name << " not built here (" << c.err.substr(0, c.err.find('\n')) << ")\n";
      continue;
    }
    libs.push_back(so);
  }
  if (libs.empty()) GTEST_SKIP() << "no CPU library (libdnnl-dev, libopenblas-dev) to build a shim against";
  std::string objects = a;
  for (const auto& l : libs) objects += " " + l;
  Outcome run = sh("ROUNDS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 " + bin + " --nt 16 48 40 " + objects);
  ASSERT_EQ(run.code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("median"), std::string::npos) << run.out;
  const std::string wrong = tmp("one-harness-nn.so");
  if (sh("cc" + flags(0) + "-o " + wrong + " " + shims.back().second).code == 0) {
    Outcome nn = sh("ROUNDS=1 OPENBLAS_NUM_THREADS=1 " + bin + " --nt 16 48 40 " + a + " " + wrong);
    EXPECT_NE(nn.code, 0) << "an NN library call gave the NT kernel's C: " << nn.out;
    EXPECT_NE(nn.err.find("differs"), std::string::npos) << nn.err;
    std::remove(wrong.c_str());
  }
  for (const auto& p : libs) std::remove(p.c_str());
  for (const auto& p : {payload, a, bin}) std::remove(p.c_str());
  removeDb(empty);
}
