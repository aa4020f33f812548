// A machine's Vulkan devices as a description (JSON, format "sextant-vulkan-devices"): what `tune hw
// show vulkan --json` and `tune-runner --describe-vulkan` write, and `tune --vulkan-device` reads on
// another machine (tools/hw_commands.cpp) to compile for that device's limits, class, subgroup sizes
// and cooperative-matrix shapes.
#include <nlohmann/json.hpp>

#include "sextant/runtime/gpu_runner.h"

namespace sextant {

std::string vulkanDevicesJson(const std::vector<VulkanDeviceProps>& devices) {
  nlohmann::json j{{"format", "sextant-vulkan-devices"}, {"version", 1}, {"devices", nlohmann::json::array()}};
  for (const auto& d : devices)
    j["devices"].push_back({{"index", d.index},
                            {"name", d.name},
                            {"type", d.type},
                            {"vendor_id", d.vendor_id},
                            {"class", vulkanDeviceClass(d.vendor_id, d.type)},
                            {"api_version", d.api_version},
                            {"driver_version", d.driver_version},
                            {"max_invocations", d.limits.max_invocations},
                            {"max_size", {d.limits.max_size[0], d.limits.max_size[1], d.limits.max_size[2]}},
                            {"max_groups", {d.max_groups[0], d.max_groups[1], d.max_groups[2]}},
                            {"shared_bytes", d.limits.shared_bytes},
                            {"subgroup_size", d.limits.subgroup_size},
                            {"subgroup_size_range", {d.limits.min_subgroup_size, d.limits.max_subgroup_size}},
                            {"subgroup_size_control", d.limits.subgroup_size_control},
                            {"timestamp_period_ns", d.timestamp_period_ns},
                            {"float16", d.float16},
                            {"cooperative_matrix", d.cooperative_matrix},
                            {"cooperative_matrix_shapes", d.limits.coop_matrix_shapes}});
  return j.dump(2);
}

}  // namespace sextant
