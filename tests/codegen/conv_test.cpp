// The conv2d op (issue #31): benchdnn descriptors, the direct route's space against a brute force,
// both routes (direct; 1x1 stride 1 as a GEMM) compiled and verified on small shapes with strides,
// dilation, padding, odd sizes and two threads, and the reference itself on a hand-computed case.
#include <array>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <unistd.h>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/ops.h"
#include "sextant/runtime/cpu_runner.h"
#include "compile_and_measure.h"
#include "test_cpus.h"

using namespace sextant;
using sextant::testing_support::compileAndMeasure;

namespace {
GemmWorkload conv(const std::string& desc) {
  auto w = makeConvWorkload(desc, "f32", "NHWC");
  EXPECT_TRUE(w.ok()) << desc << ": " << w.error();
  return w.ok() ? *w : GemmWorkload{};
}

}  // namespace

TEST(ConvDesc, BenchdnnFieldsDefaultsAndCanonicalForm) {
  auto d = parseConvDesc("mb1ic64ih56oc64kh3ph1");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->iw, 56);
  EXPECT_EQ(d->kw, 3);
  EXPECT_EQ(d->sw, 1);
  EXPECT_EQ(d->pw, 1);
  EXPECT_EQ(d->oh, 56);
  EXPECT_EQ(d->ow, 56);
  EXPECT_EQ(d->str(), "mb1ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0");
  // The ResNet-50 stem with '_' separators and a given (consistent) oh.
  auto stem = parseConvDesc("mb1_ic3oc64_ih224oh112kh7sh2ph3");
  ASSERT_TRUE(stem.ok()) << stem.error();
  EXPECT_EQ(stem->ow, 112);
  EXPECT_DOUBLE_EQ(stem->flops(), 2.0 * 112 * 112 * 64 * 7 * 7 * 3);
  // Every field given; dilation 1 (benchdnn: a gap of one) widens the filter to 5.
  auto all = parseConvDesc("mb2g1ic8iw9ih7oc16oh3ow4kh3kw3sh2sw2ph1pw1dh1dw1");
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_EQ(all->oh, (7 + 2 - 5) / 2 + 1);
  EXPECT_EQ(all->ow, (9 + 2 - 5) / 2 + 1);
  // The canonical text parses to the same problem.
  EXPECT_EQ(*parseConvDesc(all->str()), *all);
  // Depthwise (g = ic = oc) is its own op; other groups a loop over one convolution per group.
  auto dw = parseConvDesc("g32ic32oc32ih56kh3ph1");
  ASSERT_TRUE(dw.ok());
  EXPECT_TRUE(dw->depthwise());
  EXPECT_EQ(dw->gemmK(), 9);
  auto w = makeConvWorkload("g32ic32oc32ih56kh3ph1", "f32", "NHWC");
  ASSERT_TRUE(w.ok()) << w.error();
  EXPECT_NE(w->payloadMlir().find("linalg.depthwise_conv_2d_nhwc_hwc"), std::string::npos);
  EXPECT_NE(w->payloadMlir().find("memref<3x3x32xf32>"), std::string::npos);  // HWC filter
  auto grouped = makeConvWorkload("g2ic32oc64ih56kh3ph1", "f32", "NHWC");
  ASSERT_TRUE(grouped.ok()) << grouped.error();
  EXPECT_EQ(grouped->k, 9 * 16);  // the reduction of one group
  const std::string gp = grouped->payloadMlir();
  EXPECT_NE(gp.find("scf.for"), std::string::npos) << gp;
  EXPECT_NE(gp.find("memref<3x3x16x64xf32>"), std::string::npos) << gp;  // kh x kw x ic/g x oc
  EXPECT_NE(gp.find("tensor<1x56x56x32xf32>) -> tensor<1x56x56x32xf32>"), std::string::npos) << gp;  // oc/g per group
  EXPECT_EQ(gp.find("depthwise"), std::string::npos);
}

