#include "sextant/search/gpu_evaluator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sextant/codegen/compiler.h"
#include "sextant/common/strings.h"
#include "sextant/runtime/bundle.h"
#include "sextant/runtime/isolation.h"

namespace sextant {

using json = nlohmann::json;
namespace fs = std::filesystem;

Result<GpuMeasureMode> parseGpuMeasureMode(const std::string& s) {
  if (s == "none") return GpuMeasureMode::None;
  if (s == "bundle") return GpuMeasureMode::Bundle;
  if (s == "device") return GpuMeasureMode::Device;
  return Error{"unknown --measure mode '" + s + "' (known: device, none, bundle)"};
}

std::string findTuneRunner() {
  if (const char* e = std::getenv("SEXTANT_RUNNER")) return e;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path p : {self.parent_path() / "tune-runner", self.parent_path() / "runner" / "tune-runner"})
      if (fs::exists(p, ec) && access(p.c_str(), X_OK) == 0) return p.string();
  }
  if (const char* path = std::getenv("PATH"))
    for (const auto& dir : split(path, ':'))
      if (!dir.empty() && access((dir + "/tune-runner").c_str(), X_OK) == 0) return dir + "/tune-runner";
  return "";
}

namespace {

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Compiled {
  bool ok = false;
  std::string stage, message;
  double seconds = 0;
  std::string kernel_path;
  GpuKernelInfo info;
  GpuResources res;
  bool have_res = false;
  std::string res_error;  // why there are no figures (no ptxas, ptxas failed)
};

}  // namespace

GpuEvaluator::GpuEvaluator(const GemmWorkload& w, const Space& space, const GpuTargetInfo& g, GpuEvaluatorOptions o)
    : w_(w), space_(space), g_(g), o_(std::move(o)) {
  if (o_.jobs <= 0) o_.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  if (o_.work_dir.empty()) {
    o_.work_dir = (fs::temp_directory_path() / ("sextant-gpu-" + std::to_string(getpid()))).string();
    owns_work_dir_ = true;
  }
  fs::create_directories(o_.work_dir);
  if (g_.target.kind == TargetKind::Nvidia) ptxas_ = findPtxas();
}

GpuEvaluator::~GpuEvaluator() {
  std::error_code ec;
  if (owns_work_dir_) fs::remove_all(o_.work_dir, ec);
}

std::string GpuEvaluator::kernelId(const Candidate& c) const {
  // Unique within a bundle that holds several workloads: a short hash of the workload key first.
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char ch : w_.key()) h = (h ^ ch) * 16777619u;
  char tag[16];
  snprintf(tag, sizeof tag, "w%06x-", h & 0xffffffu);
  return tag + std::string("c") + std::to_string(space_.encode(c));
}

