// The Vulkan backend (issue #33): the GpuDevice of gpu_runner.h on Vulkan compute, libvulkan loaded
// with dlopen at run time (a machine without it gets one line, not a link error). One persistent
// instance, device and queue; a buffer per allocation (host-visible memory mapped where the device
// has it, else device-local memory filled through a staging buffer); a compute pipeline per kernel
// (kernel argument i = storage buffer binding i of set 0); commands recorded into one command buffer
// until an event is queried, then submitted with a fence; the two timing events are timestamp
// queries. SEXTANT_VULKAN_VALIDATION=1 turns on the Khronos validation layer: any message it emits
// fails the call that caused it.
//
// Mesa's lavapipe (llvmpipe) runs these kernels on the CPU: its DeviceInfo says "cpu-emulated" in
// the architecture, so that no record, dataset or report mistakes it for a GPU.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "sextant/runtime/gpu_runner.h"
#include "vulkan_internal.h"

// Vulkan structs are written `VkFoo f{VK_STRUCTURE_TYPE_FOO};`: the rest is value-initialised
// (zero), as the API expects; GCC's -Wextra would name every member left out.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace sextant {

#ifndef SEXTANT_HAVE_VULKAN_HEADERS
Result<std::unique_ptr<GpuDevice>> openVulkanDevice(int) {
  return Error{"no Vulkan device found (Sextant was built without the Vulkan headers: install libvulkan-dev and rebuild)"};
}
Result<std::vector<VulkanDeviceProps>> listVulkanDevices() {
  return Error{"Sextant was built without the Vulkan headers (libvulkan-dev)"};
}
const VulkanDeviceProps* vulkanDeviceProps(const GpuDevice&) { return nullptr; }
std::optional<VulkanPipelineCacheFile> vulkanPipelineCacheFile(const GpuDevice&) { return std::nullopt; }
#else

namespace {

using namespace vk;

class VulkanDevice : public GpuDevice {
 public:
  ~VulkanDevice() override {
    if (in_.inst == VK_NULL_HANDLE) return;
    if (dev_ != VK_NULL_HANDLE) {
      // A kernel still running (it missed its deadline): wait a little, then leave everything to
      // the process's exit rather than hang in teardown.
      if (submitted_ && !lost_ && api().vkWaitForFences(dev_, 1, &fence_, VK_TRUE, uint64_t(5e9)) != VK_SUCCESS) return;
      if (!lost_) api().vkDeviceWaitIdle(dev_);
      for (auto& [h, k] : kernels_) destroyKernel(k);
      for (auto& [h, b] : bufs_) destroyBuffer(b);
      if (qpool_) api().vkDestroyQueryPool(dev_, qpool_, nullptr);
      if (fence_) api().vkDestroyFence(dev_, fence_, nullptr);
      if (cpool_) api().vkDestroyCommandPool(dev_, cpool_, nullptr);
      pcache_.destroy(api(), dev_);
      api().vkDestroyDevice(dev_, nullptr);
    }
    destroyInstance(in_);
  }

