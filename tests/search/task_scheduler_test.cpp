// The task scheduler of tune model (issue #32) on synthetic tasks with known curves.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "sextant/search/task_scheduler.h"

using namespace sextant;

TEST(TaskScheduler, WarmUpVisitsEveryTaskOnceInOrder) {
  std::vector<TaskState> t(3);
  SchedulerOptions o;
  for (int round = 0; round < 3; ++round) {
    const int i = nextTask(t, o);
    EXPECT_EQ(i, round);
    t[size_t(i)].best_after.push_back(1.0);
  }
}

TEST(TaskScheduler, PicksTheLargestWeightedGradientAndSkipsFinishedTasks) {
  SchedulerOptions o;
  std::vector<TaskState> t(3);
  // Same history, weights 1, 5, 2: the heaviest task has the largest gradient.
  for (size_t i = 0; i < 3; ++i) t[i].best_after = {4e-3, 3e-3, 2e-3, 1.5e-3};
  t[0].weight = 1, t[1].weight = 5, t[2].weight = 2;
  EXPECT_EQ(nextTask(t, o), 1);
  t[1].finished = true;
  EXPECT_EQ(nextTask(t, o), 2);
  t[0].finished = t[2].finished = true;
  EXPECT_EQ(nextTask(t, o), -1);
}

TEST(TaskScheduler, GradientIsMetaSchedulesFormula) {
  SchedulerOptions o;  // alpha 0.2, window 3
  TaskState t;
  t.weight = 2;
  t.best_after = {10, 8, 6, 5, 4};  // n = 5, best 4, best[n-1-w] = best[1] = 8
  const double g1 = (8.0 - 4.0) / 3, g2 = 4.0 / 5;
  EXPECT_DOUBLE_EQ(taskGradient(t, o), 2 * (0.2 * g1 + 0.8 * g2));
  t.best_after = {10, 8};  // fewer rounds than the window: only the forward term
  EXPECT_DOUBLE_EQ(taskGradient(t, o), 2 * (0.8 * 8.0 / 2));
}

TEST(TaskScheduler, ATaskWithoutAMeasurementYetGoesFirst) {
  SchedulerOptions o;
  std::vector<TaskState> t(2);
  t[0].best_after = {1.0};
  t[1].best_after = {INFINITY};
  EXPECT_EQ(nextTask(t, o), 1);
}

TEST(TaskScheduler, RoundRobinTakesTheTaskWithFewestRounds) {
  SchedulerOptions o;
  o.kind = "round-robin";
  std::vector<TaskState> t(3);
  t[0].best_after = {1, 1};
  t[1].best_after = {1};
  t[2].best_after = {1, 1};
  EXPECT_EQ(nextTask(t, o), 1);
}

TEST(TaskScheduler, EstimateIsTheWeightedSumOfBestLatencies) {
  std::vector<TaskState> t(2);
  t[0].weight = 3, t[0].best_after = {2e-3, 1e-3};
  t[1].weight = 1, t[1].best_after = {5e-3};
  EXPECT_DOUBLE_EQ(estimatedLatency(t), 3e-3 + 5e-3);
  t[1].best_after.clear();
  EXPECT_TRUE(std::isinf(estimatedLatency(t)));
}

// A network of synthetic tasks whose best latency after r rounds follows a known curve: a few
// heavy tasks that keep improving and many light ones that are at their best after one round
// (as in a CNN, where a handful of conv shapes dominate). The gradient scheduler must reach
// round-robin's final estimate with at most 60% of its rounds (issue #32's goal, here on curves
// whose answer is known).
TEST(TaskScheduler, GradientReachesRoundRobinsEstimateWithFewerRounds) {
  struct Curve {
    double weight, start, floor, rate;
  };
  std::vector<Curve> curves;
  for (int i = 0; i < 4; ++i) curves.push_back({double(4 - i), 10e-3, 4e-3, 0.25});   // heavy, slow to converge
  for (int i = 0; i < 16; ++i) curves.push_back({1, 1e-3, 0.9e-3, 0.9});             // light, converged at once
  auto best = [&](size_t i, int rounds) {
    const Curve& c = curves[i];
    return c.floor + (c.start - c.floor) * std::pow(1 - c.rate, rounds - 1);
  };
  auto run = [&](const std::string& kind, int total_rounds, double stop_at) {
    SchedulerOptions o;
    o.kind = kind;
    std::vector<TaskState> t(curves.size());
    for (size_t i = 0; i < curves.size(); ++i) t[i].weight = curves[i].weight;
    for (int r = 1; r <= total_rounds; ++r) {
      const int i = nextTask(t, o);
      if (i < 0) break;
      t[size_t(i)].best_after.push_back(best(size_t(i), int(t[size_t(i)].best_after.size()) + 1));
      if (estimatedLatency(t) <= stop_at) return std::pair<double, int>{estimatedLatency(t), r};
    }
    return std::pair<double, int>{estimatedLatency(t), total_rounds};
  };
  const int budget = 20 * 8;
  const double rr_final = run("round-robin", budget, 0).first;
  const auto [g_est, g_rounds] = run("gradient", budget, rr_final * (1 + 1e-9));
  EXPECT_LE(g_est, rr_final * (1 + 1e-9));
  EXPECT_LE(g_rounds, budget * 6 / 10) << "gradient needed " << g_rounds << " of round-robin's " << budget << " rounds";
}
