// tune model and ONNX import (issue #32), as a user runs them: the small models of
// tests/data/models (made by make_models.py, with NumPy's outputs beside them) imported, compiled,
// called through _mlir_ciface_forward and compared with NumPy; task extraction; the budget that
// makes the command resumable; one clear line for bad models.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "helpers.h"

using namespace e2e;

namespace {

const std::string kModels = std::string(DATA_DIR) + "/models/";

// The largest |a - b| and the largest |b|.
std::pair<double, double> compare(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, big = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::isnan(a[i]) ? INFINITY : std::fabs(double(a[i]) - double(b[i])));
    big = std::max(big, std::fabs(double(b[i])));
  }
  return {err, big};
}

nlohmann::json modelJson(const std::string& name, const std::string& db, const std::string& so,
                         const std::string& extra = "--trials 0") {
  Outcome r = tune("model " + kModels + name + ".onnx --db " + db + " -o " + so + " " + extra +
                   " --model-min-time 0.05 --report json -q");
  EXPECT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

std::map<std::string, int> weights(const nlohmann::json& j) {
  std::map<std::string, int> w;
  for (const auto& t : j["tasks"]) w[t["workload"].get<std::string>()] = t["weight"].get<int>();
  return w;
}

}  // namespace

TEST(Model, SmallCnnMatchesNumPy) {
  const std::string db = tmp("cnn.db"), so = tmp("cnn.so");
  removeDb(db);
  auto j = modelJson("cnn", db, so);
  // Tasks: 9 tunable ops, 7 distinct workloads; the 3x3 8->8 conv on 8x8 runs three times (once
  // as such, twice as the groups of the grouped conv); 1x1 convs and the FC layer are GEMMs. Every
  // filter and weight is a constant: tuned as weights (":weights").
  auto w = weights(j);
  EXPECT_EQ(w.size(), 7u) << j.dump(1);
  EXPECT_EQ(w["conv2d:NHWC:mb1ic8ih8iw8oc8oh8ow8kh3kw3sh1sw1ph1pw1dh0dw0:f32*f32->f32:weights"], 3) << j.dump(1);
  EXPECT_EQ(w["conv2d:NHWC:mb1g8ic8ih8iw8oc8oh8ow8kh3kw3sh1sw1ph1pw1dh0dw0:f32*f32->f32:weights"], 1);
  EXPECT_EQ(w["gemm:NN:64x16x8:f32*f32->f32:weights"], 1);   // 1x1, stride 1, on 8x8
  EXPECT_EQ(w["gemm:NN:16x16x16:f32*f32->f32:weights"], 1);  // 1x1, stride 2, on 8x8: 16 pixels
  EXPECT_EQ(w["gemm:NN:1x10x16:f32*f32->f32:weights"], 1);   // the FC layer
  EXPECT_EQ(j["trials"], 0);
  EXPECT_GT(j["measured_tuned_s"].get<double>(), 0);

  auto [err, big] = cnnError(so, kModels);
  ASSERT_GE(err, 0) << "the compiled CNN did not load";
  EXPECT_LE(err, 1e-3 * big) << "max abs error " << err << " (largest output " << big << ")";
  removeDb(db);
}

