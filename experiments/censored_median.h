// Shared by the replay experiments (transfer, replay_strategies).
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

namespace sextant::experiments {

// The median; values above `cap` are censored ("not reached"): when the upper middle one is, the
// median is censored too (returned as that value), never an average of a censored and a real one.
inline double median(std::vector<double> v, double cap = std::numeric_limits<double>::infinity()) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  if (n == 0) return 0;
  if (n % 2 || v[n / 2] > cap) return v[n / 2];
  return 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace sextant::experiments