TEST(ConvDesc, BadDescriptorsAreOneClearLine) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {{"ic64ih56oc64", "'kh' is required"},        {"mb1ic64ih56oc64kh3qq1", "unknown field 'qq'"},
               {"ic64ih56oc64kh3kh3", "given twice"},        {"ic64id8ih56oc64kh3", "3-D"},
               {"ic64ih56oc64kh3oh50", "does not match"},    {"ic64ih2oc64kh5", "does not fit"},
               {"ic64ih56oc64kh0", "must be positive"},      {"g3ic64ih56oc64kh3", "multiples of g"},
               {"ic64ih56oc64khx", "has no value"},          {"", "'ic' is required"}};
  for (const Case& c : cases) {
    auto d = parseConvDesc(c.text);
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_NE(d.error().find(c.says), std::string::npos) << c.text << ": " << d.error();
    EXPECT_EQ(d.error().find('\n'), std::string::npos) << d.error();
  }
  EXPECT_FALSE(makeConvWorkload("ic8ih8oc16kh3", "f32", "HWNC").ok());
  EXPECT_TRUE(makeConvWorkload("ic8ih8oc16kh3", "f32", "NCHW").ok());
}

TEST(ConvWorkload, KeyRoundTripsAndThe1x1IsAGemm) {
  GemmWorkload w = conv("mb1ic64ih56oc64kh3ph1");
  EXPECT_EQ(w.key(), "conv2d:NHWC:mb1ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0:f32*f32->f32");
  auto back = parseWorkloadKey(w.key());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, w);
  EXPECT_EQ(w.m, 56 * 56);
  EXPECT_EQ(w.k, 9 * 64);
  EXPECT_FALSE(convIsGemm(w));
  EXPECT_NE(w.payloadMlir().find("tensor.pad"), std::string::npos);
  EXPECT_NE(w.payloadMlir().find("linalg.conv_2d_nhwc_hwcf"), std::string::npos);
  GemmWorkload p = conv("ic64ih56oc256kh1");
  EXPECT_TRUE(convIsGemm(p));
  EXPECT_NE(p.payloadMlir().find("linalg.matmul"), std::string::npos);
  EXPECT_EQ(buildCpuGemmSpace(p, hostCpu()).name(), "cpu_gemm_v1");
  EXPECT_FALSE(convIsGemm(conv("ic64ih56oc256kh1sh2")));  // strided: the direct route
  ASSERT_TRUE(findOp("conv2d").ok());
}

// The direct route's space against a brute force over its raw product.
TEST(ConvSpace, AgainstABruteForceOfItsConstraints) {
  GemmWorkload w = conv("ic16ih14oc32kh3ph1");
  Space s = buildCpuGemmSpace(w, hostCpu(), 2);
  EXPECT_EQ(s.name(), "cpu_conv2d_v1");
  const int64_t vw = std::max(4, hostCpu().f32Lanes()), nregs = hostCpu().vector_registers;
  uint64_t valid = 0;
  for (uint64_t id = 0; id < s.rawSize(); ++id) {
    Candidate c = s.decode(id);
    auto k = s.knobMap(c);
    const int64_t cols = (k["reg_f"] + vw - 1) / vw;
    const bool ok = k["tile_ow"] % k["reg_ow"] == 0 && k["tile_f"] % k["reg_f"] == 0 && k["reg_ow"] * cols + cols <= nregs &&
                    (14 / k["tile_oh"]) * (14 / k["tile_ow"]) * (32 / k["tile_f"]) >= 2 && 14 % k["tile_oh"] == 0 &&
                    14 % k["tile_ow"] == 0 && 32 % k["tile_f"] == 0 && 16 % k["tile_c"] == 0;
    EXPECT_EQ(s.isValid(c), ok) << s.keyOf(c);
    valid += ok;
  }
  EXPECT_EQ(valid, s.size());
  EXPECT_TRUE(s.isValid(defaultCpuCandidate(s, w)));
}

