// The op interface (issue #31): every registered op, whatever it is, keeps the contract the data
// flow relies on (ops.h, op_schedules.h). A new op registered in ops.cpp and ops_cpu.cpp is checked
// here without a line of this file changing.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/library.h"
#include "sextant/codegen/op_schedules.h"
#include "sextant/codegen/ops.h"
#include "test_cpus.h"

using namespace sextant;
using sextant::test::avx512;

namespace {

int64_t product(const OperandDims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}


}  // namespace

TEST(OpInterface, EveryOpHasOneEntryInEachRegistryAndAUniqueName) {
  std::set<std::string> names;
  std::set<OpKind> kinds;
  ASSERT_GE(registeredOps().size(), 3u);
  for (const OpDef* op : registeredOps()) {
    EXPECT_TRUE(names.insert(op->name()).second) << op->name();
    EXPECT_TRUE(kinds.insert(op->kind()).second) << op->name();
    EXPECT_EQ(opKindName(op->kind()), std::string(op->name()));
    EXPECT_EQ(&opOf(op->kind()), op);
    auto found = findOp(op->name());
    ASSERT_TRUE(found.ok()) << found.error();
    EXPECT_EQ(*found, op);
    // The schedules registered for the op are the op's.
    EXPECT_EQ(cpuSchedulesOf(op->kind()).kind(), op->kind()) << op->name();
  }
  EXPECT_FALSE(findOp("conv3d").ok());
}

// The default workload of each op, and a few more shapes, through every stage the interface
// serves: key, operands, FLOPs, payload, space, default, schedule, library matcher, cost-model view.
TEST(OpInterface, EveryOpsWorkloadsKeepTheContract) {
  std::vector<std::pair<const OpDef*, std::string>> cases;
  for (const OpDef* op : registeredOps()) cases.push_back({op, op->defaultShape()});
  cases.push_back({&gemmOp(), "8x4096x4096"});
  cases.push_back({&conv2dOp(), "mb1ic64ih56oc256kh1"});          // 1x1: the GEMM route
  cases.push_back({&conv2dOp(), "mb1g32ic32ih28oc32kh3ph1"});  // depthwise
  for (const auto& [op, shape] : cases) {
    SCOPED_TRACE(std::string(op->name()) + " " + shape);
    auto w = op->make(shape, "f32", op->kind() == OpKind::Gemm && shape[0] == '8' ? "NT" : "NN");
    ASSERT_TRUE(w.ok()) << w.error();
    EXPECT_EQ(w->op, op->kind());
    // The key names the op and reads back as the same workload.
    const std::string key = w->key();
    EXPECT_EQ(key.rfind(std::string(op->name()) + ":", 0), 0u) << key;
    auto back = parseWorkloadKey(key);
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_EQ(*back, *w) << key;
    EXPECT_EQ(back->key(), key);
    // Operands: three, their sizes what the workload says it holds; FLOPs positive.
    const auto dims = op->operands(*w);
    ASSERT_EQ(dims.size(), 3u);
    EXPECT_EQ(product(dims[0]), w->aElements());
    EXPECT_EQ(product(dims[1]), w->bElements());
    EXPECT_EQ(product(dims[2]), w->cElements());
    EXPECT_GT(w->flops(), 0);
    // The payload is the entry point on memrefs of those ranks, and holds the op a schedule matches.
    const CpuOpSchedules& s = cpuSchedulesOf(*w);
    const std::string payload = w->payloadMlir();
    EXPECT_NE(payload.find("func.func @sextant_gemm("), std::string::npos);
    EXPECT_NE(payload.find(s.payloadOp(*w)), std::string::npos) << payload;
    // A space with valid points, a valid default, a schedule that matches the payload's op and whose
    // actions read back out of it.
    Space space = buildCpuGemmSpace(*w, avx512(), 1);
    ASSERT_GT(space.size(), 0u);
    Candidate def = defaultCpuCandidate(space, *w);
    ASSERT_FALSE(def.empty());
    EXPECT_TRUE(space.isValid(def));
    const std::string schedule = emitCpuGemmSchedule(*w, space, def);
    EXPECT_NE(schedule.find(std::string("ops{[\"") + s.payloadOp(*w) + "\"]}"), std::string::npos) << schedule;
    EXPECT_FALSE(cpuGemmActionsOf(schedule).empty());
    // The cost model's view: at least the seven GEMM knobs, positive, and at least one block.
    CpuGemmView view = s.gemmView(*w, space, def);
    ASSERT_GE(view.knobs.size(), 7u);
    for (size_t i = 0; i < 6; ++i) EXPECT_GT(view.knobs[i], 0) << i;
    EXPECT_GE(view.blocks, 1.0);
    // The library matcher checks something of the workload's sizes.
    std::ostringstream checks;
    s.emitMatcherChecks(checks, *w, 0, "%op", false);
    EXPECT_NE(checks.str().find("transform.match.structured"), std::string::npos);
    EXPECT_FALSE(matcherSignature(*w, 0).empty());
    // A wrong element is named within the output.
    EXPECT_FALSE(op->elementName(*w, w->cElements() - 1).empty());
    EXPECT_NE(op->referenceName(*w), nullptr);
  }
}

