// LibTorch and libMLIR/libLLVM 22 in one process: the cost model (LibTorch) and the compiler
// (MLIR) will live in the same `tune` binary.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"

TEST(Coexistence, TorchAndMlirInOneBinary) {
  torch::manual_seed(0);
  auto x = torch::randn({64, 8});
  auto lin = torch::nn::Linear(8, 1);
  auto loss = lin(x).pow(2).mean();
  loss.backward();
  EXPECT_TRUE(lin->weight.grad().defined());

  using namespace sextant;
  GemmWorkload w;
  w.m = w.n = w.k = 64;
  Space s = buildCpuGemmSpace(w, hostCpu());
  auto knobs = readScheduleKnobs(emitCpuGemmSchedule(w, s, defaultCpuCandidate(s, w)));
  ASSERT_TRUE(knobs.ok()) << knobs.error();
  EXPECT_EQ(knobs->size(), s.knobs().size());
}
