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
  return Error{"unknown GPU vendor '" + vendor + "' (expected nvidia or amd)"};
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

EventState GemmBench::waitFor(int event, std::string& error) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(o_.timeout_s);
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
  auto launchOnce = [&](double* seconds) -> bool {
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
    EventState s = waitFor(1, err);
    if (s == EventState::Pending) {
      char msg[256];
      snprintf(msg, sizeof msg,
               "did not finish within %.3g s; the GPU context is lost (the kernel may still be running), later "
               "kernels are skipped",
               o_.timeout_s);
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
  for (size_t i = 0; i < k.args.size(); ++i) {
    const KernelArg& a = k.args[i];
    switch (a.kind) {
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

namespace {

// The fields a kernel result and a reference share, from a measurement.
template <class R>
R measuredResult(const std::string& workload, const GpuMeasurement& g) {
  R r;
  r.workload = workload;
  r.status = gpuStatusName(g.status);
  r.message = g.message;
  r.times_s = g.times_s;
  r.median_s = g.median_s;
  r.cv = g.cv;
  r.gflops = g.gflops;
  r.max_abs_err = g.max_abs_err;
  r.checked_entries = g.checked_entries;
  return r;
}

KernelResult toResult(const BundleKernel& k, const GpuMeasurement& g) {
  auto r = measuredResult<KernelResult>(k.workload, g);
  r.id = k.id;
  r.resources = g.resources;
  r.loaded = g.loaded;
  r.verified = g.verified;
  return r;
}

KernelResult skipped(const BundleKernel& k, const std::string& why) {
  GpuMeasurement g;
  g.status = GpuStatus::Skipped;
  g.message = why;
  return toResult(k, g);
}

std::string hostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

Result<ResultsFile> runBundle(GpuDevice& dev, const std::string& bundle_dir, const BundleManifest& m,
                              const RunOptions& o, const RunCallbacks& cb) {
  std::set<std::string> ids;
  for (const auto& k : m.kernels) ids.insert(k.id);
  for (const auto& id : o.only)
    if (!ids.count(id)) return Error{"unknown kernel id '" + id + "' (not in the bundle)"};
  std::set<std::string> only(o.only.begin(), o.only.end());

  // Kernels grouped by workload, in the manifest's order.
  std::vector<std::pair<std::string, std::vector<const BundleKernel*>>> groups;
  size_t total = 0;
  for (const auto& key : m.workloads) {
    std::vector<const BundleKernel*> ks;
    for (const auto& k : m.kernels)
      if (k.workload == key && (only.empty() || only.count(k.id))) ks.push_back(&k);
    total += ks.size();
    if (!ks.empty()) groups.emplace_back(key, std::move(ks));
  }

  ResultsFile r;
  r.runner = o.runner;
  r.date = isoTimeUtc();
  r.command = o.command;
  r.host = hostName();
  r.device = dev.info();
  r.options = o.options;
  // Resumed: what the earlier run measured stays, and is not measured again.
  std::set<std::string> done_ids, done_refs;
  if (o.resume_from) {
    const ResultsFile& prev = *o.resume_from;
    if (prev.device && prev.device->name != dev.info().name)
      return Error{"cannot resume: the results were measured on " + prev.device->name + ", this device is " +
                   dev.info().name};
    r.date = prev.date;
    r.command = prev.command;
    r.notes = prev.notes;
    for (const auto& k : prev.results)
      if (k.status != "skipped" && ids.count(k.id) && (only.empty() || only.count(k.id))) {
        r.results.push_back(k);
        done_ids.insert(k.id);
      }
    for (const auto& ref : prev.references)
      if (ref.status == "ok") {
        r.references.push_back(ref);
        done_refs.insert(ref.workload);
      }
    r.notes.push_back("resumed at " + isoTimeUtc() + " by a fresh process with " + std::to_string(done_ids.size()) +
                      " kernel(s) already measured");
  }
  auto save = [&]() { return writeResults(o.results_path, r); };
  if (auto st = save(); !st) return Error{st.error()};
  auto note = [&](const std::string& n) {
    r.notes.push_back(n);
    if (cb.on_note) cb.on_note(n);
  };

  GemmBench bench(dev, o.measure);
  std::unique_ptr<GemmPeer> peer;
  bool peer_tried = false;
  int peer_generation = 0;
  size_t done = done_ids.size();
  auto overTime = [&]() {
    return o.deadline_s > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count() > o.deadline_s;
  };
  auto addResult = [&](KernelResult kr) -> Status {
    r.results.push_back(std::move(kr));
    ++done;
    auto st = save();
    if (cb.on_kernel) cb.on_kernel(r.results.back(), done, total);
    return st;
  };

  bool stopped_after_fault = false;
  for (auto& [key, all_kernels] : groups) {
    std::vector<const BundleKernel*> kernels;
    for (const auto* k : all_kernels)
      if (!done_ids.count(k->id)) kernels.push_back(k);
    if (kernels.empty() || stopped_after_fault) continue;
    const bool stop = cb.interrupted && cb.interrupted();
    if (stop || bench.lost() || overTime()) {
      const std::string why = stop ? "interrupted" : bench.lost() ? bench.lostReason() : "time budget spent";
      for (const auto* k : kernels)
        if (auto st = addResult(skipped(*k, why)); !st) return Error{st.error()};
      continue;
    }
    auto w = parseWorkloadKey(key);
    std::optional<GemmHostProblem> problem;
    std::string problem_error;
    if (!w) {
      problem_error = w.error();
    } else {
      try {
        auto p = GemmHostProblem::create(*w, o.measure.seed, o.measure.check);
        if (p)
          problem.emplace(std::move(*p));
        else
          problem_error = p.error();
      } catch (const std::bad_alloc&) {
        problem_error = "not enough host memory for the inputs and the reference";
      }
    }
    if (!problem) {
      for (const auto* k : kernels)
        if (auto st = addResult(skipped(*k, "cannot prepare the workload: " + problem_error)); !st)
          return Error{st.error()};
      continue;
    }
    auto sp = bench.setProblem(*problem);  // on failure every kernel reports the reason

    if (o.reference && sp && !done_refs.count(key)) {
      if (peer && peer_generation != bench.generation()) {
        (void)peer.release();  // its handle died with the device reset: leak it, never call into it
        peer_tried = false;
      }
      if (!peer_tried) {
        peer_tried = true;
        auto pr = dev.openPeer();
        if (pr) {
          peer = std::move(*pr);
          peer_generation = bench.generation();
        } else {
          note("no vendor BLAS reference: " + pr.error());
        }
      }
      if (peer) {
        GpuMeasurement g = bench.measurePeer(*peer);
        auto ref = measuredResult<ReferenceResult>(key, g);
        ref.peer = peer->name();
        r.references.push_back(ref);
        if (auto st = save(); !st) return Error{st.error()};
        if (cb.on_reference) cb.on_reference(ref);
      }
    }

    for (const auto* k : kernels) {
      if (stopped_after_fault) break;
      if (cb.interrupted && cb.interrupted()) {
        if (auto st = addResult(skipped(*k, "interrupted")); !st) return Error{st.error()};
        continue;
      }
      if (overTime()) {
        if (auto st = addResult(skipped(*k, "time budget spent")); !st) return Error{st.error()};
        continue;
      }
      if (bench.lost()) {
        if (auto st = addResult(skipped(*k, bench.lostReason())); !st) return Error{st.error()};
        continue;
      }
      if (cb.on_start) cb.on_start(*k);
      GpuMeasurement g;
      auto image = readKernelFile(bundle_dir, *k);
      if (!image) {
        g.status = GpuStatus::LoadError;
        g.message = image.error();
      } else {
        KernelLaunchSpec spec;
        spec.id = k->id;
        spec.image = std::move(*image);
        spec.format = k->format;
        spec.kernel_name = k->kernel_name;
        spec.args = k->args;
        spec.dims = LaunchDims{k->grid, k->block, k->dynamic_shared_bytes};
        if (!k->ptx_file.empty()) {
          BundleKernel ptx = *k;
          ptx.file = k->ptx_file;
          auto text = readKernelFile(bundle_dir, ptx);
          if (text) spec.fallback_ptx = std::move(*text);
        }
        if (!bench.problemReady() && !bench.lost()) (void)bench.setProblem(*problem);  // after a failed reset
        const int gen = bench.generation();
        g = bench.measureKernel(spec);
        // A reset device, or a lost one (timeout, failed reset): a fresh process goes on.
        stopped_after_fault = o.stop_after_fault && (bench.generation() != gen || bench.lost());
      }
      if (auto st = addResult(toResult(*k, g)); !st) return Error{st.error()};
    }
  }
  if (stopped_after_fault) {
    // The caller restarts a fresh process (resume_from) for the kernels not recorded.
    (void)peer.release();  // its handle died with the device reset (or the device is busy)
    return r;
  }
  // After a timeout the device may still be busy: never call into cuBLAS again (its destructor
  // would synchronise).
  if (bench.lost()) (void)peer.release();
  return r;
}

}  // namespace sextant
