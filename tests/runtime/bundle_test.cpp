// Bundles and results files: round trips and every kind of invalid input.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

#include "sextant/runtime/bundle.h"

#include "temp_dir.h"

using namespace sextant;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {


const char* kW0 = "gemm:NN:256x128x64:f16*f16->f32";
const char* kW1 = "gemm:NT:64x64x64:f32*f32->f32";

BundleManifest sampleManifest() {
  BundleManifest m;
  m.created_by = "sextant 0.1.0";
  m.created_at = "2025-01-31T12:00:00Z";
  m.target = "h100";
  m.vendor = "nvidia";
  m.arch = "sm_90";
  m.workloads = {kW0, kW1};
  BundleKernel k;
  k.id = "w0-c17";
  k.workload = kW0;
  k.file = "kernels/w0-c17.ptx";
  k.format = KernelFormat::Ptx;
  k.kernel_name = "sextant_gemm_kernel";
  k.args = {KernelArg::buf('C'), KernelArg::buf('A'), KernelArg::buf('B'), KernelArg::i64(int64_t(1) << 40),
            KernelArg::i32(-7)};
  k.grid = {2, 4, 1};
  k.block = {256, 1, 1};
  k.dynamic_shared_bytes = 65536;
  k.knobs = {{"block_m", 128}, {"block_n", 64}, {"stages", 3}};
  k.schedule_sha = "abc123";
  k.static_stats = {{"ptxas_registers", 96}, {"note", "free-form"}};
  m.kernels.push_back(k);
  k.id = "w0-c18";
  k.file = "kernels/w0-c18.cubin";
  k.format = KernelFormat::Cubin;
  k.schedule_sha = "";
  k.knobs = json::object();
  k.static_stats = json::object();
  k.dynamic_shared_bytes = 0;
  k.subgroup_size = 32;  // a Vulkan kernel would require it; carried for any format
  m.kernels.push_back(k);
  k.subgroup_size = 0;
  k.id = "w1-c0";
  k.workload = kW1;
  k.file = "kernels/w1-c0.ptx";
  k.format = KernelFormat::Ptx;
  k.args = {KernelArg::buf('A'), KernelArg::buf('B'), KernelArg::buf('C')};
  m.kernels.push_back(k);
  return m;
}

std::map<std::string, std::string> sampleFiles() {
  return {{"kernels/w0-c17.ptx", "// ptx\n"}, {"kernels/w0-c18.cubin", std::string("\x7f" "ELF\0\1", 6)},
          {"kernels/w1-c0.ptx", "// ptx\n"}};
}

ResultsFile sampleResults() {
  ResultsFile r;
  r.runner = "tune-runner 0.1.0";
  r.date = "2025-01-31T13:00:00Z";
  r.command = "tune-runner b -o r.json";
  r.host = "gpu-box";
  r.device = DeviceInfo{"nvidia", "NVIDIA H100 80GB HBM3", "sm_90", "12.4", 132, 52428800, 85031714816};
  r.options = {{"min_reps", 10}, {"only", json::array()}};
  KernelResult ok;
  ok.id = "w0-c17";
  ok.workload = kW0;
  ok.status = "ok";
  ok.times_s = {1.25e-4, 1.3e-4, 0.1 + 0.2};  // 0.30000000000000004 must survive exactly
  ok.median_s = 1.3e-4;
  ok.cv = 0.0123;
  ok.gflops = 1234.5;
  ok.max_abs_err = 3.1e-5;
  ok.checked_entries = 32768;
  ok.resources = KernelResources{96, 0, 16384, 256};
  r.results.push_back(ok);
  KernelResult bad;
  bad.id = "w0-c18";
  bad.workload = kW0;
  bad.status = "load_error";
  bad.message = "cannot load the cubin module: CUDA_ERROR_NO_BINARY_FOR_GPU";
  r.results.push_back(bad);
  ReferenceResult ref;
  ref.workload = kW0;
  ref.peer = "cublas";
  ref.status = "ok";
  ref.times_s = {1e-4};
  ref.median_s = 1e-4;
  ref.gflops = 4096.0;
  ref.checked_entries = 32768;
  r.references.push_back(ref);
  r.notes = {"a note"};
  return r;
}

json readJson(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

void writeJson(const fs::path& p, const json& j) {
  std::ofstream out(p);
  out << j.dump(2);
}

// Writes the sample bundle, applies `edit` to its manifest JSON and reads it back.
Result<BundleManifest> readEdited(const TempDir& d, const std::function<void(json&)>& edit) {
  EXPECT_TRUE(writeBundle(d.str(), sampleManifest(), sampleFiles()).ok());
  json j = readJson(d.path / "manifest.json");
  edit(j);
  writeJson(d.path / "manifest.json", j);
  return readBundle(d.str());
}

void expectManifestError(const std::function<void(json&)>& edit, const std::string& what) {
  TempDir d{"bundle-test"};
  auto m = readEdited(d, edit);
  ASSERT_FALSE(m.ok()) << "accepted: " << what;
  EXPECT_NE(m.error().find((d.path / "manifest.json").string()), std::string::npos) << m.error();
  EXPECT_NE(m.error().find(what), std::string::npos) << m.error();
}

}  // namespace

TEST(Bundle, WriteReadRoundTrip) {
  TempDir d{"bundle-test"};
  BundleManifest m = sampleManifest();
  ASSERT_TRUE(writeBundle(d.str(), m, sampleFiles()).ok());
  auto back = readBundle(d.str());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, m);
  json j = readJson(d.path / "manifest.json");
  EXPECT_EQ(j["format"], "sextant-bundle");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["workloads"][0]["key"], kW0);
  EXPECT_EQ(j["kernels"][0]["args"][0], json({{"buffer", "C"}}));
  EXPECT_EQ(j["kernels"][0]["args"][3], json({{"i64", int64_t(1) << 40}}));
  EXPECT_EQ(j["kernels"][0]["args"][4], json({{"i32", -7}}));
  EXPECT_EQ(j["kernels"][0]["grid"], json({2, 4, 1}));
  EXPECT_EQ(j["kernels"][0]["static"]["ptxas_registers"], 96);
  EXPECT_FALSE(j["kernels"][1].contains("schedule_sha"));  // optional, omitted when empty
  EXPECT_EQ(j["kernels"][1]["subgroup_size"], 32);
  EXPECT_FALSE(j["kernels"][0].contains("subgroup_size"));  // 0: the device's default, omitted
  auto img = readKernelFile(d.str(), back->kernels[1]);
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(*img, sampleFiles()["kernels/w0-c18.cubin"]);
  // A rewrite leaves no temporary file behind.
  ASSERT_TRUE(writeBundleManifest(d.str(), m).ok());
  for (const auto& e : fs::directory_iterator(d.path))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(Bundle, OptionalFieldsHaveDefaults) {
  TempDir d{"bundle-test"};
  auto m = readEdited(d, [](json& j) {
    for (auto& k : j["kernels"]) {
      k.erase("dynamic_shared_bytes");
      k.erase("knobs");
      k.erase("static");
      k.erase("schedule_sha");
    }
  });
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->kernels[0].dynamic_shared_bytes, 0u);
  EXPECT_TRUE(m->kernels[0].knobs.is_object() && m->kernels[0].knobs.empty());
}

