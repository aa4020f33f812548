// A fake GPU for the runner tests: its "kernels" run on the host (correct, wrong, silent,
// hanging, faulting, racy ones), plus helpers to write fake bundles. Shared by the runner test
// files.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>

#include "sextant/runtime/gpu_runner.h"

namespace sextant::testing_gpu {

using namespace sextant;



// Kernel images understood by the fake device: "<mode> <ORDER> <workload key>", ORDER naming
// which of A, B, C each of the first three arguments is (e.g. CAB). Modes: naive (correct),
// wrong (one entry off), silent (writes nothing), hang (never finishes), fault (fails on the
// device), scalars (correct only if arguments 4 and 5 are i32 7 and i64 2^40), racy (right for
// three launches, then one entry off), nocubin (refused at load). "garbage" does not load.
// ORDER letters a and b: the argument is the device address of a tensor map of A or B (the wgmma
// route); the fake map holds the buffer's address in its first 8 bytes.
class FakeDevice : public GpuDevice {
 public:
  DeviceInfo info_{"nvidia", "Fake GPU", "sm_90", "12.4", 4, 1 << 20, int64_t(1) << 32};
  double kernel_seconds = 1e-3;
  int launches = 0, fills = 0, scratch_fills = 0, resets = 0, loads = 0, unloads = 0;
  size_t largest_fill = 0;
  bool peer_available = true;
  bool tma_available = true;
  std::vector<TensorMapSpec> tensor_maps;  // every map encoded

