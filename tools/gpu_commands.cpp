// `tune --target <gpu>` and `tune import-results`: GPU tuning with compile-only, bundle and device
// measurement modes (see search/gpu_evaluator.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <functional>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "gpu_samples.h"
#include "sextant/codegen/compiler.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/codegen/ops.h"
#include "sextant/common/strings.h"
#include "sextant/costmodel/features.h"
#include "sextant/costmodel/model.h"
#include "sextant/db/database.h"
#include "sextant/hwspec/devices.h"
#include "sextant/runtime/bundle.h"
#include "sextant/runtime/cpu_runner.h"
#include "sextant/runtime/gpu_runner.h"
#include "sextant/search/gpu_evaluator.h"
#include "sextant/search/strategy.h"
#include "sextant/search/tuner.h"

namespace sextant::cli {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string fmt1(double v) {
  char b[32];
  snprintf(b, sizeof b, "%.1f", v);
  return b;
}

Result<GemmWorkload> gpuWorkload(const GpuTuneArgs& a) {
  auto op = findOp(a.op);
  if (!op) return Error{op.error()};
  return (*op)->make(a.shape, a.dtype, a.layout);
}

std::string noDeviceHelp(const std::string& why, const Target& t) {
  return why + "; to tune " + t.name + " without one: --measure none (compile every candidate for " + t.arch +
         " and run the pre-flight analysis; nothing is measured) or --measure bundle --out DIR (then `tune-runner "
         "DIR` on a machine with the GPU and `tune import-results DIR`)";
}

}  // namespace

Status sameBundleDevice(const BundleManifest& m, const std::string& device_json, const std::string& out) {
  const json mine = device_json.empty() ? json() : json::parse(device_json, nullptr, false);
  if (mine == m.vulkan_device) return okStatus();
  auto name = [](const json& d) { return d.is_object() ? "'" + d.value("name", std::string("?")) + "'" : std::string("this machine's own"); };
  return Error{out + " holds kernels compiled for the Vulkan device " + name(m.vulkan_device) + ", not " + name(mine) +
               ": use another --out"};
}

