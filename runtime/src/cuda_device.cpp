// The CUDA backend: the CUDA Driver API, loaded with dlopen("libcuda.so.1"), and cuBLAS (dlopen)
// as the reference. No CUDA header is used: the few types, enum values and signatures below are
// those of cuda.h / cublas_api.h / library_types.h (checked against CUDA 13.0; they have been
// stable since CUDA 11). The *_v2 symbols are what cuda.h maps the plain names to.
#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

#include "sextant/runtime/gpu_runner.h"

namespace sextant {
namespace {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUevent = void*;
using CUstream = void*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;

// CUdevice_attribute
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
// CUfunction_attribute
constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr int CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr int CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
constexpr int CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
// CUjit_option
constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr int CU_JIT_LOG_VERBOSE = 12;

struct CudaApi {
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;            // cuDeviceTotalMem_v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;            // _v2
  CUresult (*cuDevicePrimaryCtxReset)(CUdevice) = nullptr;              // _v2
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned int, int*, void**) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuFuncGetAttribute)(int*, int, CUfunction) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;               // _v2
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;                         // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr; // _v2
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;       // _v2
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr; // _v2
  CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, CUstream, void**, void**) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned int) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;   // _v2 where present
  CUresult (*cuEventDestroy)(CUevent) = nullptr;                        // _v2
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;       // optional
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;         // optional
  // optional (CUDA 12+): TMA tensor maps for the wgmma route
  CUresult (*cuTensorMapEncodeTiled)(void*, int, uint32_t, void*, const uint64_t*, const uint64_t*, const uint32_t*,
                                     const uint32_t*, int, int, int, int) = nullptr;
};

template <typename F>
bool bind(void* lib, F& f, std::initializer_list<const char*> names, std::string& missing) {
  for (const char* n : names) {
    f = reinterpret_cast<F>(dlsym(lib, n));
    if (f) return true;
  }
  if (missing.empty()) missing = *names.begin();
  return false;
}

std::string lastDlError() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

// Loaded once per process; never unloaded.
Result<const CudaApi*> cudaApi() {
  static CudaApi api;
  static std::string error;
  static bool loaded = false;
  if (!loaded) {
    loaded = true;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    std::string first_error;
    if (!lib) {
      first_error = lastDlError();
      lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) {
      error = "libcuda.so.1 not loadable: " + first_error;
    } else {
      std::string missing;
      bind(lib, api.cuInit, {"cuInit"}, missing);
      bind(lib, api.cuDriverGetVersion, {"cuDriverGetVersion"}, missing);
      bind(lib, api.cuDeviceGetCount, {"cuDeviceGetCount"}, missing);
      bind(lib, api.cuDeviceGet, {"cuDeviceGet"}, missing);
      bind(lib, api.cuDeviceGetName, {"cuDeviceGetName"}, missing);
      bind(lib, api.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, missing);
      bind(lib, api.cuDeviceTotalMem, {"cuDeviceTotalMem_v2"}, missing);
      bind(lib, api.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing);
      bind(lib, api.cuDevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, missing);
      bind(lib, api.cuDevicePrimaryCtxReset, {"cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset"}, missing);
      bind(lib, api.cuCtxSetCurrent, {"cuCtxSetCurrent"}, missing);
      bind(lib, api.cuModuleLoadDataEx, {"cuModuleLoadDataEx"}, missing);
      bind(lib, api.cuModuleUnload, {"cuModuleUnload"}, missing);
      bind(lib, api.cuModuleGetFunction, {"cuModuleGetFunction"}, missing);
      bind(lib, api.cuFuncGetAttribute, {"cuFuncGetAttribute"}, missing);
      bind(lib, api.cuFuncSetAttribute, {"cuFuncSetAttribute"}, missing);
      bind(lib, api.cuMemAlloc, {"cuMemAlloc_v2"}, missing);
      bind(lib, api.cuMemFree, {"cuMemFree_v2"}, missing);
      bind(lib, api.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, missing);
      bind(lib, api.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, missing);
      bind(lib, api.cuMemsetD8, {"cuMemsetD8_v2"}, missing);
      bind(lib, api.cuLaunchKernel, {"cuLaunchKernel"}, missing);
      bind(lib, api.cuEventCreate, {"cuEventCreate"}, missing);
      bind(lib, api.cuEventRecord, {"cuEventRecord"}, missing);
      bind(lib, api.cuEventQuery, {"cuEventQuery"}, missing);
      bind(lib, api.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing);
      bind(lib, api.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}, missing);
      std::string optional;
      bind(lib, api.cuGetErrorString, {"cuGetErrorString"}, optional);
      bind(lib, api.cuGetErrorName, {"cuGetErrorName"}, optional);
      bind(lib, api.cuTensorMapEncodeTiled, {"cuTensorMapEncodeTiled"}, optional);
      if (!missing.empty()) error = "the CUDA driver library lacks " + missing + " (driver too old?)";
    }
  }
  if (!error.empty()) return Error{error};
  return &api;
}

