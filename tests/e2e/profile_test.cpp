// A network's time op by op (tune compile --profile, tune profile, tune model --profile; issue
// #32), as a user runs them on the small CNN of tests/data/models: every convolution and matmul is
// timed, the profiled network still computes NumPy's outputs, and what is not a profiled network
// gets one clear line.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "helpers.h"

using namespace e2e;

namespace {

const std::string kModels = std::string(DATA_DIR) + "/models/";

// A fresh database (tune model, untuned) and the test CNN compiled from it with --profile to `so`;
// the description beside it.
nlohmann::json profiledCnn(const std::string& db, const std::string& so) {
  removeDb(db);
  Outcome m = tune("model " + kModels + "cnn.onnx --db " + db + " -o " + so + ".plain.so --trials 0 --model-min-time 0.01 -q");
  EXPECT_EQ(m.code, 0) << m.err;
  Outcome c = tune("compile " + kModels + "cnn.onnx --db " + db + " -o " + so + " --profile");
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("tune profile " + so), std::string::npos) << c.out;
  auto side = nlohmann::json::parse(slurp(so + ".profile.json"), nullptr, false);
  EXPECT_FALSE(side.is_discarded());
  return side;
}

}  // namespace

TEST(Profile, EveryConvolutionAndMatmulIsTimed) {
  const std::string db = tmp("prof.db"), so = tmp("prof.so");
  // The description: the ops of @forward, and those of the functions it calls (the importer's one
  // function per convolution or matmul), the calls marked as containers.
  auto side = profiledCnn(db, so);
  ASSERT_TRUE(side.contains("ops"));
  int convs = 0, matmuls = 0, containers = 0;
  for (const auto& o : side["ops"]) {
    const std::string op = o["op"];
    if (o["container"].get<bool>()) ++containers;
    if (!o["nested"].get<bool>()) continue;
    if (op.find("conv") != std::string::npos) ++convs;
    if (op == "linalg.matmul") ++matmuls;
  }
  EXPECT_EQ(convs, 6) << side.dump(1);  // 3x3 (twice), the grouped conv's two groups, depthwise, 3x3/2
  EXPECT_EQ(matmuls, 3) << side.dump(1);  // 1x1, 1x1/2, the FC layer
  EXPECT_GE(containers, 9);

  Outcome p = tune("profile " + so + " --min-time 0.05 --report json");
  ASSERT_EQ(p.code, 0) << p.err;
  auto j = nlohmann::json::parse(p.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << p.out;
  const double whole = j["whole_s"], timed = j["timed_sum_s"];
  EXPECT_GT(whole, 0);
  EXPECT_GT(timed, 0.5 * whole) << "the timed ops cover too little of the call";
  EXPECT_LT(timed, 2.0 * whole);
  // Each convolution and matmul took time (a clock that wrapped nothing would show none).
  std::set<std::string> kinds;
  double fma_s = 0, fma_flops = 0;
  for (const auto& o : j["ops"]) {
    const std::string kind = o["kind"];
    kinds.insert(kind);
    if (kind.find("conv") != std::string::npos || kind == "matmul") {
      EXPECT_GT(o["s"].get<double>(), 0) << o.dump();
      fma_s += o["s"].get<double>(), fma_flops += o["flops"].get<double>();
    }
  }
  EXPECT_TRUE(kinds.count("conv")) << j.dump(1);
  EXPECT_TRUE(kinds.count("depthwise conv")) << j.dump(1);
  EXPECT_TRUE(kinds.count("matmul") || kinds.count("conv 1x1")) << j.dump(1);
  EXPECT_GT(fma_flops, 1e5);  // the CNN's convolutions and matmuls: 0.44 MFLOP in all
  EXPECT_GT(fma_s, 0);

  // Text: the kinds' table and the ops, the slowest first.
  Outcome t = tune("profile " + so + " --min-time 0.02 --top 3");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("GFLOP/s"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("more ops"), std::string::npos) << t.out;

  // The profiled network computes what NumPy did.
  auto [err, big] = cnnError(so, kModels);
  ASSERT_GE(err, 0) << "the profiled CNN did not load";
  EXPECT_LE(err, 1e-3 * big) << "max abs error " << err << " (largest output " << big << ")";
  removeDb(db);
}

TEST(Profile, WhatIsNotAProfiledNetworkGetsOneClearLine) {
  const std::string db = tmp("prof2.db"), so = tmp("prof2.so");
  removeDb(db);
  Outcome m = tune("model " + kModels + "cnn.onnx --db " + db + " -o " + so + " --trials 0 --model-min-time 0.01 -q");
  ASSERT_EQ(m.code, 0) << m.err;
  Outcome p = tune("profile " + so);  // compiled without --profile
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("compile it with tune compile --profile"), std::string::npos) << p.err;
  EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
  Outcome o = tune("compile " + kModels + "cnn.onnx --db " + db + " -o " + tmp("prof2.o") + " --profile");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--profile writes a shared object"), std::string::npos) << o.err;
  // A description that is not one.
  { std::ofstream(tmp("bad.so") + ".profile.json") << "{\"format\": \"something else\"}"; }
  Outcome b = tune("profile " + tmp("bad.so"));
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.err.find("not a profile description"), std::string::npos) << b.err;
  removeDb(db);
}