TEST(Model, EncoderLayerMatchesNumPy) {
  const std::string db = tmp("enc.db"), so = tmp("enc.so");
  removeDb(db);
  auto j = modelJson("encoder", db, so);
  // Q, K, V and output projections share one GEMM; Q.K^T and P.V one batched matmul (2 heads). The
  // projections' weights are constants (":weights"); the batched matmuls' operands are not.
  auto w = weights(j);
  EXPECT_EQ(w.size(), 4u) << j.dump(1);
  EXPECT_EQ(w["gemm:NN:8x16x16:f32*f32->f32:weights"], 4) << j.dump(1);
  EXPECT_EQ(w["batch_matmul:NN:2x8x8x8:f32*f32->f32"], 2) << j.dump(1);
  EXPECT_EQ(w["gemm:NN:8x32x16:f32*f32->f32:weights"], 1);
  EXPECT_EQ(w["gemm:NN:8x16x32:f32*f32->f32:weights"], 1);

  using D3 = MemRef<3>;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<void (*)(D3*, D3*)>(dlsym(h, "_mlir_ciface_forward"));
  ASSERT_NE(fn, nullptr);
  std::vector<float> x = readF32(kModels + "encoder.in0.f32"), want = readF32(kModels + "encoder.out0.f32");
  std::vector<float> y(want.size(), NAN);
  D3 dx = rowMajor(x, 1, 8, 16), dy = rowMajor(y, 1, 8, 16);
  fn(&dx, &dy);
  auto [err, big] = compare(y, want);
  EXPECT_LE(err, 1e-3 * big) << "max abs error " << err << " (largest output " << big << ")";
  dlclose(h);

  // A plain C program (no libm of its own) loads it, and a module whose code calls libm (atanf:
  // nothing approximates atan) names libm: such a program failed with "undefined symbol: expf"
  // while the objects did not.
  const std::string c = tmp("dlopen_only.c"), exe = tmp("dlopen_only"), atan_mlir = tmp("atan.mlir"),
                    atan_so = tmp("atan.so");
  std::ofstream(c) << "#include <dlfcn.h>\n#include <stdio.h>\nint main(int argc, char** argv) {\n"
                      "  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);\n"
                      "  if (!h) { puts(dlerror()); return 1; }\n  return 0;\n}\n";
  ASSERT_EQ(sh("cc -O0 " + c + " -o " + exe + " -ldl").code, 0);
  Outcome plain = sh(exe + " " + so);
  EXPECT_EQ(plain.code, 0) << plain.out << plain.err;
  // GELU's erf and softmax's exp are polynomials (vectorized), not one libm call per element.
  EXPECT_NE(sh("(nm -D --undefined-only " + so + " | grep -qE ' (erff|expf|tanhf)(@|$)')").code, 0);
  std::ofstream(atan_mlir) << "func.func @f(%x: f32) -> f32 {\n  %r = math.atan %x : f32\n  return %r : f32\n}\n";
  ASSERT_EQ(tune("compile " + atan_mlir + " --db " + db + " -o " + atan_so).code, 0);
  EXPECT_EQ(sh("(nm -D --undefined-only " + atan_so + " | grep -q ' atanf')").code, 0) << "no libm call left to test";
  Outcome with_libm = sh(exe + " " + atan_so);
  EXPECT_EQ(with_libm.code, 0) << with_libm.out << with_libm.err;
  for (const auto& f : {c, exe, atan_mlir, atan_so}) std::filesystem::remove(f);
  removeDb(db);
}

// The budget counts this machine's records of the model's tasks: the same command again measures
// nothing new (it resumes, here with nothing left), a larger budget adds exactly the difference, and
// the tuned network computes what the untuned one does.
TEST(Model, BudgetMakesTheCommandResumable) {
  const std::string db = tmp("resume.db"), so = tmp("resume.so");
  removeDb(db);
  auto j1 = modelJson("encoder", db, so, "--trials 12 --batch 4 --min-time 0.01");
  EXPECT_EQ(j1["trials"], 12);
  EXPECT_EQ(j1["rounds_this_run"], 3);
  EXPECT_EQ(queryInt(db, "SELECT COUNT(*) FROM records"), 12);
  EXPECT_LE(j1["max_abs_diff_tuned_vs_untuned"].get<double>(), 1e-3 * j1["max_abs_output"].get<double>());
  auto j2 = modelJson("encoder", db, so, "--trials 12 --batch 4 --min-time 0.01");
  EXPECT_EQ(j2["rounds_this_run"], 0);
  EXPECT_EQ(queryInt(db, "SELECT COUNT(*) FROM records"), 12);
  auto j3 = modelJson("encoder", db, so, "--trials 20 --batch 4 --min-time 0.01");
  EXPECT_EQ(j3["rounds_this_run"], 2);
  EXPECT_EQ(queryInt(db, "SELECT COUNT(*) FROM records"), 20);
  // The warm-up gave every one of the 4 tasks a round before any got a second, and the network
  // as tuned then was measured once, with the estimate beside it.
  for (const auto& t : j3["tasks"]) EXPECT_GE(t["rounds"].get<int>(), 1) << j3.dump(1);
  ASSERT_EQ(j3["phases"].size(), 1u) << j3.dump(1);
  EXPECT_EQ(j3["phases"][0]["phase"], "warm-up");
  EXPECT_EQ(j3["phases"][0]["trials"], 16);
  EXPECT_GT(j3["phases"][0]["measured_s"].get<double>(), 0);
  EXPECT_TRUE(j1["phases"].empty()) << "the warm-up was not over after 12 trials";
  removeDb(db);
}

