// Workload suites: named lists of workloads in a JSON data file (datasets/suites/*.json,
// format "sextant-suite"): square GEMMs, LLM projections, ResNet-50 convolutions as implicit GEMMs.
#pragma once

#include <string>
#include <vector>

#include "sextant/codegen/workload.h"

namespace sextant {

struct SuiteEntry {
  std::string name;
  GemmWorkload workload;
};
struct WorkloadSuite {
  std::string name, description, source;
  std::vector<SuiteEntry> entries;
};

// Errors name the file and the entry.
Result<WorkloadSuite> loadSuite(const std::string& path);

}  // namespace sextant
