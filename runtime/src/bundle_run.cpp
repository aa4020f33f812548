// The bundle loop (runBundle): every kernel of a bundle measured with the harness of
// gpu_runner.cpp, verified, and written to the results file as it goes.
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
        spec.dims = LaunchDims{k->grid, k->block, k->dynamic_shared_bytes, k->subgroup_size};
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
