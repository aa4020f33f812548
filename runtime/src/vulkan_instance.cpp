// The Vulkan loader, instance, device properties and SPIR-V reading (vulkan_internal.h); the device
// itself is in vulkan_device.cpp.
#include "vulkan_internal.h"

// Vulkan structs are written `VkFoo f{VK_STRUCTURE_TYPE_FOO};`: the rest is value-initialised
// (zero), as the API expects; GCC's -Wextra would name every member left out.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#ifdef SEXTANT_HAVE_VULKAN_HEADERS
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace sextant::vk {

namespace {

struct LoadedApi {
  VkApi api;
  std::string error;
};
// libvulkan and the global entry points, once per process.
const LoadedApi& loadApi() {
  static LoadedApi l = [] {
    LoadedApi r;
    const char* path = std::getenv("SEXTANT_VULKAN_LIB");
    r.api.lib = dlopen(path ? path : "libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!r.api.lib) {
      const char* e = dlerror();
      r.error = std::string("libvulkan.so.1 not loadable: ") + (e ? e : "?") + "; install libvulkan1 and a driver "
                "(Mesa's lavapipe: mesa-vulkan-drivers)";
      return r;
    }
    r.api.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(r.api.lib, "vkGetInstanceProcAddr"));
    if (!r.api.vkGetInstanceProcAddr) {
      r.error = "libvulkan has no vkGetInstanceProcAddr";
      return r;
    }
    r.api.vkCreateInstance =
        reinterpret_cast<PFN_vkCreateInstance>(r.api.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"));
    r.api.vkEnumerateInstanceLayerProperties = reinterpret_cast<PFN_vkEnumerateInstanceLayerProperties>(
        r.api.vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceLayerProperties"));
    if (!r.api.vkCreateInstance) r.error = "libvulkan has no vkCreateInstance";
    return r;
  }();
  return l;
}

}  // namespace

std::string vkName(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "VkResult " + std::to_string(int(r));
  }
}


static VKAPI_ATTR VkBool32 VKAPI_CALL onMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
                                         const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  auto* m = static_cast<Messages*>(user);
  std::lock_guard<std::mutex> l(m->mu);
  m->list.push_back(data && data->pMessage ? data->pMessage : "(no text)");
  return VK_FALSE;
}

Result<SpirvFacts> readSpirv(const std::string& image) {
  if (image.size() < 20 || image.size() % 4) return Error{"not a SPIR-V module (size " + std::to_string(image.size()) + ")"};
  std::vector<uint32_t> w(image.size() / 4);
  std::memcpy(w.data(), image.data(), image.size());
  if (w[0] != 0x07230203u) return Error{"not a SPIR-V module (bad magic number)"};
  SpirvFacts f;
  for (size_t i = 5; i < w.size();) {
    const uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
    if (count == 0 || i + count > w.size()) return Error{"malformed SPIR-V instruction stream"};
    if (op == 71 && count >= 4 && w[i + 2] == 33) f.bindings = std::max(f.bindings, w[i + 3] + 1);  // OpDecorate Binding
    if (op == 16 && count >= 6 && w[i + 2] == 17)  // OpExecutionMode LocalSize
      for (int d = 0; d < 3; ++d) f.local_size[d] = w[i + 3 + d];
    i += count;
  }
  return f;
}