std::vector<Evaluation> GpuEvaluator::evaluate(const std::vector<Candidate>& batch, const std::atomic<bool>& stop,
                                               const std::function<void(size_t, const Evaluation&)>& on_result) {
  const bool nvidia = g_.target.kind == TargetKind::Nvidia, vulkan = g_.target.kind == TargetKind::Vulkan;
  const char* ext = nvidia ? ".ptx" : vulkan ? ".spv" : ".hsaco";
  std::vector<Evaluation> out(batch.size());
  std::vector<GpuPlan> plans(batch.size());
  std::vector<Compiled> comp(batch.size());
  std::vector<IsolatedJob> jobs;
  for (size_t i = 0; i < batch.size(); ++i) {
    plans[i] = *planGpuGemm(w_, space_, batch[i]);
    GpuCompileRequest r = gpuCompileRequest(w_, space_, batch[i], plans[i], g_);
    out[i].schedule = r.schedule;
    r.out_path = o_.work_dir + "/k" + std::to_string(counter_++) + ext;
    comp[i].kernel_path = r.out_path;
    // Compilation and the resource analysis run in the child: an LLVM fatal error or a crash
    // in ptxas costs one candidate, not the tuner.
    // ptxas for the architecture the kernel was built for (wgmma: sm_90a).
    jobs.push_back([r, ptxas = ptxas_, arch = r.chip]() {
      GpuKernelInfo info;
      CompileOutcome c = compileGpuGemm(r, info);
      json j{{"ok", c.ok}, {"stage", c.stage}, {"message", c.message}, {"seconds", c.seconds}};
      if (!c.ok) return j.dump();
      j["kernel"] = {{"name", info.name}, {"args", info.args}, {"grid", info.grid}, {"block", info.block},
                     {"async_groups", info.async_groups_per_iteration}, {"dynamic_smem", info.dynamic_smem_bytes},
                     {"subgroup", info.subgroup_size}};
      GpuResources res;
      std::string res_error;
      if (r.vulkan) {
        // SPIR-V carries no register figures; the workgroup memory is the plan's (checked by the space).
        res_error = "SPIR-V: registers are the driver's business (no static figures)";
      } else if (!r.nvidia) {
        res = fromAmdgpuMetadata(info.stats);
      } else if (!ptxas.empty()) {
        auto p = runPtxas(ptxas, r.out_path, arch, r.out_path + ".cubin");
        if (p) res = *p;
        else res_error = p.error();
        res.dynamic_smem_bytes = info.dynamic_smem_bytes;
      } else {
        res.source = "ptx text (no ptxas: registers unknown)";
        res.smem_bytes = ptxSharedBytes(slurp(r.out_path));
        res.dynamic_smem_bytes = info.dynamic_smem_bytes;
      }
      if (res_error.empty())
        j["resources"] = {{"source", res.source},           {"registers", res.registers}, {"sgprs", res.sgprs},
                          {"spill_bytes", res.spill_bytes}, {"stack_bytes", res.stack_bytes},
                          {"smem_bytes", res.smem_bytes}, {"agprs", res.agprs},
                          {"dynamic_smem_bytes", res.dynamic_smem_bytes}};
      else
        j["resources_error"] = res_error;
      return j.dump();
    });
  }
  auto done = runIsolated(jobs, o_.jobs, o_.compile_timeout_s);
  // Ctrl-C: candidates from the first one whose compile was stopped on are not evaluated (nothing
  // is recorded for them; a resumed run proposes them again). Results come back in batch order.
  size_t keep = size_t(std::find_if(done.begin(), done.end(),
                                    [](const ChildOutcome& d) { return d.kind == ChildOutcome::Kind::Stopped; }) -
                       done.begin());
  for (size_t i = 0; i < batch.size(); ++i) {
    Compiled& c = comp[i];
    auto j = json::parse(done[i].output, nullptr, false);
    c.seconds = done[i].seconds;
    if (!done[i].finished() || j.is_discarded()) {
      c.message = "compiler " + done[i].describe();
      if (!done[i].stderr_text.empty()) c.message += ": " + done[i].stderr_text.substr(0, 4000);
      continue;
    }
    c.seconds = j.value("seconds", c.seconds);
    if (!j.value("ok", false)) {
      c.message = j.value("stage", std::string()) + ": " + j.value("message", std::string()).substr(0, 4000);
      continue;
    }
    c.ok = true;
    const json& k = j["kernel"];
    c.info.name = k["name"];
    c.info.args = k["args"].get<std::vector<std::string>>();
    for (int d = 0; d < 3; ++d) c.info.grid[d] = k["grid"][d], c.info.block[d] = k["block"][d];
    c.info.async_groups_per_iteration = k.value("async_groups", 0);
    c.info.dynamic_smem_bytes = k.value("dynamic_smem", int64_t(0));
    c.info.subgroup_size = k.value("subgroup", int64_t(0));
    if (j.contains("resources")) {
      const json& r = j["resources"];
      c.res.source = r["source"];
      c.res.registers = r["registers"], c.res.sgprs = r["sgprs"], c.res.spill_bytes = r["spill_bytes"];
      c.res.stack_bytes = r["stack_bytes"], c.res.smem_bytes = r["smem_bytes"], c.res.agprs = r.value("agprs", -1);
      c.res.dynamic_smem_bytes = r.value("dynamic_smem_bytes", int64_t(0));
      c.have_res = true;
    } else {
      c.res_error = j.value("resources_error", std::string());
    }
  }

  // Pre-flight and statistics; kernels that may run go to the bundle.
  BundleManifest manifest;
  std::string bundle_dir = o_.mode == GpuMeasureMode::Bundle ? o_.bundle_dir : o_.work_dir + "/bundle";
  if (o_.mode != GpuMeasureMode::None) {
    if (o_.mode == GpuMeasureMode::Bundle && fs::exists(fs::path(bundle_dir) / "manifest.json")) {
      auto m = readBundle(bundle_dir);
      if (m) manifest = *m;
    }
    if (manifest.created_at.empty()) {
      manifest.created_by = std::string("sextant ") + SEXTANT_VERSION;
      manifest.created_at = isoTimeUtc();
      manifest.target = g_.target.name;
      manifest.vendor = g_.target.vendor();
      manifest.arch = g_.chip;
      if (!o_.vulkan_device.empty()) manifest.vulkan_device = nlohmann::json::parse(o_.vulkan_device, nullptr, false);
    }
    if (o_.mode == GpuMeasureMode::Device) manifest.kernels.clear();
    if (std::find(manifest.workloads.begin(), manifest.workloads.end(), w_.key()) == manifest.workloads.end())
      manifest.workloads.push_back(w_.key());
  }
  std::vector<size_t> bundled_idx;
  std::map<std::string, std::string> files;
  for (size_t i = 0; i < batch.size(); ++i) {
    Evaluation& e = out[i];
    Compiled& c = comp[i];
    e.compile_s = c.seconds;
    e.source = "compiled";
    if (!c.ok) {
      // A kernel the validator cannot check (cooperative matrices, an old spirv-val) compiled but
      // may not run: labelled compile-only, never bundled.
      const std::string stage = "validate: ";
      const bool unchecked = c.message.rfind(stage + kSpirvUnchecked, 0) == 0;
      e.status = unchecked ? "rejected" : "compile_error";
      e.message = unchecked ? c.message.substr(stage.size()) : c.message;
      continue;
    }
    json stats{{"threads", plans[i].threads},
               {"grid", {c.info.grid[0], c.info.grid[1], c.info.grid[2]}},
               {"block", {c.info.block[0], c.info.block[1], c.info.block[2]}},
               {"kernel", c.info.name},
               {"args", c.info.args},
               {"planned_smem_bytes", plans[i].smem_bytes}};
    if (c.info.async_groups_per_iteration) stats["async_groups_per_iteration"] = c.info.async_groups_per_iteration;
    Preflight pf;
    if (c.have_res) {
      pf = preflightCheck(g_, c.res, plans[i].threads);
      stats["resources"] = c.res.toMap();
      stats["resources_source"] = c.res.source;
      stats["occupancy"] = {{"blocks_per_cu", pf.occupancy.blocks_per_cu},
                            {"fraction", pf.occupancy.fraction},
                            {"limiter", pf.occupancy.limiter}};
    } else {
      stats["resources_error"] = c.res_error;
    }
    if (!c.have_res && c.res_error.rfind("ptxas failed", 0) == 0) {
      // The assembler refused the PTX (e.g. more registers than the block size allows): it
      // cannot be loaded as analysed, so it is not measured (the driver's JIT would refuse it too).
      stats["preflight"] = "not run: ptxas failed";
      e.stats = stats.dump();
      e.status = "compile_error";
      e.message = c.res_error.substr(0, 2000);
      continue;
    }
    stats["preflight"] = pf.ok ? "passed" : "rejected: " + pf.reason;
    e.stats = stats.dump();
    if (!pf.ok) {
      e.status = "rejected";
      e.message = "pre-flight: " + pf.reason;
      continue;
    }
    e.status = "not_measured";
    e.message = "compiled and analysed; not run on a device";
    if (o_.mode == GpuMeasureMode::None) continue;
    BundleKernel k;
    k.id = kernelId(batch[i]);
    k.workload = w_.key();
    k.file = "kernels/" + k.id + ext;
    k.format = nvidia ? KernelFormat::Ptx : vulkan ? KernelFormat::Spirv : KernelFormat::Hsaco;
    // The cubin the pre-flight analysed is what runs; its PTX travels too, for a driver that
    // refuses the cubin (the runner records which one it loaded).
    std::string cubin;
    if (nvidia && c.have_res) cubin = slurp(c.kernel_path + ".cubin");
    if (!cubin.empty()) {
      k.ptx_file = k.file;
      k.file = "kernels/" + k.id + ".cubin";
      k.format = KernelFormat::Cubin;
      files[k.file] = cubin;
      files[k.ptx_file] = slurp(c.kernel_path);
    } else {
      files[k.file] = slurp(c.kernel_path);
    }
    k.kernel_name = c.info.name;
    bool bad_arg = false;
    for (const auto& a : c.info.args) {
      if (a.rfind("i64:", 0) == 0) {
        k.args.push_back(KernelArg::i64(std::stoll(a.substr(4))));
      } else if (a.rfind("tmap:", 0) == 0) {
        auto t = parseTensorMapSpec(a);
        if (!t) bad_arg = true;
        else k.args.push_back(KernelArg::tensorMap(*t));
      } else {
        k.args.push_back(KernelArg::buf(a[0]));
      }
    }
    if (bad_arg) {
      e.status = "compile_error";
      e.message = "a kernel argument the runner cannot make (a Sextant bug)";
      continue;
    }
    for (int d = 0; d < 3; ++d) k.grid[d] = uint32_t(c.info.grid[d]), k.block[d] = uint32_t(c.info.block[d]);
    k.dynamic_shared_bytes = uint32_t(c.info.dynamic_smem_bytes);
    k.subgroup_size = uint32_t(c.info.subgroup_size);
    k.knobs = json(space_.knobMap(batch[i]));
    k.static_stats = stats;
    manifest.kernels.erase(std::remove_if(manifest.kernels.begin(), manifest.kernels.end(),
                                          [&](const BundleKernel& x) { return x.id == k.id; }),
                           manifest.kernels.end());
    manifest.kernels.push_back(k);
    bundled_idx.push_back(i);
    if (o_.mode == GpuMeasureMode::Bundle) e.message = "in bundle " + bundle_dir + " as kernel " + k.id;
  }
  if (o_.mode != GpuMeasureMode::None && !files.empty()) {
    if (auto s = writeBundle(bundle_dir, manifest, files); !s) {
      for (size_t i : bundled_idx) out[i].status = "compile_error", out[i].message = "cannot write the bundle: " + s.error();
    } else if (o_.mode == GpuMeasureMode::Bundle) {
      bundled_ += int64_t(bundled_idx.size());
    }
  }

  if (o_.mode == GpuMeasureMode::Device && !bundled_idx.empty() && stop.load()) keep = std::min(keep, bundled_idx[0]);
  if (o_.mode == GpuMeasureMode::Device && !bundled_idx.empty() && !stop.load()) {
    // Measure the batch with tune-runner in a child process, then read its results file.
    std::string results = bundle_dir + "/results.json";
    std::string cmd = shellQuote(o_.runner) + " " + shellQuote(bundle_dir) + " -o " + shellQuote(results);
    for (const auto& a : o_.runner_args) cmd += " " + shellQuote(a);
    // One measuring process per machine (studies' workers, other tune runs): the device and, for a
    // CPU-emulated one, the cores are the runner's alone while it measures.
    MachineLock lock(MachineLock::Mode::Measure);
    auto child = runIsolated([cmd]() {
      int st = std::system((cmd + " >/dev/null 2>&1").c_str());
      return std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }, o_.runner_timeout_s);
    auto parsed = fs::exists(results) ? readResults(results) : Result<ResultsFile>(Error{"no results file"});
    std::map<std::string, const KernelResult*> by_id;
    if (parsed)
      for (const auto& r : parsed->results) by_id[r.id] = &r;
    for (size_t i : bundled_idx) {
      Evaluation& e = out[i];
      auto it = by_id.find(kernelId(batch[i]));
      // Ctrl-C while the runner measured: it was killed within the kernel in flight (it saves its
      // results file after every kernel); the kernels it had not finished are not recorded.
      const bool unfinished = it == by_id.end() || it->second->status == "skipped";
      if (unfinished && (child.kind == ChildOutcome::Kind::Stopped || (it != by_id.end() && it->second->message == "interrupted"))) {
        keep = std::min(keep, i);
        break;
      }
      if (it == by_id.end()) {
        e.status = "load_error";
        e.source = "measured";
        e.message = "tune-runner " + child.describe() + " (exit " + child.output + ") without a result for this kernel" +
                    (parsed ? "" : ": " + parsed.error());
        continue;
      }
      const KernelResult& r = *it->second;
      if (r.status == "skipped") {
        e.status = "not_measured";
        e.message = "tune-runner skipped it: " + r.message;
        continue;
      }
      e.source = "measured";
      e.status = r.status;
      e.message = r.message;
      e.measurement.times_s = r.times_s;
      e.measurement.median_s = r.median_s;
      e.measurement.cv = r.cv;
      e.measurement.gflops = r.gflops;
      e.measurement.max_abs_err = r.max_abs_err;
      e.measurement.status = r.status == "ok" ? MeasureStatus::Ok : MeasureStatus::LoadError;
      if (parsed->device) e.device = parsed->device->name + " (" + parsed->device->arch + ", driver " +
                                     parsed->device->driver_version + ")";
      if (r.resources) {
        json s = json::parse(e.stats);
        s["driver_resources"] = {{"registers", r.resources->registers},
                                 {"local_bytes", r.resources->local_bytes},
                                 {"static_shared_bytes", r.resources->static_shared_bytes}};
        e.stats = s.dump();
      }
    }
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    std::error_code ec;
    fs::remove(comp[i].kernel_path, ec);
    fs::remove(comp[i].kernel_path + ".cubin", ec);
    if (on_result && i < keep) on_result(i, out[i]);
  }
  out.resize(keep);
  if (o_.mode == GpuMeasureMode::Device) {
    std::error_code ec;
    fs::remove_all(bundle_dir, ec);
  }
  return out;
}

}  // namespace sextant
