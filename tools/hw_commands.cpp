// tune hw check (the GPUs and Vulkan devices this machine has, compared with the device table) and
// tune hw show vulkan (every Vulkan device with the limits the Vulkan schedule space takes from it).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/hwspec/devices.h"
#include "sextant/runtime/gpu_runner.h"

namespace sextant::cli {

using json = nlohmann::json;

// tune hw check: the GPUs this machine has (CUDA, then HIP), compared with the device table.
int cmdHwCheck() {
  int found = 0;
  for (const char* vendor : {"nvidia", "amd"}) {
    auto dev = openGpuDevice(vendor);
    if (!dev) {
      printf("%s: %s\n", vendor, dev.error().c_str());
      continue;
    }
    ++found;
    const DeviceInfo& d = (*dev)->info();
    printf("%s: %s (%s), driver %s: %lld SMs/CUs, L2 %.1f MiB, memory %.1f GiB\n", vendor, d.name.c_str(),
           d.arch.c_str(), d.driver_version.c_str(), (long long)d.sm_count, double(d.l2_bytes) / (1 << 20),
           double(d.memory_bytes) / (1 << 30));
    // The table entry: same architecture and compute-unit count; memory size breaks ties (H100 SXM
    // and H200 both have 132 SMs).
    const DeviceSpec* match = nullptr;
    for (const auto& s : builtinDeviceTable().devices)
      if (s.arch == d.arch && s.compute_units == d.sm_count &&
          (!match || std::abs(s.mem_gb - double(d.memory_bytes) / 1e9) <
                         std::abs(match->mem_gb - double(d.memory_bytes) / 1e9)))
        match = &s;
    if (!match) {
      printf("  no entry of the device table (version %d) has arch %s with %lld compute units: tuning uses the "
             "nearest target's limits; add it to hwspec/data/devices.json\n",
             builtinDeviceTable().version, d.arch.c_str(), (long long)d.sm_count);
      continue;
    }
    printf("  table entry: %s (%s)\n", match->name.c_str(), match->display.c_str());
    auto check = [](const char* what, double live, double table, double tol) {
      bool ok = table > 0 && std::abs(live - table) <= tol * table;
      printf("  %-13s live %-10.4g table %-10.4g %s\n", what, live, table, ok ? "ok" : "MISMATCH");
      return ok;
    };
    bool ok = check("compute units", double(d.sm_count), double(match->compute_units), 0);
    ok &= check("L2 (MiB)", double(d.l2_bytes) / (1 << 20), match->l2_mb, 0.1);
    ok &= check("memory (GB)", double(d.memory_bytes) / 1e9, match->mem_gb, 0.1);
    if (!ok) printf("  the live device differs from the table: check the table's sources (tune hw show %s)\n",
                    match->name.c_str());
  }
  if (!found) printf("no GPU on this machine: nothing to compare with the table\n");
  printf("\n");
  cmdHwShowVulkan(false);
  return 0;
}


namespace {

// One device entry of a description; origin names it in errors.
Result<VulkanLimits> vulkanLimitsOf(const json& d, const std::string& origin) {
  try {
    VulkanLimits l;
    l.name = d.at("name").get<std::string>();
    l.max_invocations = d.at("max_invocations").get<int64_t>();
    for (int i = 0; i < 3; ++i) l.max_size[i] = d.at("max_size").at(size_t(i)).get<int64_t>();
    l.shared_bytes = d.at("shared_bytes").get<int64_t>();
    l.subgroup_size = d.at("subgroup_size").get<int64_t>();
    l.float16 = d.at("float16").get<bool>();
    l.vendor_id = d.at("vendor_id").get<uint32_t>();
    l.device_type = d.at("type").get<std::string>();
    // Optional (descriptions from before subgroup size control and cooperative matrices: neither).
    if (d.contains("subgroup_size_range")) {
      l.min_subgroup_size = d.at("subgroup_size_range").at(0).get<int64_t>();
      l.max_subgroup_size = d.at("subgroup_size_range").at(1).get<int64_t>();
    }
    l.subgroup_size_control = d.value("subgroup_size_control", false);
    if (d.contains("cooperative_matrix_shapes"))
      l.coop_matrix_shapes = d.at("cooperative_matrix_shapes").get<std::vector<std::string>>();
    if (l.max_invocations <= 0 || l.shared_bytes <= 0 || l.subgroup_size <= 0 || l.max_size[0] <= 0)
      return Error{origin + ": device '" + l.name + "' has a limit of 0 or less"};
    if (l.subgroup_size_control && (l.min_subgroup_size <= 0 || l.max_subgroup_size < l.min_subgroup_size ||
                                    l.subgroup_size < l.min_subgroup_size || l.subgroup_size > l.max_subgroup_size))
      return Error{origin + ": device '" + l.name + "' has subgroup_size_control but no valid subgroup_size_range around its subgroup_size"};
    return l;
  } catch (const json::exception& e) {
    return Error{origin + ": a device lacks a field or has one of the wrong type (" + std::string(e.what()) + ")"};
  }
}

}  // namespace

Result<VulkanLimits> readVulkanDeviceFile(const std::string& spec) {
  // FILE or FILE:N (the N-th device of the file; default the first).
  std::string path = spec;
  int index = -1;
  if (auto colon = spec.rfind(':'); colon != std::string::npos && colon + 1 < spec.size() &&
                                    spec.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    path = spec.substr(0, colon);
    index = std::stoi(spec.substr(colon + 1));
  }
  std::ifstream f(path);
  if (!f) return Error{"cannot read the Vulkan device description " + path + " (write one with tune hw show vulkan --json)"};
  json j = json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("devices") || !j["devices"].is_array() || j["devices"].empty())
    return Error{path + ": not a Vulkan device description (expected {\"format\": \"sextant-vulkan-devices\", \"devices\": [...]}, "
                 "as tune hw show vulkan --json writes)"};
  const json* pick = nullptr;
  for (const auto& d : j["devices"])
    if (index < 0 || d.value("index", -1) == index) {
      pick = &d;
      break;
    }
  if (!pick) return Error{path + ": no device " + std::to_string(index)};
  return vulkanLimitsOf(*pick, path);
}