TEST(OpInterface, TwoWorkloadsOfDifferentOpsNeverShareAKeyOrAMatcher) {
  auto g = makeGemmWorkload("3136x256x64", "f32", "NN");
  auto c = makeConvWorkload("mb1ic64ih56oc256kh1", "f32", "NHWC");  // the same implicit GEMM
  ASSERT_TRUE(g.ok() && c.ok());
  EXPECT_EQ(g->m, c->m);
  EXPECT_NE(g->key(), c->key());
  EXPECT_NE(matcherSignature(*g, 0), matcherSignature(*c, 0));
}

// The plain-loop references: a GEMM in each layout and batched, a convolution, against values
// worked out by hand.
TEST(OpInterface, NaiveReferencesComputeByHand) {
  // A = [[1, 2], [3, 4]] (2x2), B = [[5, 6], [7, 8]]: A B = [[19, 22], [43, 50]].
  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  const float at[] = {1, 3, 2, 4}, bt[] = {5, 7, 6, 8};  // stored transposed
  for (const char* layout : {"NN", "NT", "TN"}) {
    auto w = makeGemmWorkload("2x2x2", "f32", layout);
    ASSERT_TRUE(w.ok());
    float c[4] = {};
    const bool ta = std::string(layout) == "TN", tb = std::string(layout) == "NT";
    gemmOp().naiveReference(*w, ta ? at : a, tb ? bt : b, c);
    EXPECT_FLOAT_EQ(c[0], 19);
    EXPECT_FLOAT_EQ(c[1], 22);
    EXPECT_FLOAT_EQ(c[2], 43);
    EXPECT_FLOAT_EQ(c[3], 50) << layout;
  }
  auto bw = makeBatchMatmulWorkload("2x1x1x2", "f32", "NN");
  ASSERT_TRUE(bw.ok());
  float bc[2] = {};
  batchMatmulOp().naiveReference(*bw, a, b, bc);  // [1 2].[5 6]^T... per element: 1*5+2*6, 3*7+4*8
  EXPECT_FLOAT_EQ(bc[0], 17);
  EXPECT_FLOAT_EQ(bc[1], 53);
  EXPECT_EQ(batchMatmulOp().elementName(*bw, 1), "C[1][0][0]");
  // A 1-channel 3x3 input of 1..9, a 2x2 filter of ones, stride 1, no padding: 2x2 sums of 4.
  auto cw = makeConvWorkload("mb1ic1ih3oc1kh2", "f32", "NHWC");
  ASSERT_TRUE(cw.ok()) << cw.error();
  const float in[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ones[] = {1, 1, 1, 1};
  float out[4] = {};
  conv2dOp().naiveReference(*cw, in, ones, out);
  EXPECT_FLOAT_EQ(out[0], 12);
  EXPECT_FLOAT_EQ(out[1], 16);
  EXPECT_FLOAT_EQ(out[2], 24);
  EXPECT_FLOAT_EQ(out[3], 28);
  EXPECT_EQ(conv2dOp().elementName(*cw, 3), "output[n 0][oh 1][ow 1][oc 0]");
  EXPECT_TRUE(gemmOp().blasReference(*makeGemmWorkload("2x2x2", "f32", "NN")));
  EXPECT_FALSE(conv2dOp().blasReference(*cw));
}