TEST(Bundle, InvalidManifestsNameTheFileAndTheProblem) {
  expectManifestError([](json& j) { j.erase("kernels"); }, "missing field 'kernels'");
  expectManifestError([](json& j) { j.erase("arch"); }, "missing field 'arch'");
  expectManifestError([](json& j) { j["kernels"][1].erase("grid"); }, "kernels[1] (w0-c18): missing field 'grid'");
  expectManifestError([](json& j) { j["kernels"][0]["grid"] = "32x32"; }, "kernels[0] (w0-c17).grid: expected an array");
  expectManifestError([](json& j) { j["kernels"][0]["block"] = {256, 0, 1}; }, "3 positive integers");
  expectManifestError([](json& j) { j["kernels"][0]["kernel_name"] = 5; }, "kernel_name: expected a string");
  expectManifestError([](json& j) { j["format"] = "sextant-results"; }, "unknown format 'sextant-results'");
  expectManifestError([](json& j) { j["version"] = 2; }, "unsupported version 2");
  expectManifestError([](json& j) { j["version"] = "1"; }, "version: expected an integer");
  expectManifestError([](json& j) { j["vendor"] = "intel"; }, "unknown vendor 'intel'");
  expectManifestError([](json& j) { j["arch"] = "gfx942"; }, "'gfx942' is not an nvidia architecture");
  expectManifestError([](json& j) { j["kernels"][1]["id"] = "w0-c17"; }, "kernels[1]: duplicate id 'w0-c17'");
  expectManifestError([](json& j) { j["kernels"][0]["id"] = "a,b"; }, "not a valid id");
  expectManifestError([](json& j) { j["kernels"][0]["workload"] = "gemm:NN:1x1x1:f32*f32->f32"; },
                      "is not listed in workloads");
  expectManifestError([](json& j) { j["workloads"][0]["key"] = "gemm:XX:1x1x1:f32*f32->f32"; }, "workloads[0].key");
  expectManifestError([](json& j) { j["workloads"][1]["key"] = kW0; }, "listed twice");
  expectManifestError([](json& j) { j["kernels"][0]["format"] = "hsaco"; }, "cannot run on a nvidia device");
  expectManifestError([](json& j) { j["kernels"][0]["format"] = "elf"; }, "unknown kernel format 'elf'");
  expectManifestError([](json& j) { j["kernels"][0]["file"] = "../outside.ptx"; }, "without '..'");
  expectManifestError([](json& j) { j["kernels"][0]["args"][0] = {{"buffer", "D"}}; }, "args[0].buffer");
  expectManifestError([](json& j) { j["kernels"][0]["args"][1] = {{"f32", 1.0}}; }, "args[1]: expected an object");
  expectManifestError([](json& j) { j["kernels"][0]["args"][4] = {{"i32", int64_t(1) << 33}}; }, "32-bit range");
  expectManifestError([](json& j) { j["kernels"][0]["knobs"] = json::array(); }, "knobs: expected an object");
  expectManifestError([](json& j) { j["kernels"][1]["subgroup_size"] = 48; }, "subgroup_size: must be 0 or a power of two");
  expectManifestError([](json& j) { j = json::array(); }, "expected a JSON object");
}

