// The HIP backend: the HIP module API, loaded with dlopen("libamdhip64.so"). No HIP header is
// used. Enum values are those of ROCm 6's hip_runtime_api.h (hipDeviceAttribute_t was renumbered
// in ROCm 5.0; older ROCm is not supported). hipDeviceProp_t's layout changes between releases
// (R0000, R0600), so the device properties are read with hipDeviceGetAttribute, and only the
// architecture name (gcnArchName, which no attribute gives) is found in the properties by content.
#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

#include "sextant/runtime/gpu_runner.h"

namespace sextant {
namespace {

using hipError_t = int;
using hipModule_t = void*;
using hipFunction_t = void*;
using hipEvent_t = void*;
using hipStream_t = void*;

constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorNotReady = 600;

// hipDeviceAttribute_t (ROCm 6)
constexpr int hipDeviceAttributeL2CacheSize = 19;
constexpr int hipDeviceAttributeMultiprocessorCount = 63;
constexpr int hipDeviceAttributeMaxSharedMemoryPerBlock = 74;
constexpr int hipDeviceAttributeSharedMemPerBlockOptin = 75;
// hipFunction_attribute (same values as CUDA's)
constexpr int HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr int HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr int HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
constexpr int HIP_FUNC_ATTRIBUTE_NUM_REGS = 4;

struct HipApi {
  hipError_t (*hipInit)(unsigned int) = nullptr;
  hipError_t (*hipGetDeviceCount)(int*) = nullptr;
  hipError_t (*hipSetDevice)(int) = nullptr;
  hipError_t (*hipDeviceGetName)(char*, int, int) = nullptr;
  hipError_t (*hipDeviceGetAttribute)(int*, int, int) = nullptr;
  hipError_t (*hipDeviceTotalMem)(size_t*, int) = nullptr;
  hipError_t (*hipDriverGetVersion)(int*) = nullptr;
  hipError_t (*hipGetDeviceProperties)(void*, int) = nullptr;  // R0600 where present
  hipError_t (*hipDeviceReset)() = nullptr;
  hipError_t (*hipModuleLoadData)(hipModule_t*, const void*) = nullptr;
  hipError_t (*hipModuleUnload)(hipModule_t) = nullptr;
  hipError_t (*hipModuleGetFunction)(hipFunction_t*, hipModule_t, const char*) = nullptr;
  hipError_t (*hipFuncGetAttribute)(int*, int, hipFunction_t) = nullptr;  // optional
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned int, unsigned int, unsigned int, unsigned int,
                                      unsigned int, unsigned int, unsigned int, hipStream_t, void**, void**) = nullptr;
  hipError_t (*hipMalloc)(void**, size_t) = nullptr;
  hipError_t (*hipFree)(void*) = nullptr;
  hipError_t (*hipMemcpyHtoD)(void*, const void*, size_t) = nullptr;
  hipError_t (*hipMemcpyDtoH)(void*, void*, size_t) = nullptr;
  hipError_t (*hipMemsetAsync)(void*, int, size_t, hipStream_t) = nullptr;
  hipError_t (*hipEventCreate)(hipEvent_t*) = nullptr;
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t) = nullptr;
  hipError_t (*hipEventQuery)(hipEvent_t) = nullptr;
  hipError_t (*hipEventElapsedTime)(float*, hipEvent_t, hipEvent_t) = nullptr;
  hipError_t (*hipEventDestroy)(hipEvent_t) = nullptr;
  const char* (*hipGetErrorName)(hipError_t) = nullptr;    // optional
  const char* (*hipGetErrorString)(hipError_t) = nullptr;  // optional
};

template <typename F>
void bind(void* lib, F& f, std::initializer_list<const char*> names, std::string& missing) {
  for (const char* n : names) {
    f = reinterpret_cast<F>(dlsym(lib, n));
    if (f) return;
  }
  if (missing.empty()) missing = *names.begin();
}

