// The AMX route (issue #37): bf16 x bf16 -> f32 GEMMs, their space, the reasons a CPU or a
// workload cannot take it, and every knob compiled, run on the tile unit and verified (skipped,
// saying why, on a CPU without AMX).
#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <set>
#include <unistd.h>

#include "../../codegen/src/amx_kernel.h"
#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/ops.h"
#include "sextant/runtime/bf16.h"
#include "sextant/runtime/cpu_runner.h"
#include "compile_and_measure.h"

using namespace sextant;
using sextant::testing_support::compileAndMeasure;

namespace {

GemmWorkload bf16Gemm(const std::string& shape, const char* layout, bool weights = false, const char* dtype = "bf16") {
  auto w = makeGemmWorkload(shape, dtype, layout);
  EXPECT_TRUE(w.ok()) << w.error();
  w->weights = weights;
  return *w;
}

// The reason this machine cannot run AMX kernels, or empty.
std::string noAmxHere() {
  if (!hasAmxBf16(hostCpu())) return "this CPU has no AMX-BF16 (amx_tile, amx_bf16)";
  if (auto s = requestAmxPermission(); !s) return s.error();
  return "";
}

}  // namespace

TEST(Amx, WorkloadKeyAndProblemAreBf16) {
  GemmWorkload w = bf16Gemm("32x48x64", "NT");
  EXPECT_EQ(w.key(), "gemm:NT:32x48x64:bf16*bf16->f32");
  auto back = parseWorkloadKey(w.key());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, w);
  // The problem's inputs are bf16 values (rounded once), so that the f32 reference and the kernel
  // add the same products.
  auto p = GemmProblem::create(w, 7);
  ASSERT_TRUE(p.ok()) << p.error();
  int rounded = 0;
  for (float x : p->a()) rounded += x == roundToBf16(x);
  for (float x : p->b()) rounded += x == roundToBf16(x);
  EXPECT_EQ(rounded, int(p->a().size() + p->b().size()));
  EXPECT_EQ(toBf16(1.0f), 0x3f80);
  EXPECT_EQ(fromBf16(toBf16(1.00390625f)), 1.0f);  // a tie: to even
  EXPECT_EQ(fromBf16(toBf16(1.01171875f)), 1.015625f);
}

TEST(Amx, S8KeyAndProblemAreExactIntegers) {
  GemmWorkload w = bf16Gemm("32x48x128", "NT", false, "s8");
  EXPECT_EQ(w.key(), "gemm:NT:32x48x128:s8*s8->s32");
  EXPECT_EQ(bf16Gemm("32x48x128", "NT", false, "i8"), w);  // i8 is s8
  auto back = parseWorkloadKey(w.key());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, w);
  EXPECT_NE(w.payloadMlir().find("memref<32x48xi32>"), std::string::npos) << w.payloadMlir();
  EXPECT_NE(w.payloadMlir().find("arith.constant 0 : i32"), std::string::npos);
  auto s32 = makeGemmWorkload("32x48x128", "s32", "NN");
  ASSERT_FALSE(s32.ok());
  EXPECT_NE(s32.error().find("output type"), std::string::npos);
  auto p = GemmProblem::create(w, 3);
  ASSERT_TRUE(p.ok()) << p.error();
  int lo = 0, hi = 0, integral = 0;
  for (float x : p->a()) integral += x == float(int(x)), lo += x == -128.f, hi += x == 127.f;
  EXPECT_EQ(integral, int(p->a().size()));
  EXPECT_GT(lo + hi, 0);  // the whole range is drawn
  // The reference is the exact sum: row 0, column 0 of C = A B^T.
  double sum = 0;
  for (int64_t k = 0; k < w.k; ++k) sum += double(p->a()[size_t(k)]) * double(p->b()[size_t(k)]);
  EXPECT_EQ(double(p->reference()[0]), sum);
}

TEST(Amx, SpaceIsWhatItsConstraintsAllow) {
  for (const auto& [shape, layout] : {std::pair<const char*, const char*>{"1024x1024x1024", "NN"}, {"48x96x64", "NT"}}) {
    GemmWorkload w = bf16Gemm(shape, layout);
    Space s = buildCpuGemmSpace(w, hostCpu(), 1);
    EXPECT_EQ(s.name(), "cpu_gemm_amx_v1");
    // Brute force over the raw product: valid exactly when the register block fits 8 tiles and
    // every block holds whole register blocks and divides the size.
    uint64_t valid = 0;
    for (uint64_t id = 0; id < s.rawSize(); ++id) {
      Candidate c = s.decode(id);
      auto v = s.values(c);
      const int64_t tm = v[3] / 16, tn = v[4] / 16;
      const bool ok = tm * tn + tm + tn <= 8 && v[0] % v[3] == 0 && v[1] % v[4] == 0 && (v[2] / 32) % v[5] == 0 &&
                      w.m % v[0] == 0 && w.n % v[1] == 0 && w.k % v[2] == 0;
      EXPECT_EQ(ok, s.isValid(c)) << s.keyOf(c);
      valid += ok;
    }
    EXPECT_EQ(valid, s.size());
    EXPECT_TRUE(s.isValid(defaultCpuCandidate(s, w)));
    const std::string sched = emitCpuGemmSchedule(w, s, defaultCpuCandidate(s, w));
    EXPECT_NE(sched.find("\"sextant-amx-gemm\""), std::string::npos) << sched;
  }
}

