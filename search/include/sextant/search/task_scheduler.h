// Which task of a model to tune next (issue #32): the tasks are a network's distinct workloads,
// each with a weight (how often the network runs it); one round tunes one task for a few trials.
// The gradient-based scheduler is MetaSchedule's (src/meta_schedule/task_scheduler/gradient_based.cc,
// itself Ansor's): a round-robin warm-up, then the task whose weighted latency is expected to
// fall most, grad = weight * (alpha * (best[n-1-w] - best[n-1]) / w + (1 - alpha) * best[n-1] / n)
// over the task's best latency after each of its n rounds (alpha 0.2, window w 3).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sextant {

struct TaskState {
  double weight = 1;                // occurrences in the network
  std::vector<double> best_after;   // best latency (s) after each round of this task (inf: none yet)
  bool finished = false;            // its space ran out (or it cannot be tuned)
};

struct SchedulerOptions {
  std::string kind = "gradient";  // gradient | round-robin
  double alpha = 0.2;
  int window = 3;
};

// The task to tune next, or -1 when every task is finished. Round robin: the task with the fewest
// rounds (the first on ties). Gradient: every task gets one round first, then the largest gradient
// (the first on ties); a task with no successful measurement yet is tried again before others.
int nextTask(const std::vector<TaskState>& tasks, const SchedulerOptions& o);

// The gradient of one task (exposed for tests and the live table); 0 for a task without rounds.
double taskGradient(const TaskState& t, const SchedulerOptions& o);

// The estimated network latency: sum of weight x best latency (tasks without one count as inf).
double estimatedLatency(const std::vector<TaskState>& tasks);

}  // namespace sextant