Result<VulkanLimits> parseVulkanDevice(const std::string& device_json, const std::string& origin) {
  json d = json::parse(device_json, nullptr, false);
  if (d.is_discarded() || !d.is_object()) return Error{origin + ": the Vulkan device is not a JSON object"};
  return vulkanLimitsOf(d, origin);
}

std::string vulkanDeviceJson(const VulkanLimits& l) {
  return json{{"name", l.name},
              {"type", l.device_type},
              {"vendor_id", l.vendor_id},
              {"class", vulkanDeviceClass(l.vendor_id, l.device_type)},
              {"max_invocations", l.max_invocations},
              {"max_size", {l.max_size[0], l.max_size[1], l.max_size[2]}},
              {"shared_bytes", l.shared_bytes},
              {"subgroup_size", l.subgroup_size},
              {"subgroup_size_range", {l.min_subgroup_size, l.max_subgroup_size}},
              {"subgroup_size_control", l.subgroup_size_control},
              {"float16", l.float16},
              {"cooperative_matrix_shapes", l.coop_matrix_shapes}}
      .dump();
}

Status applyVulkanDeviceFile(GpuTargetInfo& g, const Target& t, const std::string& spec, VulkanLimits* applied) {
  if (spec.empty()) return okStatus();
  if (t.kind != TargetKind::Vulkan) return Error{"--vulkan-device is for the vulkan target"};
  auto l = readVulkanDeviceFile(spec);
  if (!l) return Error{l.error()};
  applyVulkanLimits(g, *l);
  if (applied) *applied = *l;
  return okStatus();
}