int cmdTuneGpu(const GpuTuneArgs& a, const std::atomic<bool>& stop) {
  auto target = resolveTarget(a.target);
  if (!target) return fail(target.error());
  auto g = gpuTargetInfo(*target);
  if (!g) return fail(g.error());
  VulkanLimits l;
  std::string device_json;  // the described device, kept in a bundle's manifest
  if (!a.vulkan_device.empty()) {
    // Compile for another machine's Vulkan device: its limits, subgroup size, f16 and class.
    if (target->kind == TargetKind::Vulkan && a.measure == "device")
      return fail("--vulkan-device describes a device elsewhere: use it with --measure bundle or none (a device "
                  "measured here describes itself)");
    if (auto st = applyVulkanDeviceFile(*g, *target, a.vulkan_device, &l); !st) return fail(st.error());
    device_json = vulkanDeviceJson(l);
    if (!a.quiet)
      fprintf(stderr, "compiling for %s (%s, class %s) as described in %s\n", g->display.c_str(), l.device_type.c_str(),
              g->vulkan_class.c_str(), a.vulkan_device.c_str());
  }
  auto w = gpuWorkload(a);
  if (!w) return fail(w.error());
  if (target->kind == TargetKind::Vulkan && !vulkanSupportsTypes(*w))
    return fail("the vulkan target tunes f32 and f16 GEMMs (got --dtype " + a.dtype + ")");
  const bool predicted = a.measure == "predicted";
  auto mode = parseGpuMeasureMode(predicted ? "none" : a.measure);
  if (!mode) return fail("unknown --measure mode '" + a.measure + "' (known: device, none, bundle, predicted)");
  if (*mode == GpuMeasureMode::Bundle && a.out.empty()) return fail("--measure bundle needs --out DIR (the bundle directory)");
  if (*mode != GpuMeasureMode::Bundle && !a.out.empty()) return fail("--out is for --measure bundle");
  if (*mode == GpuMeasureMode::Bundle && fs::exists(fs::path(a.out) / "manifest.json")) {
    // Appending to an existing bundle: it must be one for this target.
    auto m = readBundle(a.out);
    if (!m) return fail(m.error());
    auto t = resolveTarget(a.target);
    if (t && (m->target != t->name || m->arch != t->arch))
      return fail(a.out + " is a bundle for " + m->target + " (" + m->arch + "); use another --out for " + t->name);
    if (auto st = sameBundleDevice(*m, device_json, a.out); !st) return fail(st.error());
  }
  if (a.trials <= 0 || a.batch <= 0) return fail("--trials and --batch must be at least 1");
  if (a.report != "text" && a.report != "json") return fail("--report must be text or json");
  {
    auto names = strategyNames();
    if (std::find(names.begin(), names.end(), a.strategy) == names.end())
      return fail("unknown strategy '" + a.strategy + "' (known: " + join(names, ", ") + ")");
  }

  GpuEvaluatorOptions eo;
  eo.mode = *mode;
  eo.jobs = a.jobs;
  eo.bundle_dir = a.out;
  eo.vulkan_device = device_json;
  std::string device_name = g->display + " (datasheet; not present)";
  std::string machine = "none";  // compiled only: nothing measured
  if (*mode == GpuMeasureMode::Device) {
    const bool vulkan = target->kind == TargetKind::Vulkan;
    const int ordinal = vulkan ? std::stoi(target->device) : 0;
    auto dev = openGpuDevice(target->vendor(), ordinal);
    if (!dev) return fail(noDeviceHelp(dev.error(), *target));
    const DeviceInfo& di = (*dev)->info();
    if (vulkan) {
      // The space follows the device's limits (workgroup size, workgroup memory, subgroup size).
      if (const VulkanDeviceProps* props = vulkanDeviceProps(**dev)) applyVulkanLimits(*g, props->limits);
      if (w->a_type == DType::F16 && !g->has_float16)
        return fail(di.name + " has no shaderFloat16 with 16-bit storage buffers: f16 GEMMs cannot run there");
      if (di.arch == "vulkan-cpu-emulated")
        fprintf(stderr, "note: %s is a CPU-emulated Vulkan device: its timings verify kernels, they do not measure a GPU\n",
                di.name.c_str());
    }
    const KernelFormat fmt = target->kind == TargetKind::Nvidia ? KernelFormat::Ptx
                             : vulkan                          ? KernelFormat::Spirv
                                                               : KernelFormat::Hsaco;
    if (auto s = checkArchCompatible(g->chip, fmt, di); !s)
      return fail("target " + target->name + " (" + g->chip + ") does not match the device here: " + s.error());
    device_name = di.name + " (" + di.arch + ", driver " + di.driver_version + ")";
    machine = gpuMachineKey(di);
    eo.runner = findTuneRunner();
    if (eo.runner.empty())
      return fail("tune-runner not found (next to tune, in PATH, or $SEXTANT_RUNNER): it measures GPU kernels");
    char mt[32], to[32];
    snprintf(mt, sizeof mt, "%g", a.min_time);
    snprintf(to, sizeof to, "%g", a.timeout);
    eo.runner_args = {"--min-time", mt, "--timeout", to, "--no-reference"};
    if (vulkan) eo.runner_args.insert(eo.runner_args.end(), {"--device", std::to_string(ordinal)});
  }

  Space space = buildGpuGemmSpace(*w, *g);
  if (space.size() == 0)
    return fail("no valid GPU schedule for " + w->key() + " on " + target->name +
                ": M, N and K must be multiples of 16 (the smallest block tile and K chunk)");
  auto db = Database::open(a.db);
  if (!db) return fail(db.error());
  if (auto s = registerWorkloadAndTarget(*db, *w, *target, g->display, g->chip); !s) return fail(s.error());

  // --measure predicted: a model trained on other GPU targets' measured records (their features
  // plus their device's Blueprint) ranks this target's compiled candidates.
  std::vector<Sample> train;
  if (predicted) {
    auto all = db->allRecords(false);
    if (!all) return fail(all.error());
    auto groups = gpuSamples(*all, [&](const RecordRow& r) { return r.target_key != target->key(); }, true);
    for (auto& [k, v] : groups) train.insert(train.end(), v.begin(), v.end());
    int ok = 0;
    for (const auto& smp : train) ok += !smp.failed;
    if (ok < 16)
      return fail("--measure predicted needs measured records of other GPU targets in " + a.db + " to learn from (" +
                  std::to_string(ok) + " found, 16 at least): measure elsewhere first (bundle + import-results), or "
                  "use --measure none");
  }

  GpuEvaluator evaluator(*w, space, *g, eo);
  TuneOptions o;
  o.strategy = a.strategy;
  o.seed = a.seed;
  o.trials = a.trials;
  o.time_budget_s = a.time_budget;
  o.batch = a.batch;
  o.resume = !a.fresh;
  o.args_json = a.args_json;
  o.final_rounds = 0;  // GPU: the runner's repetitions are the measurement (no host-side re-check)
  o.measure_unmeasured = *mode == GpuMeasureMode::Device;
  if (a.study > 0) {  // one worker of a study (tune worker): claims, leases, no final comparison
    o.study_id = a.study, o.worker = a.worker_name, o.db_path = a.db;
    o.lease_s = a.lease, o.heartbeat_s = a.heartbeat;
  } else {
    o.first_candidate = defaultGpuCandidate(*w, space, *g);  // the untuned default is one of the trials
  }
  if (a.study == 0 && target->kind == TargetKind::Vulkan) {
    // Then IREE's configurations of the other device classes (vulkan_configs.cpp).
    auto seeds = vulkanVendorSeeds(*w, space, *g);
    for (const Candidate& c : seeds)
      if (c != *o.first_candidate) o.seeds.push_back(c);
  }
  o.strategy_context.num_features = int(gpuGemmFeatureNames().size());
  o.strategy_context.features = [&](const Candidate& c) { return gpuGemmFeatures(*w, space, c, *g); };
  o.strategy_context.model_path = costModelPath(a.db, target->key(), w->key());
  if (a.strategy == "glimpse") {
    // The prior: other workloads' records on every GPU target, weighted by the similarity of the
    // targets' Blueprints (exp(-d^2/2) over the embedding distance d; the same device: 1). A Vulkan
    // device's Blueprint is its datasheet entry's (by its reported name), so that a GPU's own
    // records (h200:sm_90 for "NVIDIA H200") weigh most.
    auto all = db->allRecords(false);
    if (!all) return fail(all.error());
    const std::vector<double>& me = blueprintOf(*g);
    std::map<std::string, double> weight;  // per target key
    o.strategy_context.prior = priorFromRecords(*all, w->key(), target->key(), machine, [&](const std::string& k) {
      auto it = weight.find(k);
      if (it != weight.end()) return it->second;
      auto t = gpuTargetOfKey(k);
      double d2 = 0;
      if (t) {
        const auto& e = blueprintOf(*t);
        for (size_t i = 0; i < e.size() && i < me.size(); ++i) d2 += (e[i] - me[i]) * (e[i] - me[i]);
      }
      return weight[k] = t ? std::exp(-d2 / 2) : 0.0;
    });
  }
  TuneContext ctx{*db, *w, *target, space, evaluator, device_name, "", llvmVersion(), machine};
  if (!a.quiet)
    fprintf(stderr, "tuning %s on %s (%s, %s): space of %llu schedules, %lld trials, strategy %s, measure %s\n",
            w->key().c_str(), target->key().c_str(), g->display.c_str(), g->chip.c_str(),
            (unsigned long long)space.size(), (long long)a.trials, a.strategy.c_str(), a.measure.c_str());
  int64_t last = -1;
  auto sum = tune(ctx, o, {}, nullptr, stop, [&](const TuneProgress& p) {
    if (a.quiet || p.done == last) return;
    last = p.done;
    fprintf(stderr, "[%lld/%lld] failures %lld%s\n", (long long)p.done, (long long)p.total, (long long)p.failures,
            p.best_gflops > 0 ? (" | best " + fmt1(p.best_gflops) + " GFLOP/s measured").c_str() : "");
  });
  if (!sum) return fail(sum.error());

  if (predicted && !sum->interrupted) {
    CostModel model(int(train.front().x.size()));
    model.fit(train);
    auto mine = db->records(w->key(), target->key(), true);
    if (!mine) return fail(mine.error());
    std::vector<const RecordRow*> compiled;
    std::vector<std::vector<float>> xs;
    for (const auto& r : *mine) {
      if (r.run_id != sum->run_id || r.status != "not_measured") continue;
      auto c = space.fromKey(r.candidate);
      if (!c) continue;
      compiled.push_back(&r);
      xs.push_back(featuresWithBlueprint(*w, space, *c, *g));
    }
    auto pred = model.predict(xs);
    std::vector<size_t> order(compiled.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return pred[x].mean > pred[y].mean; });
    const size_t top = std::min<size_t>(compiled.size(), std::max<size_t>(1, compiled.size() / 10));
    std::vector<RecordRow> rows;
    for (size_t rank = 0; rank < top; ++rank) {
      const RecordRow& src = *compiled[order[rank]];
      const Prediction& q = pred[order[rank]];
      RecordRow r = src;
      r.id = 0;
      r.uid.clear();  // a record of its own
      r.machine = "none";
      r.source = "predicted";
      r.status = "ok";
      r.gflops = 0;  // no time is made up: the prediction is a relative score (in stats)
      r.times_s.clear();
      r.median_s = 0;
      r.message = "PREDICTED, not measured: rank " + std::to_string(rank + 1) + " of " +
                  std::to_string(compiled.size()) + " compiled candidates by a model trained on " +
                  std::to_string(train.size()) + " records of other GPU targets (Blueprint-conditioned)";
      json st = json::parse(src.stats, nullptr, false);
      if (!st.is_object()) st = json::object();
      st["predicted"] = {{"score", q.mean}, {"spread", q.spread}, {"p_fail", q.p_fail}, {"rank", rank + 1}};
      r.stats = st.dump();
      rows.push_back(std::move(r));
    }
    if (auto s2 = db->insertRecords(rows); !s2) return fail(s2.error());
    if (!a.quiet)
      fprintf(stderr, "predicted: the top %zu of %zu compiled candidates stored as source 'predicted' (not measured)\n",
              top, compiled.size());
  }

  // Summary of this run's records.
  auto recs = db->records(w->key(), target->key());
  if (!recs) return fail(recs.error());
  std::map<std::string, int64_t> by_status;
  std::vector<const RecordRow*> compiled;
  for (const auto& r : *recs) {
    if (r.run_id != sum->run_id) continue;
    if (r.source == "predicted") {
      ++by_status["predicted"];
      continue;
    }
    ++by_status[r.status];
    if (r.status == "not_measured" || r.status == "ok") compiled.push_back(&r);
  }
  json j;
  j["workload"] = w->key();
  j["target"] = target->key();
  j["measure"] = a.measure;
  j["run_id"] = sum->run_id;
  j["trials"] = sum->trials;
  j["by_status"] = by_status;
  j["failures"] = sum->failures, j["rejected"] = sum->rejected, j["not_measured"] = sum->not_measured;
  j["interrupted"] = sum->interrupted;
  if (*mode == GpuMeasureMode::Bundle) j["bundle"] = a.out;
  if (sum->best) j["best"] = {{"gflops", sum->best->gflops}, {"candidate", sum->best->candidate}, {"device", sum->best->device}};
  if (a.report == "json") {
    std::cout << j.dump(2) << "\n";
    return sum->interrupted ? 130 : 0;
  }
  if (a.study > 0 && a.quiet) return sum->interrupted ? 130 : 0;  // a quiet worker: the study's maker reports
  printf("\n%s on %s (%s), run %lld: %lld candidates\n", w->key().c_str(), target->name.c_str(), g->chip.c_str(),
         (long long)sum->run_id, (long long)sum->trials);
  for (const auto& [st, n] : by_status) {
    const char* what = st == "predicted"       ? "of those, ranked best by the model: PREDICTED, not measured"
                       : st == "not_measured"  ? "compiled, passed pre-flight, NOT measured"
                       : st == "rejected"      ? "rejected by pre-flight (resources exceed the target's limits)"
                       : st == "compile_error" ? "failed to compile"
                       : st == "ok"            ? "measured and verified on the device"
                                               : "failed on the device";
    printf("  %-14s %5lld  %s\n", st.c_str(), (long long)n, what);
  }
  if (*mode == GpuMeasureMode::Bundle)
    printf("\nbundle: %s (%lld kernels added in this run)\n  next: tune-runner %s   (on a machine with the GPU)\n"
           "        tune import-results %s --db %s\n",
           a.out.c_str(), (long long)evaluator.bundled(), a.out.c_str(), a.out.c_str(), a.db.c_str());
  if (sum->best)
    printf("\nbest measured: %.1f GFLOP/s on %s\n  %s\n", sum->best->gflops, sum->best->device.c_str(),
           sum->best->candidate.c_str());
  else if (*mode != GpuMeasureMode::Device)
    printf("\nNo kernel was run: figures above are compile-time facts (registers, shared memory, occupancy in\n"
           "`tune show`/export json), not performance.\n");
  return sum->interrupted ? 130 : 0;
}