std::string cuError(const CudaApi& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(r, &text);
  std::string s = name ? name : "CUresult " + std::to_string(r);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

std::string trimLog(const char* log) {
  std::string s(log);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  if (s.size() > 4000) s = s.substr(0, 4000) + " ...";
  return s;
}

// ----- cuBLAS -----

using cublasHandle_t = void*;
constexpr int CUBLAS_OP_N = 0, CUBLAS_OP_T = 1;
constexpr int CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14;  // cudaDataType
constexpr int CUBLAS_COMPUTE_32F = 68;
constexpr int CUBLAS_GEMM_DEFAULT = -1;

struct CublasApi {
  int (*create)(cublasHandle_t*) = nullptr;   // cublasCreate_v2
  int (*destroy)(cublasHandle_t) = nullptr;   // cublasDestroy_v2
  int (*gemmEx)(cublasHandle_t, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                const void*, void*, int, int, int, int) = nullptr;
  const char* (*statusString)(int) = nullptr;  // optional
};

class CublasPeer final : public GemmPeer {
 public:
  CublasPeer(const CublasApi& api, cublasHandle_t h) : api_(api), h_(h) {}
  ~CublasPeer() override { api_.destroy(h_); }
  std::string name() const override { return "cublas"; }
  Status enqueue(const GemmWorkload& w, DevicePtr a, DevicePtr b, DevicePtr c) override {
    auto type = [](DType t) { return t == DType::F32 ? CUDA_R_32F : t == DType::F16 ? CUDA_R_16F : CUDA_R_16BF; };
    if (w.m > INT32_MAX || w.n > INT32_MAX || w.k > INT32_MAX) return Error{"sizes too large for cublasGemmEx"};
    const int M = int(w.m), N = int(w.n), K = int(w.k);
    // cuBLAS is column-major: the row-major C (MxN) is the column-major C^T (NxM) = B^T A^T, so
    // B comes first. Row-major B (KxN) read column-major is B^T (NxK, ld N); stored NxK (NT) it
    // is B (KxN, ld K) and must be transposed. Likewise A: MxK row-major is A^T (KxM, ld K);
    // stored KxM (TN) it is A (MxK, ld M), transposed.
    const bool nt = w.layout == Layout::NT, tn = w.layout == Layout::TN;
    const float alpha = 1.0f, beta = 0.0f;
    int s = api_.gemmEx(h_, nt ? CUBLAS_OP_T : CUBLAS_OP_N, tn ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                        reinterpret_cast<const void*>(b), type(w.b_type), nt ? K : N, reinterpret_cast<const void*>(a),
                        type(w.a_type), tn ? M : K, &beta, reinterpret_cast<void*>(c), type(w.c_type), N,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != 0)
      return Error{std::string("cublasGemmEx: ") + (api_.statusString ? api_.statusString(s) : "status " + std::to_string(s))};
    return okStatus();
  }

 private:
  const CublasApi& api_;
  cublasHandle_t h_;
};

// The first cuBLAS that loads and creates a handle in the current context (a libcublas newer
// than the driver loads but fails in cublasCreate: the next one is tried).
Result<std::unique_ptr<GemmPeer>> openCublas() {
  std::string errors;
  for (const char* n : {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}) {
    void* lib = dlopen(n, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      if (errors.empty()) errors = lastDlError();
      continue;
    }
    auto* api = new CublasApi;  // lives as long as the process: peers point to it
    std::string missing, optional;
    bind(lib, api->create, {"cublasCreate_v2"}, missing);
    bind(lib, api->destroy, {"cublasDestroy_v2"}, missing);
    bind(lib, api->gemmEx, {"cublasGemmEx"}, missing);
    bind(lib, api->statusString, {"cublasGetStatusString"}, optional);
    if (!missing.empty()) {
      errors += std::string(errors.empty() ? "" : "; ") + n + " lacks " + missing;
      delete api;
      continue;
    }
    cublasHandle_t h = nullptr;
    int st = api->create(&h);
    if (st != 0) {
      errors += std::string(errors.empty() ? "" : "; ") + n + ": cublasCreate: " +
                (api->statusString ? api->statusString(st) : "status " + std::to_string(st));
      delete api;
      continue;
    }
    return std::unique_ptr<GemmPeer>(new CublasPeer(*api, h));
  }
  return Error{"cuBLAS not usable (" + errors + ")"};
}

// ----- timing helpers -----

// Loaded into every context (JIT from PTX for any sm_52+ GPU): a kernel that reads a buffer
// (16-byte loads, grid-stride; the XOR of what it read is stored, into the buffer itself, only if
// it equals an arbitrary constant, so that the loads are kept) to evict the L2 without leaving
// dirty lines,
// and a kernel that spins on %globaltimer for a given number of nanoseconds.
const char* kHelperPtx = R"PTX(
.version 7.0
.target sm_52
.address_size 64

.visible .entry sextant_l2_read(.param .u64 p_buf, .param .u64 p_n16)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [p_buf];
  ld.param.u64 %rd2, [p_n16];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.u64 %rd4, %rd4, %rd5;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd6, %r4, %r2;
  mov.b32 %r5, 0;
  setp.ge.u64 %p1, %rd4, %rd2;
  @%p1 bra DONE;
LOOP:
  shl.b64 %rd7, %rd4, 4;
  add.u64 %rd8, %rd1, %rd7;
  ld.global.cg.v4.u32 {%r6, %r7, %r8, %r9}, [%rd8];
  xor.b32 %r5, %r5, %r6;
  xor.b32 %r5, %r5, %r7;
  xor.b32 %r5, %r5, %r8;
  xor.b32 %r5, %r5, %r9;
  add.u64 %rd4, %rd4, %rd6;
  setp.lt.u64 %p2, %rd4, %rd2;
  @%p2 bra LOOP;
DONE:
  setp.ne.u32 %p1, %r5, 1234567;
  @%p1 bra END;
  st.global.u32 [%rd1], %r5;
END:
  ret;
}

