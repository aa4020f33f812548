#include "sextant/hwspec/gpu_target.h"

#include <algorithm>

#include "sextant/hwspec/devices.h"

namespace sextant {

Result<GpuTargetInfo> gpuTargetInfo(const Target& t) {
  if (!t.isGpu()) return Error{"target '" + t.name + "' is not a GPU target"};
  if (t.kind == TargetKind::Vulkan) {
    GpuTargetInfo g;
    g.target = t;
    g.display = "Vulkan device " + t.device + " (lavapipe's limits until the device is opened)";
    g.chip = t.arch;
    g.compute_units = 1;
    g.warp_size = 8;
    g.max_threads_per_block = 1024;
    g.max_threads_per_cu = 1024;
    g.smem_per_block_bytes = g.smem_per_block_static_bytes = g.smem_per_cu_bytes = 32 * 1024;
    g.has_float16 = true;
    g.vulkan_class = "cpu";
    return g;
  }
  const DeviceSpec* d = builtinDeviceTable().find(t.device);
  if (!d) return Error{"target '" + t.name + "' names device '" + t.device + "', which the device table lacks"};
  GpuTargetInfo g;
  g.target = t;
  g.display = d->display;
  g.chip = t.arch;
  g.compute_units = d->compute_units;
  g.warp_size = d->warp_size;
  g.max_threads_per_block = d->max_threads_per_block;
  g.max_threads_per_cu = d->max_threads_per_cu;
  g.smem_per_block_bytes = int64_t(d->smem_per_block_kb * 1024);
  g.smem_per_cu_bytes = int64_t(d->smem_per_cu_kb * 1024);
  g.regs_per_cu = d->regs_per_cu;
  g.l2_bytes = int64_t(d->l2_mb * 1024 * 1024);
  g.fp32_tflops = d->fp32_tflops;
  g.fp16_tflops = d->fp16_tflops;
  if (t.kind == TargetKind::Nvidia) {
    g.sm_version = std::stoi(t.arch.substr(3));
    // PTX ISA versions that introduced these targets (8.0: sm_90, 7.0: sm_80). LLVM needs them
    // spelled out: the defaults (+ptx60) abort on sm_80+ with an LLVM fatal error.
    g.features = g.sm_version >= 90 ? "+ptx80" : "+ptx76";
    g.smem_per_block_static_bytes = std::min<int64_t>(48 * 1024, g.smem_per_block_bytes);
    g.max_regs_per_thread = 255;
    g.has_mma_sync = g.sm_version >= 80;
    g.has_wgmma = g.sm_version == 90;
    g.has_cp_async = g.sm_version >= 80;
  } else {
    g.smem_per_block_static_bytes = g.smem_per_block_bytes;  // LDS: no static/dynamic split
    g.max_regs_per_thread = 512;
    g.has_mfma = t.arch == "gfx942" || t.arch == "gfx90a";
  }
  return g;
}

void applyVulkanLimits(GpuTargetInfo& g, const VulkanLimits& l) {
  if (!l.name.empty()) g.display = l.name;
  if (l.max_invocations > 0)
    g.max_threads_per_block = g.max_threads_per_cu =
        std::min({l.max_invocations, l.max_size[0] > 0 ? l.max_size[0] : l.max_invocations});
  if (l.shared_bytes > 0) g.smem_per_block_bytes = g.smem_per_block_static_bytes = g.smem_per_cu_bytes = l.shared_bytes;
  if (l.subgroup_size > 0) g.warp_size = l.subgroup_size;
  g.subgroup_sizes.clear();
  if (l.subgroup_size_control && l.min_subgroup_size > 0 && l.max_subgroup_size >= l.min_subgroup_size)
    for (int64_t s = l.min_subgroup_size; s <= l.max_subgroup_size; s *= 2) g.subgroup_sizes.push_back(s);
  g.has_float16 = l.float16;
  g.has_coop_matrix = l.float16 && std::find(l.coop_matrix_shapes.begin(), l.coop_matrix_shapes.end(),
                                             std::string(kVulkanCoopMatrixShape)) != l.coop_matrix_shapes.end();
  if (l.vendor_id != 0 || !l.device_type.empty()) g.vulkan_class = vulkanDeviceClass(l.vendor_id, l.device_type);
}

Occupancy estimateOccupancy(const GpuTargetInfo& g, int64_t threads, int64_t regs, int64_t smem) {
  Occupancy o;
  if (threads <= 0 || threads > g.max_threads_per_block) {
    o.limiter = "threads";
    return o;
  }
  const int64_t warps = (threads + g.warp_size - 1) / g.warp_size;
  int64_t by_threads = g.max_threads_per_cu / (warps * g.warp_size);
  int64_t by_regs = by_threads;
  if (regs > g.max_regs_per_thread) {
    o.limiter = "registers";
    return o;
  }
  if (regs > 0 && g.target.kind == TargetKind::Amd) {
    // CDNA: each of the 4 SIMDs of a CU holds 512 VGPRs per lane (ArchVGPRs + AccVGPRs, allocated
    // in granules of 8) shared by the waves resident on it; a block's waves spread over the SIMDs.
    const int64_t simds = 4, per_simd = 512;
    int64_t alloc = (regs + 7) / 8 * 8;
    int64_t waves_per_simd = per_simd / alloc;
    by_regs = waves_per_simd * simds / warps;
  } else if (regs > 0) {
    // NVIDIA: registers are allocated per warp in units of 256 (8 per thread) from the SM's file.
    int64_t per_thread = (regs + 7) / 8 * 8;
    by_regs = g.regs_per_cu / (per_thread * warps * g.warp_size);
  }
  // NVIDIA (sm_80 and later) reserves 1 KiB of shared memory per resident block for the system
  // (CUDA C++ Programming Guide, "Compute Capability 8.x/9.x": "1 KB of shared memory is reserved
  // for system use"); the per-block limit in the device table already excludes it.
  const int64_t reserved = g.target.kind == TargetKind::Nvidia ? 1024 : 0;
  int64_t by_smem = by_threads;
  if (smem > g.smem_per_block_bytes) by_smem = 0;
  else if (smem + reserved > 0) by_smem = g.smem_per_cu_bytes / (smem + reserved);
  o.blocks_per_cu = std::min({by_threads, by_regs, by_smem, int64_t(32)});
  o.limiter = o.blocks_per_cu == by_smem && by_smem < by_threads   ? "shared memory"
              : o.blocks_per_cu == by_regs && by_regs < by_threads ? "registers"
              : o.blocks_per_cu == by_threads                      ? "threads"
                                                                   : "none";
  o.fraction = double(o.blocks_per_cu * warps * g.warp_size) / double(g.max_threads_per_cu);
  return o;
}

}  // namespace sextant
