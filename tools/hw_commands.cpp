// tune hw check (the GPUs and Vulkan devices this machine has, compared with the device table) and
// tune hw show vulkan (every Vulkan device with the limits the Vulkan schedule space takes from it).
#include <cmath>
#include <cstdio>

#include "commands.h"
#include "sextant/hwspec/devices.h"
#include "sextant/runtime/gpu_runner.h"

namespace sextant::cli {

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
  cmdHwShowVulkan();
  return 0;
}

int cmdHwShowVulkan() {
  auto list = listVulkanDevices();
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
    printf("  subgroup size    %lld\n", (long long)d.limits.subgroup_size);
    printf("  timestamps       %.3g ns per tick\n", double(d.timestamp_period_ns));
    printf("  shaderFloat16    %s; VK_KHR_cooperative_matrix %s (neither is used by the space yet)\n",
           d.float16 ? "yes" : "no", d.cooperative_matrix ? "yes" : "no");
  }
  return 0;
}

}  // namespace sextant::cli