TEST(Model, BadModelsGetOneClearLine) {
  const std::string db = tmp("bad.db"), so = tmp("bad.so");
  removeDb(db);
  struct Case {
    const char* file;
    const char* says;
  } cases[] = {
      {"unsupported_op.onnx", "(#0, Hardmax): operator Hardmax is not supported"},
      {"dynamic_batch.onnx", "input 'x' has a dynamic dimension 0 ('N'): give static shapes with --input-shape"},
      {"corrupt.onnx", "not an ONNX model"},
      {"missing.onnx", "cannot read the file"},
  };
  for (const Case& c : cases) {
    Outcome r = tune("model " + kModels + c.file + " --db " + db + " -o " + so + " --trials 0");
    EXPECT_EQ(r.code, 2) << c.file << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.file << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.file << ": " << r.err;
  }
  // With the shape given, the dynamic model compiles.
  Outcome ok = tune("model " + kModels + "dynamic_batch.onnx --db " + db + " -o " + so +
                    " --input-shape x=2,4 --trials 0 --model-min-time 0.01");
  EXPECT_EQ(ok.code, 0) << ok.err;
  Outcome bad = tune("compile " + kModels + "dynamic_batch.onnx --db " + db + " -o " + so + " --input-shape x=2");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("has rank 1, the model's input 2"), std::string::npos) << bad.err;
  removeDb(db);
}

TEST(Model, TheCostModelCommandsMovedWithAHint) {
  Outcome r = tune("model eval --db " + tmp("none.db"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("tune costmodel eval"), std::string::npos) << r.err;
  Outcome t = tune("model train --data x.jsonl -o m.costmodel");
  EXPECT_EQ(t.code, 2);
  EXPECT_NE(t.err.find("tune costmodel train"), std::string::npos) << t.err;
}

// The default output (FILE's stem + .so, here) and a relative -o both load: the runner is given
// absolute paths (dlopen looks a bare file name up in the library path, not the working directory).
TEST(Model, RelativeOutputPathsInTheWorkingDirectory) {
  const std::string dir = tmp("cwd");
  std::filesystem::create_directories(dir);
  Outcome r = sh("(cd " + dir + " && " + std::string(TUNE_BIN) + " model " + kModels +
                 "cnn.onnx --db m.db --trials 0 --model-min-time 0.01 -q)");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/cnn.so"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/cnn.so.untuned.so"));
  Outcome o = sh("(cd " + dir + " && " + std::string(TUNE_BIN) + " model " + kModels +
                 "cnn.onnx --db m.db --trials 0 --model-min-time 0.01 -q -o net.so)");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/net.so"));
  std::filesystem::remove_all(dir);
}

