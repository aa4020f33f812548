// Workload suites: named lists of workloads in a JSON data file (datasets/suites/*.json,
// format "sextant-suite"): square GEMMs, LLM projections, ResNet-50 convolutions (as convolutions
// and as implicit GEMMs), attention's batched matmuls.
#pragma once

#include <string>
#include <vector>

#include "sextant/codegen/workload.h"

namespace sextant {

struct SuiteEntry {
  std::string name;
  GemmWorkload workload;
  int64_t count = 1;  // occurrences in the model it comes from ("count"; e.g. a conv layer repeated)
};
struct WorkloadSuite {
  std::string name, description, source;
  std::vector<SuiteEntry> entries;
};

// Errors name the file and the entry.
Result<WorkloadSuite> loadSuite(const std::string& path);

}  // namespace sextant
