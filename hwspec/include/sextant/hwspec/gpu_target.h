// What the GPU schedule space and the pre-flight resource check need to know about a GPU target:
// its limits, read from the device table (hwspec/data/devices.json), plus code-generation facts
// (chip, PTX features) that are properties of the architecture, not of one product.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sextant/common/result.h"
#include "sextant/hwspec/target.h"

namespace sextant {

struct GpuTargetInfo {
  Target target;
  std::string display;          // "NVIDIA H100 SXM5 80GB"
  std::string chip;             // "sm_90", "gfx942"
  std::string features;         // NVPTX: "+ptx80"; AMDGPU: ""
  int sm_version = 0;           // 90 for sm_90; 0 for AMD
  int64_t compute_units = 0;    // SMs / CUs
  int64_t warp_size = 32;       // 32 (NVIDIA) or 64 (AMD wavefront)
  int64_t max_threads_per_block = 1024;
  int64_t max_threads_per_cu = 2048;
  int64_t smem_per_block_bytes = 0;         // the opt-in maximum
  int64_t smem_per_block_static_bytes = 0;  // without dynamic shared memory (48 KiB on NVIDIA)
  int64_t smem_per_cu_bytes = 0;
  int64_t regs_per_cu = 65536;
  int64_t max_regs_per_thread = 255;        // 255 on NVIDIA, 512 VGPRs (incl. AGPRs) on gfx942
  int64_t l2_bytes = 0;
  double fp32_tflops = 0, fp16_tflops = 0;
  bool has_mma_sync = false;    // NVIDIA sm_80+: mma.sync tensor cores reachable from MLIR 22
  bool has_mfma = false;        // AMD CDNA2/3 (gfx90a, gfx942): MFMA matrix cores via amdgpu.mfma
  bool has_cp_async = false;    // NVIDIA sm_80+: asynchronous global->shared copies
  bool has_wgmma = false;       // NVIDIA sm_90 (as sm_90a): warpgroup MMA + TMA
  bool has_float16 = false;     // Vulkan: shaderFloat16 and storageBuffer16BitAccess (f16 GEMM inputs)
  // Vulkan: the device runs 16x16x16 cooperative matrices of f16 x f16 + f32 -> f32 in a subgroup
  // (VK_KHR_cooperative_matrix lists that shape; the space's matrix-unit route).
  bool has_coop_matrix = false;
  // Vulkan: the subgroup sizes a compute pipeline may require (VK_EXT_subgroup_size_control, core
  // in 1.3: the powers of two from minSubgroupSize to maxSubgroupSize where compute shaders may
  // require one); empty: only the device's default (warp_size). The space's `subgroup` knob.
  std::vector<int64_t> subgroup_sizes;
  // Vulkan: the device class whose IREE default configuration is the default schedule and the
  // first seed (vulkanDeviceClass): nvidia, amd, mali, adreno, apple, cpu (lavapipe, SwiftShader),
  // other (Intel and the rest: IREE's fallback). "cpu" until a device is opened (lavapipe's limits).
  std::string vulkan_class;
};

// Vulkan: the limits of Mesa's lavapipe (1,024 invocations, 32 KiB of workgroup memory, subgroups
// of 8) until applyVulkanLimits replaces them with an opened device's.
Result<GpuTargetInfo> gpuTargetInfo(const Target& t);

// A Vulkan device's limits (VkPhysicalDeviceLimits, subgroup properties) as the space uses them.
struct VulkanLimits {
  std::string name;                    // deviceName
  int64_t max_invocations = 0;         // maxComputeWorkGroupInvocations
  int64_t max_size[3] = {0, 0, 0};     // maxComputeWorkGroupSize
  int64_t shared_bytes = 0;            // maxComputeSharedMemorySize
  int64_t subgroup_size = 0;           // VkPhysicalDeviceSubgroupProperties::subgroupSize
  bool float16 = false;                // shaderFloat16 and storageBuffer16BitAccess
  uint32_t vendor_id = 0;              // VkPhysicalDeviceProperties::vendorID (PCI vendor; Mesa 0x10005)
  std::string device_type;             // "cpu", "discrete-gpu", "integrated-gpu", "virtual-gpu", "other"
  // VK_EXT_subgroup_size_control (core in 1.3): the range a pipeline may require, and whether
  // compute shaders may require one (subgroupSizeControl and requiredSubgroupSizeStages).
  int64_t min_subgroup_size = 0, max_subgroup_size = 0;
  bool subgroup_size_control = false;
  // VK_KHR_cooperative_matrix: the subgroup-scope shapes the device lists, "MxNxK:A,B,C,R"
  // ("16x16x16:f16,f16,f32,f32"); empty without the extension.
  std::vector<std::string> coop_matrix_shapes;
};
// The cooperative-matrix shape the Vulkan space uses (f16 GEMM inputs, f32 accumulation).
inline constexpr const char* kVulkanCoopMatrixShape = "16x16x16:f16,f16,f32,f32";
// The device class of a Vulkan device from its vendor ID and type (GpuTargetInfo::vulkan_class).
std::string vulkanDeviceClass(uint32_t vendor_id, const std::string& device_type);
void applyVulkanLimits(GpuTargetInfo& g, const VulkanLimits& l);

// Occupancy: resident blocks per SM/CU given a kernel's resources (0: it cannot run at all).
struct Occupancy {
  int64_t blocks_per_cu = 0;
  double fraction = 0;          // resident threads / max threads per CU
  std::string limiter;          // "registers", "shared memory", "threads", "none"
};
Occupancy estimateOccupancy(const GpuTargetInfo& g, int64_t threads_per_block, int64_t regs_per_thread,
                            int64_t smem_bytes);

}  // namespace sextant