int cmdHwShowVulkan(bool as_json) {
  auto list = listVulkanDevices();
  if (as_json) {
    if (!list) return fail(list.error());
    printf("%s\n", vulkanDevicesJson(*list).c_str());
    return 0;
  }
  if (!list) {
    printf("vulkan: %s\n", list.error().c_str());
    return 0;
  }
  if (list->empty()) printf("vulkan: no device\n");
  for (const auto& d : *list) {
    printf("vulkan:%d  %s (%s%s), Vulkan %s, driver %s, vendor id 0x%04x\n", d.index, d.name.c_str(), d.type.c_str(),
           d.type == "cpu" ? ": CPU-emulated, its timings verify kernels and measure no GPU" : "", d.api_version.c_str(),
           d.driver_version.c_str(), d.vendor_id);
    printf("  workgroup        %lld invocations at most, size up to %lld x %lld x %lld; %lld KiB of workgroup memory\n",
           (long long)d.limits.max_invocations, (long long)d.limits.max_size[0], (long long)d.limits.max_size[1],
           (long long)d.limits.max_size[2], (long long)(d.limits.shared_bytes >> 10));
    printf("  subgroup size    %lld", (long long)d.limits.subgroup_size);
    if (d.limits.subgroup_size_control && d.limits.min_subgroup_size < d.limits.max_subgroup_size)
      printf(" (compute pipelines may require %lld to %lld: the space's subgroup knob)", (long long)d.limits.min_subgroup_size,
             (long long)d.limits.max_subgroup_size);
    printf("\n  timestamps       %.3g ns per tick\n", double(d.timestamp_period_ns));
    std::string shapes;
    for (const auto& s : d.limits.coop_matrix_shapes) shapes += (shapes.empty() ? "" : ", ") + s;
    const bool coop_used = std::find(d.limits.coop_matrix_shapes.begin(), d.limits.coop_matrix_shapes.end(),
                                     std::string(kVulkanCoopMatrixShape)) != d.limits.coop_matrix_shapes.end();
    printf("  shaderFloat16    %s (f16 GEMM inputs); VK_KHR_cooperative_matrix %s%s\n", d.float16 ? "yes" : "no",
           d.cooperative_matrix ? "yes" : "no",
           !d.cooperative_matrix ? ""
           : shapes.empty()      ? " (no subgroup shape listed, or a device before Vulkan 1.3: not used)"
           : coop_used           ? (" (" + shapes + "; the space uses " + kVulkanCoopMatrixShape + ")").c_str()
                                 : (" (" + shapes + "; not the space's " + kVulkanCoopMatrixShape + ")").c_str());
    // The Blueprint needs datasheet figures (TFLOP/s, bandwidth, L2) that Vulkan does not report:
    // the table's entry for the device's name, where it has one.
    if (const DeviceSpec* e = builtinDeviceTable().matchName(d.name)) {
      static const Blueprint bp = fitBlueprint(builtinDeviceTable());
      printf("  datasheet        %s (%s): Blueprint", e->name.c_str(), e->display.c_str());
      for (double x : bp.embed(*e)) printf(" %+.3f", x);
      printf(" (table v%d; tune hw show %s)\n", bp.table_version, e->name.c_str());
    } else {
      printf("  datasheet        none in the table for this name: no Blueprint (TFLOP/s and bandwidth are not "
             "Vulkan properties)\n");
    }
    const std::string cls = vulkanDeviceClass(d.vendor_id, d.type);
    const VulkanVendorConfig c = vulkanVendorConfig(cls, DType::F32);
    printf("  device class     %s: the default schedule and first seed follow IREE's %s configuration (f32: %lldx%lld "
           "invocations, %lldx%lldx%lld per invocation, %s)\n",
           cls.c_str(), cls == "cpu" || cls == "other" ? "fallback" : cls.c_str(), (long long)c.wg_x, (long long)c.wg_y,
           (long long)c.thread_m, (long long)c.thread_n, (long long)c.thread_k,
           c.promote ? "A and B in workgroup memory" : "no workgroup memory");
  }
  return 0;
}

}  // namespace sextant::cli
