// The task scheduler of tune model (task_scheduler.h).
#include "sextant/search/task_scheduler.h"

#include <cmath>

namespace sextant {

double taskGradient(const TaskState& t, const SchedulerOptions& o) {
  const int n = int(t.best_after.size());
  if (n == 0) return 0;
  const double best = t.best_after.back();
  if (!std::isfinite(best)) return INFINITY;
  const int w = o.window;
  const double g1 = n >= 1 + w ? (t.best_after[size_t(n - 1 - w)] - best) / w : 0.0;
  const double g2 = best / n;
  return t.weight * (o.alpha * (std::isfinite(g1) ? g1 : 0.0) + (1 - o.alpha) * g2);
}

int nextTask(const std::vector<TaskState>& tasks, const SchedulerOptions& o) {
  int pick = -1;
  if (o.kind == "round-robin") {
    for (size_t i = 0; i < tasks.size(); ++i)
      if (!tasks[i].finished && (pick < 0 || tasks[i].best_after.size() < tasks[size_t(pick)].best_after.size()))
        pick = int(i);
    return pick;
  }
  for (size_t i = 0; i < tasks.size(); ++i)  // warm-up: one round each
    if (!tasks[i].finished && tasks[i].best_after.empty()) return int(i);
  double best = -INFINITY;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].finished) continue;
    const double g = taskGradient(tasks[i], o);
    if (g > best) best = g, pick = int(i);
  }
  return pick;
}

double estimatedLatency(const std::vector<TaskState>& tasks) {
  double sum = 0;
  for (const TaskState& t : tasks) sum += t.weight * (t.best_after.empty() ? INFINITY : t.best_after.back());
  return sum;
}

}  // namespace sextant