// Every route on small problems: padding, stride 2, dilation, a 7x7 output, C = 3, odd channel
// counts, 1x1 (the GEMM route) and 1x1 stride 2 (direct), several candidates each; two threads.
TEST(ConvCompile, EveryRouteCompilesAndVerifies) {
  std::mt19937_64 rng(3);
  for (const char* desc : {"ic16ih14oc32kh3ph1", "ic8ih15oc16kh3sh2ph1", "ic8ih12oc16kh3dh1ph2", "ic3ih14oc16kh7sh2ph3",
                           "ic32ih7oc32kh3ph1", "ic16ih8oc48kh1", "ic16ih8oc32kh1sh2", "mb2ic8ih6oc16kh3",
                           // depthwise: padding, stride 2, dilation, an odd channel count
                           "g32ic32oc32ih14kh3ph1", "g48ic48oc48ih15kh3sh2ph1", "g16ic16oc16ih12kh3dh1ph2",
                           "g24ic24oc24ih7kh5ph2",
                           // grouped: padding, stride 2, dilation, channels per group below the vector width
                           "g2ic16oc32ih10kh3ph1", "g4ic16oc32ih9kh3sh2ph1", "g2ic8oc16ih8kh3dh1ph2", "g4ic16oc16ih6kh3ph1"}) {
    GemmWorkload w = conv(desc);
    Space s = buildCpuGemmSpace(w, hostCpu());
    std::vector<Candidate> cands = {defaultCpuCandidate(s, w)};
    for (int i = 0; i < 3; ++i) cands.push_back(s.sample(rng));
    for (const Candidate& c : cands) {
      Measurement m = compileAndMeasure(w, s, c, 1, "conv");
      EXPECT_EQ(m.status, MeasureStatus::Ok) << desc << " " << s.keyOf(c) << ": " << m.message;
    }
  }
  for (const char* desc : {"ic16ih14oc32kh3ph1", "g2ic16oc32ih14kh3ph1"}) {
    GemmWorkload w = conv(desc);
    Space s2 = buildCpuGemmSpace(w, hostCpu(), 2);
    Measurement m = compileAndMeasure(w, s2, defaultCpuCandidate(s2, w), 2, "conv2t");
    EXPECT_EQ(m.status, MeasureStatus::Ok) << desc << ": " << m.message;
  }
}

// The other layouts (NCHW / FCHW, PyTorch's; NHWC / FHWC, TOSA's): keys, operands and payloads,
// then the direct route on small problems (padding, stride 2, dilation, C = 3, 1x1, several
// candidates each, two threads), each verified against the reference in its own layout.
TEST(ConvCompile, LayoutsCompileAndVerify) {
  auto bad = makeConvWorkload("ic16ih14oc32kh3ph1", "f32", "CHWN");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("supported: NHWC"), std::string::npos) << bad.error();
  EXPECT_FALSE(makeConvWorkload("g2ic16oc32ih14kh3ph1", "f32", "NCHW").ok());  // groups: NHWC / HWCF only
  std::mt19937_64 rng(5);
  for (const char* layout : {"NCHW", "NHWC/FHWC"}) {
    for (const char* desc : {"ic16ih14oc32kh3ph1", "ic8ih15oc16kh3sh2ph1", "ic8ih12oc16kh3dh1ph2", "ic3ih14oc16kh7sh2ph3",
                             "ic16ih8oc48kh1", "mb2ic8ih6oc16kh3"}) {
      auto w = makeConvWorkload(desc, "f32", layout);
      ASSERT_TRUE(w.ok()) << w.error();
      auto back = parseWorkloadKey(w->key());
      ASSERT_TRUE(back.ok()) << back.error();
      EXPECT_EQ(*back, *w) << w->key();
      EXPECT_FALSE(convIsGemm(*w));  // a 1x1 takes the direct route in these layouts
      const std::string payload = w->payloadMlir();
      EXPECT_NE(payload.find(std::string(layout) == "NCHW" ? "linalg.conv_2d_nchw_fchw" : "linalg.conv_2d_nhwc_fhwc"),
                std::string::npos)
          << payload;
      Space s = buildCpuGemmSpace(*w, hostCpu());
      std::vector<Candidate> cands = {defaultCpuCandidate(s, *w)};
      for (int i = 0; i < 3; ++i) cands.push_back(s.sample(rng));
      for (const Candidate& c : cands) {
        Measurement m = compileAndMeasure(*w, s, c, 1, "convlayout");
        EXPECT_EQ(m.status, MeasureStatus::Ok) << layout << " " << desc << " " << s.keyOf(c) << ": " << m.message;
      }
    }
    auto w = makeConvWorkload("ic16ih14oc32kh3ph1", "f32", layout);
    Space s2 = buildCpuGemmSpace(*w, hostCpu(), 2);
    Measurement m = compileAndMeasure(*w, s2, defaultCpuCandidate(s2, *w), 2, "convlayout2t");
    EXPECT_EQ(m.status, MeasureStatus::Ok) << layout << ": " << m.message;
  }
}