// The wgmma route's tensor-map arguments: written, read back, checked; and the compiler's notation.
TEST(Bundle, TensorMapArguments) {
  TempDir d{"bundle-test"};
  BundleManifest m = sampleManifest();
  TensorMapSpec a{'A', "f16", {4096, 1024}, 8192, {64, 128}, 128}, b{'B', "bf16", {512, 4096}, 1024, {64, 64}, 128};
  m.kernels[1].args = {KernelArg::tensorMap(a), KernelArg::tensorMap(b), KernelArg::buf('C')};
  ASSERT_TRUE(writeBundle(d.str(), m, sampleFiles()).ok());
  auto back = readBundle(d.str());
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, m);
  json j = readJson(d.path / "manifest.json");
  EXPECT_EQ(j["kernels"][1]["args"][0]["tensor_map"],
            json({{"buffer", "A"}, {"elem", "f16"}, {"dims", {4096, 1024}}, {"stride_bytes", 8192}, {"box", {64, 128}},
                  {"swizzle", 128}}));
  auto parsed = parseTensorMapSpec("tmap:A:f16:dims=4096,1024:stride=8192:box=64,128:swizzle=128");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(*parsed, a);
  EXPECT_FALSE(parseTensorMapSpec("tmap:C:f16:dims=4096,1024:stride=8192:box=64,128:swizzle=128").ok());
  EXPECT_FALSE(parseTensorMapSpec("tmap:A:f16:dims=4096,1024:stride=8192:box=64,128:swizzle=128x").ok());
  json good = j["kernels"][1]["args"][0];
  auto bad = [&](const std::string& key, json v, const std::string& what) {
    json t = good;
    t["tensor_map"][key] = v;
    expectManifestError([&](json& jj) { jj["kernels"][0]["args"][0] = t; }, what);
  };
  bad("buffer", "C", "args[0].tensor_map.buffer");
  bad("elem", "f32", "expected f16 or bf16");
  bad("dims", {64}, "tensor_map.dims: expected two positive integers");
  bad("stride_bytes", 100, "positive multiple of 16");
  bad("swizzle", 16, "expected 0, 32, 64 or 128");
}