.visible .entry sextant_spin(.param .u64 p_ns)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [p_ns];
  mov.u64 %rd2, %globaltimer;
  add.u64 %rd3, %rd2, %rd1;
SPIN:
  mov.u64 %rd4, %globaltimer;
  setp.lt.u64 %p1, %rd4, %rd3;
  @%p1 bra SPIN;
  ret;
}
)PTX";

// ----- the device -----

class CudaDevice final : public GpuDevice {
 public:
  CudaDevice(const CudaApi& api, CUdevice dev, int ordinal) : api_(api), dev_(dev), ordinal_(ordinal) {}

  ~CudaDevice() override {
    for (CUevent& e : ev_)
      if (e) api_.cuEventDestroy(e);
    for (int i = 0; i < retains_; ++i) api_.cuDevicePrimaryCtxRelease(dev_);
  }

  Status init() {
    char name[256] = {0};
    api_.cuDeviceGetName(name, sizeof name - 1, dev_);
    int major = 0, minor = 0, sms = 0, l2 = 0, version = 0;
    api_.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev_);
    api_.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev_);
    api_.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_);
    api_.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev_);
    api_.cuDeviceGetAttribute(&smem_block_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev_);
    if (api_.cuDeviceGetAttribute(&smem_optin_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev_) !=
        CUDA_SUCCESS)
      smem_optin_ = smem_block_;
    size_t mem = 0;
    api_.cuDeviceTotalMem(&mem, dev_);
    api_.cuDriverGetVersion(&version);
    info_.vendor = "nvidia";
    info_.name = name;
    info_.arch = "sm_" + std::to_string(major) + std::to_string(minor);
    info_.driver_version = std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
    info_.sm_count = sms;
    info_.l2_bytes = l2;
    info_.memory_bytes = int64_t(mem);
    return attach();
  }

  const DeviceInfo& info() const override { return info_; }

  Result<DevicePtr> allocate(size_t bytes) override {
    CUdeviceptr p = 0;
    CUresult r = api_.cuMemAlloc(&p, bytes);
    if (r != CUDA_SUCCESS) return Error{"cuMemAlloc: " + cuError(api_, r)};
    return DevicePtr(p);
  }
  void release(DevicePtr p) override { api_.cuMemFree(CUdeviceptr(p)); }

  Result<TensorMapBytes> encodeTensorMap(const TensorMapSpec& t, DevicePtr base) override {
    if (!api_.cuTensorMapEncodeTiled) return Error{"the driver has no cuTensorMapEncodeTiled (CUDA 12 or newer needed)"};
    // cuda.h: CUtensorMapDataType FLOAT16 = 6, BFLOAT16 = 9; CUtensorMapSwizzle NONE/32B/64B/128B =
    // 0..3; interleave, L2 promotion and out-of-bounds fill: 0 (none), as MLIR's
    // nvgpu.tma.create.descriptor with l2promo = none, oob = zero (zero fill is the NONE fill).
    const int dtype = t.elem == "bf16" ? 9 : 6;
    const int swizzle = t.swizzle == 128 ? 3 : t.swizzle == 64 ? 2 : t.swizzle == 32 ? 1 : 0;
    alignas(64) TensorMapBytes map{};
    const uint64_t dims[2] = {uint64_t(t.dims[0]), uint64_t(t.dims[1])};
    const uint64_t strides[1] = {uint64_t(t.stride_bytes)};
    const uint32_t box[2] = {uint32_t(t.box[0]), uint32_t(t.box[1])};
    const uint32_t elem_strides[2] = {1, 1};
    CUresult r = api_.cuTensorMapEncodeTiled(map.data(), dtype, 2, reinterpret_cast<void*>(base), dims, strides, box,
                                             elem_strides, 0, swizzle, 0, 0);
    if (r != CUDA_SUCCESS) return Error{"cuTensorMapEncodeTiled: " + cuError(api_, r)};
    return map;
  }

  Status copyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    return check("cuMemcpyHtoD", api_.cuMemcpyHtoD(CUdeviceptr(dst), src, bytes));
  }
  Status copyToHost(void* dst, DevicePtr src, size_t bytes) override {
    return check("cuMemcpyDtoH", api_.cuMemcpyDtoH(dst, CUdeviceptr(src), bytes));
  }
  Status fill(DevicePtr dst, uint8_t value, size_t bytes) override {
    return check("cuMemsetD8", api_.cuMemsetD8(CUdeviceptr(dst), value, bytes));
  }

  Result<LoadedKernel> load(const std::string& image, KernelFormat format, const std::string& name) override {
    if (format == KernelFormat::Hsaco) return Error{"an AMD code object cannot be loaded on an NVIDIA device"};
    std::vector<char> info_log(1 << 16, 0), error_log(1 << 16, 0);
    int options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                     CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    void* values[] = {info_log.data(), reinterpret_cast<void*>(uintptr_t(info_log.size() - 1)), error_log.data(),
                      reinterpret_cast<void*>(uintptr_t(error_log.size() - 1)), reinterpret_cast<void*>(uintptr_t(1))};
    LoadedKernel k;
    // PTX must be NUL-terminated: std::string's buffer is.
    CUresult r = api_.cuModuleLoadDataEx(&k.module, image.c_str(), 5, options, values);
    if (r != CUDA_SUCCESS) {
      std::string msg = std::string("cannot load the ") + kernelFormatName(format) + " module: " + cuError(api_, r);
      if (error_log[0]) msg += ": " + trimLog(error_log.data());
      return Error{msg};
    }
    k.log = trimLog(info_log.data());
    r = api_.cuModuleGetFunction(&k.function, k.module, name.c_str());
    if (r != CUDA_SUCCESS) {
      api_.cuModuleUnload(k.module);
      return Error{"no kernel named '" + name + "' in the module: " + cuError(api_, r)};
    }
    auto attr = [&](int a) -> int64_t {
      int v = -1;
      return api_.cuFuncGetAttribute(&v, a, k.function) == CUDA_SUCCESS ? v : -1;
    };
    k.resources.registers = attr(CU_FUNC_ATTRIBUTE_NUM_REGS);
    k.resources.local_bytes = attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    k.resources.static_shared_bytes = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    k.resources.max_threads_per_block = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    return k;
  }

  void unload(LoadedKernel& k) override {
    if (k.module) api_.cuModuleUnload(k.module);
    k.module = k.function = nullptr;
  }

  Status prepare(LoadedKernel& k, const LaunchDims& d) override {
    const int64_t threads = int64_t(d.block[0]) * d.block[1] * d.block[2];
    if (k.resources.max_threads_per_block > 0 && threads > k.resources.max_threads_per_block)
      return Error{"a block of " + std::to_string(threads) + " threads exceeds this kernel's limit of " +
                   std::to_string(k.resources.max_threads_per_block) + " (it uses " +
                   std::to_string(k.resources.registers) + " registers per thread)"};
    const int64_t static_smem = std::max<int64_t>(k.resources.static_shared_bytes, 0);
    if (static_smem + d.dynamic_shared_bytes > smem_optin_)
      return Error{"shared memory of " + std::to_string(static_smem) + " static + " +
                   std::to_string(d.dynamic_shared_bytes) + " dynamic bytes exceeds the device's " +
                   std::to_string(smem_optin_) + " bytes per block"};
    // Above 48 KiB per block in all, dynamic shared memory needs an explicit opt-in (the
    // default limit for dynamic shared memory is 48 KiB minus the static part).
    if (d.dynamic_shared_bytes > 0 && static_smem + d.dynamic_shared_bytes > 48 * 1024) {
      CUresult r = api_.cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           int(d.dynamic_shared_bytes));
      if (r != CUDA_SUCCESS)
        return Error{"cannot allow " + std::to_string(d.dynamic_shared_bytes) +
                     " bytes of dynamic shared memory: cuFuncSetAttribute: " + cuError(api_, r)};
    }
    return okStatus();
  }

  Status launch(const LoadedKernel& k, const LaunchDims& d, void** args) override {
    return check("cuLaunchKernel", api_.cuLaunchKernel(k.function, d.grid[0], d.grid[1], d.grid[2], d.block[0],
                                                       d.block[1], d.block[2], d.dynamic_shared_bytes, nullptr,
                                                       args, nullptr));
  }

  Status record(int event) override { return check("cuEventRecord", api_.cuEventRecord(ev_[event], nullptr)); }

  EventState query(int event, std::string& error) override {
    CUresult r = api_.cuEventQuery(ev_[event]);
    if (r == CUDA_SUCCESS) return EventState::Done;
    if (r == CUDA_ERROR_NOT_READY) return EventState::Pending;
    error = cuError(api_, r);
    return EventState::Failed;
  }

  Result<double> elapsedSeconds() override {
    float ms = 0;
    CUresult r = api_.cuEventElapsedTime(&ms, ev_[0], ev_[1]);
    if (r != CUDA_SUCCESS) return Error{"cuEventElapsedTime: " + cuError(api_, r)};
    return double(ms) * 1e-3;
  }

  Status recover() override {
    for (CUevent& e : ev_) {
      if (e) api_.cuEventDestroy(e);
      e = nullptr;
    }
    CUresult r = api_.cuDevicePrimaryCtxReset(dev_);
    if (r != CUDA_SUCCESS) return Error{"cuDevicePrimaryCtxReset: " + cuError(api_, r)};
    return attach();
  }

  Result<std::unique_ptr<GemmPeer>> openPeer() override { return openCublas(); }

  Status flushL2(DevicePtr scratch, size_t bytes, uint8_t value) override {
    if (!read_fn_) return fill(scratch, value, bytes);
    unsigned long long p = scratch, n16 = bytes / 16;
    void* args[] = {&p, &n16};
    const unsigned blocks = unsigned(std::max<int64_t>(1, info_.sm_count) * 4);
    return check("cuLaunchKernel (L2 flush)",
                 api_.cuLaunchKernel(read_fn_, blocks, 1, 1, 512, 1, 1, 0, nullptr, args, nullptr));
  }

  Status busyWait(double seconds) override {
    if (!spin_fn_) return okStatus();
    unsigned long long ns = (unsigned long long)(seconds * 1e9);
    void* args[] = {&ns};
    return check("cuLaunchKernel (busy-wait)", api_.cuLaunchKernel(spin_fn_, 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr));
  }

  std::string timingMethod() const override {
    if (!read_fn_) return "L2 flush: memset of the scratch buffer (the helper kernels did not load: " + helper_error_ + ")";
    return "L2 flush: a kernel reads the scratch buffer (no dirty lines left); a 20 us busy-wait kernel before the "
           "start event";
  }

 private:
  Status check(const char* what, CUresult r) const {
    if (r == CUDA_SUCCESS) return okStatus();
    return Error{std::string(what) + ": " + cuError(api_, r)};
  }

  // Retains the primary context (shared with cuBLAS), makes it current, creates the events.
  Status attach() {
    CUresult r = api_.cuDevicePrimaryCtxRetain(&ctx_, dev_);
    if (r != CUDA_SUCCESS) return Error{"cuDevicePrimaryCtxRetain: " + cuError(api_, r)};
    ++retains_;
    r = api_.cuCtxSetCurrent(ctx_);
    if (r != CUDA_SUCCESS) return Error{"cuCtxSetCurrent: " + cuError(api_, r)};
    for (CUevent& e : ev_) {
      r = api_.cuEventCreate(&e, 0);  // CU_EVENT_DEFAULT: timing enabled
      if (r != CUDA_SUCCESS) return Error{"cuEventCreate: " + cuError(api_, r)};
    }
    // The timing helpers (their module died with a reset, if any): without them, memset flushes.
    read_fn_ = spin_fn_ = nullptr;
    auto h = load(kHelperPtx, KernelFormat::Ptx, "sextant_l2_read");
    if (h) {
      read_fn_ = h->function;
      if (api_.cuModuleGetFunction(&spin_fn_, h->module, "sextant_spin") != CUDA_SUCCESS) spin_fn_ = nullptr;
    } else {
      helper_error_ = h.error();
    }
    return okStatus();
  }

  const CudaApi& api_;
  CUdevice dev_;
  int ordinal_;
  CUcontext ctx_ = nullptr;
  int retains_ = 0;
  CUevent ev_[2] = {nullptr, nullptr};
  int smem_block_ = 48 * 1024, smem_optin_ = 48 * 1024;
  DeviceInfo info_;
  CUfunction read_fn_ = nullptr, spin_fn_ = nullptr;  // the timing helpers (kHelperPtx)
  std::string helper_error_;
};

}  // namespace

