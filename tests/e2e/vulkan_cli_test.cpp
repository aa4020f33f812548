// The Vulkan target as a user runs it (issue #33): tune on the machine's Vulkan device (here Mesa's
// lavapipe, labelled CPU-emulated in every record), the bundle round trip through tune-runner and
// import-results, and the runner's one line without libvulkan. Skipped where no Vulkan device is.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "helpers.h"

using namespace e2e;
using json = nlohmann::json;

namespace {

bool haveVulkanDevice(std::string& why) {
  Outcome o = tune("hw show vulkan");
  why = o.out + o.err;
  return o.code == 0 && o.out.find("vulkan:0") != std::string::npos && sh("command -v spirv-val").code == 0;
}

// A SPIR-V file as text without names (spirv-dis, the kernel's name `name` removed), to compare
// two compilations of one kernel.
std::string dis(const std::string& spv, const std::string& name) {
  // In a subshell: sh() redirects the standard input of the whole command.
  Outcome o = sh("(spirv-dis --raw-id " + spv + " | grep -v -e OpName -e OpEntryPoint -e OpMemberName -e OpSource | sed s/" +
                 name + "//g)");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_FALSE(o.out.empty()) << spv << ": " << o.err;
  return o.out;
}

}  // namespace

TEST(VulkanEndToEnd, TuneMeasuresOnTheDeviceAndLabelsAnEmulatedOne) {
  std::string why;
  if (!haveVulkanDevice(why)) GTEST_SKIP() << "no Vulkan device or no spirv-val: " << why;
  const bool emulated = why.find("CPU-emulated") != std::string::npos;
  std::string db = tmp("vk-tune.db");
  removeDb(db);
  Outcome r = sh("SEXTANT_VULKAN_VALIDATION=1 " + std::string(TUNE_BIN) +
                 " --op gemm --target vulkan --shape 64x64x64 --trials 4 --batch 4 -q --db " + db);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE source='measured' AND status='ok'"), 4) << r.out;
  if (emulated) {
    EXPECT_NE(r.err.find("CPU-emulated Vulkan device"), std::string::npos) << r.err;
    EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE machine LIKE 'gpu:%:vulkan-cpu-emulated:%'"), 4);
  }
  Outcome best = tune("best --target vulkan --shape 64x64x64 --db " + db);
  ASSERT_EQ(best.code, 0) << best.err;
  EXPECT_NE(best.out.find("gpu_gemm_v1_vulkan"), std::string::npos) << best.out;
  removeDb(db);
}

TEST(VulkanEndToEnd, BundleRoundTripThroughTuneRunner) {
  std::string why;
  if (!haveVulkanDevice(why)) GTEST_SKIP() << "no Vulkan device or no spirv-val: " << why;
  std::string db = tmp("vk-bundle.db"), dir = tmp("vk-bundle");
  removeDb(db);
  std::filesystem::remove_all(dir);
  Outcome r = tune("--op gemm --target vulkan --layout NT --shape 64x128x32 --trials 3 --measure bundle --out " + dir +
                   " -q --db " + db);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  json m = json::parse(slurp(dir + "/manifest.json"));
  EXPECT_EQ(m["vendor"], "vulkan");
  EXPECT_EQ(m["arch"], "spirv1.3");
  ASSERT_EQ(m["kernels"].size(), 3u);
  for (const auto& k : m["kernels"]) {
    EXPECT_EQ(k["format"], "spirv");
    EXPECT_EQ(slurp(dir + "/" + k["file"].get<std::string>()).substr(0, 4), std::string("\x03\x02\x23\x07", 4));
  }
  // Without libvulkan: one line, exit 3, nothing written.
  Outcome none = sh("SEXTANT_VULKAN_LIB=/nonexistent/libvulkan.so.1 " + std::string(TUNE_RUNNER_BIN) + " " + dir);
  EXPECT_EQ(none.code, 3) << none.err;
  EXPECT_NE(none.err.find("no Vulkan device found (libvulkan.so.1 not loadable"), std::string::npos) << none.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/results.json"));
  // Measured by tune-runner, imported as this device's measurements.
  Outcome run = sh(std::string(TUNE_RUNNER_BIN) + " " + dir + " --min-time 0 --min-reps 2 --no-reference");
  ASSERT_EQ(run.code, 0) << run.err << run.out;
  json res = json::parse(slurp(dir + "/results.json"));
  EXPECT_EQ(res["device"]["vendor"], "vulkan");
  for (const auto& k : res["results"]) EXPECT_EQ(k["status"], "ok") << k.dump();
  Outcome imp = tune("import-results " + dir + " --db " + db);
  ASSERT_EQ(imp.code, 0) << imp.err << imp.out;
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE source='measured' AND status='ok' AND machine LIKE 'gpu:%:vulkan-%'"), 3);
  // The timeout path: every timed launch misses a 10 us deadline (the verified first launch has the
  // device's shader-compile allowance): "timeout", the device given up, the next kernel measured by
  // a fresh worker, and the runner done in bounded time.
  std::filesystem::remove(dir + "/results.json");
  Outcome late = sh("timeout 300 " + std::string(TUNE_RUNNER_BIN) + " " + dir + " --timeout 0.00001 --min-time 0 --no-reference");
  EXPECT_NE(late.code, 124) << "tune-runner hung after a timeout";
  json lr = json::parse(slurp(dir + "/results.json"));
  ASSERT_EQ(lr["results"].size(), 3u);
  for (const auto& k : lr["results"]) {
    EXPECT_EQ(k["status"], "timeout") << k.dump();
    EXPECT_NE(k["message"].get<std::string>().find("did not finish within"), std::string::npos) << k.dump();
  }
  removeDb(db);
  std::filesystem::remove_all(dir);
}