// The reference in the other layouts is the NHWC one permuted: the same problem's data stored
// both ways gives the same outputs.
TEST(ConvReference, LayoutsAgreeWithNhwc) {
  auto nhwc = makeConvWorkload("ic3ih5oc4kh3sh2ph1", "f32", "NHWC");
  auto nchw = makeConvWorkload("ic3ih5oc4kh3sh2ph1", "f32", "NCHW");
  auto fhwc = makeConvWorkload("ic3ih5oc4kh3sh2ph1", "f32", "NHWC/FHWC");
  ASSERT_TRUE(nhwc.ok() && nchw.ok() && fhwc.ok());
  const ConvDesc& d = nhwc->conv;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(size_t(d.inputElements())), f(size_t(d.filterElements()));
  for (float& v : x) v = u(rng);
  for (float& v : f) v = u(rng);
  // x NHWC (1, 5, 5, 3) -> NCHW; f HWCF (3, 3, 3, 4) -> FCHW and FHWC.
  std::vector<float> xc(x.size()), fc(f.size()), ff(f.size());
  for (int64_t h = 0; h < 5; ++h)
    for (int64_t w = 0; w < 5; ++w)
      for (int64_t c = 0; c < 3; ++c) xc[size_t((c * 5 + h) * 5 + w)] = x[size_t((h * 5 + w) * 3 + c)];
  for (int64_t kh = 0; kh < 3; ++kh)
    for (int64_t kw = 0; kw < 3; ++kw)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t o = 0; o < 4; ++o) {
          const float v = f[size_t(((kh * 3 + kw) * 3 + c) * 4 + o)];
          fc[size_t(((o * 3 + c) * 3 + kh) * 3 + kw)] = v;
          ff[size_t(((o * 3 + kh) * 3 + kw) * 3 + c)] = v;
        }
  std::vector<float> y(size_t(d.outputElements())), yc(y.size()), yf(y.size());
  opOf(*nhwc).naiveReference(*nhwc, x.data(), f.data(), y.data());
  opOf(*nchw).naiveReference(*nchw, xc.data(), fc.data(), yc.data());
  opOf(*fhwc).naiveReference(*fhwc, x.data(), ff.data(), yf.data());
  EXPECT_EQ(yf, y);
  for (int64_t h = 0; h < d.oh; ++h)
    for (int64_t w = 0; w < d.ow; ++w)
      for (int64_t o = 0; o < 4; ++o)
        EXPECT_EQ(yc[size_t((o * d.oh + h) * d.ow + w)], y[size_t((h * d.ow + w) * 4 + o)]) << h << " " << w << " " << o;
  EXPECT_EQ(opOf(*nchw).elementName(*nchw, 1), "output[n 0][oc 0][oh 0][ow 1]");
}