TEST(Amx, UnsupportedCpusAndWorkloadsSayWhyInOneLine) {
  HostCpu zen;
  zen.model = "AMD EPYC (test)";
  zen.flags = {"avx512f", "avx512_bf16"};
  HostCpu spr;
  spr.model = "Intel Xeon (test)";
  spr.flags = {"avx512f", "amx_tile", "amx_bf16", "amx_int8"};
  GemmWorkload ok = bf16Gemm("64x64x64", "NN");
  EXPECT_NE(cpuWorkloadUnsupported(ok, zen).find("needs Intel AMX"), std::string::npos);
  EXPECT_EQ(cpuWorkloadUnsupported(ok, spr), "");
  EXPECT_EQ(cpuWorkloadUnsupported(bf16Gemm("64x64x64", "NT"), spr), "");
  EXPECT_NE(cpuWorkloadUnsupported(bf16Gemm("64x64x64", "TN"), spr).find("NN and NT"), std::string::npos);
  EXPECT_NE(cpuWorkloadUnsupported(bf16Gemm("40x64x64", "NN"), spr).find("multiples of 16"), std::string::npos);
  EXPECT_NE(cpuWorkloadUnsupported(bf16Gemm("64x64x48", "NN"), spr).find("multiple of 32"), std::string::npos);
  EXPECT_EQ(cpuWorkloadUnsupported(bf16Gemm("64x64x128", "NT", false, "s8"), spr), "");
  EXPECT_NE(cpuWorkloadUnsupported(bf16Gemm("64x64x96", "NN", false, "s8"), spr).find("multiple of 64"),
            std::string::npos);
  HostCpu bf16_only = spr;
  bf16_only.flags = {"avx512f", "amx_tile", "amx_bf16"};
  EXPECT_NE(cpuWorkloadUnsupported(bf16Gemm("64x64x128", "NN", false, "s8"), bf16_only).find("amx_int8"),
            std::string::npos);
  auto f16 = makeGemmWorkload("64x64x64", "f16", "NN");
  ASSERT_TRUE(f16.ok());
  EXPECT_NE(cpuWorkloadUnsupported(*f16, spr).find("f32 ops and bf16"), std::string::npos);
  auto f32 = makeGemmWorkload("64x64x64", "f32", "NN");
  EXPECT_EQ(cpuWorkloadUnsupported(*f32, zen), "");
  for (const GemmWorkload& w : {ok, bf16Gemm("40x64x64", "NN")})
    EXPECT_EQ(cpuWorkloadUnsupported(w, zen).find('\n'), std::string::npos);
}

TEST(Amx, KernelParamsAreChecked) {
  detail::AmxParams p;
  p.m = 64, p.n = 64, p.k = 64, p.block_k = 64;
  EXPECT_TRUE(detail::checkAmxParams(p).ok());
  p.tiles_m = 2, p.tiles_n = 3;  // 6 accumulators + 5 operand tiles > 8
  EXPECT_FALSE(detail::checkAmxParams(p).ok());
  p.tiles_n = 2, p.block_k = 48;
  EXPECT_FALSE(detail::checkAmxParams(p).ok());
  p.block_k = 64, p.m = 40;
  EXPECT_FALSE(detail::checkAmxParams(p).ok());
  // The text: tiles in tile registers through the K loop, the first K block from zero tiles.
  p.m = 64, p.block_k = 32, p.outer_order = 1;
  std::string t = detail::amxKernelText(p, "g");
  p.b_packed = true;
  const std::string packed = detail::amxKernelText(p, "g");
  EXPECT_NE(packed.find(detail::kAmxBTilesSymbol), std::string::npos);
  EXPECT_EQ(packed.find("memref.global"), std::string::npos);  // no buffer: B is read in place
  EXPECT_EQ(t.find(detail::kAmxBTilesSymbol), std::string::npos);
  EXPECT_NE(t.find("amx.tile_zero"), std::string::npos);
  EXPECT_NE(t.find("amx.tile_mulf"), std::string::npos);
  EXPECT_NE(t.find("iter_args("), std::string::npos);
  EXPECT_NE(t.find("amx.tile_load %C"), std::string::npos);  // later K blocks read C back
  EXPECT_NE(t.find("sextant_amx_permission"), std::string::npos);
}