std::string gpuMachineKey(const DeviceInfo& d) {
  std::string name = d.name;
  for (char& c : name)
    if (c == ':' || c == ' ') c = '-';
  return "gpu:" + name + ":" + d.arch + ":driver-" + d.driver_version;
}

int cmdImportResults(const std::string& dir, const std::string& results_path, const std::string& db_path,
                     const std::string& vulkan_device) {
  auto manifest = readBundle(dir);
  if (!manifest) return fail(manifest.error());
  std::string rp = results_path.empty() ? (fs::path(dir) / "results.json").string() : results_path;
  auto res = readResults(rp);
  if (!res) return fail(res.error());
  if (!res->device) return fail(rp + ": the results name no device; nothing was measured");
  auto target = resolveTarget(manifest->target);
  if (!target) return fail(dir + "/manifest.json: " + target.error());
  auto g = gpuTargetInfo(*target);
  if (!g) return fail(g.error());
  // Vulkan: the space of the device the kernels were compiled for (the manifest's, else --vulkan-device).
  if (!manifest->vulkan_device.is_null()) {
    if (!vulkan_device.empty()) return fail(dir + " names the Vulkan device it was compiled for: leave out --vulkan-device");
    auto l = parseVulkanDevice(manifest->vulkan_device.dump(), dir + "/manifest.json");
    if (!l) return fail(l.error());
    applyVulkanLimits(*g, *l);
  } else if (auto st = applyVulkanDeviceFile(*g, *target, vulkan_device); !st) {
    return fail(st.error());
  }
  auto db = Database::open(db_path);
  if (!db) return fail(db.error());
  std::map<std::string, const BundleKernel*> kernels;
  for (const auto& k : manifest->kernels) kernels[k.id] = &k;
  const DeviceInfo& dev = *res->device;
  const std::string device = dev.name + " (" + dev.arch + ", driver " + dev.driver_version + ")";
  const std::string origin = "imported from " + rp + " (tune-runner run of " + res->date + ")";
  std::map<std::string, int64_t> run_of;  // workload -> import run
  std::map<std::string, double> peer;     // workload -> cuBLAS GFLOP/s
  for (const auto& r : res->references)
    if (r.status == "ok") peer[r.workload] = r.gflops;
  int64_t imported = 0, skipped = 0, duplicates = 0, outside = 0;
  SpaceCache spaces;
  std::map<std::string, std::vector<RecordRow>> known;  // workload -> its records here (read once)
  printf("%-14s %-13s %10s %9s  %s\n", "kernel", "status", "GFLOP/s", "vs peer", "knobs");
  for (const auto& kr : res->results) {
    auto it = kernels.find(kr.id);
    if (it == kernels.end()) return fail(rp + ": result for kernel '" + kr.id + "', which " + dir + " does not contain");
    const BundleKernel& k = *it->second;
    if (kr.status == "skipped") {
      ++skipped;
      continue;
    }
    auto w = parseWorkloadKey(k.workload);
    if (!w) return fail(dir + "/manifest.json: " + w.error());
    const Space& space = spaces.get(*w, *g);
    std::map<std::string, int64_t> km;
    for (auto& [name, v] : k.knobs.items()) km[name] = v.get<int64_t>();
    auto cand = space.fromMap(km);
    if (!cand || !space.isValid(*cand)) {  // e.g. a schedule the space has since dropped: its record would
      ++outside;                           // belong to no space; the rest of the run still counts
      fprintf(stderr, "tune: note: %s: kernel %s (%s) is not a valid point of this version's space: not imported\n",
              dir.c_str(), k.id.c_str(), kr.status.c_str());
      continue;
    }
    std::string key = space.keyOf(*cand);
    if (!known.count(w->key())) {
      auto recs = db->records(w->key(), target->key(), true);
      if (!recs) return fail(recs.error());
      known[w->key()] = std::move(*recs);
    }
    bool dup = false;
    std::string schedule, stats = k.static_stats.dump();
    for (const auto& r : known[w->key()]) {
      if (r.candidate != key) continue;
      if (r.source == "measured" && r.message.find(origin) != std::string::npos) dup = true;
      if (schedule.empty() && !r.schedule.empty()) schedule = r.schedule;
    }
    if (dup) {
      ++duplicates;
      continue;
    }
    if (schedule.empty()) schedule = emitGpuGemmSchedule(*w, space, *cand);
    if (!run_of.count(w->key())) {
      if (auto s = registerWorkloadAndTarget(*db, *w, *target, g->display, g->chip); !s) return fail(s.error());
      RunRow run;
      run.workload_key = w->key();
      run.target_key = target->key();
      run.strategy = "import-results";
      run.space = space.name();
      run.space_fingerprint = space.fingerprint();
      run.trials_requested = 0;
      run.args = json{{"bundle", dir}, {"results", rp}}.dump();
      run.tool_version = SEXTANT_VERSION;
      run.llvm_version = llvmVersion();
      run.host = res->host;
      run.machine = gpuMachineKey(dev);
      auto id = db->beginRun(run);
      if (!id) return fail(id.error());
      run_of[w->key()] = *id;
    }
    json st = json::parse(stats, nullptr, false);
    if (st.is_discarded() || !st.is_object()) st = json::object();
    if (kr.resources)
      st["driver_resources"] = {{"registers", kr.resources->registers},
                                {"local_bytes", kr.resources->local_bytes},
                                {"static_shared_bytes", kr.resources->static_shared_bytes}};
    st["checked_entries"] = kr.checked_entries;
    RecordRow row;
    row.run_id = run_of[w->key()];
    row.workload_key = w->key();
    row.target_key = target->key();
    row.candidate = key;
    row.knobs = json(km).dump();
    row.schedule = schedule;
    row.status = kr.status;
    row.source = "measured";
    row.message = origin + (kr.message.empty() ? "" : ": " + kr.message);
    row.times_s = kr.times_s;
    row.median_s = kr.median_s;
    row.cv = kr.cv;
    row.gflops = kr.gflops;
    // The figure is recomputed from the repetitions and the workload's FLOPs (issue #35), never
    // taken from the file; a file whose own figure disagrees is named.
    if (kr.status == "ok") {
      if (kr.times_s.empty()) return fail(rp + ": kernel " + kr.id + " is 'ok' but has no repetition times");
      summarize(kr.times_s, row.median_s, row.cv);
      row.gflops = row.median_s > 0 ? w->flops() / row.median_s / 1e9 : 0;
      if (kr.gflops > 0 && std::fabs(kr.gflops - row.gflops) > 0.01 * row.gflops)
        fprintf(stderr, "tune: warning: %s: kernel %s says %.2f GFLOP/s, its times give %.2f: recorded %.2f\n",
                rp.c_str(), kr.id.c_str(), kr.gflops, row.gflops, row.gflops);
    }
    row.machine = gpuMachineKey(dev);
    row.max_abs_err = kr.max_abs_err;
    row.tool_version = SEXTANT_VERSION;
    row.llvm_version = llvmVersion();
    row.device = device;
    row.created_at = res->date;
    row.stats = st.dump();
    if (auto s = db->insertRecords({row}); !s) return fail(s.error());
    ++imported;
    double p = peer.count(k.workload) ? peer[k.workload] : 0;
    printf("%-14s %-13s %10.1f %9s  %s\n", k.id.c_str(), kr.status.c_str(), row.gflops,
           p > 0 && kr.status == "ok" ? (fmt1(100 * row.gflops / p) + "%").c_str() : "-", key.c_str());
  }
  for (const auto& r : res->references) {
    if (!run_of.count(r.workload)) continue;
    BaselineRow b;
    b.run_id = run_of[r.workload];
    b.name = r.peer;
    b.detail = "measured by tune-runner on " + device;
    b.status = r.status;
    b.message = r.message;
    b.times_s = r.times_s;
    b.median_s = r.median_s;
    b.cv = r.cv;
    b.gflops = r.gflops;
    if (auto s = db->insertBaseline(b); !s) return fail(s.error());
  }
  for (auto& [wk, id] : run_of) db->finishRun(id, "finished");
  printf("\nimported %lld measurements from %s into %s (device: %s); %lld skipped by the runner, %lld already imported",
         (long long)imported, rp.c_str(), db_path.c_str(), device.c_str(), (long long)skipped, (long long)duplicates);
  if (outside) printf(", %lld outside this version's space (not imported)", (long long)outside);
  if (outside && target->kind == TargetKind::Vulkan && manifest->vulkan_device.is_null() && vulkan_device.empty())
    printf("\n(compiled for a described Vulkan device? name it: --vulkan-device FILE)");
  printf("\n");
  return 0;
}

}  // namespace sextant::cli