  ~FakeDevice() override {
    for (auto& [p, size] : live_) free(reinterpret_cast<void*>(p));
    for (Spec* sp : specs_) delete sp;
  }
  const DeviceInfo& info() const override { return info_; }
  Result<DevicePtr> allocate(size_t bytes) override {
    void* p = malloc(bytes);
    if (!p) return Error{"out of memory"};
    live_[DevicePtr(reinterpret_cast<uintptr_t>(p))] = bytes;
    return DevicePtr(reinterpret_cast<uintptr_t>(p));
  }
  void release(DevicePtr p) override {
    EXPECT_TRUE(live_.count(p)) << "release of an unknown pointer";
    live_.erase(p);
    free(reinterpret_cast<void*>(p));
  }
  Status copyToDevice(DevicePtr dst, const void* src, size_t bytes) override {
    if (!checkRange(dst, bytes)) return Error{"copy out of bounds"};
    memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return okStatus();
  }
  Status copyToHost(void* dst, DevicePtr src, size_t bytes) override {
    if (!checkRange(src, bytes)) return Error{"copy out of bounds"};
    memcpy(dst, reinterpret_cast<void*>(src), bytes);
    return okStatus();
  }
  Status fill(DevicePtr dst, uint8_t value, size_t bytes) override {
    if (!checkRange(dst, bytes)) return Error{"fill out of bounds"};
    memset(reinterpret_cast<void*>(dst), value, bytes);
    ++fills;
    largest_fill = std::max(largest_fill, bytes);
    if (bytes >= size_t(2 * info_.l2_bytes)) ++scratch_fills;
    return okStatus();
  }
  Result<LoadedKernel> load(const std::string& image, KernelFormat format, const std::string& name) override {
    std::istringstream in(image);
    auto* spec = new Spec;
    in >> spec->mode >> spec->order >> spec->key;
    auto w = parseWorkloadKey(spec->key);
    if (spec->mode == "garbage" || !w) {
      delete spec;
      return Error{"cannot load the ptx module: CUDA_ERROR_INVALID_PTX (fake)"};
    }
    spec->w = *w;
    if (spec->mode == "nocubin") {  // a cubin this driver refuses
      delete spec;
      return Error{"cannot load the cubin module: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (fake)"};
    }
    ++loads;
    specs_.insert(spec);
    LoadedKernel k;
    k.module = spec;
    k.function = spec;
    k.resources = KernelResources{40, 8, 1024, 512};
    return k;
  }
  void unload(LoadedKernel& k) override {
    EXPECT_TRUE(specs_.erase(static_cast<Spec*>(k.module))) << "unload of an unknown module";
    delete static_cast<Spec*>(k.module);
    k.module = k.function = nullptr;
    ++unloads;
  }
  Status prepare(LoadedKernel& k, const LaunchDims& d) override {
    if (int64_t(d.block[0]) * d.block[1] * d.block[2] > k.resources.max_threads_per_block)
      return Error{"a block of too many threads (fake)"};
    return okStatus();
  }
  Status launch(const LoadedKernel& k, const LaunchDims& d, void** args) override {
    ++launches;
    Spec& s = *static_cast<Spec*>(k.function);
    if (s.mode == "hang") {
      hanging_ = true;
      return okStatus();
    }
    if (s.mode == "fault") {
      faulted_ = true;
      return okStatus();
    }
    if (s.mode == "silent") return okStatus();
    DevicePtr a = 0, b = 0, c = 0;
    for (int i = 0; i < 3; ++i) {
      DevicePtr p;
      memcpy(&p, args[i], sizeof p);
      const char o = s.order[size_t(i)];
      if (o == 'a' || o == 'b') {  // a tensor map in device memory: the buffer's address first
        if (!checkRange(p, 128)) {
          faulted_ = true;
          return okStatus();
        }
        memcpy(&p, reinterpret_cast<const void*>(p), sizeof p);
      }
      (o == 'A' || o == 'a' ? a : o == 'B' || o == 'b' ? b : c) = p;
    }
    const GemmWorkload& w = s.w;
    if (!checkRange(a, size_t(w.m * w.k * dtypeBytes(w.a_type))) || !checkRange(b, size_t(w.k * w.n * dtypeBytes(w.b_type))) ||
        !checkRange(c, size_t(w.m * w.n * dtypeBytes(w.c_type)))) {
      faulted_ = true;  // an access outside the buffers: an illegal address
      return okStatus();
    }
    bool scalars_ok = true;
    if (s.mode == "scalars") {
      int32_t x;
      int64_t y;
      memcpy(&x, args[3], 4);
      memcpy(&y, args[4], 8);
      scalars_ok = x == 7 && y == (int64_t(1) << 40);
    }
    naiveGemm(s.w, a, b, c);
    ++s.runs;
    if (s.mode == "wrong" || !scalars_ok || (s.mode == "racy" && s.runs > 3)) {
      float v = 42.0f;
      encodeDType(&v, 1, s.w.c_type, reinterpret_cast<uint8_t*>(c) + dtypeBytes(s.w.c_type) * (s.w.m * s.w.n - 1));
    }
    return okStatus();
  }
  Status record(int event) override { return okStatus(); }
  EventState query(int event, std::string& error) override {
    if (faulted_) {
      error = "CUDA_ERROR_ILLEGAL_ADDRESS (fake)";
      return EventState::Failed;
    }
    return hanging_ && event == 1 ? EventState::Pending : EventState::Done;
  }
  Result<double> elapsedSeconds() override { return kernel_seconds; }
  Status recover() override {
    ++resets;
    faulted_ = false;
    for (Spec* sp : specs_) delete sp;  // modules die with the reset
    unloads += int(specs_.size());
    specs_.clear();
    for (auto& [p, size] : live_) free(reinterpret_cast<void*>(p));
    live_.clear();
    return okStatus();
  }
  Result<TensorMapBytes> encodeTensorMap(const TensorMapSpec& t, DevicePtr base) override {
    if (!tma_available) return Error{"the driver has no cuTensorMapEncodeTiled (fake)"};
    tensor_maps.push_back(t);
    TensorMapBytes b{};
    memcpy(b.data(), &base, sizeof base);
    return b;
  }
  Result<std::unique_ptr<GemmPeer>> openPeer() override {
    if (!peer_available) return Error{"cuBLAS not loadable (fake)"};
    return std::unique_ptr<GemmPeer>(new Peer());
  }