// The reduction over channels in block-level chunks (block_c): each value compiles, verifies (a
// strided and a padded layer, one and two threads), and only a chunk smaller than ic adds the loop
// (the unchunked ones fuse the zero fill into their register tiles); depthwise layers have the one
// value. Old records (no block_c) read as the whole reduction.
TEST(ConvCompile, ChannelChunksCompileAndVerify) {
  for (const char* desc : {"ic64ih10oc32kh3sh2ph1", "ic32ih8oc32kh3ph1"}) {
    GemmWorkload w = conv(desc);
    for (int threads : {1, 2}) {
      Space s = buildCpuGemmSpace(w, hostCpu(), threads);
      const Knob& k = s.knobs()[size_t(s.knobIndex("block_c"))];
      EXPECT_EQ(k.values.back(), w.conv.ic) << desc;
      EXPECT_EQ(k.if_absent, std::optional<int64_t>(w.conv.ic));
      EXPECT_GE(k.values.size(), 2u) << desc;
      for (int64_t bc : k.values) {
        std::map<std::string, int64_t> want = {{"tile_oh", 1}, {"tile_ow", w.conv.ow}, {"tile_f", 32}, {"reg_ow", 1},
                                               {"reg_f", 16}, {"tile_c", 4}, {"tile_kw", 1}, {"reg_loop_order", 0},
                                               {"block_c", bc}};
        if (threads > 1) want["threads"] = threads;
        auto c = s.fromMap(want);
        ASSERT_TRUE(c.ok()) << c.error();
        ASSERT_TRUE(s.isValid(*c)) << s.keyOf(*c);
        const std::string sched = emitCpuGemmSchedule(w, s, *c);
        EXPECT_EQ(sched.find("%t1c, %cl = transform.structured.tile_using_for") != std::string::npos, bc < w.conv.ic)
            << desc << " block_c=" << bc;
        // The zero fill goes into the register tiles only when the whole reduction is there.
        EXPECT_EQ(sched.find("%sx_init = ") != std::string::npos, bc == w.conv.ic) << desc << " block_c=" << bc;
        Measurement m = compileAndMeasure(w, s, *c, threads, "convbc");
        EXPECT_EQ(m.status, MeasureStatus::Ok) << desc << " " << s.keyOf(*c) << ": " << m.message;
      }
    }
  }
  Space dw = buildCpuGemmSpace(conv("g32ic32oc32ih14kh3ph1"), hostCpu());
  EXPECT_EQ(dw.knobs()[size_t(dw.knobIndex("block_c"))].values, std::vector<int64_t>{32});
  auto old = dw.fromMap({{"tile_oh", 1}, {"tile_ow", 14}, {"tile_f", 32}, {"reg_ow", 1}, {"reg_f", 16}, {"tile_c", 1},
                         {"tile_kw", 1}, {"reg_loop_order", 0}});
  ASSERT_TRUE(old.ok()) << old.error();
  EXPECT_EQ(dw.valueOr(*old, "block_c", 0), 32);
}

// A grouped convolution's reference by hand: one pixel of 4 channels, 2 groups of 2 -> 1.
TEST(ConvReference, GroupedHandComputedCase) {
  GemmWorkload w = conv("g2ic4oc2ih1kh1");
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  // Filter kh x kw x (ic/g = 2) x oc: [c][oc] = {{1, 10}, {2, 20}}; output 0 reads channels 0-1,
  // output 1 channels 2-3.
  std::vector<float> in = {1, 2, 3, 4}, fil = {1, 10, 2, 20}, out(2, 0);
  p->runBlas(in.data(), fil.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{1 * 1 + 2 * 2, 3 * 10 + 4 * 20}));
}

// The reference on a case small enough to compute by hand, and a kernel that ignores the
// padding is caught, the message naming the output element.
TEST(ConvReference, DepthwiseHandComputedCase) {
  // Two channels, a 2x2 window: channel 0's filter is ones, channel 1's is twos.
  GemmWorkload w = conv("g2ic2oc2ih2kh2");
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  std::vector<float> in = {1, 10, 2, 20, 3, 30, 4, 40}, fil = {1, 2, 1, 2, 1, 2, 1, 2}, out(2, 0);
  p->runBlas(in.data(), fil.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{10, 200}));
}

