// The GPU measurement harness and the bundle loop; the device backends are in cuda_device.cpp
// and hip_device.cpp.
#include "sextant/runtime/gpu_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <thread>
#include <unistd.h>

#include "sextant/runtime/cpu_runner.h"  // summarize()

namespace sextant {

namespace {
constexpr double kBusyWaitS = 20e-6;  // before each timed launch (GpuDevice::busyWait)
}

const char* gpuStatusName(GpuStatus s) {
  switch (s) {
    case GpuStatus::Ok: return "ok";
    case GpuStatus::WrongResult: return "wrong_result";
    case GpuStatus::LoadError: return "load_error";
    case GpuStatus::LaunchError: return "launch_error";
    case GpuStatus::Timeout: return "timeout";
    case GpuStatus::Skipped: return "skipped";
  }
  return "?";
}

Result<std::unique_ptr<GpuDevice>> openGpuDevice(const std::string& vendor, int ordinal) {
  if (vendor == "nvidia") return openCudaDevice(ordinal);
  if (vendor == "amd") return openHipDevice(ordinal);
  if (vendor == "vulkan") return openVulkanDevice(ordinal);
  return Error{"unknown GPU vendor '" + vendor + "' (expected nvidia, amd or vulkan)"};
}

namespace {

struct SmArch {
  int major = 0, minor = 0;
  char suffix = 0;  // 'a', 'f' or 0
};

bool parseSm(const std::string& s, SmArch& out) {
  if (s.size() < 5 || s.compare(0, 3, "sm_") != 0) return false;
  size_t i = 3;
  while (i < s.size() && isdigit((unsigned char)s[i])) ++i;
  if (i - 3 < 2) return false;
  if (i + 1 == s.size() && (s[i] == 'a' || s[i] == 'f'))
    out.suffix = s[i];
  else if (i != s.size())
    return false;
  std::string digits = s.substr(3, i - 3);
  out.major = std::stoi(digits.substr(0, digits.size() - 1));
  out.minor = digits.back() - '0';
  return true;
}

std::string gfxBase(const std::string& s) { return s.substr(0, s.find(':')); }

}  // namespace

Status checkArchCompatible(const std::string& arch, KernelFormat format, const DeviceInfo& device) {
  const std::string dev = device.name + " (" + (device.arch.empty() ? "unknown architecture" : device.arch) + ")";
  const std::string what = std::string("kernels built for ") + arch + " (" + kernelFormatName(format) + ")";
  if (format == KernelFormat::Spirv) {
    // SPIR-V 1.3 runs on every Vulkan 1.1 device; the limits were checked by the space and are
    // checked again when the pipeline is made.
    if (device.vendor != "vulkan") return Error{what + " need a Vulkan device; this device is " + dev};
    return okStatus();
  }
  if (device.vendor == "vulkan") return Error{what + " cannot run on a Vulkan device, " + dev + " (SPIR-V only)"};
  if (format == KernelFormat::Hsaco) {
    if (device.vendor != "amd") return Error{what + " need an AMD GPU; this device is " + dev};
    if (device.arch.empty() || gfxBase(arch) == gfxBase(device.arch)) return okStatus();
    return Error{what + " cannot run on this device, " + dev + ": AMD code objects run only on their own gfx target"};
  }
  if (device.vendor != "nvidia") return Error{what + " need an NVIDIA GPU; this device is " + dev};
  if (device.arch.empty()) return okStatus();
  SmArch k, d;
  if (!parseSm(arch, k)) return Error{"cannot read the architecture '" + arch + "' (expected e.g. sm_90)"};
  if (!parseSm(device.arch, d)) return Error{"cannot read the device's architecture '" + device.arch + "'"};
  bool ok;
  std::string rule;
  if (k.suffix == 'a') {
    ok = k.major == d.major && k.minor == d.minor;
    rule = "architecture-specific targets (" + arch + ") run only on exactly that architecture";
  } else if (k.suffix == 'f' || format == KernelFormat::Cubin) {
    ok = k.major == d.major && d.minor >= k.minor;
    rule = "a cubin runs only on devices of its major architecture with the same or a higher minor version";
  } else {
    ok = d.major > k.major || (d.major == k.major && d.minor >= k.minor);
    rule = "PTX runs on its architecture and newer ones";
  }
  if (ok) return okStatus();
  return Error{what + " cannot run on this device, " + dev + ": " + rule};
}

// ---------------------------------------------------------------------------------------------
// GemmBench

GemmBench::GemmBench(GpuDevice& dev, GpuMeasureOptions o) : dev_(dev), o_(o) {}

GemmBench::~GemmBench() {
  if (!lost_) freeBuffers();
}

void GemmBench::freeBuffers() {
  for (DevicePtr* p : {&a_, &b_, &c_, &scratch_}) {
    if (*p) dev_.release(*p);
    *p = 0;
  }
  ready_ = false;
}

Tolerance GemmBench::tolerance() const {
  Tolerance t = p_ ? defaultTolerance(p_->workload()) : Tolerance{1e-3, 1e-4};
  if (o_.rtol >= 0) t.rtol = o_.rtol;
  if (o_.atol >= 0) t.atol = o_.atol;
  return t;
}

static std::string mib(double bytes) {
  char b[64];
  snprintf(b, sizeof b, "%.1f MiB", bytes / 1048576.0);
  return b;
}

Status GemmBench::setProblem(const GemmHostProblem& p) {
  if (lost_) return Error{lost_reason_};
  freeBuffers();  // always: another problem may live at the same address
  p_ = &p;
  problem_error_.clear();
  const int64_t l2 = dev_.info().l2_bytes;
  scratch_bytes_ = 0;
  if (o_.flush_l2) {
    int64_t want = l2 > 0 ? 2 * l2 : int64_t(256) << 20;  // unknown L2: assume a large one
    scratch_bytes_ = size_t((std::max<int64_t>(want, int64_t(1) << 20) + 0xfffff) & ~int64_t(0xfffff));
  }
  struct Buf {
    DevicePtr* p;
    size_t bytes;
    const char* name;
  };
  for (Buf b : {Buf{&a_, p.aBytes().size(), "A"}, Buf{&b_, p.bBytes().size(), "B"}, Buf{&c_, size_t(p.cBytes()), "C"},
                Buf{&scratch_, scratch_bytes_, "the L2 flush buffer"}}) {
    if (b.bytes == 0) continue;
    auto r = dev_.allocate(b.bytes);
    if (!r) {
      freeBuffers();
      problem_error_ = "cannot allocate " + mib(double(b.bytes)) + " for " + b.name + " on the device: " + r.error();
      return Error{problem_error_};
    }
    *b.p = *r;
  }
  for (auto [dst, src] : {std::pair{a_, &p.aBytes()}, std::pair{b_, &p.bBytes()}}) {
    auto st = dev_.copyToDevice(dst, src->data(), src->size());
    if (!st) {
      freeBuffers();
      problem_error_ = "cannot copy the inputs to the device: " + st.error();
      return Error{problem_error_};
    }
  }
  ready_ = true;
  return okStatus();
}

EventState GemmBench::waitFor(int event, std::string& error, double extra_s) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(o_.timeout_s + extra_s);
  for (int spin = 0;; ++spin) {
    EventState s = dev_.query(event, error);
    if (s != EventState::Pending) return s;
    if (clock::now() > deadline) return EventState::Pending;
    if (spin < 200)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(spin < 2000 ? 20 : 500));
  }
}