  static void naiveGemm(const GemmWorkload& w, DevicePtr a, DevicePtr b, DevicePtr c) {
    std::vector<float> av(size_t(w.m * w.k)), bv(size_t(w.k * w.n)), cv(size_t(w.m * w.n));
    decodeDType(reinterpret_cast<const void*>(a), int64_t(av.size()), w.a_type, av.data());
    decodeDType(reinterpret_cast<const void*>(b), int64_t(bv.size()), w.b_type, bv.data());
    for (int64_t i = 0; i < w.m; ++i)
      for (int64_t j = 0; j < w.n; ++j) {
        float s = 0;
        for (int64_t k = 0; k < w.k; ++k)
          s += (w.layout == Layout::TN ? av[k * w.m + i] : av[i * w.k + k]) *
               (w.layout == Layout::NT ? bv[j * w.k + k] : bv[k * w.n + j]);
        cv[size_t(i * w.n + j)] = s;
      }
    encodeDType(cv.data(), int64_t(cv.size()), w.c_type, reinterpret_cast<void*>(c));
  }

  size_t liveAllocations() const { return live_.size(); }

 private:
  struct Spec {
    std::string mode, order, key;
    GemmWorkload w;
    int runs = 0;  // launches that computed C
  };
  struct Peer : GemmPeer {
    std::string name() const override { return "cublas"; }
    Status enqueue(const GemmWorkload& w, DevicePtr a, DevicePtr b, DevicePtr c) override {
      naiveGemm(w, a, b, c);
      return okStatus();
    }
  };
  bool checkRange(DevicePtr p, size_t bytes) const {
    for (const auto& [base, size] : live_)
      if (p >= base && p + bytes <= base + size) return true;
    return false;
  }
  std::map<DevicePtr, size_t> live_;
  std::set<Spec*> specs_;
  bool hanging_ = false, faulted_ = false;
};

inline const std::string kW0 = "gemm:NN:24x16x40:f16*f16->f32";
inline const std::string kW1 = "gemm:NT:8x12x16:bf16*bf16->f32";
inline const std::string kW2 = "gemm:TN:9x7x5:f32*f32->f32";

inline BundleKernel kernel(const std::string& id, const std::string& workload, std::vector<KernelArg> args = {}) {
  BundleKernel k;
  k.id = id;
  k.workload = workload;
  k.file = "kernels/" + id + ".ptx";
  k.format = KernelFormat::Ptx;
  k.kernel_name = "sextant_gemm_kernel";
  k.args = args.empty() ? std::vector<KernelArg>{KernelArg::buf('C'), KernelArg::buf('A'), KernelArg::buf('B')} : args;
  k.grid = {2, 2, 1};
  k.block = {128, 1, 1};
  return k;
}

// A bundle whose kernel files are fake images: id -> "<mode> <order>" (the workload is appended).
inline BundleManifest fakeBundle(const std::string& dir, const std::vector<std::pair<BundleKernel, std::string>>& ks) {
  BundleManifest m;
  m.created_by = "test";
  m.created_at = isoTimeUtc();
  m.target = "h100";
  m.vendor = "nvidia";
  m.arch = "sm_90";
  std::map<std::string, std::string> files;
  for (const auto& [k, image] : ks) {
    if (std::find(m.workloads.begin(), m.workloads.end(), k.workload) == m.workloads.end())
      m.workloads.push_back(k.workload);
    m.kernels.push_back(k);
    files[k.file] = image + " " + k.workload;
  }
  EXPECT_TRUE(writeBundle(dir, m, files).ok());
  auto back = readBundle(dir);
  EXPECT_TRUE(back.ok()) << (back.ok() ? "" : back.error());
  return m;
}

inline RunOptions fastOptions(const std::string& results) {
  RunOptions o;
  o.measure.min_reps = 5;
  o.measure.max_reps = 50;
  o.measure.min_time_s = 0.02;  // 20 launches of the fake 1 ms kernel
  o.measure.timeout_s = 0.2;
  o.results_path = results;
  o.runner = "test";
  o.command = "test";
  return o;
}

inline const KernelResult* find(const ResultsFile& r, const std::string& id) {
  for (const auto& k : r.results)
    if (k.id == id) return &k;
  return nullptr;
}

}  // namespace sextant::testing_gpu