// Issue #32 item 4: a convolution's bias and activation, a depthwise convolution's Clip and a
// strided 1x1 convolution's residual add run on each of the op's tiles (inside its scf.forall),
// not as a pass over the whole output after it; --no-epilogue-fusion keeps the pass. Checked on
// the library tune compile applies, applied by stock mlir-opt to the imported module; on 2
// threads, so that each op's default schedule has at least two blocks (a forall of one is folded).
TEST(Model, EpiloguesRunOnTheTunedOpsTiles) {
  const std::string db = tmp("epi.db"), so = tmp("epi.so"), mlir = tmp("epi.mlir"), tools = SEXTANT_LLVM_TOOLS;
  removeDb(db);
  modelJson("cnn", db, so, "--trials 0 --emit-mlir " + mlir);
  // The text of function @NAME in `text`.
  auto function = [](const std::string& text, const std::string& name) {
    const size_t at = text.find("func.func private @" + name + "(");
    if (at == std::string::npos) return std::string();
    return text.substr(at, text.find("\n  }\n", at) - at);
  };
  // Whether the last `op` of @NAME is inside its forall (between scf.forall and its in_parallel).
  auto inside = [&](const std::string& applied, const std::string& name, const std::string& op) {
    const std::string f = function(applied, name);
    const size_t begin = f.find("scf.forall"), end = f.find("scf.forall.in_parallel"), at = f.rfind(op);
    EXPECT_NE(end, std::string::npos) << name << ":\n" << f;
    EXPECT_NE(at, std::string::npos) << name << ":\n" << f;
    return at > begin && at < end;
  };
  // The imported module after the library `tune compile FLAGS` applies, applied by stock mlir-opt;
  // `epilogue_variant`: whether that library has epilogue variants.
  bool in_registers = false, conv_in_registers = false;  // epilogues in the register tiles (a GEMM's, a conv's)
  auto applied = [&](const std::string& flags, bool& epilogue_variant) {
    const std::string lib = tmp("epi_lib.mlir"), out = tmp("epi_applied.mlir");
    Outcome c = tune("compile " + kModels + "cnn.onnx --db " + db + " -o " + so + " --emit-library " + lib + flags);
    EXPECT_EQ(c.code, 0) << c.err;
    epilogue_variant = slurp(lib).find("@sextant_apply_epilogue_") != std::string::npos;
    in_registers = slurp(lib).find("%sx_ep_reg, %r1, %r2 = transform.structured.fuse %t1_ep") != std::string::npos;
    conv_in_registers = slurp(lib).find("%sx_ep_reg, %r:3 = transform.structured.fuse %t1_ep") != std::string::npos;
    Outcome opt = sh(tools + "/mlir-opt " + mlir + " --transform-preload-library=transform-library-paths=" + lib +
                     " --transform-interpreter -o " + out);
    EXPECT_EQ(opt.code, 0) << opt.err;
    const std::string text = slurp(out);
    std::filesystem::remove(out);
    std::filesystem::remove(lib);
    return text;
  };
  for (bool fused : {true, false}) {
    bool variant = false;
    const std::string text = applied(std::string(" --threads 2") + (fused ? "" : " --no-epilogue-fusion"), variant);
    EXPECT_EQ(variant, fused);
    EXPECT_EQ(inside(text, "conv_c1", "arith.maximumf"), fused);  // bias + Relu
    // A direct convolution's zero fill is folded into its register tiles (the accumulators start
    // as zeros), and so is a GEMM's whose K is not chunked (16x16x16 here: tile_k = K).
    EXPECT_EQ(function(text, "conv_c1").find("linalg.fill"), std::string::npos);
    EXPECT_EQ(function(text, "matmul_ds").find("linalg.fill"), std::string::npos);
    EXPECT_NE(function(text, "matmul_ds").find("scf.forall"), std::string::npos);
    EXPECT_EQ(inside(text, "conv_c3", "arith.minimumf"), fused);  // depthwise: bias + Clip
    EXPECT_EQ(inside(text, "matmul_ds", "arith.addf"), fused);    // 1x1 stride 2: + c6 (residual)
    // Its default schedule holds the whole K (16) in its register tiles, unpacked: the residual add
    // goes into them (on the accumulators, before the tile is written), not a pass over the block.
    EXPECT_EQ(in_registers, fused);
    EXPECT_EQ(conv_in_registers, fused);  // the convolutions' unchunked defaults: the same
    if (fused) {
      EXPECT_EQ(function(text, "matmul_ds").find("linalg.generic"), std::string::npos);
    }
  }
  // On one thread too the direct convolution's zero fill is in its register tiles; the epilogue is
  // fused.
  bool variant = false;
  const std::string text = applied("", variant);
  EXPECT_TRUE(inside(text, "conv_c1", "arith.maximumf"));
  EXPECT_EQ(function(text, "conv_c1").find("linalg.fill"), std::string::npos);
  std::filesystem::remove(mlir);
  removeDb(db);
}

// `tune compile` of a module in tests/data against a schedule database with no records (every op
// gets its default schedule); the shared object's path, empty when a step failed.
static std::string compileWithoutRecords(const std::string& file, const std::string& name) {
  const std::string db = tmp(name + ".db"), so = tmp(name + ".so"), empty = tmp(name + "_empty.jsonl");
  removeDb(db);
  std::ofstream(empty) << "{\"format\":\"sextant-records\",\"version\":2}\n";
  const bool imported = tune("import " + empty + " --db " + db).code == 0;
  std::filesystem::remove(empty);
  Outcome c = tune("compile " + std::string(DATA_DIR) + "/" + file + " --db " + db + " -o " + so);
  removeDb(db);
  EXPECT_TRUE(imported);
  EXPECT_EQ(c.code, 0) << c.err << c.out;
  return imported && c.code == 0 ? so : std::string();
}

