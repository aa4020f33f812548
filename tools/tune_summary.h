// The summary of a CPU tuning run (tools/tune_summary.cpp).
#pragma once

#include <string>
#include <vector>

#include "sextant/codegen/workload.h"
#include "sextant/hwspec/target.h"
#include "sextant/runtime/fma_peak.h"
#include "sextant/runtime/libraries.h"
#include "sextant/search/tuner.h"
#include "tune_internal.h"

namespace sextant::cli {

struct TuneReport {
  TuneReport(const TuneArgs& a, const GemmWorkload& w, const Target& t, const HostCpu& c)
      : args(a), workload(w), target(t), cpu(c) {}
  const TuneArgs& args;
  const GemmWorkload& workload;
  const Target& target;
  const HostCpu& cpu;
  std::string device, machine, db_shown;
  int threads = 1;
  uint64_t space_size = 0;
  const TuneSummary* sum = nullptr;
  FmaPeak peak;
  std::vector<CpuLibrary> libraries;  // every configuration, measured or not
  bool uses_gemv = false;
};

// Prints the summary (text, or JSON on stdout with --report json); returns the exit code (130
// when interrupted).
int reportTune(const TuneReport& r);

}  // namespace sextant::cli