void GemmBench::afterDeviceFailure(GpuMeasurement& m) {
  // A fault inside a kernel poisons the context: reset it and put the workload back.
  ready_ = false;
  a_ = b_ = c_ = scratch_ = 0;  // gone with the reset (or unusable): never released
  auto st = dev_.recover();
  if (!st) {
    lost_ = true;
    lost_reason_ = "context lost after a failure that the device could not recover from (" + st.error() + ")";
    m.message += "; the device could not be reset (" + st.error() + "), later kernels are skipped";
    return;
  }
  ++generation_;
  const GemmHostProblem* p = p_;
  p_ = nullptr;
  if (p) {
    auto sp = setProblem(*p);
    if (!sp) {
      lost_ = true;
      lost_reason_ = "context lost: after a device reset, " + sp.error();
      m.message += "; after the device reset: " + sp.error();
      return;
    }
  }
  m.message += " (the device was reset)";
}

GpuMeasurement GemmBench::run(const std::string& what, const std::function<Status()>& enqueue) {
  GpuMeasurement m;
  const GemmWorkload& w = p_->workload();

  // Enqueues one launch between the two events and waits for it; false (and m filled in) on failure.
  // The first launch of a kernel may include the driver's shader compilation (GpuDevice::
  // firstLaunchAllowance): it gets that much more time.
  bool first = true;
  auto launchOnce = [&](double* seconds) -> bool {
    const double extra = first ? dev_.firstLaunchAllowance() : 0;
    first = false;
    // Timed: the queue is kept busy while the start event and the launch are enqueued.
    auto st = seconds ? dev_.busyWait(kBusyWaitS) : okStatus();
    if (st) st = dev_.record(0);
    if (st) st = enqueue();
    if (!st) {
      m.status = GpuStatus::LaunchError;
      m.message = "launch failed: " + st.error();
      return false;
    }
    st = dev_.record(1);
    if (!st) {
      m.status = GpuStatus::LaunchError;
      m.message = "cannot record an event: " + st.error();
      return false;
    }
    std::string err;
    EventState s = waitFor(1, err, extra);
    if (s == EventState::Pending) {
      char msg[256];
      snprintf(msg, sizeof msg,
               "did not finish within %.3g s; the GPU context is lost (the kernel may still be running), later "
               "kernels are skipped",
               o_.timeout_s + extra);
      m.status = GpuStatus::Timeout;
      m.message = msg;
      lost_ = true;
      lost_reason_ = "context lost after a timeout in " + what;
      return false;
    }
    if (s == EventState::Failed) {
      m.status = GpuStatus::LaunchError;
      m.message = "failed on the device: " + err;
      afterDeviceFailure(m);
      return false;
    }
    if (seconds) {
      auto e = dev_.elapsedSeconds();
      if (!e) {
        m.status = GpuStatus::LaunchError;
        m.message = "cannot read the event timer: " + e.error();
        return false;
      }
      *seconds = *e;
    }
    return true;
  };

  // 0. Fresh inputs: an earlier kernel may have written into A or B.
  for (auto [dst, src] : {std::pair{a_, &p_->aBytes()}, std::pair{b_, &p_->bBytes()}}) {
    auto up = dev_.copyToDevice(dst, src->data(), src->size());
    if (!up) {
      m.status = GpuStatus::LaunchError;
      m.message = "cannot copy the inputs to the device: " + up.error();
      return m;
    }
  }
  // 1. The verified launch, into C poisoned with 0xFF bytes (NaN in f32, f16 and bf16), so that
  //    an entry the kernel does not write is caught.
  auto st = dev_.fill(c_, 0xFF, size_t(p_->cBytes()));
  if (!st) {
    m.status = GpuStatus::LaunchError;
    m.message = "cannot clear C: " + st.error();
    return m;
  }
  if (!launchOnce(nullptr)) return m;
  // Copies C back and checks it; false (and m filled in) when it is wrong or cannot be read.
  auto verify = [&](const char* when) -> bool {
    std::vector<uint8_t> c(size_t(p_->cBytes()));
    auto cp = dev_.copyToHost(c.data(), c_, c.size());
    if (!cp) {
      m.status = GpuStatus::LaunchError;
      m.message = "cannot copy C back: " + cp.error();
      return false;
    }
    CheckResult check = checkGemmResult(*p_, c.data(), tolerance());
    ++m.verified;
    m.checked_entries = check.checked;
    m.max_abs_err = std::max(m.max_abs_err, check.max_abs_err);
    if (!check.ok) {
      m.status = GpuStatus::WrongResult;
      m.message = std::string(when) + check.message;
      return false;
    }
    return true;
  };
  if (!verify("")) return m;
  // 2. The other warm-up launches.
  for (int i = 1; i < o_.warmup; ++i)
    if (!launchOnce(nullptr)) return m;
  // 3. Timed repetitions, each after an L2 flush (outside the timed region).
  double total = 0;
  while (int(m.times_s.size()) < o_.max_reps && (int(m.times_s.size()) < o_.min_reps || total < o_.min_time_s)) {
    if (scratch_bytes_) {
      st = dev_.flushL2(scratch_, scratch_bytes_, uint8_t(++flush_counter_));
      if (!st) {
        m.status = GpuStatus::LaunchError;
        m.message = "cannot flush the L2: " + st.error();
        return m;
      }
    }
    double t = 0;
    if (!launchOnce(&t)) return m;
    m.times_s.push_back(t);
    total += t;
  }
  summarize(m.times_s, m.median_s, m.cv);
  // 4. C again, as the last timed launch left it: a race (a wrong wait-group count, a swizzle
  //    that collides) can pass one launch and fail another.
  if (!verify(("right after the first launch, wrong after " + std::to_string(m.times_s.size()) +
               " timed repetitions: ").c_str()))
    return m;
  m.gflops = m.median_s > 0 ? w.flops() / m.median_s / 1e9 : 0;
  m.status = GpuStatus::Ok;
  return m;
}