TEST(Profile, TuneModelPrintsWhereTheTimeGoes) {
  const std::string db = tmp("prof3.db"), so = tmp("prof3.so");
  removeDb(db);
  Outcome m = tune("model " + kModels + "cnn.onnx --db " + db + " -o " + so +
                   " --trials 0 --model-min-time 0.02 --profile --report json -q");
  ASSERT_EQ(m.code, 0) << m.err;
  auto j = nlohmann::json::parse(m.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << m.out;
  ASSERT_TRUE(j.contains("profile")) << m.out;
  EXPECT_GT(j["profile"]["ops"].size(), 5u);
  EXPECT_TRUE(std::filesystem::exists(tmp("prof3.profiled.so")));
  removeDb(db);
}

// The padded copies of the convolutions' inputs are gone (codegen/src/compiler_cpu_pad_reads.cpp):
// each zero tensor.pad of a convolution's function is read through by the convolution's vector
// reads, so after the schedules its clock times nothing. (Before, each pad was a border fill and a
// vectorized copy of the whole input; MobileNetV2: 0.67 ms of 4.6.)
TEST(Profile, ConvolutionsReadThroughTheirPadding) {
  const std::string db = tmp("prof4.db"), so = tmp("prof4.so");
  auto side = profiledCnn(db, so);
  ASSERT_TRUE(side.contains("ops"));
  int pads = 0;
  for (const auto& o : side["ops"])
    if (o["op"] == "tensor.pad" && o["function"].get<std::string>().rfind("conv", 0) == 0) {
      ++pads;
      EXPECT_TRUE(o["fused"].get<bool>()) << o.dump() << ": the convolution's padded input is still copied";
    }
  EXPECT_GE(pads, 5) << side.dump(1);  // every 3x3 convolution of the CNN is padded
  removeDb(db);
}

// The same rewrite as a sextant-opt pass, for consumers who apply an exported library themselves:
// after the library and --sextant-read-through-zero-pads no tensor.pad is left in the CNN's
// convolutions (without the pass, every padded one keeps its pad).
TEST(Profile, ReadThroughZeroPadsIsASextantOptPass) {
  const std::string db = tmp("prof5.db"), mlir = tmp("prof5.mlir"), lib = tmp("prof5_lib.mlir");
  removeDb(db);
  Outcome m = tune("model " + kModels + "cnn.onnx --db " + db + " -o " + tmp("plain5.so") + " --emit-mlir " + mlir +
                   " --trials 0 --model-min-time 0.01 -q");
  ASSERT_EQ(m.code, 0) << m.err;
  Outcome c = tune("compile " + mlir + " --db " + db + " -o " + tmp("prof5.so") + " --emit-library " + lib);
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string base = std::string(SEXTANT_OPT_BIN) + " " + mlir +
                           " --transform-preload-library=transform-library-paths=" + lib + " --transform-interpreter";
  Outcome before = sh(base);
  ASSERT_EQ(before.code, 0) << before.err;
  EXPECT_NE(before.out.find("tensor.pad"), std::string::npos);
  Outcome after = sh(base + " --sextant-skip-padding-rows --sextant-read-through-zero-pads");
  ASSERT_EQ(after.code, 0) << after.err;
  EXPECT_EQ(after.out.find("tensor.pad"), std::string::npos) << "a convolution's pad is left";
  removeDb(db);
}