TEST(ConvReference, HandComputedCaseAndAWrongKernelIsCaught) {
  // 1 x 3 x 3 x 1 input 1..9, a 2x2 filter of ones, one output channel, stride 1, no padding: each
  // output is the sum of a 2x2 window.
  GemmWorkload w = conv("ic1ih3oc1kh2");
  auto p = GemmProblem::create(w);
  ASSERT_TRUE(p.ok()) << p.error();
  std::vector<float> in = {1, 2, 3, 4, 5, 6, 7, 8, 9}, fil = {1, 1, 1, 1}, out(4, 0);
  p->runBlas(in.data(), fil.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{12, 16, 24, 28}));
  // Padding 1: a 4x4 output; the corner sees only the input's corner.
  GemmWorkload wp = conv("ic1ih3oc1kh2ph1");
  std::vector<float> outp(16, 0);
  GemmProblem::create(wp)->runBlas(in.data(), fil.data(), outp.data());
  EXPECT_EQ(outp[0], 1);
  EXPECT_EQ(outp[5], 12);
  EXPECT_EQ(outp[15], 9);
  // A kernel that computes the unpadded convolution into the padded output's interior is wrong.
  GemmWorkload big = conv("ic4ih6oc16kh3ph1");
  auto bp = GemmProblem::create(big);
  ASSERT_TRUE(bp.ok());
  GemmWorkload nopad = conv("ic4ih6oc16kh3");
  auto np = GemmProblem::create(nopad);
  MeasureOptions mo;
  mo.min_reps = 1, mo.max_reps = 1, mo.min_time_s = 0;
  std::string r = measureKernelHere(*bp, [&](float* a, float* b, float* c) {
    std::fill(c, c + big.cElements(), 0.0f);
    np->runBlas(a, b, c);
  }, mo);
  EXPECT_NE(r.find("wrong_result"), std::string::npos) << r;
  EXPECT_NE(r.find("output[n 0]"), std::string::npos) << r;
  std::string ok = measureKernelHere(*bp, [&](float* a, float* b, float* c) { bp->runBlas(a, b, c); }, mo);
  EXPECT_NE(ok.find("\"ok\""), std::string::npos) << ok;
}

// The direct route's register tiles update the output in place: bufferized, a convolution's
// schedule allocates only the padded input (before 467a2e7 the register tile and its
// rank-reduced view rode the reduction loops as two arguments on one buffer, and bufferization
// copied them into a fresh buffer per register tile). Stock mlir-opt applies the schedule.
TEST(ConvCompile, RegisterTilesAllocateNothing) {
  const std::string tools = SEXTANT_LLVM_TOOLS, dir = ::testing::TempDir();
  for (const char* desc : {"ic16ih14oc32kh3ph1", "ic16ih14oc32kh3", "g32ic32oc32ih14kh3ph1", "g32ic32oc32ih14kh3"}) {
    GemmWorkload w = conv(desc);
    Space s = buildCpuGemmSpace(w, hostCpu());
    const std::string payload = dir + "/conv_payload.mlir", sched = dir + "/conv_schedule.mlir",
                      out = dir + "/conv_bufferized.mlir";
    { std::ofstream(payload) << w.payloadMlir(); }
    { std::ofstream(sched) << emitCpuGemmSchedule(w, s, defaultCpuCandidate(s, w)); }
    const std::string cmd = tools + "/mlir-opt " + payload + " --transform-preload-library=transform-library-paths=" +
                            sched + " --transform-interpreter --one-shot-bufferize=bufferize-function-boundaries -o " + out;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(out);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t allocs = 0;
    for (size_t at = text.find("memref.alloc"); at != std::string::npos; at = text.find("memref.alloc", at + 1)) ++allocs;
    EXPECT_EQ(allocs, w.conv.ph > 0 ? 1u : 0u) << desc << ":\n" << text;
  }
}