Result<std::unique_ptr<GpuDevice>> openCudaDevice(int ordinal) {
  const std::string none = "no CUDA device found (";
  auto api = cudaApi();
  if (!api) return Error{none + api.error() + ")"};
  const CudaApi& a = **api;
  CUresult r = a.cuInit(0);
  if (r != CUDA_SUCCESS) return Error{none + "cuInit: " + cuError(a, r) + ")"};
  int count = 0;
  r = a.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) return Error{none + "cuDeviceGetCount: " + cuError(a, r) + ")"};
  if (count <= 0) return Error{none + "the driver reports 0 devices)"};
  if (ordinal < 0 || ordinal >= count)
    return Error{none + "device " + std::to_string(ordinal) + " requested, " + std::to_string(count) + " present)"};
  CUdevice dev = 0;
  r = a.cuDeviceGet(&dev, ordinal);
  if (r != CUDA_SUCCESS) return Error{none + "cuDeviceGet: " + cuError(a, r) + ")"};
  auto d = std::make_unique<CudaDevice>(a, dev, ordinal);
  auto st = d->init();
  if (!st) return Error{"cannot use CUDA device " + std::to_string(ordinal) + ": " + st.error()};
  return std::unique_ptr<GpuDevice>(std::move(d));
}

}  // namespace sextant