// The untuned rest runs on the tuned ops' threads: with a two-thread schedule in the module, an
// elementwise exp and a row sum (no tuned op at all here) become OpenMP regions of their own
// function, and compute what they should.
TEST(Model, TheUntunedRestIsSplitAmongTheThreads) {
  const std::string so = compileWithoutRecords("rest_two_threads.mlir", "rest");
  ASSERT_FALSE(so.empty());
  EXPECT_EQ(sh("(nm " + so + " | grep -q 'rows..omp_par')").code, 0) << "no parallel region in @rows";
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<void (*)(MemRef<2>*, MemRef<2>*, MemRef<1>*)>(dlsym(h, "_mlir_ciface_rows"));
  ASSERT_NE(fn, nullptr);
  std::vector<float> x(256 * 256), e(256 * 256, NAN), y(256, NAN);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 97) - 48) / 32.0f;
  MemRef<2> dx = rowMajor(x, 256, 256), de = rowMajor(e, 256, 256);
  MemRef<1> dy = rowMajor(y, 256);
  fn(&dx, &de, &dy);
  double worst = 0;
  for (int i = 0; i < 256; ++i) {
    double want = 0;
    for (int j = 0; j < 256; ++j) want += std::exp(double(x[size_t(i * 256 + j)]));
    worst = std::max(worst, std::fabs(double(y[size_t(i)]) - want) / want);
    worst = std::max(worst, std::fabs(double(e[size_t(i * 256)]) - std::exp(double(x[size_t(i * 256)]))));
  }
  EXPECT_LT(worst, 1e-5);
  dlclose(h);
}

// The rest's pools and pads are vector code: a -inf padded 3x3/2 max pool compiles without one
// scatter (before, the generalized pool failed to vectorize and LLVM vectorized its scalar loops
// and the pad's copy with vscatterqps) and computes every output, border windows included.
TEST(Model, PoolsAndPadsAreVectorized) {
  const std::string so = compileWithoutRecords("maxpool.mlir", "pool");
  ASSERT_FALSE(so.empty());
  EXPECT_NE(sh("(objdump -d " + so + " | grep -q vscatter)").code, 0) << "scatters in the pool";
  EXPECT_EQ(sh("(objdump -d " + so + " | grep -q 'vmaxps.*[xyz]mm')").code, 0) << "no vector maxima";
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<void (*)(MemRef<4>*, MemRef<4>*)>(dlsym(h, "_mlir_ciface_pool"));
  ASSERT_NE(fn, nullptr);
  std::vector<float> x(15 * 15 * 16), y(8 * 8 * 16, NAN);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int((i * 7919) % 211) - 150);  // mostly negative
  MemRef<4> dx = rowMajor(x, 1, 15, 15, 16), dy = rowMajor(y, 1, 8, 8, 16);
  fn(&dx, &dy);
  int wrong = 0;
  for (int oh = 0; oh < 8; ++oh)
    for (int ow = 0; ow < 8; ++ow)
      for (int ch = 0; ch < 16; ++ch) {
        float want = -INFINITY;
        for (int kh = 0; kh < 3; ++kh)
          for (int kw = 0; kw < 3; ++kw) {
            const int ih = oh * 2 + kh - 1, iw = ow * 2 + kw - 1;
            if (ih >= 0 && ih < 15 && iw >= 0 && iw < 15) want = std::max(want, x[size_t((ih * 15 + iw) * 16 + ch)]);
          }
        wrong += y[size_t((oh * 8 + ow) * 16 + ch)] != want;
      }
  EXPECT_EQ(wrong, 0);
  dlclose(h);
}

// Calls @const_weights (tests/data/const_weights.mlir) compiled into `so` and checks C = A * W.
static void expectConstWeightsProduct(const std::string& so) {
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<void (*)(MemRef<2>*, MemRef<2>*)>(dlsym(h, "_mlir_ciface_const_weights"));
  ASSERT_NE(fn, nullptr);
  std::vector<float> a(64 * 64), out(64 * 128, NAN);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 23) - 11) / 16.0f;
  MemRef<2> da = rowMajor(a, 64, 64), dc = rowMajor(out, 64, 128);
  fn(&da, &dc);
  int wrong = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 128; ++n) {
      double want = 0;
      for (int kk = 0; kk < 64; ++kk) want += double(a[size_t(m * 64 + kk)]) * (((kk * 3 + n * 7) % 17 - 8) / 8.0);
      wrong += std::fabs(out[size_t(m * 128 + n)] - want) > 1e-4;
    }
  EXPECT_EQ(wrong, 0);
  dlclose(h);
}

