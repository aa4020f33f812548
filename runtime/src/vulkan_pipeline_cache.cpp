// The Vulkan runner's pipeline cache on disk (vulkan_internal.h says where and why).
#include "vulkan_internal.h"

#ifdef SEXTANT_HAVE_VULKAN_HEADERS
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sextant::vk {

namespace {

std::string cacheDir() {
  if (const char* d = std::getenv("SEXTANT_VULKAN_PIPELINE_CACHE")) return std::string(d) == "off" ? "" : d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/sextant";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/sextant";
  return "";
}

// VK_PIPELINE_CACHE_HEADER_VERSION_ONE: header size, version, vendor ID, device ID, UUID.
bool headerMatches(const std::string& data, const VkPhysicalDeviceProperties& p) {
  if (data.size() < 16 + VK_UUID_SIZE) return false;
  uint32_t w[4];
  std::memcpy(w, data.data(), sizeof w);
  return w[0] >= 16 + VK_UUID_SIZE && w[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && w[2] == p.vendorID &&
         w[3] == p.deviceID && std::memcmp(data.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

}  // namespace

void PipelineCache::open(const VkApi& api, VkDevice dev, VkPhysicalDevice pd) {
  VkPhysicalDeviceProperties p{};
  api.vkGetPhysicalDeviceProperties(pd, &p);
  const std::string dir = cacheDir();
  std::string data;
  if (!dir.empty()) {
    char name[96];
    snprintf(name, sizeof name, "vulkan-pipelines-%04x-%04x-%u.bin", p.vendorID, p.deviceID, p.driverVersion);
    path = dir + "/" + name;
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    data = ss.str();
    if (!headerMatches(data, p)) data.clear();  // another driver's, or damaged: start empty
  }
  VkPipelineCacheCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  ci.initialDataSize = data.size();
  ci.pInitialData = data.empty() ? nullptr : data.data();
  if (api.vkCreatePipelineCache(dev, &ci, nullptr, &cache) != VK_SUCCESS) {
    ci.initialDataSize = 0, ci.pInitialData = nullptr;  // the driver refused the data: an empty cache
    data.clear();
    if (api.vkCreatePipelineCache(dev, &ci, nullptr, &cache) != VK_SUCCESS) cache = VK_NULL_HANDLE;
  }
  loaded = cache != VK_NULL_HANDLE && !data.empty();
}

void PipelineCache::save(const VkApi& api, VkDevice dev) const {
  if (cache == VK_NULL_HANDLE || path.empty()) return;
  size_t n = 0;
  if (api.vkGetPipelineCacheData(dev, cache, &n, nullptr) != VK_SUCCESS || n == 0) return;
  std::string data(n, '\0');
  if (api.vkGetPipelineCacheData(dev, cache, &n, data.data()) != VK_SUCCESS) return;
  data.resize(n);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Written beside, then renamed: another process reading it sees the old file or the new one.
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(data.data(), std::streamsize(data.size()));
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return;  // a cache that cannot be written only costs compile time
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

void PipelineCache::destroy(const VkApi& api, VkDevice dev) {
  if (cache != VK_NULL_HANDLE) api.vkDestroyPipelineCache(dev, cache, nullptr);
  cache = VK_NULL_HANDLE;
}

}  // namespace sextant::vk
#endif  // SEXTANT_HAVE_VULKAN_HEADERS