  Status open(int ordinal) {
    auto in = createInstance(&messages_);
    if (!in) return Error{in.error()};
    in_ = *in;
    api_ = in_.api;  // instance-level entry points; the device-level ones follow vkCreateDevice
    uint32_t n = 0;
    api().vkEnumeratePhysicalDevices(in_.inst, &n, nullptr);
    std::vector<VkPhysicalDevice> pds(n);
    api().vkEnumeratePhysicalDevices(in_.inst, &n, pds.data());
    if (ordinal < 0 || uint32_t(ordinal) >= n)
      return Error{"Vulkan device " + std::to_string(ordinal) + " does not exist (" + std::to_string(n) + " found)"};
    pd_ = pds[size_t(ordinal)];
    props_ = propsOf(in_, pd_, ordinal);
    uint32_t nq = 0;
    api().vkGetPhysicalDeviceQueueFamilyProperties(pd_, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    api().vkGetPhysicalDeviceQueueFamilyProperties(pd_, &nq, qf.data());
    qfam_ = UINT32_MAX;
    for (uint32_t i = 0; i < nq && qfam_ == UINT32_MAX; ++i)
      if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && qf[i].timestampValidBits > 0) qfam_ = i;
    if (qfam_ == UINT32_MAX) return Error{props_.name + ": no compute queue with timestamps"};
    ts_mask_ = qf[qfam_].timestampValidBits >= 64 ? ~0ull : ((1ull << qf[qfam_].timestampValidBits) - 1);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qi.queueFamilyIndex = qfam_;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    DeviceFeatureChain features(props_);  // f16, subgroup size control, cooperative matrices
    di.pNext = features.head;
    di.enabledExtensionCount = uint32_t(features.extensions.size());
    di.ppEnabledExtensionNames = features.extensions.data();
    if (VkResult r = api().vkCreateDevice(pd_, &di, nullptr, &dev_); r != VK_SUCCESS)
      return Error{"vkCreateDevice: " + vkName(r)};
#define X(f) api_.f = reinterpret_cast<PFN_##f>(in_.api.vkGetDeviceProcAddr(dev_, #f));
    SEXTANT_VK_DEVICE_FNS(X)
#undef X
    api().vkGetDeviceQueue(dev_, qfam_, 0, &queue_);
    pcache_.open(api(), dev_, pd_);
    api().vkGetPhysicalDeviceMemoryProperties(pd_, &mem_);
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.queueFamilyIndex = qfam_;
    VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpi.queryCount = 2;
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (api().vkCreateCommandPool(dev_, &pi, nullptr, &cpool_) != VK_SUCCESS ||
        api().vkCreateQueryPool(dev_, &qpi, nullptr, &qpool_) != VK_SUCCESS ||
        api().vkCreateFence(dev_, &fi, nullptr, &fence_) != VK_SUCCESS)
      return Error{"cannot create the command pool, query pool or fence"};
    info_.vendor = "vulkan";
    info_.name = props_.name;
    // The architecture says what runs the kernels: a CPU-emulated device is never a GPU measurement.
    info_.arch = props_.type == "cpu" ? "vulkan-cpu-emulated" : "vulkan-" + props_.type;
    info_.driver_version = props_.api_version + "/" + props_.driver_version;
    info_.sm_count = 0;
    info_.l2_bytes = 0;
    for (uint32_t i = 0; i < mem_.memoryHeapCount; ++i)
      if (mem_.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
        info_.memory_bytes = std::max<int64_t>(info_.memory_bytes, int64_t(mem_.memoryHeaps[i].size));
    return checkMessages("opening the device");
  }

  const DeviceInfo& info() const override { return info_; }
  const VulkanDeviceProps& props() const { return props_; }
  const PipelineCache& pipelineCache() const { return pcache_; }

  Result<DevicePtr> allocate(size_t bytes) override {
    auto b = makeBuffer(std::max<size_t>(bytes, 4), false);
    if (!b) return Error{b.error()};
    DevicePtr h = next_++;
    bufs_[h] = *b;
    return h;
  }
  void release(DevicePtr p) override {
    auto it = bufs_.find(p);
    if (it == bufs_.end()) return;
    if (!lost_) waitIdle();
    destroyBuffer(it->second);
    bufs_.erase(it);
  }
  Status copyToDevice(DevicePtr dst, const void* src, size_t bytes) override { return copy(dst, const_cast<void*>(src), bytes, true); }
  Status copyToHost(void* dst, DevicePtr src, size_t bytes) override { return copy(src, dst, bytes, false); }
  Status fill(DevicePtr dst, uint8_t value, size_t bytes) override {
    auto it = bufs_.find(dst);
    if (it == bufs_.end()) return Error{"fill: unknown buffer"};
    if (auto s = recording(); !s) return s;
    barrier();
    const uint32_t word = 0x01010101u * value;
    const VkDeviceSize size = bytes >= it->second.size ? VK_WHOLE_SIZE : VkDeviceSize(bytes & ~size_t(3));
    if (size != 0) api().vkCmdFillBuffer(cmd_, it->second.buf, 0, size, word);
    return okStatus();
  }

  Result<LoadedKernel> load(const std::string& image, KernelFormat format, const std::string& name) override {
    if (format != KernelFormat::Spirv)
      return Error{std::string("a Vulkan device runs SPIR-V kernels, not ") + kernelFormatName(format)};
    auto facts = readSpirv(image);
    if (!facts) return Error{facts.error()};
    Kernel k;
    k.facts = *facts;
    VkShaderModuleCreateInfo si{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    si.codeSize = image.size();
    si.pCode = reinterpret_cast<const uint32_t*>(image.data());
    if (VkResult r = api().vkCreateShaderModule(dev_, &si, nullptr, &k.shader); r != VK_SUCCESS)
      return Error{"vkCreateShaderModule: " + vkName(r) + messageSuffix()};
    std::vector<VkDescriptorSetLayoutBinding> binds(k.facts.bindings);
    for (uint32_t i = 0; i < k.facts.bindings; ++i)
      binds[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = uint32_t(binds.size());
    li.pBindings = binds.data();
    VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max<uint32_t>(1, k.facts.bindings) * kSetsPerKernel};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = kSetsPerKernel;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &ps;
    VkResult r = api().vkCreateDescriptorSetLayout(dev_, &li, nullptr, &k.set_layout);
    if (r == VK_SUCCESS) {
      pli.setLayoutCount = 1;
      pli.pSetLayouts = &k.set_layout;
      r = api().vkCreatePipelineLayout(dev_, &pli, nullptr, &k.layout);
    }
    k.entry = name;
    if (r == VK_SUCCESS) r = createPipeline(k, 0);
    if (r == VK_SUCCESS) r = api().vkCreateDescriptorPool(dev_, &dpi, nullptr, &k.pool);
    if (r != VK_SUCCESS) {
      destroyKernel(k);
      return Error{"creating the compute pipeline of " + name + ": " + vkName(r) + messageSuffix()};
    }
    if (auto s = checkMessages("loading " + name); !s) {
      destroyKernel(k);
      return Error{s.error()};
    }
    void* h = reinterpret_cast<void*>(next_kernel_++);
    kernels_[h] = k;
    LoadedKernel lk;
    lk.module = h;
    lk.function = h;
    return lk;
  }
  void unload(LoadedKernel& k) override {
    auto it = kernels_.find(k.module);
    if (it == kernels_.end()) return;
    if (!lost_) waitIdle();
    destroyKernel(it->second);
    kernels_.erase(it);
    k.module = k.function = nullptr;
  }
  Status prepare(LoadedKernel& lk, const LaunchDims& d) override {
    auto it = kernels_.find(lk.module);
    if (it == kernels_.end()) return Error{"prepare: unknown kernel"};
    const SpirvFacts& f = it->second.facts;
    for (int i = 0; i < 3; ++i) {
      if (f.local_size[i] != 0 && f.local_size[i] != d.block[size_t(i)])
        return Error{"the launch's block size does not match the shader's LocalSize"};
      if (d.block[size_t(i)] > props_.limits.max_size[i] || d.grid[size_t(i)] > props_.max_groups[i])
        return Error{"launch dimensions exceed the device's limits (maxComputeWorkGroupSize/Count)"};
    }
    if (int64_t(d.block[0]) * d.block[1] * d.block[2] > props_.limits.max_invocations)
      return Error{"workgroup of " + std::to_string(int64_t(d.block[0]) * d.block[1] * d.block[2]) +
                   " invocations exceeds maxComputeWorkGroupInvocations " + std::to_string(props_.limits.max_invocations)};
    lk.resources.max_threads_per_block = props_.limits.max_invocations;
    if (d.subgroup_size != it->second.subgroup) {
      // A kernel compiled for a subgroup size: its pipeline made again, requiring that size (0:
      // the device's default again).
      const VulkanLimits& l = props_.limits;
      if (d.subgroup_size != 0 &&
          (!l.subgroup_size_control || d.subgroup_size < l.min_subgroup_size || d.subgroup_size > l.max_subgroup_size))
        return Error{"the kernel needs subgroups of " + std::to_string(d.subgroup_size) + "; " + props_.name +
                     (l.subgroup_size_control ? " allows " + std::to_string(l.min_subgroup_size) + " to " + std::to_string(l.max_subgroup_size)
                                              : " runs compute shaders with its default of " + std::to_string(l.subgroup_size) + " only")};
      if (auto s = waitIdle(); !s) return s;  // no recorded command may still use the old pipeline
      api().vkDestroyPipeline(dev_, it->second.pipeline, nullptr);
      it->second.pipeline = VK_NULL_HANDLE;
      if (VkResult r = createPipeline(it->second, d.subgroup_size); r != VK_SUCCESS)
        return Error{"creating the compute pipeline of " + it->second.entry + " with subgroups of " +
                     std::to_string(d.subgroup_size) + ": " + vkName(r) + messageSuffix()};
      if (auto s = checkMessages("requiring subgroups of " + std::to_string(d.subgroup_size)); !s) return s;
    }
    return okStatus();
  }
  Status launch(const LoadedKernel& lk, const LaunchDims& d, void** args) override {
    auto it = kernels_.find(lk.module);
    if (it == kernels_.end()) return Error{"launch: unknown kernel"};
    Kernel& k = it->second;
    std::vector<DevicePtr> bufs(k.facts.bindings);
    for (uint32_t i = 0; i < k.facts.bindings; ++i) {
      bufs[i] = *static_cast<const DevicePtr*>(args[i]);
      if (!bufs_.count(bufs[i])) return Error{"launch: argument " + std::to_string(i) + " is not a buffer"};
    }
    auto set = descriptorSet(k, bufs);
    if (!set) return Error{set.error()};
    if (auto s = recording(); !s) return s;
    barrier();
    api().vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
    VkDescriptorSet ds = *set;
    api().vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0, 1, &ds, 0, nullptr);
    api().vkCmdDispatch(cmd_, d.grid[0], d.grid[1], d.grid[2]);
    return okStatus();
  }
  Status record(int event) override {
    if (event < 0 || event > 1) return Error{"event out of range"};
    if (auto s = recording(); !s) return s;
    if (event == 0) api().vkCmdResetQueryPool(cmd_, qpool_, 0, 2);
    barrier();
    api().vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qpool_, uint32_t(event));
    recorded_[event] = true;
    return okStatus();
  }
  EventState query(int event, std::string& error) override {
    if (lost_) return error = lost_reason_, EventState::Failed;
    if (event < 0 || event > 1 || !recorded_[event]) return error = "event not recorded", EventState::Failed;
    if (auto s = submit(); !s) return error = s.error(), EventState::Failed;
    VkResult r = api().vkGetFenceStatus(dev_, fence_);
    if (r == VK_NOT_READY) return EventState::Pending;
    if (r != VK_SUCCESS) {
      markLost("vkGetFenceStatus: " + vkName(r));
      return error = lost_reason_, EventState::Failed;
    }
    submitted_ = false;
    if (auto s = checkMessages("running the kernel"); !s) return error = s.error(), EventState::Failed;
    return EventState::Done;
  }
  Result<double> elapsedSeconds() override {
    uint64_t t[2] = {0, 0};
    VkResult r = api().vkGetQueryPoolResults(dev_, qpool_, 0, 2, sizeof t, t, sizeof(uint64_t),
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) return Error{"vkGetQueryPoolResults: " + vkName(r)};
    const uint64_t ticks = ((t[1] & ts_mask_) - (t[0] & ts_mask_)) & ts_mask_;
    return double(ticks) * double(props_.timestamp_period_ns) * 1e-9;
  }
  // lavapipe (llvmpipe) compiles a compute shader with LLVM at its first dispatch, not when the
  // pipeline is made: measured here ~6 s for 8x4 thread tiles with K chunks of 64 (cold shader
  // cache), past the default 10 s deadline with two compilations beside it.
  double firstLaunchAllowance() const override { return props_.type == "cpu" ? 120 : 0; }
  std::string timingMethod() const override {
    return "Vulkan timestamp queries (bottom of pipe) around the dispatch; cache flush: vkCmdFillBuffer of the "
           "scratch buffer; no busy-wait";
  }