// Constant weights read in blocks are packed at compile time (compiler_cpu_pack_weights.cpp): a
// schedule that reads the 64 x 128 weight of tests/data/const_weights.mlir in blocks of 32 columns
// (tile_n 32, K in chunks so that the blocks stay slices) makes sextant-opt's pass store it as
// 4 x 64 x 32, the blocks read by index; tune compile does the same, and the product is right.
TEST(Model, ConstantWeightsArePackedInTheirBlocks) {
  const std::string db = tmp("cw.db"), so = tmp("cw.so"), lib = tmp("cw_lib.mlir"), data = std::string(DATA_DIR);
  removeDb(db);
  Outcome k = tune("--shape 64x128x64 --knobs " +
                   hostRegisterTile("tile_m=32,tile_n=32,tile_k=32,reg_m=8,reg_n=16,unroll_k=1,reg_loop_order=0,"
                                    "pack_b=0,outer_order=0,pack_a=0") + " --quiet --db " + db);
  ASSERT_EQ(k.code, 0) << k.err;
  Outcome c = tune("compile " + data + "/const_weights.mlir --db " + db + " -o " + so + " --emit-library " + lib);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("tuned (record"), std::string::npos) << c.out;
  Outcome opt = sh(std::string(SEXTANT_OPT_BIN) + " " + data + "/const_weights.mlir --transform-preload-library=transform-library-paths=" +
                   lib + " --transform-interpreter --sextant-pack-constant-blocks");
  ASSERT_EQ(opt.code, 0) << opt.err;
  EXPECT_NE(opt.out.find(": tensor<4x64x32xf32>"), std::string::npos) << "no packed constant";
  EXPECT_EQ(opt.out.find(": tensor<64x128xf32>\n"), std::string::npos) << "the unpacked constant is left";
  expectConstWeightsProduct(so);
  removeDb(db);
  std::filesystem::remove(so);
  std::filesystem::remove(lib);
}

// A network's packed panels stay vector copies: tune compile's extra steps for networks
// (elementwise vectorization, with a greedy pattern driver) used to fold the schedule's vectorized
// B-panel copy back into a slice insertion, which bufferized to a strided copy lowered to scalar
// loops (64 vmovss loads and stores per panel row). The GEMM of tests/data/const_weights.mlir
// with pack_b = 1 compiles without a scalar move and computes the right product.
TEST(Model, PackedPanelsStayVectorCopiesInNetworks) {
  const std::string db = tmp("pb.db"), so = tmp("pb.so"), data = std::string(DATA_DIR);
  removeDb(db);
  Outcome k = tune("--shape 64x128x64 --knobs " +
                   hostRegisterTile("tile_m=32,tile_n=64,tile_k=32,reg_m=8,reg_n=16,unroll_k=1,reg_loop_order=0,"
                                    "pack_b=1,outer_order=0,pack_a=1") + " --quiet --db " + db);
  ASSERT_EQ(k.code, 0) << k.err;
  Outcome c = tune("compile " + data + "/const_weights.mlir --db " + db + " -o " + so);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("tuned (record"), std::string::npos) << c.out;
  Outcome scalar = sh("(objdump -d --no-show-raw-insn " + so + " | grep -c vmovss)");
  EXPECT_EQ(scalar.out, "0\n") << "scalar moves in the compiled network";
  expectConstWeightsProduct(so);
  removeDb(db);
  std::filesystem::remove(so);
}

