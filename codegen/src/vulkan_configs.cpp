// IREE's default SPIR-V matmul configurations per device class, as Sextant's Vulkan defaults and
// first seeds (issue #33). From iree-org/iree compiler/src/iree/compiler/Codegen/SPIRV/:
// MaliConfig.cpp, AdrenoConfig.cpp, AMDConfig.cpp, NVIDIAConfig.cpp, AppleConfig.cpp (the
// bestWorkgroupSizeXY and bestThreadTileSizeMNK each passes to setMatmulOpConfig, and whether it
// enables promotion) and KernelConfig.cpp (the fallback for every other device: Intel, lavapipe,
// SwiftShader). IREE's cooperative-matrix configurations (tried first on AMD RDNA3 and NVIDIA for
// f16) have no counterpart here: this space has no cooperative-matrix kernels.
//
// What the space can hold differs: thread tiles at most 4 columns wide (SPIR-V vectors), K chunks
// of at least 16, block tiles of 16-256; vulkanConfigCandidate takes the nearest valid point, so a
// configuration is followed where the space allows and approximated where it does not.
#include "sextant/codegen/gpu_schedule.h"

#include <algorithm>
#include <set>

namespace sextant {

const std::vector<std::string>& vulkanDeviceClasses() {
  static const std::vector<std::string> c = {"nvidia", "amd", "mali", "adreno", "apple", "cpu", "other"};
  return c;
}

VulkanVendorConfig vulkanVendorConfig(const std::string& cls, DType a_type) {
  const bool f16 = a_type == DType::F16;
  // {class, wg_x, wg_y, thread_m, thread_n, thread_k, promote}
  if (cls == "mali")  // subgroup 16: (subgroup / 2, 2) invocations
    return f16 ? VulkanVendorConfig{cls, 8, 2, 2, 8, 8, false} : VulkanVendorConfig{cls, 8, 2, 6, 4, 4, false};
  if (cls == "adreno")  // subgroup 64
    return f16 ? VulkanVendorConfig{cls, 32, 2, 16, 8, 8, false} : VulkanVendorConfig{cls, 32, 2, 16, 4, 4, false};
  if (cls == "amd")  // RDNA, subgroup 64: (32, 8); A and B promoted, 2-stage pipeline in IREE
    return f16 ? VulkanVendorConfig{cls, 32, 8, 8, 8, 32, true} : VulkanVendorConfig{cls, 32, 8, 8, 4, 16, true};
  if (cls == "nvidia")  // subgroup 32: (32, 8); promoted
    return f16 ? VulkanVendorConfig{cls, 32, 8, 8, 8, 32, true} : VulkanVendorConfig{cls, 32, 8, 4, 4, 32, true};
  if (cls == "apple")  // a fixed 256 x 1 workgroup
    return f16 ? VulkanVendorConfig{cls, 256, 1, 4, 8, 8, false} : VulkanVendorConfig{cls, 256, 1, 4, 4, 4, false};
  // cpu, other and anything unknown: IREE's fallback (32 x 2 invocations, not promoted).
  const std::string c = cls == "cpu" ? "cpu" : "other";
  return f16 ? VulkanVendorConfig{c, 32, 2, 8, 8, 8, false} : VulkanVendorConfig{c, 32, 2, 8, 8, 4, false};
}

Candidate vulkanConfigCandidate(const Space& space, const VulkanVendorConfig& c) {
  return nearestGpuCandidate(space, {{"block_m", c.blockM()},
                                     {"block_n", c.blockN()},
                                     {"block_k", c.thread_k},
                                     {"mma", 0},
                                     {"thread_m", c.thread_m},
                                     {"thread_n", c.thread_n},
                                     {"copy_bits", c.promote ? 128 : 32},
                                     {"pipeline", 1},
                                     {"promote", c.promote ? 3 : 0},
                                     {"vec4", 1}});  // IREE vectorizes the loads and stores (vec4)
}

std::vector<Candidate> vulkanVendorSeeds(const GemmWorkload& w, const Space& space, const GpuTargetInfo& g) {
  std::vector<Candidate> out;
  std::set<uint64_t> seen;
  if (space.size() == 0) return out;
  std::vector<std::string> order = {g.vulkan_class.empty() ? "cpu" : g.vulkan_class};
  for (const auto& c : vulkanDeviceClasses())
    if (c != order.front()) order.push_back(c);
  for (const auto& cls : order) {
    Candidate c = vulkanConfigCandidate(space, vulkanVendorConfig(cls, w.a_type));
    if (!c.empty() && seen.insert(space.encode(c)).second) out.push_back(c);
  }
  // Where the space has cooperative matrices (f16 on a device listing the shape): IREE tries them
  // first on such devices; here one seed, 64x64 blocks of four 32x32 subgroup tiles, K 32, promoted.
  const int mma = space.knobIndex("mma");
  if (mma >= 0 && std::find(space.knobs()[size_t(mma)].values.begin(), space.knobs()[size_t(mma)].values.end(), 1) !=
                      space.knobs()[size_t(mma)].values.end()) {
    Candidate c = nearestGpuCandidate(space, {{"block_m", 64}, {"block_n", 64}, {"block_k", 32}, {"mma", 1}, {"warp_m", 32},
                                              {"warp_n", 32}, {"copy_bits", 128}, {"promote", 3}, {"vec4", 1}});
    if (!c.empty() && space.values(c)[size_t(mma)] == 1 && seen.insert(space.encode(c)).second) out.push_back(c);
  }
  return out;
}

}  // namespace sextant
