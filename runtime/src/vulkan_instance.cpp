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
  app.apiVersion = VK_API_VERSION_1_3;  // f16 (core in 1.2); subgroup size control and SPIR-V 1.6 (1.3)
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

namespace {

const char* componentName(int32_t t) {
  static const char* names[] = {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"};
  return t >= 0 && t < 11 ? names[t] : "?";
}

bool hasExtension(const std::vector<VkExtensionProperties>& ext, const char* name) {
  return std::any_of(ext.begin(), ext.end(), [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

}  // namespace

VulkanDeviceProps propsOf(const Instance& in, VkPhysicalDevice pd, int index) {
  const VkApi& api = in.api;
  VkPhysicalDeviceProperties core{};
  api.vkGetPhysicalDeviceProperties(pd, &core);
  uint32_t n = 0;
  api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  // Subgroup size control: core in 1.3, an extension before (same structures); chained only where
  // the device knows them (the validation layer flags any other).
  const bool v13 = core.apiVersion >= VK_API_VERSION_1_3;
  const bool ssc_ext = !v13 && hasExtension(ext, "VK_EXT_subgroup_size_control");
  // Cooperative-matrix kernels are SPIR-V 1.6: a 1.3 device with the extension.
  const bool coop_ext = v13 && hasExtension(ext, "VK_KHR_cooperative_matrix");

  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties sscp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sub;
  if (v13 || ssc_ext) sub.pNext = &sscp;
  api.vkGetPhysicalDeviceProperties2(pd, &p2);
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures sscf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  CoopMatrixFeaturesKHR coopf;
  VkPhysicalDeviceVulkanMemoryModelFeatures vmmf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  f16.pNext = &s16;
  void** tail = &s16.pNext;
  if (v13 || ssc_ext) *tail = &sscf, tail = &sscf.pNext;
  if (coop_ext) *tail = &coopf, coopf.pNext = &vmmf;
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
  d.api = p.apiVersion;
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
  if (v13 || ssc_ext) {
    d.limits.min_subgroup_size = sscp.minSubgroupSize;
    d.limits.max_subgroup_size = sscp.maxSubgroupSize;
    d.limits.subgroup_size_control =
        sscf.subgroupSizeControl == VK_TRUE && (sscp.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    d.subgroup_control_ext = ssc_ext && d.limits.subgroup_size_control;
  }
  d.timestamp_period_ns = p.limits.timestampPeriod;
  d.float16 = f16.shaderFloat16 == VK_TRUE && s16.storageBuffer16BitAccess == VK_TRUE;
  d.limits.float16 = d.float16;
  d.cooperative_matrix = hasExtension(ext, "VK_KHR_cooperative_matrix");
  using ListFn = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CoopMatrixPropertiesKHR*);
  // Cooperative-matrix shaders use the Vulkan memory model: both features or no shapes.
  auto list = coop_ext && coopf.cooperativeMatrix == VK_TRUE && vmmf.vulkanMemoryModel == VK_TRUE
                  ? reinterpret_cast<ListFn>(api.vkGetInstanceProcAddr(in.inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"))
                  : nullptr;
  if (list) {
    uint32_t k = 0;
    list(pd, &k, nullptr);
    std::vector<CoopMatrixPropertiesKHR> cm(k);
    if (list(pd, &k, cm.data()) == VK_SUCCESS)
      for (uint32_t i = 0; i < k; ++i)
        if (cm[i].scope == 3 && !cm[i].saturatingAccumulation)  // VK_SCOPE_SUBGROUP_KHR
          d.limits.coop_matrix_shapes.push_back(std::to_string(cm[i].MSize) + "x" + std::to_string(cm[i].NSize) + "x" +
                                                std::to_string(cm[i].KSize) + ":" + componentName(cm[i].AType) + "," +
                                                componentName(cm[i].BType) + "," + componentName(cm[i].CType) + "," +
                                                componentName(cm[i].ResultType));
  }
  return d;
}

DeviceFeatureChain::DeviceFeatureChain(const VulkanDeviceProps& p) {
  void** tail = &head;
  // f16 GEMM inputs: shaderFloat16 and 16-bit storage buffers, where the device has both.
  if (p.float16) {
    f16.shaderFloat16 = VK_TRUE;
    s16.storageBuffer16BitAccess = VK_TRUE;
    *tail = &f16, f16.pNext = &s16, tail = &s16.pNext;
  }
  // Kernels that require a subgroup size (the space's `subgroup` knob).
  if (p.limits.subgroup_size_control) {
    ssc.subgroupSizeControl = VK_TRUE;
    *tail = &ssc, tail = &ssc.pNext;
    if (p.subgroup_control_ext) extensions.push_back("VK_EXT_subgroup_size_control");
  }
  // Cooperative-matrix kernels, where the device lists the space's shape; they use the Vulkan
  // memory model (core feature of 1.2, required with cooperative matrices).
  if (!p.limits.coop_matrix_shapes.empty()) {
    coop.cooperativeMatrix = VK_TRUE;
    vmm.vulkanMemoryModel = VK_TRUE;
    *tail = &coop, coop.pNext = &vmm;
    extensions.push_back("VK_KHR_cooperative_matrix");
  }
}

}  // namespace sextant::vk

#endif  // SEXTANT_HAVE_VULKAN_HEADERS
