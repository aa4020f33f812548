#include <cmath>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sextant/hwspec/devices.h"
#include "sextant/hwspec/gpu_target.h"
#include "sextant/hwspec/target.h"

using namespace sextant;
using json = nlohmann::json;

namespace {
json validTable() {
  return json::parse(R"({"format": "sextant-hwspec", "version": 1, "sources": {"S": "a datasheet"},
    "devices": [{"name": "x", "display": "X", "vendor": "nvidia", "arch": "sm_80", "compute_units": 100,
      "boost_mhz": 1400, "fp32_tflops": 19.5, "fp16_tflops": 312, "bf16_tflops": 312, "mem_gb": 40,
      "bw_gbs": 1555, "l2_mb": 40, "smem_per_cu_kb": 164, "smem_per_block_kb": 163, "regs_per_cu": 65536,
      "warp_size": 32, "max_threads_per_block": 1024, "max_threads_per_cu": 2048,
      "matrix_shapes": ["16x8x16"], "sources": ["S"]}]})");
}
std::string errorFor(const json& j) {
  auto t = parseDeviceTable(j.dump(), "t.json");
  return t.ok() ? "" : t.error();
}
}  // namespace

TEST(DeviceTable, BuiltinTableHasEveryRequiredDeviceAndValidates) {
  const DeviceTable& t = builtinDeviceTable();
  EXPECT_GE(t.version, 1);
  for (const char* n : {"v100", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "l4", "l40s", "rtx3090",
                        "rtx4090", "mi100", "mi210", "mi250x", "mi300x", "mi325x"}) {
    const DeviceSpec* d = t.find(n);
    ASSERT_NE(d, nullptr) << n;
    EXPECT_FALSE(d->sources.empty()) << n;
  }
  EXPECT_EQ(t.find("mi300x")->arch, "gfx942");
  EXPECT_EQ(t.find("mi300x")->warp_size, 64);
  EXPECT_EQ(t.find("h100-sxm")->compute_units, 132);
  EXPECT_NE(t.find("h200")->notes.at("l2_mb").find("unconfirmed"), std::string::npos);
}

TEST(DeviceTable, ValidMinimalTableParses) { EXPECT_EQ(errorFor(validTable()), ""); }

TEST(DeviceTable, EachKindOfInvalidEntryIsNamed) {
  json j = validTable();
  j["devices"][0].erase("bw_gbs");
  EXPECT_EQ(errorFor(j), "t.json: device 'x': missing or non-numeric field 'bw_gbs'");
  j = validTable();
  j["devices"][0]["bw_gbs"] = 1.5e9;  // bytes instead of GB: a unit mistake
  EXPECT_NE(errorFor(j).find("device 'x': field 'bw_gbs' = "), std::string::npos) << errorFor(j);
  j = validTable();
  j["devices"][0]["l2_MB"] = 40;
  EXPECT_EQ(errorFor(j), "t.json: device 'x': unknown field 'l2_MB'");
  j = validTable();
  j["devices"][0]["vendor"] = "intel";
  EXPECT_NE(errorFor(j).find("'vendor' must be nvidia or amd"), std::string::npos);
  j = validTable();
  j["devices"][0]["arch"] = "hopper";
  EXPECT_NE(errorFor(j).find("'arch' 'hopper'"), std::string::npos);
  j = validTable();
  j["devices"][0]["smem_per_block_kb"] = 200;
  EXPECT_NE(errorFor(j).find("'smem_per_block_kb' exceeds"), std::string::npos);
  j = validTable();
  j["devices"][0]["sources"] = {"Z"};
  EXPECT_NE(errorFor(j).find("unknown source 'Z'"), std::string::npos);
  j = validTable();
  j["devices"][0]["matrix_shapes"] = {"16x8"};
  EXPECT_NE(errorFor(j).find("'16x8' is not MxNxK"), std::string::npos);
  j = validTable();
  j["devices"][0]["warp_size"] = 48;
  EXPECT_NE(errorFor(j).find("warp_size"), std::string::npos);
  j = validTable();
  j["devices"].push_back(j["devices"][0]);
  EXPECT_NE(errorFor(j).find("duplicate device name"), std::string::npos);
  j = validTable();
  j["devices"][0]["notes"] = {{"clock", "x"}};
  EXPECT_NE(errorFor(j).find("note names unknown field 'clock'"), std::string::npos);
  j = validTable();
  j["format"] = "other";
  EXPECT_NE(errorFor(j).find("not a Sextant hardware table"), std::string::npos);
  EXPECT_FALSE(parseDeviceTable("{ not json", "t.json").ok());
}