Result<Instance> createInstance(Messages* messages) {
  const LoadedApi& l = loadApi();
  if (!l.error.empty()) return Error{l.error};
  Instance in;
  in.api = l.api;
  in.messages = messages;
  const char* v = std::getenv("SEXTANT_VULKAN_VALIDATION");
  in.validation = v && std::string(v) != "0";
  std::vector<const char*> layers, exts;
  if (in.validation) {
    uint32_t n = 0;
    in.api.vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    in.api.vkEnumerateInstanceLayerProperties(&n, props.data());
    bool found = std::any_of(props.begin(), props.end(),
                             [](const VkLayerProperties& p) { return std::string(p.layerName) == "VK_LAYER_KHRONOS_validation"; });
    if (!found)
      return Error{"SEXTANT_VULKAN_VALIDATION is set but the layer VK_LAYER_KHRONOS_validation is not installed "
                   "(Debian: vulkan-validationlayers)"};
    layers.push_back("VK_LAYER_KHRONOS_validation");
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "sextant";
  app.apiVersion = VK_API_VERSION_1_2;  // f16 (shaderFloat16) is core in 1.2
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = uint32_t(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = uint32_t(exts.size());
  ci.ppEnabledExtensionNames = exts.data();
  if (VkResult r = in.api.vkCreateInstance(&ci, nullptr, &in.inst); r != VK_SUCCESS)
    return Error{"vkCreateInstance: " + vkName(r) + (r == VK_ERROR_INCOMPATIBLE_DRIVER ? " (no Vulkan 1.1 driver)" : "")};
#define X(f) in.api.f = reinterpret_cast<PFN_##f>(in.api.vkGetInstanceProcAddr(in.inst, #f));
  SEXTANT_VK_INSTANCE_FNS(X)
#undef X
  if (in.validation) {
    in.api.vkCreateDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        in.api.vkGetInstanceProcAddr(in.inst, "vkCreateDebugUtilsMessengerEXT"));
    in.api.vkDestroyDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        in.api.vkGetInstanceProcAddr(in.inst, "vkDestroyDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mi.pfnUserCallback = onMessage;
    mi.pUserData = messages;
    if (in.api.vkCreateDebugUtilsMessengerEXT)
      in.api.vkCreateDebugUtilsMessengerEXT(in.inst, &mi, nullptr, &in.messenger);
  }
  return in;
}

void destroyInstance(Instance& in) {
  if (in.inst == VK_NULL_HANDLE) return;
  if (in.messenger && in.api.vkDestroyDebugUtilsMessengerEXT) in.api.vkDestroyDebugUtilsMessengerEXT(in.inst, in.messenger, nullptr);
  in.api.vkDestroyInstance(in.inst, nullptr);
  in.inst = VK_NULL_HANDLE;
}

VulkanDeviceProps propsOf(const VkApi& api, VkPhysicalDevice pd, int index) {
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sub;
  api.vkGetPhysicalDeviceProperties2(pd, &p2);
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  f16.pNext = &s16;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f16;
  api.vkGetPhysicalDeviceFeatures2(pd, &f2);
  const VkPhysicalDeviceProperties& p = p2.properties;
  VulkanDeviceProps d;
  d.index = index;
  d.name = p.deviceName;
  d.type = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU              ? "cpu"
           : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU   ? "discrete-gpu"
           : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? "integrated-gpu"
           : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU    ? "virtual-gpu"
                                                                    : "other";
  d.api_version = std::to_string(VK_API_VERSION_MAJOR(p.apiVersion)) + "." + std::to_string(VK_API_VERSION_MINOR(p.apiVersion)) +
                  "." + std::to_string(VK_API_VERSION_PATCH(p.apiVersion));
  d.driver_version = std::to_string(p.driverVersion);
  d.vendor_id = p.vendorID;
  d.limits.name = d.name;
  d.limits.vendor_id = d.vendor_id;
  d.limits.device_type = d.type;
  d.limits.max_invocations = p.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) d.limits.max_size[i] = p.limits.maxComputeWorkGroupSize[i], d.max_groups[i] = p.limits.maxComputeWorkGroupCount[i];
  d.limits.shared_bytes = p.limits.maxComputeSharedMemorySize;
  d.limits.subgroup_size = sub.subgroupSize;
  d.timestamp_period_ns = p.limits.timestampPeriod;
  d.float16 = f16.shaderFloat16 == VK_TRUE && s16.storageBuffer16BitAccess == VK_TRUE;
  d.limits.float16 = d.float16;
  uint32_t n = 0;
  api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (auto& e : ext) d.cooperative_matrix |= std::string(e.extensionName) == "VK_KHR_cooperative_matrix";
  return d;
}

}  // namespace sextant::vk

#endif  // SEXTANT_HAVE_VULKAN_HEADERS