TEST(Bundle, MissingKernelFileIsNamed) {
  TempDir d{"bundle-test"};
  ASSERT_TRUE(writeBundle(d.str(), sampleManifest(), sampleFiles()).ok());
  fs::remove(d.path / "kernels/w0-c18.cubin");
  auto m = readBundle(d.str());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find((d.path / "manifest.json").string()), std::string::npos) << m.error();
  EXPECT_NE(m.error().find("kernels[1] (w0-c18): kernel file 'kernels/w0-c18.cubin' not found"), std::string::npos)
      << m.error();
}

TEST(Bundle, UnreadableManifest) {
  TempDir d{"bundle-test"};
  auto m = readBundle(d.str());  // no manifest.json
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("manifest.json: cannot read"), std::string::npos) << m.error();
  std::ofstream(d.path / "manifest.json") << "{\"format\": ";
  m = readBundle(d.str());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("manifest.json: not valid JSON"), std::string::npos) << m.error();
  m = readBundle((d.path / "nope").string());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("not a bundle directory"), std::string::npos) << m.error();
}

TEST(Results, WriteReadRoundTrip) {
  TempDir d{"bundle-test"};
  std::string path = (d.path / "results.json").string();
  ResultsFile r = sampleResults();
  ASSERT_TRUE(writeResults(path, r).ok());
  auto back = readResults(path);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, r);
  EXPECT_EQ(back->results[0].times_s[2], 0.1 + 0.2);
  json j = readJson(path);
  EXPECT_EQ(j["format"], "sextant-results");
  EXPECT_TRUE(j["results"][1]["resources"].is_null());
  EXPECT_EQ(j["device"]["arch"], "sm_90");
  for (const auto& e : fs::directory_iterator(d.path))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();

  r.device.reset();  // a results file without a device
  ASSERT_TRUE(writeResults(path, r).ok());
  back = readResults(path);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, r);
}

TEST(Results, InvalidResultsNameTheFileAndTheProblem) {
  TempDir d{"bundle-test"};
  std::string path = (d.path / "results.json").string();
  auto expectError = [&](const std::function<void(json&)>& edit, const std::string& what) {
    json j = toJson(sampleResults());
    edit(j);
    writeJson(path, j);
    auto r = readResults(path);
    ASSERT_FALSE(r.ok()) << "accepted: " << what;
    EXPECT_NE(r.error().find(path), std::string::npos) << r.error();
    EXPECT_NE(r.error().find(what), std::string::npos) << r.error();
  };
  expectError([](json& j) { j.erase("results"); }, "missing field 'results'");
  expectError([](json& j) { j["results"][0].erase("median_s"); }, "results[0] (w0-c17): missing field 'median_s'");
  expectError([](json& j) { j["results"][0]["gflops"] = "fast"; }, "gflops: expected a number");
  expectError([](json& j) { j["results"][0]["times_s"][1] = nullptr; }, "times_s[1]: expected a number");
  expectError([](json& j) { j["results"][0]["status"] = "great"; }, "unknown status 'great'");
  expectError([](json& j) { j["results"][1]["id"] = "w0-c17"; }, "results[1]: duplicate id 'w0-c17'");
  expectError([](json& j) { j["results"][0]["resources"].erase("registers"); }, "resources: missing field 'registers'");
  expectError([](json& j) { j["format"] = "sextant-bundle"; }, "unknown format 'sextant-bundle'");
  expectError([](json& j) { j["version"] = 7; }, "unsupported version 7");
  expectError([](json& j) { j["device"] = "h100"; }, "device: expected an object or null");
  expectError([](json& j) { j["device"].erase("l2_bytes"); }, "device: missing field 'l2_bytes'");
  expectError([](json& j) { j["references"][0].erase("peer"); }, "references[0]: missing field 'peer'");
  auto missing = readResults((d.path / "absent.json").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("absent.json: cannot read"), std::string::npos);
}