bool GemmBench::canMeasure(GpuMeasurement& m) const {
  if (lost_) {
    m.message = lost_reason_;
    return false;
  }
  if (!ready_ || !p_) {
    m.status = GpuStatus::LaunchError;
    m.message = problem_error_.empty() ? "no workload on the device" : problem_error_;
    return false;
  }
  return true;
}

GpuMeasurement GemmBench::measureKernel(const KernelLaunchSpec& k) {
  GpuMeasurement m;
  if (!canMeasure(m)) return m;
  auto lk = dev_.load(k.image, k.format, k.kernel_name);
  std::string loaded = kernelFormatName(k.format);
  if (!lk && k.format == KernelFormat::Cubin && !k.fallback_ptx.empty()) {
    // A cubin the driver refuses (e.g. assembled by a newer ptxas than it knows): its PTX, JIT.
    loaded = "ptx (fallback: " + lk.error() + ")";
    lk = dev_.load(k.fallback_ptx, KernelFormat::Ptx, k.kernel_name);
  }
  if (!lk) {
    m.status = GpuStatus::LoadError;
    m.message = lk.error();
    return m;
  }
  const int gen = generation_;
  auto st = dev_.prepare(*lk, k.dims);
  if (!st) {
    m.status = GpuStatus::LaunchError;
    m.message = st.error();
    m.resources = lk->resources;
    dev_.unload(*lk);
    return m;
  }
  std::vector<uint64_t> storage(k.args.size(), 0);
  std::vector<void*> params(k.args.size());
  std::vector<DevicePtr> maps;  // tensor maps in device memory, freed after the measurement
  auto freeMaps = [&]() {
    if (!lost_ && gen == generation_)
      for (DevicePtr p : maps) dev_.release(p);
  };
  for (size_t i = 0; i < k.args.size(); ++i) {
    const KernelArg& a = k.args[i];
    switch (a.kind) {
      case KernelArg::Kind::TensorMap: {
        // Over the same buffer the kernel's other arguments and the reference use.
        const size_t elem_bytes = 2;  // f16, bf16
        const TensorMapSpec& t = a.tmap;
        const size_t need = size_t(t.stride_bytes) * size_t(t.dims[1]);
        const size_t have = (t.buffer == 'A' ? p_->aBytes() : p_->bBytes()).size();
        Result<GpuDevice::TensorMapBytes> bytes = Error{""};
        if (need > have || size_t(t.dims[0]) * elem_bytes > size_t(t.stride_bytes))
          bytes = Error{std::string("tensor map of ") + t.buffer + " is larger than the buffer"};
        else
          bytes = dev_.encodeTensorMap(t, t.buffer == 'A' ? a_ : b_);
        Result<DevicePtr> ptr = bytes ? dev_.allocate(bytes->size()) : Result<DevicePtr>(Error{bytes.error()});
        Status copied = ptr ? dev_.copyToDevice(*ptr, bytes->data(), bytes->size()) : Status(Error{ptr.error()});
        if (ptr) maps.push_back(*ptr);
        if (!copied) {
          m.status = GpuStatus::LaunchError;
          m.message = "tensor map: " + copied.error();
          m.resources = lk->resources;
          freeMaps();
          dev_.unload(*lk);
          return m;
        }
        storage[i] = *ptr;
        break;
      }
      case KernelArg::Kind::Buffer: storage[i] = a.buffer == 'A' ? a_ : a.buffer == 'B' ? b_ : c_; break;
      case KernelArg::Kind::I32: {
        int32_t v = int32_t(a.value);
        memcpy(&storage[i], &v, sizeof v);
        break;
      }
      case KernelArg::Kind::I64: memcpy(&storage[i], &a.value, sizeof a.value); break;
    }
    params[i] = &storage[i];
  }
  m = run(k.id, [&]() -> Status { return dev_.launch(*lk, k.dims, params.data()); });
  m.resources = lk->resources;
  m.loaded = loaded;
  freeMaps();
  if (!lost_ && gen == generation_) dev_.unload(*lk);
  return m;
}

GpuMeasurement GemmBench::measurePeer(GemmPeer& peer) {
  GpuMeasurement m;
  if (!canMeasure(m)) return m;
  return run(peer.name(), [&]() -> Status { return peer.enqueue(p_->workload(), a_, b_, c_); });
}

// ---------------------------------------------------------------------------------------------
// The bundle loop

}  // namespace sextant
