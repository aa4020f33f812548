// The accelerator table: datasheet figures for NVIDIA and AMD devices, each with its sources,
// from the versioned data file hwspec/data/devices.json (embedded in the binary at build time),
// and the Blueprint: a small, stable embedding of those figures (Glimpse, DAC'22).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sextant/common/result.h"

namespace sextant {

struct DeviceSpec {
  std::string name, display, vendor, arch;
  int64_t compute_units = 0;
  double boost_mhz = 0, fp32_tflops = 0, fp16_tflops = 0, bf16_tflops = 0;  // bf16 0: unsupported
  double mem_gb = 0, bw_gbs = 0, l2_mb = 0, smem_per_cu_kb = 0, smem_per_block_kb = 0;
  int64_t regs_per_cu = 0, warp_size = 0, max_threads_per_block = 0, max_threads_per_cu = 0;
  std::vector<std::string> matrix_shapes;  // "MxNxK"
  std::vector<std::string> sources;        // keys of DeviceTable::sources
  std::map<std::string, std::string> notes;  // per-field caveats ("unconfirmed: ...")
};

struct DeviceTable {
  int version = 0;
  std::map<std::string, std::string> sources;
  std::vector<std::string> assumptions;
  std::vector<DeviceSpec> devices;
  const DeviceSpec* find(const std::string& name) const;
  // The entry a device's reported name (a Vulkan deviceName) names, if any: "NVIDIA H200" -> h200,
  // "NVIDIA H100 PCIe" -> h100-pcie, "AMD Instinct MI300X" -> mi300x; llvmpipe -> none.
  const DeviceSpec* matchName(const std::string& device_name) const;
};

// Validates every field: a missing, unknown or absurd value is an error naming the device and
// the field. `origin` names the file in messages.
Result<DeviceTable> parseDeviceTable(const std::string& json_text, const std::string& origin);
// The table shipped with this build (hwspec/data/devices.json).
const DeviceTable& builtinDeviceTable();

// Blueprint: the spec figures (log-scaled, standardised over the table) projected on the table's
// first principal components. Deterministic for a given table: the same table version gives the
// same vectors on every run and machine (component signs are fixed).
struct Blueprint {
  int table_version = 0;
  std::vector<std::string> features;       // names of the raw figures used
  std::vector<double> mean, scale;         // standardisation, per feature
  std::vector<std::vector<double>> components;  // dims x features
  std::vector<double> explained;           // variance fraction per component
  static std::vector<double> rawFeatures(const DeviceSpec& d);
  std::vector<double> embed(const DeviceSpec& d) const;
};
Blueprint fitBlueprint(const DeviceTable& table, int dims = 4);

struct GpuTargetInfo;
// The table's entry for a GPU target's device: the entry the target names (h100, mi300x), or for a
// Vulkan target the entry its device's reported name matches (applyVulkanLimits set it as the
// display name: "NVIDIA H200" -> h200); null when there is none (lavapipe, a device the table
// lacks: Vulkan reports no TFLOP/s or bandwidth to embed).
const DeviceSpec* datasheetOf(const GpuTargetInfo& g);

}  // namespace sextant
