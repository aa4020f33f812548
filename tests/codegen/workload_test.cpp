#include <gtest/gtest.h>

#include "sextant/codegen/workload.h"

using namespace sextant;

TEST(Workload, ParsesShapes) {
  auto w = parseGemmShape("128x4096x512");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->m, 128);
  EXPECT_EQ(w->n, 4096);
  EXPECT_EQ(w->k, 512);
  EXPECT_DOUBLE_EQ(w->flops(), 2.0 * 128 * 4096 * 512);
}

TEST(Workload, RejectsBadShapes) {
  for (const char* bad : {"", "1024", "1024x1024", "1x2x3x4", "0x16x16", "16x-4x16", "16xabcx16", "16x16x16x",
                          "99999999999x1x1"}) {
    auto w = parseGemmShape(bad);
    EXPECT_FALSE(w.ok()) << bad;
  }
  EXPECT_NE(parseGemmShape("0x16x16").error().find("positive"), std::string::npos);
}

TEST(Workload, KeyRoundTripsAndIsCanonical) {
  GemmWorkload w;
  w.m = 16, w.n = 4096, w.k = 4096;
  w.a_type = w.b_type = DType::F16;
  w.layout = Layout::NT;
  EXPECT_EQ(w.key(), "gemm:NT:16x4096x4096:f16*f16->f32");
  auto back = parseWorkloadKey(w.key());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, w);
  EXPECT_FALSE(parseWorkloadKey("gemm:XX:1x1x1:f32*f32->f32").ok());
  EXPECT_FALSE(parseWorkloadKey("conv:NN:1x1x1:f32*f32->f32").ok());
}

TEST(Workload, DTypesAndLayouts) {
  EXPECT_EQ(*parseDType("bf16"), DType::BF16);
  EXPECT_FALSE(parseDType("f64").ok());
  EXPECT_EQ(*parseLayout("TN"), Layout::TN);
  EXPECT_FALSE(parseLayout("TT").ok());
}

TEST(Workload, MemoryCheck) {
  auto w = parseGemmShape("65536x65536x65536");
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(validateForMemory(*w, int64_t(24) << 30).ok());
  EXPECT_TRUE(validateForMemory(*parseGemmShape("1024x1024x1024"), int64_t(24) << 30).ok());
}

TEST(Workload, PayloadUsesTransposedMaps) {
  GemmWorkload w;
  w.m = 8, w.n = 16, w.k = 32;
  w.layout = Layout::NT;
  std::string p = w.payloadMlir();
  EXPECT_NE(p.find("memref<16x32xf32>"), std::string::npos) << p;  // B stored NxK
  EXPECT_NE(p.find("affine_map<(d0, d1, d2) -> (d1, d2)>"), std::string::npos) << p;
  w.layout = Layout::NN;
  EXPECT_EQ(w.payloadMlir().find("indexing_maps"), std::string::npos);
}

#include "sextant/codegen/suite.h"

TEST(Suites, TheCommittedSuitesLoadAndHoldTheShapesTheySay) {
  const std::string dir = std::string(SUITES_DIR);
  auto sq = loadSuite(dir + "/square_gemm.json");
  ASSERT_TRUE(sq.ok()) << sq.error();
  EXPECT_EQ(sq->entries.size(), 14u);
  auto llm = loadSuite(dir + "/llm_projections.json");
  ASSERT_TRUE(llm.ok()) << llm.error();
  bool has = false;
  for (const auto& e : llm->entries) {
    EXPECT_EQ(e.workload.layout, Layout::NT);
    EXPECT_GE(e.workload.m, 1);
    EXPECT_LE(e.workload.m, 4096);
    has |= e.workload.m == 1 && e.workload.n == 11008 && e.workload.k == 4096;
  }
  EXPECT_TRUE(has);  // gate/up projection for one token
  auto rn = loadSuite(dir + "/resnet50_implicit_gemm.json");
  ASSERT_TRUE(rn.ok()) << rn.error();
  EXPECT_EQ(rn->entries.front().workload.key(), "gemm:NN:12544x64x147:f32*f32->f32");  // conv1: 112^2 x 64 x 3*7*7
  // Issue #31: ResNet-50's 23 distinct convolutions (53 in the network) and attention's batched matmuls.
  auto rc = loadSuite(dir + "/resnet50_conv.json");
  ASSERT_TRUE(rc.ok()) << rc.error();
  ASSERT_EQ(rc->entries.size(), 23u);
  int64_t convs = 0;
  for (const auto& e : rc->entries) {
    EXPECT_TRUE(e.workload.isConv());
    convs += e.count;
  }
  EXPECT_EQ(convs, 53);
  EXPECT_EQ(rc->entries.front().workload.key(),
            "conv2d:NHWC:mb1ic3ih224iw224oc64oh112ow112kh7kw7sh2sw2ph3pw3dh0dw0:f32*f32->f32");
  auto mn = loadSuite(dir + "/mobilenetv2_conv.json");
  ASSERT_TRUE(mn.ok()) << mn.error();
  int64_t dw = 0, pw = 0;
  for (const auto& e : mn->entries) (e.workload.conv.depthwise() ? dw : pw) += e.count;
  EXPECT_EQ(dw, 17);
  EXPECT_EQ(pw, 34);
  auto at = loadSuite(dir + "/attention_bmm.json");
  ASSERT_TRUE(at.ok()) << at.error();
  EXPECT_EQ(at->entries.size(), 6u);
  for (const auto& e : at->entries) EXPECT_TRUE(e.workload.batched());
  auto bad = loadSuite(dir + "/no_such_suite.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("no_such_suite.json"), std::string::npos);
}