// The loop over the filter's rows skips the rows that fall on the input's zero padding
// (compiler_cpu_conv_rows.cpp): with +inf in the filter's first and last rows, a product with the
// pad would make the top and bottom output rows NaN (0 x inf); skipped, they are the finite sums
// over the rows inside the input. Strides 1 and 2, depthwise, both register-tile forms (the
// unchunked one folds its slices into the reads), and the stem's wide padding.
TEST(ConvCompile, PaddedFilterRowsAreSkipped) {
  struct D {
    float *alloc, *aligned;
    int64_t offset, sizes[4], strides[4];
  };
  auto rowMajor = [](std::vector<float>& v, std::array<int64_t, 4> s) {
    D d{v.data(), v.data(), 0, {s[0], s[1], s[2], s[3]}, {}};
    for (int i = 3, st = 1; i >= 0; --i) d.strides[i] = st, st *= int(s[size_t(i)]);
    return d;
  };
  for (const char* desc : {"ic16ih14oc32kh3ph1", "ic32ih14oc32kh3ph1", "ic16ih14oc32kh3sh2ph1", "g32ic32oc32ih14kh3ph1",
                           "ic3ih20oc32kh7sh2ph3"}) {
    GemmWorkload w = conv(desc);
    const ConvDesc& d = w.conv;
    Space s = buildCpuGemmSpace(w, hostCpu());
    std::vector<Candidate> cands = {defaultCpuCandidate(s, w)};
    if (s.knobIndex("block_c") >= 0 && s.knobs()[size_t(s.knobIndex("block_c"))].values.size() > 1) {
      auto m = s.knobMap(cands[0]);
      m["block_c"] = 16;  // chunked: the reads go through slices
      if (auto c = s.fromMap(m); c.ok() && s.isValid(*c)) cands.push_back(*c);
    }
    for (const Candidate& c : cands) {
      const std::string name = std::string(desc) + " " + s.keyOf(c);
      const std::string so = ::testing::TempDir() + "/conv_rows.so";
      CompileOutcome out = compileCpuGemm(w.payloadMlir(), emitCpuGemmSchedule(w, s, c), so);
      ASSERT_TRUE(out.ok) << name << ": " << out.message.substr(0, 2000);
      void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
      ASSERT_NE(h, nullptr) << dlerror();
      auto fn = reinterpret_cast<void (*)(D*, D*, D*)>(dlsym(h, "_mlir_ciface_sextant_gemm"));
      ASSERT_NE(fn, nullptr);
      const bool dw = d.depthwise();
      const int64_t F = dw ? 1 : d.oc;  // filter HWCF, or HWC when depthwise
      int checked = 0, wrong = 0;
      for (const bool top : {true, false}) {
        // The infinite filter rows: the first ph, or the last ph; the output row they all miss.
        const int64_t oh = top ? 0 : d.oh - 1;
        auto infinite = [&](int64_t r) { return top ? r < d.ph : r >= d.kh - d.ph; };
        bool only_pad = true;
        for (int64_t r = 0; r < d.kh; ++r)
          if (infinite(r) && oh * d.sh + r - d.ph >= 0 && oh * d.sh + r - d.ph < d.ih) only_pad = false;
        if (!only_pad) continue;  // (stride 2: the last output row may not reach the bottom pad)
        std::vector<float> x(size_t(d.ih * d.iw * d.ic)), f(size_t(d.kh * d.kw * d.ic * F)),
            y(size_t(d.oh * d.ow * d.oc), NAN);
        std::mt19937 rng(11);
        std::uniform_real_distribution<float> u(-1, 1);
        for (auto& v : x) v = u(rng);
        for (int64_t r = 0; r < d.kh; ++r)
          for (int64_t i = 0; i < d.kw * d.ic * F; ++i) f[size_t(r * d.kw * d.ic * F + i)] = infinite(r) ? INFINITY : u(rng);
        D dx = rowMajor(x, {1, d.ih, d.iw, d.ic}), dy = rowMajor(y, {1, d.oh, d.ow, d.oc});
        D df = dw ? D{f.data(), f.data(), 0, {d.kh, d.kw, d.ic, 0}, {d.kw * d.ic, d.ic, 1, 0}}
                  : rowMajor(f, {d.kh, d.kw, d.ic, d.oc});
        fn(&dx, &df, &dy);
        for (int64_t ow = 0; ow < d.ow; ++ow)
          for (int64_t o = 0; o < d.oc; ++o) {
            double want = 0;
            for (int64_t r = 0; r < d.kh; ++r)
              for (int64_t q = 0; q < d.kw; ++q) {
                const int64_t ih = oh * d.sh + r - d.ph, iw = ow * d.sw + q - d.pw;
                if (ih < 0 || ih >= d.ih || iw < 0 || iw >= d.iw) continue;
                for (int64_t ci = dw ? o : 0; ci < (dw ? o + 1 : d.ic); ++ci)
                  want += double(x[size_t((ih * d.iw + iw) * d.ic + ci)]) *
                          f[size_t(((r * d.kw + q) * d.ic + ci) * F + (dw ? 0 : o))];
              }
            const float got = y[size_t((oh * d.ow + ow) * d.oc + o)];
            ++checked;
            wrong += !(std::fabs(got - want) <= 1e-3 * (1 + std::fabs(want)));
          }
      }
      EXPECT_GT(checked, 0) << name;
      EXPECT_EQ(wrong, 0) << name << ": output rows on the padding are not the sums over the input's rows";
      dlclose(h);
      std::filesystem::remove(so);
    }
  }
}

