// Private to runtime/src/vulkan_*.cpp: the Vulkan entry points Sextant uses (loaded at run time),
// the instance (with the validation layer on request), device properties and what a SPIR-V module
// declares. Needs the Vulkan headers (libvulkan-dev); the includers check SEXTANT_HAVE_VULKAN_HEADERS.
#pragma once

#if __has_include(<vulkan/vulkan.h>)
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#define SEXTANT_HAVE_VULKAN_HEADERS 1
#endif

#ifdef SEXTANT_HAVE_VULKAN_HEADERS
#include <mutex>
#include <string>
#include <vector>

#include "sextant/common/result.h"
#include "sextant/runtime/gpu_runner.h"

namespace sextant::vk {

std::string vkName(VkResult r);

// The entry points used, loaded through vkGetInstanceProcAddr / vkGetDeviceProcAddr.
#define SEXTANT_VK_INSTANCE_FNS(X)                                                                              \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)                          \
  X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)                              \
  X(vkEnumerateDeviceExtensionProperties)
#define SEXTANT_VK_DEVICE_FNS(X)                                                                                 \
  X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements)   \
  X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory)                      \
  X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) \
  X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline)          \
  X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets)      \
  X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkResetCommandPool) X(vkAllocateCommandBuffers)               \
  X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets)                  \
  X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdFillBuffer) X(vkCmdCopyBuffer) X(vkCmdWriteTimestamp)          \
  X(vkCmdResetQueryPool) X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkGetQueryPoolResults) X(vkQueueSubmit)    \
  X(vkCreateFence) X(vkDestroyFence) X(vkResetFences) X(vkGetFenceStatus) X(vkWaitForFences) X(vkDeviceWaitIdle)  \
  X(vkCreatePipelineCache) X(vkDestroyPipelineCache) X(vkGetPipelineCacheData)

struct VkApi {
  void* lib = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkCreateInstance vkCreateInstance = nullptr;
  PFN_vkEnumerateInstanceLayerProperties vkEnumerateInstanceLayerProperties = nullptr;
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;
#define X(f) PFN_##f f = nullptr;
  SEXTANT_VK_INSTANCE_FNS(X)
  SEXTANT_VK_DEVICE_FNS(X)
#undef X
};

// Validation messages of the current call (the callback may run on any thread).
struct Messages {
  std::mutex mu;
  std::vector<std::string> list;
  std::string take() {
    std::lock_guard<std::mutex> l(mu);
    std::string s;
    for (auto& m : list) s += (s.empty() ? "" : " | ") + m;
    list.clear();
    return s;
  }
};

// What the SPIR-V module declares: its storage-buffer bindings (set 0) and its workgroup size.
struct SpirvFacts {
  uint32_t bindings = 0;
  uint32_t local_size[3] = {0, 0, 0};
};
// The bindings and LocalSize of a SPIR-V binary, or why it is not one.
Result<SpirvFacts> readSpirv(const std::string& image);

// An instance (validation on request) with its instance-level entry points.
struct Instance {
  VkApi api;
  VkInstance inst = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  bool validation = false;
  Messages* messages = nullptr;
};
// libvulkan loaded (once per process) and an instance made; messages collects the validation
// layer's words (SEXTANT_VULKAN_VALIDATION=1).
Result<Instance> createInstance(Messages* messages);
void destroyInstance(Instance& in);
VulkanDeviceProps propsOf(const Instance& in, VkPhysicalDevice pd, int index);

// VK_KHR_cooperative_matrix, declared here: Debian bookworm's Vulkan headers (1.3.239) predate it
// (1.3.255). Values from the Vulkan registry.
inline constexpr VkStructureType kCoopMatrixFeaturesKHR = VkStructureType(1000506000);
inline constexpr VkStructureType kCoopMatrixPropertiesKHR = VkStructureType(1000506001);
struct CoopMatrixFeaturesKHR {
  VkStructureType sType = kCoopMatrixFeaturesKHR;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE, cooperativeMatrixRobustBufferAccess = VK_FALSE;
};
struct CoopMatrixPropertiesKHR {
  VkStructureType sType = kCoopMatrixPropertiesKHR;
  void* pNext = nullptr;
  uint32_t MSize = 0, NSize = 0, KSize = 0;
  int32_t AType = 0, BType = 0, CType = 0, ResultType = 0;  // VkComponentTypeKHR
  VkBool32 saturatingAccumulation = VK_FALSE;
  int32_t scope = 0;                                         // VkScopeKHR (3: subgroup)
};

// A Vulkan structure of type `type`, every other member zero (no missing-initializer warning).
template <typename T>
T vkStruct(VkStructureType type) {
  T s{};
  s.sType = type;
  return s;
}

// What a device is created with beyond Vulkan 1.1: f16 inputs, subgroup size control and
// cooperative matrices where it has them (pNext chain of VkDeviceCreateInfo and the extensions).
struct DeviceFeatureChain {
  VkPhysicalDeviceShaderFloat16Int8Features f16 = vkStruct<VkPhysicalDeviceShaderFloat16Int8Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  VkPhysicalDevice16BitStorageFeatures s16 = vkStruct<VkPhysicalDevice16BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  VkPhysicalDeviceSubgroupSizeControlFeatures ssc = vkStruct<VkPhysicalDeviceSubgroupSizeControlFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES);
  VkPhysicalDeviceVulkanMemoryModelFeatures vmm = vkStruct<VkPhysicalDeviceVulkanMemoryModelFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES);
  CoopMatrixFeaturesKHR coop;
  std::vector<const char*> extensions;
  void* head = nullptr;
  explicit DeviceFeatureChain(const VulkanDeviceProps& p);
  DeviceFeatureChain(const DeviceFeatureChain&) = delete;  // the chain points into itself
};

// The device's pipeline cache (vulkan_pipeline_cache.cpp), kept on disk between processes so that
// a kernel's shader is compiled once per machine, driver and device (tune-runner measures each
// batch in a fresh process): $SEXTANT_VULKAN_PIPELINE_CACHE (a directory; "off": none), else
// $XDG_CACHE_HOME/sextant or ~/.cache/sextant. A file whose header is not this device's (vendor,
// device, pipelineCacheUUID) is ignored and replaced.
struct PipelineCache {
  VkPipelineCache cache = VK_NULL_HANDLE;
  std::string path;          // empty: not kept on disk
  bool loaded = false;       // the file's data seeded the cache
  void open(const VkApi& api, VkDevice dev, VkPhysicalDevice pd);
  void save(const VkApi& api, VkDevice dev) const;  // written to a temporary file, then renamed
  void destroy(const VkApi& api, VkDevice dev);
};

}  // namespace sextant::vk

#endif  // SEXTANT_HAVE_VULKAN_HEADERS