// The epilogue in the register tiles (codegen/src/library.cpp, epilogueActions): a GEMM whose
// whole K is in its register tiles computes its bias, residual add and ReLU on the accumulators,
// with every loop order, rows or columns outer, and a peeled register loop (full tiles, then the
// masked rest) and, with N = 24 on AVX-512, a whole vector then a peeled 8-wide rest over N;
// nothing is left for the plain lowering, the result is right, and the epilogue's reads are
// prefetched.
TEST(Model, EpilogueInTheRegisterTiles) {
  const std::string data = std::string(DATA_DIR);
  // N = 24 (a whole AVX-512 vector, then a peeled 8-wide remainder) only where vectors are 16 wide.
  const bool avx512 = __builtin_cpu_supports("avx512f");
  struct Case {
    int64_t n;
    const char* knobs;
  };
  for (const Case& cs : {Case{128, "tile_m=32,tile_n=64,tile_k=32,reg_m=8,reg_n=16,unroll_k=2,reg_loop_order=0,pack_b=0,outer_order=0,pack_a=0"},
                         Case{128, "tile_m=32,tile_n=64,tile_k=32,reg_m=12,reg_n=16,unroll_k=2,reg_loop_order=1,pack_b=0,outer_order=1,pack_a=0"},
                         Case{128, "tile_m=32,tile_n=64,tile_k=32,reg_m=8,reg_n=32,unroll_k=4,reg_loop_order=0,pack_b=0,outer_order=2,pack_a=0"},
                         Case{24, "tile_m=32,tile_n=24,tile_k=32,reg_m=8,reg_n=16,unroll_k=2,reg_loop_order=0,pack_b=0,outer_order=0,pack_a=0"},
                         Case{24, "tile_m=16,tile_n=24,tile_k=32,reg_m=16,reg_n=16,unroll_k=4,reg_loop_order=1,pack_b=0,outer_order=0,pack_a=0"}}) {
    if (cs.n != 128 && !avx512) continue;
    const int64_t N = cs.n;
    const std::string knobs = N == 128 ? hostRegisterTile(cs.knobs) : std::string(cs.knobs);
    const std::string db = tmp("gep.db"), so = tmp("gep.so"), lib = tmp("gep_lib.mlir"), mlir = tmp("gep.mlir");
    std::string text = slurp(data + "/gemm_epilogue.mlir");
    const std::string n_text = std::to_string(N);
    for (size_t p = text.find("128"); p != std::string::npos; p = text.find("128", p + n_text.size())) text.replace(p, 3, n_text);
    std::ofstream(mlir) << text;
    removeDb(db);
    Outcome k = tune("--shape 64x" + std::to_string(N) + "x32 --knobs " + knobs + " --quiet --db " + db);
    ASSERT_EQ(k.code, 0) << k.err;
    Outcome c = tune("compile " + mlir + " --db " + db + " -o " + so + " --emit-library " + lib);
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_NE(slurp(lib).find("%sx_ep_reg, %r1, %r2 = transform.structured.fuse"), std::string::npos) << knobs;
    if (N == 24) {
      EXPECT_NE(slurp(lib).find("transform.loop.peel"), std::string::npos) << knobs;
    }
    Outcome opt = sh(std::string(SEXTANT_LLVM_TOOLS) + "/mlir-opt " + mlir + " --transform-preload-library=transform-library-paths=" +
                     lib + " --transform-interpreter");
    ASSERT_EQ(opt.code, 0) << opt.err;
    EXPECT_EQ(opt.out.find("linalg."), std::string::npos) << knobs << ": an op was left to the plain lowering";
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    auto fn = reinterpret_cast<void (*)(MemRef<2>*, MemRef<2>*, MemRef<2>*, MemRef<2>*)>(dlsym(h, "_mlir_ciface_gemm_epilogue"));
    ASSERT_NE(fn, nullptr);
    std::vector<float> a(64 * 32), b(size_t(32 * N)), r(size_t(64 * N)), out(size_t(64 * N), NAN);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 13) - 6) / 8.0f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 11) - 5) / 8.0f;
    for (size_t i = 0; i < r.size(); ++i) r[i] = float(int(i % 7) - 3) / 4.0f;
    MemRef<2> da = rowMajor(a, 64, 32), dbm = rowMajor(b, 32, N), dr = rowMajor(r, 64, N), dc = rowMajor(out, 64, N);
    fn(&da, &dbm, &dr, &dc);
    int wrong = 0;
    for (int64_t m = 0; m < 64; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double want = 0.25 + r[size_t(m * N + n)];
        for (int64_t kk = 0; kk < 32; ++kk) want += double(a[size_t(m * 32 + kk)]) * b[size_t(kk * N + n)];
        wrong += std::fabs(out[size_t(m * N + n)] - std::max(want, 0.0)) > 1e-4;
      }
    EXPECT_EQ(wrong, 0) << knobs;
    dlclose(h);
    // The residual's and the bias's lines are prefetched before each register tile's reduction
    // (compiler_cpu_prefetch.cpp, insertEpiloguePrefetches): nothing else here prefetches.
    Outcome pf = sh("(objdump -d --no-show-raw-insn " + so + " | grep -c prefetcht0)");
    EXPECT_GT(std::atoi(pf.out.c_str()), 0) << knobs << ": no prefetch of the epilogue's reads";
    removeDb(db);
    std::filesystem::remove(so);
    std::filesystem::remove(lib);
    std::filesystem::remove(mlir);
  }
}
