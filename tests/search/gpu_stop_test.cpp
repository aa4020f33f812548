// Issue #12: Ctrl-C in GPU device mode stops within the kernel the runner is measuring. No GPU
// exists here, so tune-runner is replaced by a script (a mock runner, the only way to test this
// path without a device): it reports the batch's first kernel as a runner would (fixture values,
// not a measurement), then "measures" the second one for a minute.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "../runtime/temp_dir.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/codegen/workload.h"
#include "sextant/hwspec/gpu_target.h"
#include "sextant/hwspec/target.h"
#include "sextant/runtime/isolation.h"
#include "sextant/search/gpu_evaluator.h"

using namespace sextant;
namespace fs = std::filesystem;

namespace {
// BUNDLE -o RESULTS [...]: the first kernel's result, the results file saved as tune-runner saves
// it after every kernel, then a hang inside the second kernel.
const char* kMockRunner = R"SH(#!/bin/sh
bundle=$1 out=$3
id=$(grep -o '"id": *"[^"]*"' "$bundle/manifest.json" | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')
wl=$(grep -o '"workload": *"[^"]*"' "$bundle/manifest.json" | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')
cat > "$out.tmp" <<EOF
{"format": "sextant-results", "version": 1, "runner": "mock runner (test fixture)", "date": "2026-11-23T00:00:00Z",
 "command": "mock", "host": "fixture", "options": {}, "references": [], "notes": [],
 "device": {"vendor": "nvidia", "name": "FIXTURE GPU", "arch": "sm_90", "driver_version": "0.0", "sm_count": 132,
            "l2_bytes": 52428800, "memory_bytes": 85899345920},
 "results": [{"id": "$id", "workload": "$wl", "status": "ok", "message": "", "times_s": [0.001, 0.001],
              "median_s": 0.001, "cv": 0.0, "gflops": 33.5, "max_abs_err": 0.0, "checked_entries": 16,
              "resources": {"registers": 96, "local_bytes": 0, "static_shared_bytes": 16384, "max_threads_per_block": 1024}}]}
EOF
mv "$out.tmp" "$out"
touch "$MOCK_MARK"
sleep 60
)SH";
}  // namespace

TEST(GpuEvaluator, CtrlCWhileTheRunnerMeasuresKeepsFinishedKernelsAndRecordsNothingElse) {
  TempDir dir("gpu-stop");
  const std::string runner = dir.str() + "/mock-runner.sh", mark = dir.str() + "/first-kernel-done";
  {
    std::ofstream(runner) << kMockRunner;
  }
  fs::permissions(runner, fs::perms::owner_all);
  setenv("MOCK_MARK", mark.c_str(), 1);

  auto t = resolveTarget("h100");
  ASSERT_TRUE(t.ok());
  auto g = gpuTargetInfo(*t);
  ASSERT_TRUE(g.ok()) << g.error();
  auto w = makeGemmWorkload("256x256x256", "f16", "NN");
  ASSERT_TRUE(w.ok()) << w.error();
  Space space = buildGpuGemmSpace(*w, *g);
  ASSERT_GT(space.size(), 8u);
  std::mt19937_64 rng(5);
  std::vector<Candidate> batch;
  for (int i = 0; i < 8; ++i) batch.push_back(space.sample(rng));

  GpuEvaluatorOptions o;
  o.mode = GpuMeasureMode::Device;
  o.runner = runner;
  o.jobs = 2;
  o.work_dir = dir.str() + "/work";
  GpuEvaluator ev(*w, space, *g, o);

  std::atomic<bool> stop{false};
  std::thread interrupter([&] {
    for (int i = 0; i < 1200 && !fs::exists(mark); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
    requestStop();  // what tune's SIGINT handler does
  });
  auto t0 = std::chrono::steady_clock::now();
  std::vector<size_t> reported;
  auto out = ev.evaluate(batch, stop, [&](size_t i, const Evaluation&) { reported.push_back(i); });
  interrupter.join();
  clearStopRequest();
  unsetenv("MOCK_MARK");
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  ASSERT_TRUE(fs::exists(mark)) << "the mock runner never ran (every candidate rejected?)";
  EXPECT_LT(total, 45.0) << "evaluate waited for the runner's whole batch after Ctrl-C";
  int measured = 0;
  std::string seen;
  for (const auto& e : out) seen += e.status + " (" + e.source + "): " + e.message.substr(0, 300) + "\n";
  for (const auto& e : out) {
    if (e.source == "measured") {
      ++measured;
      EXPECT_EQ(e.status, "ok");
      EXPECT_DOUBLE_EQ(e.measurement.gflops, 33.5);
    } else {
      EXPECT_TRUE(e.status == "rejected" || e.status == "compile_error") << e.status << ": " << e.message;
    }
  }
  EXPECT_EQ(measured, 1) << "the kernel the runner finished is kept; evaluations:\n" << seen;
  EXPECT_LT(out.size(), batch.size()) << "kernels the runner had not finished must not be recorded";
  EXPECT_EQ(reported.size(), out.size());
}