// The exported library and tune compile (issue #33's goal): a schedule tuned on the device, exported,
// applied by a stock mlir-opt, and compiled by tune compile --target vulkan into SPIR-V files that
// are the tuner's kernel for the same candidate (spirv-dis, names aside); untuned GEMMs get the default.
TEST(VulkanEndToEnd, ExportedLibraryCompilesToTheTunersSpirv) {
  std::string why;
  if (!haveVulkanDevice(why)) GTEST_SKIP() << "no Vulkan device or no spirv-val: " << why;
  if (sh("command -v spirv-dis").code != 0) GTEST_SKIP() << "spirv-dis (spirv-tools) is not installed";
  const std::string db = tmp("vk-export.db"), dir = tmp("vk-export-bundle"), lib = tmp("vk-lib.mlir");
  const std::string out = tmp("vk-model.mlir"), model = std::string(DATA_DIR) + "/vulkan_model.mlir";
  removeDb(db);
  std::filesystem::remove_all(dir);
  // One trial: the default candidate, measured and verified on the device.
  Outcome r = tune("--op gemm --target vulkan --shape 256x256x128 --trials 1 --batch 1 -q --db " + db);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  ASSERT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE source='measured' AND status='ok'"), 1);
  // The same candidate as a bundle kernel (the tuner's compilation).
  Outcome b = tune("--op gemm --target vulkan --shape 256x256x128 --trials 1 --batch 1 --fresh --measure bundle --out " +
                   dir + " -q --db " + tmp("vk-export-b.db"));
  ASSERT_EQ(b.code, 0) << b.err;
  json m = json::parse(slurp(dir + "/manifest.json"));
  ASSERT_EQ(m["kernels"].size(), 1u);
  const std::string tuner_spv = dir + "/" + m["kernels"][0]["file"].get<std::string>();

  Outcome ex = tune("export --db " + db + " --target vulkan --format transform -o " + lib);
  ASSERT_EQ(ex.code, 0) << ex.err << ex.out;
  EXPECT_NE(ex.out.find("tune compile IN.mlir --target vulkan"), std::string::npos) << ex.out;
  Outcome opt = sh(std::string(SEXTANT_LLVM_TOOLS) + "/mlir-opt " + model +
                   " --transform-preload-library=transform-library-paths=" + lib + " --transform-interpreter -o /dev/null");
  EXPECT_EQ(opt.code, 0) << opt.err;

  Outcome c = tune("compile " + model + " --db " + db + " --target vulkan -o " + out);
  ASSERT_EQ(c.code, 0) << c.err << c.out;
  EXPECT_NE(c.out.find("gemm:NN:256x256x128:f32*f32->f32   tuned (record"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("gemm:NN:64x64x64:f32*f32->f32      default"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("spirv-val passed"), std::string::npos) << c.out;
  for (const char* f : {"proj", "small", "mlp"})
    EXPECT_EQ(slurp(out + "." + f + ".spv").substr(0, 4), std::string("\x03\x02\x23\x07", 4)) << f;
  const std::string ours = dis(out + ".proj.spv", "proj_kernel"), tuners = dis(tuner_spv, "sextant_gemm_kernel");
  EXPECT_GT(ours.size(), 1000u);
  EXPECT_TRUE(ours == tuners) << "tune compile's SPIR-V differs from the tuner's kernel";

  // f16 inputs (f32 results) compile to kernels that declare Float16; bf16 is refused in one line.
  Outcome f16 = tune("compile " + std::string(DATA_DIR) + "/gpu_model.mlir --db " + db + " --target vulkan -o " + out + ".f16");
  ASSERT_EQ(f16.code, 0) << f16.err << f16.out;
  EXPECT_NE(dis(out + ".f16.proj.spv", "proj_kernel").find("OpCapability Float16"), std::string::npos);
  for (const char* f : {"", ".proj.spv", ".small.spv", ".mlp.spv"}) std::filesystem::remove(out + ".f16" + f);
  Outcome bf16 = tune("--op gemm --target vulkan --dtype bf16 --shape 64x64x64 --trials 1 --db " + db);
  EXPECT_EQ(bf16.code, 2);
  EXPECT_NE(bf16.err.find("the vulkan target tunes f32 and f16 GEMMs"), std::string::npos) << bf16.err;

  for (const std::string& f : {lib, out, out + ".proj.spv", out + ".small.spv", out + ".mlp.spv"}) std::filesystem::remove(f);
  std::filesystem::remove_all(dir);
  removeDb(db);
  removeDb(tmp("vk-export-b.db"));
}

// Batched matmul on Vulkan (attention's Q.K^T and P.V): tuned on the device, exported, applied by a
// stock mlir-opt, and compiled by tune compile into one validated kernel per function, one batch
// element per workgroup row of the grid (z); the tuned function's SPIR-V is the tuner's kernel.
TEST(VulkanEndToEnd, BatchMatmulTunesExportsAndCompiles) {
  std::string why;
  if (!haveVulkanDevice(why)) GTEST_SKIP() << "no Vulkan device or no spirv-val: " << why;
  if (sh("command -v spirv-dis").code != 0) GTEST_SKIP() << "spirv-dis (spirv-tools) is not installed";
  const std::string db = tmp("vk-bmm.db"), dir = tmp("vk-bmm-bundle"), lib = tmp("vk-bmm-lib.mlir");
  const std::string out = tmp("vk-bmm.mlir"), model = std::string(DATA_DIR) + "/vulkan_bmm.mlir";
  removeDb(db);
  std::filesystem::remove_all(dir);
  const std::string shape = " --op batch_matmul --layout NT --target vulkan --shape 4x64x64x32 --trials 1 --batch 1 -q ";
  Outcome r = tune(shape + "--db " + db);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  ASSERT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE source='measured' AND status='ok'"), 1);
  Outcome b = tune(shape + "--fresh --measure bundle --out " + dir + " --db " + tmp("vk-bmm-b.db"));
  ASSERT_EQ(b.code, 0) << b.err;
  json m = json::parse(slurp(dir + "/manifest.json"));
  ASSERT_EQ(m["kernels"].size(), 1u);
  EXPECT_EQ(m["kernels"][0]["grid"][2], 4);

  Outcome ex = tune("export --db " + db + " --target vulkan --format transform -o " + lib);
  ASSERT_EQ(ex.code, 0) << ex.err << ex.out;
  Outcome opt = sh(std::string(SEXTANT_LLVM_TOOLS) + "/mlir-opt " + model +
                   " --transform-preload-library=transform-library-paths=" + lib + " --transform-interpreter -o /dev/null");
  EXPECT_EQ(opt.code, 0) << opt.err;
  Outcome c = tune("compile " + model + " --db " + db + " --target vulkan -o " + out);
  ASSERT_EQ(c.code, 0) << c.err << c.out;
  EXPECT_NE(c.out.find("batch_matmul:NT:4x64x64x32:f32*f32->f32 tuned (record"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("batch_matmul:NN:4x64x32x64:f32*f32->f32 default"), std::string::npos) << c.out;
  for (const char* f : {"scores", "values"}) {  // "FUNCTION KERNEL GRID BLOCK ...": the batch on z
    const size_t at = c.out.find(std::string("\n") + f + " ");
    ASSERT_NE(at, std::string::npos) << c.out;
    std::istringstream line(c.out.substr(at + 1, c.out.find('\n', at + 1) - at - 1));
    std::string fn, kernel, grid;
    line >> fn >> kernel >> grid;
    EXPECT_EQ(grid.substr(grid.rfind('x')), "x4") << f << ": " << grid;
  }
  const std::string ours = dis(out + ".scores.spv", "scores_kernel");
  EXPECT_GT(ours.size(), 1000u);
  EXPECT_TRUE(ours == dis(dir + "/" + m["kernels"][0]["file"].get<std::string>(), "sextant_gemm_kernel"))
      << "tune compile's SPIR-V differs from the tuner's kernel";
  EXPECT_GT(slurp(out + ".values.spv").size(), 1000u);
  for (const std::string& f : {lib, out, out + ".scores.spv", out + ".values.spv"}) std::filesystem::remove(f);
  std::filesystem::remove_all(dir);
  removeDb(db);
  removeDb(tmp("vk-bmm-b.db"));
}

// A Vulkan study: two local workers tune one workload together on the device, every candidate
// measured once, records labelled with the device's machine key; CUDA studies are refused in one line.
TEST(VulkanEndToEnd, TwoWorkersTuneTogether) {
  std::string why;
  if (!haveVulkanDevice(why)) GTEST_SKIP() << "no Vulkan device or no spirv-val: " << why;
  const std::string db = tmp("vk-study.db");
  removeDb(db);
  Outcome r = tune("--op gemm --target vulkan --shape 128x128x64 --trials 8 --batch 2 --workers 2 --db " + db);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("study 1: 8 of 8 trials recorded by 2 workers"), std::string::npos) << r.out;
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE source='measured' AND status='ok'"), 8);
  EXPECT_EQ(queryInt(db, "SELECT count(DISTINCT candidate) FROM records WHERE source='measured'"), 8);
  EXPECT_EQ(queryInt(db, "SELECT count(DISTINCT name) FROM workers WHERE device='vulkan'"), 2);
  EXPECT_EQ(queryInt(db, "SELECT count(*) FROM records WHERE machine NOT LIKE 'gpu:%'"), 0);
  Outcome cuda = tune("--op gemm --target h100 --dtype f16 --shape 256x256x256 --trials 4 --workers 0 --db " + db);
  EXPECT_EQ(cuda.code, 2);
  EXPECT_NE(cuda.err.find("studies tune the cpu and vulkan targets"), std::string::npos) << cuda.err;
  removeDb(db);
}

// Compiling for another machine's Vulkan device: tune hw show vulkan --json describes this one; a
// described NVIDIA device's limits and class shape a bundle (its first kernel is IREE's NVIDIA
// configuration); a missing or malformed description, a measured device or the cpu target say why.
TEST(VulkanEndToEnd, BundlesForADescribedDevice) {
  const std::string desc = tmp("vk-devices.json"), dir = tmp("vk-described"), db = tmp("vk-described.db");
  std::filesystem::remove_all(dir);
  removeDb(db);
  std::string show = TUNE_BIN;  // (built up in steps: GCC 12 warns falsely about "(" + std::string(...))
  show = "(" + show + " hw show vulkan --json > " + desc + ")";
  Outcome here = sh(show);
  if (here.code == 0) {  // this machine's devices, when it has any: a description --vulkan-device reads
    json j = json::parse(slurp(desc));
    EXPECT_EQ(j["format"], "sextant-vulkan-devices");
    EXPECT_GE(j["devices"].size(), 1u);
  }
  std::ofstream(desc, std::ios::trunc)
      << R"({"format": "sextant-vulkan-devices", "version": 1, "devices": [{"index": 0, "name": "NVIDIA H200",
         "type": "discrete-gpu", "vendor_id": 4318, "api_version": "1.4.312", "driver_version": "1",
         "max_invocations": 1024, "max_size": [1024, 1024, 64], "max_groups": [65535, 65535, 65535],
         "shared_bytes": 49152, "subgroup_size": 32, "timestamp_period_ns": 1.0, "float16": true,
         "cooperative_matrix": true}]})";
  Outcome b = tune("--op gemm --target vulkan --shape 1024x1024x1024 --trials 3 --batch 3 --measure bundle --out " + dir +
                   " --vulkan-device " + desc + " --db " + db);
  ASSERT_EQ(b.code, 0) << b.err << b.out;
  EXPECT_NE(b.err.find("compiling for NVIDIA H200 (discrete-gpu, class nvidia)"), std::string::npos) << b.err;
  json m = json::parse(slurp(dir + "/manifest.json"));
  ASSERT_EQ(m["kernels"].size(), 3u);
  const json& first = m["kernels"][0]["knobs"];  // the default: IREE's NVIDIA f32 configuration
  EXPECT_EQ(first["block_m"], 32);
  EXPECT_EQ(first["block_n"], 128);
  EXPECT_EQ(first["block_k"], 32);
  EXPECT_EQ(first["promote"], 3);
  EXPECT_EQ(m["kernels"][0]["block"][0].get<int>() * m["kernels"][0]["block"][1].get<int>(), 256);
  // The manifest names the device the kernels were compiled for, and import-results rebuilds that
  // device's space from it (lavapipe's space has none of these kernels: subgroups of 32). A results
  // file as tune-runner writes it on that device:
  ASSERT_TRUE(m.contains("vulkan_device"));
  EXPECT_EQ(m["vulkan_device"]["name"], "NVIDIA H200");
  EXPECT_EQ(m["vulkan_device"]["subgroup_size"], 32);
  json res{{"format", "sextant-results"}, {"version", 1}, {"runner", "test"}, {"date", "2026-11-28T00:00:00Z"},
           {"command", "test"}, {"host", "test"}, {"options", json::object()}, {"references", json::array()},
           {"notes", json::array()}, {"results", json::array()},
           {"device", {{"vendor", "vulkan"}, {"name", "NVIDIA H200"}, {"arch", "vulkan-discrete-gpu"},
                       {"driver_version", "1.4.312/1"}, {"sm_count", 0}, {"l2_bytes", 0}, {"memory_bytes", 0}}}};
  for (const auto& k : m["kernels"])
    res["results"].push_back({{"id", k["id"]}, {"workload", k["workload"]}, {"status", "ok"}, {"message", ""},
                              {"times_s", {0.001, 0.001}}, {"median_s", 0.001}, {"cv", 0.0}, {"gflops", 2147.5},
                              {"max_abs_err", 0.0}, {"checked_entries", 4096}, {"resources", nullptr}});
  std::ofstream(dir + "/results.json", std::ios::trunc) << res.dump();
  Outcome imp = tune("import-results " + dir + " --db " + db);
  ASSERT_EQ(imp.code, 0) << imp.err << imp.out;
  EXPECT_NE(imp.out.find("imported 3 measurements"), std::string::npos) << imp.out << imp.err;
  EXPECT_EQ(imp.out.find("outside this version's space"), std::string::npos) << imp.out;
  // Without the manifest's device (a bundle from before it was kept): outside lavapipe's space, and
  // the line says how to name the device; --vulkan-device then imports them.
  json old = m;
  old.erase("vulkan_device");
  std::ofstream(dir + "/manifest.json", std::ios::trunc) << old.dump();
  const std::string db2 = tmp("vk-described2.db");
  removeDb(db2);
  Outcome lost = tune("import-results " + dir + " --db " + db2);
  EXPECT_NE(lost.out.find("3 outside this version's space"), std::string::npos) << lost.out << lost.err;
  EXPECT_NE(lost.out.find("--vulkan-device FILE"), std::string::npos) << lost.out;
  Outcome named = tune("import-results " + dir + " --db " + db2 + " --vulkan-device " + desc);
  EXPECT_NE(named.out.find("imported 3 measurements"), std::string::npos) << named.out << named.err;
  removeDb(db2);
  // Kernels for another device cannot join the bundle.
  std::ofstream(dir + "/manifest.json", std::ios::trunc) << m.dump();
  Outcome mixed = tune("--op gemm --target vulkan --shape 1024x1024x1024 --trials 1 --measure bundle --out " + dir + " --db " + db);
  EXPECT_EQ(mixed.code, 2);
  EXPECT_NE(mixed.err.find("compiled for the Vulkan device 'NVIDIA H200'"), std::string::npos) << mixed.err;
  for (const auto& [args, why] : std::vector<std::pair<std::string, std::string>>{
           {"--target vulkan --vulkan-device " + desc, "use it with --measure bundle or none"},
           {"--target vulkan --measure none --vulkan-device " + desc + ".missing", "cannot read the Vulkan device description"},
           {"--target cpu --vulkan-device " + desc, "--vulkan-device is for the vulkan target"}}) {
    Outcome e = tune("--op gemm --shape 64x64x64 --trials 1 " + args + " --db " + db);
    EXPECT_EQ(e.code, 2) << args;
    EXPECT_NE(e.err.find(why), std::string::npos) << args << ": " << e.err;
  }
  std::ofstream(desc, std::ios::trunc) << R"({"devices": [{"name": "x"}]})";
  Outcome bad = tune("--op gemm --shape 64x64x64 --trials 1 --target vulkan --measure none --vulkan-device " + desc + " --db " + db);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("lacks a field"), std::string::npos) << bad.err;
  std::filesystem::remove(desc);
  std::filesystem::remove_all(dir);
  removeDb(db);
}