Result<const HipApi*> hipApi() {
  static HipApi api;
  static std::string error;
  static bool loaded = false;
  if (!loaded) {
    loaded = true;
    void* lib = nullptr;
    std::string first_error;
    for (const char* n : {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.7", "libamdhip64.so.5",
                          "/opt/rocm/lib/libamdhip64.so"}) {
      lib = dlopen(n, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
      if (first_error.empty()) {
        const char* e = dlerror();
        first_error = e ? e : "unknown error";
      }
    }
    if (!lib) {
      error = "libamdhip64.so not loadable: " + first_error;
    } else {
      std::string missing, optional;
      bind(lib, api.hipInit, {"hipInit"}, missing);
      bind(lib, api.hipGetDeviceCount, {"hipGetDeviceCount"}, missing);
      bind(lib, api.hipSetDevice, {"hipSetDevice"}, missing);
      bind(lib, api.hipDeviceGetName, {"hipDeviceGetName"}, missing);
      bind(lib, api.hipDeviceGetAttribute, {"hipDeviceGetAttribute"}, missing);
      bind(lib, api.hipDeviceTotalMem, {"hipDeviceTotalMem"}, missing);
      bind(lib, api.hipDriverGetVersion, {"hipDriverGetVersion"}, missing);
      bind(lib, api.hipDeviceReset, {"hipDeviceReset"}, missing);
      bind(lib, api.hipModuleLoadData, {"hipModuleLoadData"}, missing);
      bind(lib, api.hipModuleUnload, {"hipModuleUnload"}, missing);
      bind(lib, api.hipModuleGetFunction, {"hipModuleGetFunction"}, missing);
      bind(lib, api.hipModuleLaunchKernel, {"hipModuleLaunchKernel"}, missing);
      bind(lib, api.hipMalloc, {"hipMalloc"}, missing);
      bind(lib, api.hipFree, {"hipFree"}, missing);
      bind(lib, api.hipMemcpyHtoD, {"hipMemcpyHtoD"}, missing);
      bind(lib, api.hipMemcpyDtoH, {"hipMemcpyDtoH"}, missing);
      bind(lib, api.hipMemsetAsync, {"hipMemsetAsync"}, missing);
      bind(lib, api.hipEventCreate, {"hipEventCreate"}, missing);
      bind(lib, api.hipEventRecord, {"hipEventRecord"}, missing);
      bind(lib, api.hipEventQuery, {"hipEventQuery"}, missing);
      bind(lib, api.hipEventElapsedTime, {"hipEventElapsedTime"}, missing);
      bind(lib, api.hipEventDestroy, {"hipEventDestroy"}, missing);
      bind(lib, api.hipGetDeviceProperties, {"hipGetDevicePropertiesR0600", "hipGetDeviceProperties"}, optional);
      bind(lib, api.hipFuncGetAttribute, {"hipFuncGetAttribute"}, optional);
      bind(lib, api.hipGetErrorName, {"hipGetErrorName"}, optional);
      bind(lib, api.hipGetErrorString, {"hipGetErrorString"}, optional);
      if (!missing.empty()) error = "the HIP runtime lacks " + missing;
    }
  }
  if (!error.empty()) return Error{error};
  return &api;
}

std::string hipError(const HipApi& api, hipError_t r) {
  const char* name = api.hipGetErrorName ? api.hipGetErrorName(r) : nullptr;
  const char* text = api.hipGetErrorString ? api.hipGetErrorString(r) : nullptr;
  std::string s = name ? name : "hipError_t " + std::to_string(r);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

// gcnArchName ("gfx942:sramecc+:xnack-") from a hipDeviceProp_t of unknown layout: the first
// "gfx<alnum>" string after the 256-byte name field.
std::string findGcnArch(const std::vector<char>& props) {
  for (size_t i = 256; i + 4 < props.size(); ++i) {
    if (props[i] == 'g' && props[i + 1] == 'f' && props[i + 2] == 'x' && isalnum((unsigned char)props[i + 3])) {
      std::string s;
      for (size_t j = i; j < props.size() && props[j] && s.size() < 255; ++j) s += props[j];
      return s.substr(0, s.find(':'));
    }
  }
  return "";
}

class HipDevice final : public GpuDevice {
 public:
  HipDevice(const HipApi& api, int ordinal) : api_(api), ordinal_(ordinal) {}
  ~HipDevice() override {
    for (hipEvent_t& e : ev_)
      if (e) api_.hipEventDestroy(e);
  }

  Status init() {
    hipError_t r = api_.hipSetDevice(ordinal_);
    if (r != hipSuccess) return Error{"hipSetDevice: " + hipError(api_, r)};
    char name[256] = {0};
    api_.hipDeviceGetName(name, sizeof name - 1, ordinal_);
    int sms = 0, l2 = 0, version = 0;
    api_.hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, ordinal_);
    api_.hipDeviceGetAttribute(&l2, hipDeviceAttributeL2CacheSize, ordinal_);
    api_.hipDeviceGetAttribute(&smem_block_, hipDeviceAttributeMaxSharedMemoryPerBlock, ordinal_);
    if (api_.hipDeviceGetAttribute(&smem_optin_, hipDeviceAttributeSharedMemPerBlockOptin, ordinal_) != hipSuccess ||
        smem_optin_ <= 0)
      smem_optin_ = smem_block_;
    size_t mem = 0;
    api_.hipDeviceTotalMem(&mem, ordinal_);
    api_.hipDriverGetVersion(&version);
    info_.vendor = "amd";
    info_.name = name;
    if (api_.hipGetDeviceProperties) {
      std::vector<char> props(1 << 16, 0);  // far larger than any hipDeviceProp_t
      if (api_.hipGetDeviceProperties(props.data(), ordinal_) == hipSuccess) info_.arch = findGcnArch(props);
    }
    info_.driver_version = std::to_string(version);
    info_.sm_count = sms;
    info_.l2_bytes = l2;
    info_.memory_bytes = int64_t(mem);
    return createEvents();
  }

  const DeviceInfo& info() const override { return info_; }

  Result<DevicePtr> allocate(size_t bytes) override {
    void* p = nullptr;
    hipError_t r = api_.hipMalloc(&p, bytes);
    if (r != hipSuccess) return Error{"hipMalloc: " + hipError(api_, r)};
    return DevicePtr(reinterpret_cast<uintptr_t>(p));
  }
  void release(DevicePtr p) override { api_.hipFree(ptr(p)); }
  Status copyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    return check("hipMemcpyHtoD", api_.hipMemcpyHtoD(ptr(dst), src, bytes));
  }
  Status copyToHost(void* dst, DevicePtr src, size_t bytes) override {
    return check("hipMemcpyDtoH", api_.hipMemcpyDtoH(dst, ptr(src), bytes));
  }
  Status fill(DevicePtr dst, uint8_t value, size_t bytes) override {
    return check("hipMemsetAsync", api_.hipMemsetAsync(ptr(dst), value, bytes, nullptr));
  }

  Result<LoadedKernel> load(const std::string& image, KernelFormat format, const std::string& name) override {
    if (format != KernelFormat::Hsaco) return Error{"only AMD code objects (hsaco) load on an AMD device"};
    LoadedKernel k;
    hipError_t r = api_.hipModuleLoadData(&k.module, image.data());
    if (r != hipSuccess) return Error{"cannot load the hsaco module: " + hipError(api_, r)};
    r = api_.hipModuleGetFunction(&k.function, k.module, name.c_str());
    if (r != hipSuccess) {
      api_.hipModuleUnload(k.module);
      return Error{"no kernel named '" + name + "' in the module: " + hipError(api_, r)};
    }
    auto attr = [&](int a) -> int64_t {
      int v = -1;
      return api_.hipFuncGetAttribute && api_.hipFuncGetAttribute(&v, a, k.function) == hipSuccess ? v : -1;
    };
    k.resources.registers = attr(HIP_FUNC_ATTRIBUTE_NUM_REGS);
    k.resources.local_bytes = attr(HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    k.resources.static_shared_bytes = attr(HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    k.resources.max_threads_per_block = attr(HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    return k;
  }

  void unload(LoadedKernel& k) override {
    if (k.module) api_.hipModuleUnload(k.module);
    k.module = k.function = nullptr;
  }

  Status prepare(LoadedKernel& k, const LaunchDims& d) override {
    const int64_t threads = int64_t(d.block[0]) * d.block[1] * d.block[2];
    if (k.resources.max_threads_per_block > 0 && threads > k.resources.max_threads_per_block)
      return Error{"a block of " + std::to_string(threads) + " threads exceeds this kernel's limit of " +
                   std::to_string(k.resources.max_threads_per_block)};
    const int64_t static_smem = std::max<int64_t>(k.resources.static_shared_bytes, 0);
    if (smem_optin_ > 0 && static_smem + d.dynamic_shared_bytes > smem_optin_)
      return Error{"LDS of " + std::to_string(static_smem) + " static + " + std::to_string(d.dynamic_shared_bytes) +
                   " dynamic bytes exceeds the device's " + std::to_string(smem_optin_) + " bytes per block"};
    return okStatus();
  }

  Status launch(const LoadedKernel& k, const LaunchDims& d, void** args) override {
    return check("hipModuleLaunchKernel",
                 api_.hipModuleLaunchKernel(k.function, d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1],
                                            d.block[2], d.dynamic_shared_bytes, nullptr, args, nullptr));
  }

  Status record(int event) override { return check("hipEventRecord", api_.hipEventRecord(ev_[event], nullptr)); }

  EventState query(int event, std::string& error) override {
    hipError_t r = api_.hipEventQuery(ev_[event]);
    if (r == hipSuccess) return EventState::Done;
    if (r == hipErrorNotReady) return EventState::Pending;
    error = hipError(api_, r);
    return EventState::Failed;
  }

  Result<double> elapsedSeconds() override {
    float ms = 0;
    hipError_t r = api_.hipEventElapsedTime(&ms, ev_[0], ev_[1]);
    if (r != hipSuccess) return Error{"hipEventElapsedTime: " + hipError(api_, r)};
    return double(ms) * 1e-3;
  }

  Status recover() override {
    for (hipEvent_t& e : ev_) e = nullptr;  // destroyed with the reset
    hipError_t r = api_.hipDeviceReset();
    if (r != hipSuccess) return Error{"hipDeviceReset: " + hipError(api_, r)};
    r = api_.hipSetDevice(ordinal_);
    if (r != hipSuccess) return Error{"hipSetDevice: " + hipError(api_, r)};
    return createEvents();
  }

  Result<std::unique_ptr<GemmPeer>> openPeer() override {
    return Error{"no vendor BLAS reference on AMD devices yet (rocBLAS/hipBLASLt are not wired in)"};
  }

 private:
  static void* ptr(DevicePtr p) { return reinterpret_cast<void*>(uintptr_t(p)); }
  Status check(const char* what, hipError_t r) const {
    if (r == hipSuccess) return okStatus();
    return Error{std::string(what) + ": " + hipError(api_, r)};
  }
  Status createEvents() {
    for (hipEvent_t& e : ev_) {
      hipError_t r = api_.hipEventCreate(&e);
      if (r != hipSuccess) return Error{"hipEventCreate: " + hipError(api_, r)};
    }
    return okStatus();
  }

  const HipApi& api_;
  int ordinal_;
  hipEvent_t ev_[2] = {nullptr, nullptr};
  int smem_block_ = 64 * 1024, smem_optin_ = 64 * 1024;
  DeviceInfo info_;
};

}  // namespace

Result<std::unique_ptr<GpuDevice>> openHipDevice(int ordinal) {
  const std::string none = "no HIP device found (";
  auto api = hipApi();
  if (!api) return Error{none + api.error() + ")"};
  const HipApi& a = **api;
  hipError_t r = a.hipInit(0);
  if (r != hipSuccess) return Error{none + "hipInit: " + hipError(a, r) + ")"};
  int count = 0;
  r = a.hipGetDeviceCount(&count);
  if (r != hipSuccess) return Error{none + "hipGetDeviceCount: " + hipError(a, r) + ")"};
  if (count <= 0) return Error{none + "the runtime reports 0 devices)"};
  if (ordinal < 0 || ordinal >= count)
    return Error{none + "device " + std::to_string(ordinal) + " requested, " + std::to_string(count) + " present)"};
  auto d = std::make_unique<HipDevice>(a, ordinal);
  auto st = d->init();
  if (!st) return Error{"cannot use HIP device " + std::to_string(ordinal) + ": " + st.error()};
  return std::unique_ptr<GpuDevice>(std::move(d));
}

}  // namespace sextant
