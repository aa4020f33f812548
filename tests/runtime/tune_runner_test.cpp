// tune-runner as a subprocess: exit codes and messages without a GPU, and on invalid input.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sextant/runtime/bundle.h"
#include "sextant/runtime/gpu_runner.h"

#include "temp_dir.h"

using namespace sextant;
namespace fs = std::filesystem;

namespace {


struct ToolRun {
  int code = -1;
  std::string output;  // stdout and stderr
};

ToolRun runTool(const std::string& args) {
  std::string cmd = std::string(TUNE_RUNNER_BIN) + " " + args + " 2>&1";
  ToolRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string writeSmallBundle(const TempDir& d, const std::string& vendor) {
  BundleManifest m;
  m.created_by = "sextant test";
  m.created_at = isoTimeUtc();
  m.target = vendor == "nvidia" ? "h100" : "mi300";
  m.vendor = vendor;
  m.arch = vendor == "nvidia" ? "sm_90" : "gfx942";
  const std::string key = "gemm:NN:64x64x64:f16*f16->f32";
  m.workloads = {key};
  for (const char* id : {"w0-c0", "w0-c1"}) {
    BundleKernel k;
    k.id = id;
    k.workload = key;
    k.format = vendor == "nvidia" ? KernelFormat::Ptx : KernelFormat::Hsaco;
    k.file = std::string("kernels/") + id + (vendor == "nvidia" ? ".ptx" : ".hsaco");
    k.kernel_name = "sextant_gemm_kernel";
    k.args = {KernelArg::buf('C'), KernelArg::buf('A'), KernelArg::buf('B')};
    k.grid = {1, 1, 1};
    k.block = {128, 1, 1};
    m.kernels.push_back(k);
  }
  EXPECT_TRUE(writeBundle(d.str(), m, {{m.kernels[0].file, "x"}, {m.kernels[1].file, "x"}}).ok());
  return d.str();
}

}  // namespace

TEST(TuneRunner, NoCudaDeviceExitsThreeAndWritesNothing) {
  if (openCudaDevice(0).ok()) GTEST_SKIP() << "a CUDA device is present";
  TempDir d{"runner-test"};
  std::string dir = writeSmallBundle(d, "nvidia");
  ToolRun r = runTool(dir);
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("tune-runner: no CUDA device found ("), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(d.path / "results.json"));
  r = runTool(dir + " -o " + (d.path / "elsewhere.json").string() + " --min-reps 3");
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_FALSE(fs::exists(d.path / "elsewhere.json"));
}

TEST(TuneRunner, NoHipDeviceExitsThree) {
  if (openHipDevice(0).ok()) GTEST_SKIP() << "a HIP device is present";
  TempDir d{"runner-test"};
  ToolRun r = runTool(writeSmallBundle(d, "amd"));
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("tune-runner: no HIP device found ("), std::string::npos) << r.output;
}

TEST(TuneRunner, InvalidBundleExitsTwoNamingTheProblem) {
  TempDir d{"runner-test"};
  std::string dir = writeSmallBundle(d, "nvidia");
  // Duplicate id.
  std::string manifest = (d.path / "manifest.json").string();
  nlohmann::json j = nlohmann::json::parse(std::ifstream(manifest));
  j["kernels"][1]["id"] = "w0-c0";
  std::ofstream(manifest) << j.dump();
  ToolRun r = runTool(dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(manifest + ": kernels[1]: duplicate id 'w0-c0'"), std::string::npos) << r.output;
  // Missing kernel file.
  j["kernels"][1]["id"] = "w0-c1";
  std::ofstream(manifest) << j.dump();
  fs::remove(d.path / "kernels/w0-c1.ptx");
  r = runTool(dir);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("kernel file 'kernels/w0-c1.ptx' not found"), std::string::npos) << r.output;
  // No bundle at all.
  r = runTool((d.path / "absent").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("not a bundle directory"), std::string::npos) << r.output;
}

TEST(TuneRunner, UsageListAndHelp) {
  TempDir d{"runner-test"};
  std::string dir = writeSmallBundle(d, "nvidia");
  ToolRun r = runTool("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("usage: tune-runner BUNDLE_DIR"), std::string::npos);
  EXPECT_NE(r.output.find("--min-reps"), std::string::npos);
  r = runTool(dir + " --list");
  EXPECT_EQ(r.code, 0) << r.output;  // needs no GPU
  EXPECT_NE(r.output.find("w0-c1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gemm:NN:64x64x64:f16*f16->f32"), std::string::npos) << r.output;
  for (const char* bad : {"", "--frobnicate", "--min-reps 0", "--min-reps x", "--timeout 0", "--min-time -1",
                          "--max-reps 3 --min-reps 5", "--only w0-c9", "--device -1", "a b"}) {
    std::string args = std::string(bad);
    if (args != "a b") args = dir + " " + args;
    if (std::string(bad).empty()) args = "";
    r = runTool(args);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("tune-runner: error: "), std::string::npos) << bad << ": " << r.output;
  }
  r = runTool(dir + " -o /nonexistent-dir/r.json");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot write the results file"), std::string::npos) << r.output;
}