 private:
  static constexpr uint32_t kSetsPerKernel = 8;
  struct Buffer {
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    size_t size = 0;
    void* map = nullptr;  // host-visible memory, mapped for the buffer's lifetime
  };
  struct Kernel {
    SpirvFacts facts;
    VkShaderModule shader = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    std::map<std::vector<DevicePtr>, VkDescriptorSet> sets;
    std::string entry;      // the entry point
    uint32_t subgroup = 0;  // the subgroup size its pipeline requires (0: the device's default)
  };

  // The kernel's compute pipeline, requiring subgroups of `subgroup` unless 0; saved to the cache
  // on disk at once (a process given up on a timeout keeps it too).
  VkResult createPipeline(Kernel& k, uint32_t subgroup) {
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.pName = k.entry.c_str();
    ci.stage.module = k.shader;
    ci.layout = k.layout;
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo req{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    req.requiredSubgroupSize = subgroup;
    if (subgroup != 0) ci.stage.pNext = &req;
    VkResult r = api().vkCreateComputePipelines(dev_, pcache_.cache, 1, &ci, nullptr, &k.pipeline);
    if (r == VK_SUCCESS) pcache_.save(api(), dev_), k.subgroup = subgroup;
    return r;
  }

  const VkApi& api() const { return api_; }

  std::string messageSuffix() {
    std::string m = messages_.take();
    return m.empty() ? "" : " (validation: " + m + ")";
  }
  Status checkMessages(const std::string& what) {
    std::string m = messages_.take();
    if (m.empty()) return okStatus();
    return Error{"Vulkan validation layer, " + what + ": " + m.substr(0, 2000)};
  }
  void markLost(const std::string& why) {
    lost_ = true;
    lost_reason_ = "the Vulkan device was lost (" + why + ")";
  }

  int32_t memoryType(uint32_t bits, VkMemoryPropertyFlags want) const {
    for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (mem_.memoryTypes[i].propertyFlags & want) == want) return int32_t(i);
    return -1;
  }
  // host: a staging buffer (host-visible, coherent); else device-local memory, host-visible where
  // the device has such memory (lavapipe, integrated GPUs, resizable BAR).
  Result<Buffer> makeBuffer(size_t bytes, bool host) {
    Buffer b;
    b.size = bytes;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (VkResult r = api().vkCreateBuffer(dev_, &bi, nullptr, &b.buf); r != VK_SUCCESS) return Error{"vkCreateBuffer: " + vkName(r)};
    VkMemoryRequirements req;
    api().vkGetBufferMemoryRequirements(dev_, b.buf, &req);
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int32_t type = host ? memoryType(req.memoryTypeBits, hv) : memoryType(req.memoryTypeBits, hv | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type < 0 && !host) type = memoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type < 0) {
      api().vkDestroyBuffer(dev_, b.buf, nullptr);
      return Error{"no suitable Vulkan memory type"};
    }
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = uint32_t(type);
    VkResult r = api().vkAllocateMemory(dev_, &ai, nullptr, &b.mem);
    if (r == VK_SUCCESS) r = api().vkBindBufferMemory(dev_, b.buf, b.mem, 0);
    if (r == VK_SUCCESS && (mem_.memoryTypes[type].propertyFlags & hv) == hv) r = api().vkMapMemory(dev_, b.mem, 0, VK_WHOLE_SIZE, 0, &b.map);
    if (r != VK_SUCCESS) {
      destroyBuffer(b);
      return Error{"allocating " + std::to_string(bytes) + " bytes of Vulkan memory: " + vkName(r)};
    }
    return b;
  }
  void destroyBuffer(Buffer& b) {
    if (b.map) api().vkUnmapMemory(dev_, b.mem);
    if (b.buf) api().vkDestroyBuffer(dev_, b.buf, nullptr);
    if (b.mem) api().vkFreeMemory(dev_, b.mem, nullptr);
    b = Buffer{};
  }
  void destroyKernel(Kernel& k) {
    if (k.pool) api().vkDestroyDescriptorPool(dev_, k.pool, nullptr);
    if (k.pipeline) api().vkDestroyPipeline(dev_, k.pipeline, nullptr);
    if (k.layout) api().vkDestroyPipelineLayout(dev_, k.layout, nullptr);
    if (k.set_layout) api().vkDestroyDescriptorSetLayout(dev_, k.set_layout, nullptr);
    if (k.shader) api().vkDestroyShaderModule(dev_, k.shader, nullptr);
    k = Kernel{};
  }
  Result<VkDescriptorSet> descriptorSet(Kernel& k, const std::vector<DevicePtr>& bufs) {
    if (auto it = k.sets.find(bufs); it != k.sets.end()) return it->second;
    if (k.sets.size() >= kSetsPerKernel) return Error{"too many distinct argument lists for one kernel"};
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = k.pool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &k.set_layout;
    VkDescriptorSet set;
    if (VkResult r = api().vkAllocateDescriptorSets(dev_, &ai, &set); r != VK_SUCCESS)
      return Error{"vkAllocateDescriptorSets: " + vkName(r)};
    std::vector<VkDescriptorBufferInfo> infos(bufs.size());
    std::vector<VkWriteDescriptorSet> writes(bufs.size());
    for (size_t i = 0; i < bufs.size(); ++i) {
      infos[i] = {bufs_[bufs[i]].buf, 0, VK_WHOLE_SIZE};
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = uint32_t(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    api().vkUpdateDescriptorSets(dev_, uint32_t(writes.size()), writes.data(), 0, nullptr);
    k.sets[bufs] = set;
    return set;
  }

  // Every command waits for the ones before it (the queue is one in-order stream, as CUDA's).
  void barrier() {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
    api().vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0,
                               nullptr, 0, nullptr);
  }
  // A command buffer to record into: the previous submission finished first.
  Status recording() {
    if (lost_) return Error{lost_reason_};
    if (open_) return okStatus();
    if (submitted_) {
      if (auto s = waitFence(); !s) return s;
    }
    api().vkResetCommandPool(dev_, cpool_, 0);
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = cpool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    if (cmd_ == VK_NULL_HANDLE && api().vkAllocateCommandBuffers(dev_, &ai, &cmd_) != VK_SUCCESS)
      return Error{"vkAllocateCommandBuffers failed"};
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (api().vkBeginCommandBuffer(cmd_, &bi) != VK_SUCCESS) return Error{"vkBeginCommandBuffer failed"};
    recorded_[0] = recorded_[1] = false;
    open_ = true;
    return okStatus();
  }
  Status submit() {
    if (!open_) return okStatus();
    open_ = false;
    if (api().vkEndCommandBuffer(cmd_) != VK_SUCCESS) return Error{"vkEndCommandBuffer failed" + messageSuffix()};
    api().vkResetFences(dev_, 1, &fence_);
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd_;
    VkResult r = api().vkQueueSubmit(queue_, 1, &si, fence_);
    if (r != VK_SUCCESS) {
      markLost("vkQueueSubmit: " + vkName(r));
      return Error{lost_reason_};
    }
    submitted_ = true;
    return okStatus();
  }
  Status waitFence() {
    VkResult r = api().vkWaitForFences(dev_, 1, &fence_, VK_TRUE, uint64_t(60e9));
    if (r != VK_SUCCESS) {
      markLost("waiting for the queue: " + vkName(r));
      return Error{lost_reason_};
    }
    submitted_ = false;
    return okStatus();
  }
  Status waitIdle() {
    if (auto s = submit(); !s) return s;
    if (submitted_) return waitFence();
    return okStatus();
  }
  Status copy(DevicePtr h, void* host, size_t bytes, bool to_device) {
    auto it = bufs_.find(h);
    if (it == bufs_.end()) return Error{"copy: unknown buffer"};
    if (bytes > it->second.size) return Error{"copy: larger than the buffer"};
    if (auto s = waitIdle(); !s) return s;
    Buffer& b = it->second;
    if (b.map) {
      if (to_device) std::memcpy(b.map, host, bytes);
      else std::memcpy(host, b.map, bytes);
      return checkMessages("copying");
    }
    auto st = makeBuffer(bytes, true);
    if (!st) return Error{st.error()};
    if (to_device) std::memcpy(st->map, host, bytes);
    Status s = recording();
    if (s) {
      barrier();
      VkBufferCopy region{0, 0, bytes};
      api().vkCmdCopyBuffer(cmd_, to_device ? st->buf : b.buf, to_device ? b.buf : st->buf, 1, &region);
      s = waitIdle();
    }
    if (s && !to_device) std::memcpy(host, st->map, bytes);
    destroyBuffer(*st);
    return s ? checkMessages("copying") : s;
  }

  Messages messages_;
  Instance in_;
  VkApi api_;
  VkPhysicalDevice pd_ = VK_NULL_HANDLE;
  VkDevice dev_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  PipelineCache pcache_;
  uint32_t qfam_ = 0;
  VkPhysicalDeviceMemoryProperties mem_{};
  VkCommandPool cpool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkQueryPool qpool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  bool open_ = false, submitted_ = false, recorded_[2] = {false, false};
  uint64_t ts_mask_ = ~0ull;
  VulkanDeviceProps props_;
  DeviceInfo info_;
  std::map<DevicePtr, Buffer> bufs_;
  std::map<void*, Kernel> kernels_;
  DevicePtr next_ = 1;
  uintptr_t next_kernel_ = 1;
  bool lost_ = false;
  std::string lost_reason_;
};

}  // namespace