// On an Intel AVX-512 host, 3x3 NHWC convolutions of at least 32 input channels start right after
// the default from whole-row blocks of up to 14 rows x 32 channels, a 7 x 2-vector tile, the whole
// filter row per step and chunks of 16 channels (cpu_conv.cpp, cpuConvSeeds; a grouped one by its
// channels per group); 1x1, depthwise, fewer than 32 channels (per group),
// NCHW and other hosts get none. The seed compiles and verifies here.
TEST(ConvSpace, IntelAvx512ThreeByThreeConvolutionsStartFromWholeRowBlocks) {
  auto seedsOf = [](const GemmWorkload& w) {
    Space s = buildCpuGemmSpace(w, test::avx512());
    return std::make_pair(s, cpuSeedCandidates(s, w));
  };
  GemmWorkload w = conv("mb1ic256ih28oc256kh3sh2ph1");
  auto [s, seeds] = seedsOf(w);
  if (hostCpu().vendor != "GenuineIntel") {
    EXPECT_TRUE(seeds.empty());
    GTEST_SKIP() << "the AVX-512 direct-conv seed is for Intel hosts; this one is " << hostCpu().vendor
                 << " (checked: it gets none)";
  }
  ASSERT_EQ(seeds.size(), 1u);
  EXPECT_NE(seeds[0], defaultCpuCandidate(s, w));
  EXPECT_EQ(s.keyOf(seeds[0]),
            "tile_oh=14,tile_ow=14,tile_f=32,reg_ow=7,reg_f=32,tile_c=1,tile_kw=3,reg_loop_order=1,block_c=16");
  auto l2 = seedsOf(conv("mb1ic128ih28oc128kh3ph1"));
  ASSERT_EQ(l2.second.size(), 1u);
  EXPECT_EQ(l2.first.valueOr(l2.second[0], "tile_oh", 0), 14);
  EXPECT_EQ(l2.first.valueOr(l2.second[0], "tile_ow", 0), 28);
  for (const char* desc : {"mb1ic512ih28oc1024kh1sh2", "g32ic32oc32ih14kh3ph1", "g4ic64oc64ih14kh3ph1", "ic16ih14oc32kh3ph1"})
    EXPECT_TRUE(seedsOf(conv(desc)).second.empty()) << desc;
  auto nchw = makeConvWorkload("mb1ic256ih28oc256kh3sh2ph1", "f32", "NCHW");
  ASSERT_TRUE(nchw.ok()) << nchw.error();
  EXPECT_TRUE(seedsOf(*nchw).second.empty());
  if (hostCpu().vector_isa != "avx512") GTEST_SKIP() << "this Intel host has no AVX-512: the seed was not compiled";
  GemmWorkload v = conv("ic32ih14oc32kh3sh2ph1");  // 7 x 7 outputs, 2 chunks of 16 channels
  Space sv = buildCpuGemmSpace(v, hostCpu());
  const auto vs = cpuSeedCandidates(sv, v);
  ASSERT_EQ(vs.size(), 1u);
  Measurement m = compileAndMeasure(v, sv, vs[0], 1, "convseed");
  EXPECT_EQ(m.status, MeasureStatus::Ok) << sv.keyOf(vs[0]) << ": " << m.message;
}