// Every value of every knob (each the nearest valid point that has it), on NN and NT, with sizes
// of one, two and three tiles, B packed in the kernel or (weights) by the caller once, compiled,
// run and verified against OpenBLAS on the same bf16 values.
TEST(Amx, EveryKnobValueCompilesRunsAndVerifies) {
  if (auto why = noAmxHere(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  int measured = 0;
  struct Case {
    const char* shape;
    const char* layout;
    bool weights;
    const char* dtype;
  };
  for (const Case& k : {Case{"96x64x128", "NN", false, "bf16"}, Case{"48x96x64", "NT", false, "bf16"},
                        Case{"16x16x32", "NN", false, "bf16"}, Case{"32x48x96", "NN", true, "bf16"},
                        Case{"48x32x64", "NT", true, "bf16"}, Case{"96x64x256", "NN", false, "s8"},
                        Case{"48x32x128", "NT", false, "s8"}, Case{"16x16x64", "NT", true, "s8"},
                        Case{"32x48x192", "NN", true, "s8"}}) {
    GemmWorkload w = bf16Gemm(k.shape, k.layout, k.weights, k.dtype);
    Space s = buildCpuGemmSpace(w, hostCpu(), 1);
    std::set<Candidate> picks = {defaultCpuCandidate(s, w)};
    for (const Candidate& c : cpuSeedCandidates(s, w)) picks.insert(c);
    for (const Knob& k : s.knobs())
      for (int64_t v : k.values) {
        Candidate c = nearestValid(s, {{k.name, v}});
        if (s.values(c)[size_t(s.knobIndex(k.name))] == v) picks.insert(c);
      }
    for (const Candidate& c : picks) {
      Measurement m = compileAndMeasure(w, s, c, 1, "amx" + std::to_string(measured));
      EXPECT_EQ(m.status, MeasureStatus::Ok) << w.key() << " " << s.keyOf(c) << ": " << m.message;
      ++measured;
    }
  }
  EXPECT_GE(measured, 50);
}

// The object really multiplies on the tile unit (tdpbf16ps), and a wrong B layout is caught.
TEST(Amx, ObjectHoldsTileInstructions) {
  if (auto why = noAmxHere(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  for (const char* dtype : {"bf16", "s8"}) {
  GemmWorkload w = bf16Gemm("64x64x128", "NN", false, dtype);
  Space s = buildCpuGemmSpace(w, hostCpu(), 1);
  const std::string obj =
      (std::filesystem::temp_directory_path() / ("sextant-amx-" + std::to_string(getpid()) + ".o")).string();
  CompileOutcome out = compileModuleCpu(w.payloadMlir(), emitCpuGemmSchedule(w, s, defaultCpuCandidate(s, w)), obj);
  ASSERT_TRUE(out.ok) << out.stage << ": " << out.message.substr(0, 2000);
  const std::string cmd = std::string(SEXTANT_LLVM_TOOLS) + "/llvm-objdump -d " + obj;
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f)) text.append(buf, n);
  pclose(f);
  std::filesystem::remove(obj);
  EXPECT_NE(text.find(std::string(dtype) == "s8" ? "tdpbssd" : "tdpbf16ps"), std::string::npos) << dtype;
  EXPECT_NE(text.find("tileloadd"), std::string::npos);
  EXPECT_NE(text.find("ldtilecfg"), std::string::npos);
  }
}

// Two threads (scf.parallel -> OpenMP; each thread configures its own tiles): every loop order, B
// packed in the kernel or stored by the caller, verified; the space keeps as many parallel blocks
// as threads.
TEST(Amx, TwoThreadsComputeTheSame) {
  if (auto why = noAmxHere(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  int measured = 0;
  for (bool weights : {false, true})
    for (const char* layout : {"NN", "NT"}) {
      GemmWorkload w = bf16Gemm("64x96x128", layout, weights, weights && layout[1] == 'T' ? "s8" : "bf16");
      Space s = buildCpuGemmSpace(w, hostCpu(), 2);
      ASSERT_GE(s.knobIndex("threads"), 0);
      for (int64_t order : {0, 1, 2}) {
        Candidate c = nearestValid(s, {{"outer_order", order}, {"tile_m", 32}, {"tile_n", 32}, {"tile_k", 64}, {"reg_m", 32}});
        ASSERT_EQ(s.valueOr(c, "outer_order", -1), order);
        const auto v = s.values(c);
        const int64_t mb = w.m / v[0], nb = w.n / v[1];
        EXPECT_GE(order == 1 ? (nb > 1 ? nb : mb) : (mb > 1 ? mb : nb), 2) << s.keyOf(c);
        const std::string sched = emitCpuGemmSchedule(w, s, c);
        EXPECT_NE(sched.find("\"threads\" = 2"), std::string::npos) << sched;
        Measurement m = compileAndMeasure(w, s, c, 2, "amx2t" + std::to_string(measured));
        EXPECT_EQ(m.status, MeasureStatus::Ok) << w.key() << " " << s.keyOf(c) << ": " << m.message;
        ++measured;
      }
    }
  EXPECT_EQ(measured, 12);
}
