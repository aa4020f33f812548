// `tune bundle`: a kernel bundle of chosen candidates (the untuned default and a seeded random
// sample per route), compiled and analysed here, measured elsewhere by tune-runner. This is how
// the GPU validation set is made (scripts/make-validation-bundles.sh); no database is involved:
// `tune import-results DIR` brings the measurements into one afterwards.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/common/strings.h"
#include "sextant/hwspec/target.h"
#include "sextant/runtime/bundle.h"
#include "sextant/search/gpu_evaluator.h"

namespace sextant::cli {

namespace {

// The route a GPU candidate takes, from its "mma" knob.
std::string routeOf(const Space& s, const Candidate& c) {
  const int k = s.knobIndex("mma");
  const int64_t v = k < 0 ? 0 : s.knobs()[size_t(k)].values[size_t(c[size_t(k)])];
  if (v == 1 && isVulkanSpace(s)) return "coop";  // Vulkan cooperative matrices
  return v == 0 ? "fma" : v == 1 ? "mma.sync" : v == 2 ? "wgmma" : "mma" + std::to_string(v);
}

const std::vector<std::string> kRoutes = {"fma", "mma.sync", "wgmma", "coop"};

}  // namespace

CLI::App* addBundleCommand(CLI::App& app, BundleArgs& a) {
  auto* b = app.add_subcommand(
      "bundle", "compile chosen GPU candidates into a kernel bundle for tune-runner: the untuned default and a "
                "seeded random sample per route (the GPU validation set)");
  b->add_option("--target", a.target, "GPU target (h100, h200, a100, mi300, ...)")->required();
  b->add_option("--shape", a.shape, "GEMM sizes MxNxK")->required();
  b->add_option("--dtype", a.dtype, "input element type: f16, bf16, f32")->capture_default_str();
  b->add_option("--layout", a.layout, "NN, NT or TN")->capture_default_str();
  b->add_option("--routes", a.routes,
                "comma-separated routes to sample: fma, mma.sync, wgmma, coop (Vulkan cooperative matrices), or all (routes the target/dtype do not "
                "have are reported and skipped)")
      ->capture_default_str();
  b->add_option("--random", a.random, "random candidates per route")->capture_default_str();
  b->add_flag("!--no-default", a.with_default, "leave out the untuned default schedule");
  b->add_option("--seed", a.seed, "sampling seed")->capture_default_str();
  b->add_option("--vulkan-device", a.vulkan_device,
                "vulkan: compile for the device described in FILE[:N] (tune hw show vulkan --json, tune-runner "
                "--describe-vulkan): its limits, subgroup size, f16 and class");
  b->add_option("--jobs", a.jobs, "parallel compilations (0: one per core)")->capture_default_str();
  b->add_option("-o,--out", a.out, "bundle directory (created, or appended to if it is a bundle of this target)")
      ->required();
  return b;
}

int cmdBundle(const BundleArgs& a, const std::atomic<bool>& stop) {
  auto target = resolveTarget(a.target);
  if (!target) return fail(target.error());
  if (!target->isGpu()) return fail("tune bundle is for GPU targets; '" + a.target + "' is not one");
  auto g = gpuTargetInfo(*target);
  if (!g) return fail(g.error());
  VulkanLimits l;
  if (auto st = applyVulkanDeviceFile(*g, *target, a.vulkan_device, &l); !st) return fail(st.error());
  const std::string device_json = a.vulkan_device.empty() ? "" : vulkanDeviceJson(l);
  auto w = makeGemmWorkload(a.shape, a.dtype, a.layout);
  if (!w) return fail(w.error());
  if (a.random < 0) return fail("--random must be 0 or more");
  std::vector<std::string> routes = a.routes == "all" ? kRoutes : split(a.routes, ',');
  for (const auto& r : routes)
    if (std::find(kRoutes.begin(), kRoutes.end(), r) == kRoutes.end())
      return fail("unknown route '" + r + "' (known: " + join(kRoutes, ", ") + ", all)");
  if (auto m = readBundle(a.out); m && (m->target != target->name || m->arch != g->chip))
    return fail(a.out + " is a bundle for " + m->target + " (" + m->arch + "); use another --out for " + target->name);
  else if (m)
    if (auto st = sameBundleDevice(*m, device_json, a.out); !st) return fail(st.error());

  Space space = buildGpuGemmSpace(*w, *g);
  if (space.size() == 0)
    return fail("no valid GPU schedule for " + w->key() + " on " + target->name +
                ": M, N and K must be multiples of 16 (the smallest block tile and K chunk)");
  // Every valid candidate by route, then a seeded sample of each.
  std::map<std::string, std::vector<uint64_t>> by_route;
  for (uint64_t i = 0; i < space.size(); ++i) by_route[routeOf(space, space.at(i))].push_back(i);
  std::vector<Candidate> batch;
  std::vector<std::string> role;
  std::set<uint64_t> taken;
  if (a.with_default) {
    Candidate d = defaultGpuCandidate(*w, space, *g);
    batch.push_back(d);
    role.push_back("default");
    taken.insert(space.encode(d));
  }
  std::mt19937_64 rng(a.seed);
  for (const auto& r : routes) {
    auto& pool = by_route[r];
    if (pool.empty()) {
      fprintf(stderr, "tune bundle: %s has no %s candidates on %s (%s): skipped\n", w->key().c_str(), r.c_str(),
              target->name.c_str(), g->chip.c_str());
      continue;
    }
    std::shuffle(pool.begin(), pool.end(), rng);
    int64_t n = 0;
    for (uint64_t i : pool) {
      if (n >= a.random) break;
      Candidate c = space.at(i);
      if (!taken.insert(space.encode(c)).second) continue;
      batch.push_back(c);
      role.push_back("random");
      ++n;
    }
  }

  GpuEvaluatorOptions eo;
  eo.mode = GpuMeasureMode::Bundle;
  eo.jobs = a.jobs;
  eo.bundle_dir = a.out;
  eo.vulkan_device = device_json;
  GpuEvaluator ev(*w, space, *g, eo);
  fprintf(stderr, "tune bundle: %s on %s (%s): %zu candidates (%s) -> %s\n", w->key().c_str(), target->name.c_str(),
          g->chip.c_str(), batch.size(), a.routes.c_str(), a.out.c_str());
  std::map<std::string, std::map<std::string, int>> counts;  // route -> status -> n
  // kernel id -> what the manifest says about it: its route and whether it is the default.
  std::map<std::string, std::pair<std::string, std::string>> what;
  bool bundled = false;
  const size_t step = 16;
  for (size_t at = 0; at < batch.size() && !stop.load(); at += step) {
    std::vector<Candidate> part(batch.begin() + long(at), batch.begin() + long(std::min(batch.size(), at + step)));
    auto out = ev.evaluate(part, stop, {});
    for (size_t i = 0; i < part.size(); ++i) {
      const std::string route = routeOf(space, part[i]);
      ++counts[route][out[i].status];
      bundled |= out[i].status == "not_measured";
      what[ev.kernelId(part[i])] = {route, role[at + i]};
      if (out[i].status == "compile_error")
        fprintf(stderr, "  %s %s: compile_error: %s\n", route.c_str(), space.keyOf(part[i]).c_str(),
                out[i].message.substr(0, 300).c_str());
    }
    fprintf(stderr, "  [%zu/%zu] compiled\n", std::min(batch.size(), at + step), batch.size());
  }
  if (bundled) {
    auto m = readBundle(a.out);
    if (!m) return fail(m.error());
    for (auto& k : m->kernels)
      if (auto it = what.find(k.id); it != what.end())
        k.static_stats["route"] = it->second.first, k.static_stats["role"] = it->second.second;
    if (auto st = writeBundleManifest(a.out, *m); !st) return fail(st.error());
  }
  printf("%s on %s (%s):\n", w->key().c_str(), target->name.c_str(), g->chip.c_str());
  for (const auto& [route, st] : counts) {
    std::string line;
    for (const auto& [s, n] : st)
      line += (line.empty() ? "" : ", ") + std::to_string(n) + " " + (s == "not_measured" ? "in the bundle" : s);
    printf("  %-9s %s\n", route.c_str(), line.c_str());
  }
  printf("bundle: %s (next: tune-runner %s on a machine with the GPU, then tune import-results %s --db FILE)\n",
         a.out.c_str(), a.out.c_str(), a.out.c_str());
  return stop.load() ? 130 : 0;
}

}  // namespace sextant::cli