// A Vulkan device's reported name finds its datasheet entry (the Blueprint's figures), or none.
TEST(DeviceTable, ReportedNamesFindTheirEntry) {
  const DeviceTable& t = builtinDeviceTable();
  auto name = [&](const std::string& n) {
    const DeviceSpec* d = t.matchName(n);
    return d ? d->name : std::string("none");
  };
  EXPECT_EQ(name("NVIDIA H200"), "h200");
  EXPECT_EQ(name("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_EQ(name("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(name("NVIDIA GeForce RTX 4090"), "rtx4090");
  EXPECT_EQ(name("NVIDIA L40S"), "l40s");
  EXPECT_EQ(name("NVIDIA L4"), "l4");
  EXPECT_EQ(name("AMD Instinct MI300X"), "mi300x");
  EXPECT_EQ(name("NVIDIA A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(name("llvmpipe (LLVM 15.0.6, 256 bits)"), "none");
  EXPECT_EQ(name("Intel(R) Arc(tm) A770 Graphics"), "none");
}

// A Vulkan device goes into the table by the name it reports (issue #33): its Blueprint is then its
// datasheet entry's, the one the GPU's own target has; lavapipe and unknown devices have none.
TEST(DeviceTable, AVulkanDeviceTakesItsDatasheetEntryByName) {
  auto vk = *gpuTargetInfo(*resolveTarget("vulkan"));
  EXPECT_EQ(datasheetOf(vk), nullptr);  // lavapipe's limits until a device is opened
  VulkanLimits l;
  l.name = "NVIDIA H200";
  l.subgroup_size = 32;
  applyVulkanLimits(vk, l);
  ASSERT_NE(datasheetOf(vk), nullptr);
  EXPECT_EQ(datasheetOf(vk)->name, "h200");
  auto h200 = *gpuTargetInfo(*resolveTarget("h200"));
  EXPECT_EQ(datasheetOf(h200), datasheetOf(vk));
  const Blueprint bp = fitBlueprint(builtinDeviceTable());
  EXPECT_EQ(bp.embed(*datasheetOf(vk)), bp.embed(*datasheetOf(h200)));
  l.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
  applyVulkanLimits(vk, l);
  EXPECT_EQ(datasheetOf(vk), nullptr);
}

TEST(Blueprint, IsStableAndSeparatesDeviceFamilies) {
  const DeviceTable& t = builtinDeviceTable();
  Blueprint a = fitBlueprint(t), b = fitBlueprint(t);
  ASSERT_EQ(a.components.size(), 4u);
  EXPECT_EQ(a.table_version, t.version);
  for (const auto& d : t.devices) EXPECT_EQ(a.embed(d), b.embed(d)) << d.name;
  double sum = 0;
  for (size_t i = 0; i < a.explained.size(); ++i) {
    sum += a.explained[i];
    if (i) {
      EXPECT_LE(a.explained[i], a.explained[i - 1]);
    }
  }
  EXPECT_GT(sum, 0.6);  // four components carry most of the table's variance
  EXPECT_LE(sum, 1.0 + 1e-9);
  auto dist = [&](const char* x, const char* y) {
    auto ex = a.embed(*t.find(x)), ey = a.embed(*t.find(y));
    double s = 0;
    for (size_t i = 0; i < ex.size(); ++i) s += (ex[i] - ey[i]) * (ex[i] - ey[i]);
    return std::sqrt(s);
  };
  // Siblings sit closer than devices of different vendors and generations.
  EXPECT_LT(dist("h100-sxm", "h200"), dist("h100-sxm", "mi100"));
  EXPECT_LT(dist("mi300x", "mi325x"), dist("mi300x", "rtx3090"));
  EXPECT_LT(dist("a100-40gb", "a100-80gb"), dist("a100-40gb", "l4"));
}

// Issue #16 item 7: the occupancy model counts the 1 KiB of shared memory NVIDIA reserves per
// block. 57 KiB per block on an H100 (228 KiB per SM): 4 blocks fit by the bytes alone, 3 with
// the reserve. AMD LDS has no such reserve (64 KiB / 16 KiB = 4).
TEST(Occupancy, CountsTheSharedMemoryNvidiaReservesPerBlock) {
  auto h100 = sextant::resolveTarget("h100");
  ASSERT_TRUE(h100.ok());
  auto g = sextant::gpuTargetInfo(*h100);
  ASSERT_TRUE(g.ok()) << g.error();
  auto o = sextant::estimateOccupancy(*g, 128, 32, 57 * 1024);
  EXPECT_EQ(o.blocks_per_cu, 3);
  EXPECT_EQ(o.limiter, "shared memory");
  EXPECT_EQ(sextant::estimateOccupancy(*g, 128, 32, 56 * 1024).blocks_per_cu, 4);  // 4 x (56 + 1) = 228
  auto mi300 = sextant::resolveTarget("mi300");
  ASSERT_TRUE(mi300.ok());
  auto a = sextant::gpuTargetInfo(*mi300);
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_EQ(a->smem_per_cu_bytes, 64 * 1024);
  EXPECT_EQ(sextant::estimateOccupancy(*a, 256, 32, 16 * 1024).blocks_per_cu, 4);
}