Result<std::vector<VulkanDeviceProps>> listVulkanDevices() {
  Messages m;
  auto in = createInstance(&m);
  if (!in) return Error{in.error()};
  uint32_t n = 0;
  in->api.vkEnumeratePhysicalDevices(in->inst, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  in->api.vkEnumeratePhysicalDevices(in->inst, &n, pds.data());
  std::vector<VulkanDeviceProps> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(propsOf(*in, pds[i], int(i)));
  destroyInstance(*in);
  return out;
}

const VulkanDeviceProps* vulkanDeviceProps(const GpuDevice& d) {
  auto* v = dynamic_cast<const VulkanDevice*>(&d);
  return v ? &v->props() : nullptr;
}

std::optional<VulkanPipelineCacheFile> vulkanPipelineCacheFile(const GpuDevice& d) {
  auto* v = dynamic_cast<const VulkanDevice*>(&d);
  if (!v) return std::nullopt;
  return VulkanPipelineCacheFile{v->pipelineCache().path, v->pipelineCache().loaded};
}

Result<std::unique_ptr<GpuDevice>> openVulkanDevice(int ordinal) {
  auto d = std::make_unique<VulkanDevice>();
  if (auto s = d->open(ordinal); !s) return Error{"no Vulkan device found (" + s.error() + ")"};
  return std::unique_ptr<GpuDevice>(std::move(d));
}

#endif  // SEXTANT_HAVE_VULKAN_HEADERS

}  // namespace sextant
