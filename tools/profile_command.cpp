// A network's time op by op (issue #32): `tune compile MODEL --profile -o m.so` writes a shared
// object whose ops are each timed on every call (codegen/src/compiler_cpu_profile.cpp) and
// m.so.profile.json beside it (its ops, the arguments to call it with); `tune profile m.so` calls
// it and prints where the time goes; `tune model --profile` does both after tuning.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>

#include "commands.h"
#include "records_internal.h"
#include "sextant/common/strings.h"
#include "sextant/runtime/model_runner.h"
#include "tune_internal.h"

namespace sextant::cli {

using json = nlohmann::json;

Result<Signature> mlirSignature(const std::string& text) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"(func\.func\s+@forward\(([^)]*)\))")))
    return Error{"the module has no func.func @forward to measure"};
  Signature s;
  const std::string args = m[1];
  std::regex ty(R"(memref<((?:\d+x)*)f32>)");
  for (auto it = std::sregex_iterator(args.begin(), args.end(), ty); it != std::sregex_iterator(); ++it) {
    std::vector<int64_t> shape;
    for (const std::string& d : split((*it)[1].str(), 'x'))
      if (!d.empty()) shape.push_back(std::stoll(d));
    s.inputs.push_back(shape);
  }
  return s;
}

std::string profileSidecar(const std::string& so_path) { return so_path + ".profile.json"; }

Status writeProfileSidecar(const std::string& so_path, const std::vector<ProfiledOp>& ops, const Signature& sig) {
  json jo = json::array();
  for (size_t i = 0; i < ops.size(); ++i)
    jo.push_back({{"id", i}, {"function", ops[i].function}, {"op", ops[i].op}, {"kind", ops[i].kind},
                  {"label", ops[i].label}, {"flops", ops[i].flops}, {"producer", ops[i].producer},
                  {"nested", ops[i].nested}, {"container", ops[i].container}, {"fused", ops[i].fused}});
  json j = {{"format", "sextant-profile-1"}, {"entry", "_mlir_ciface_forward"}, {"inputs", sig.inputs},
            {"outputs", sig.outputs}, {"ops", jo}};
  return writeFileAtomically(profileSidecar(so_path), j.dump(1) + "\n");
}

namespace {

std::string msText(double s) { return fmt("%.3f", s * 1e3); }

}  // namespace

Result<json> profileNetwork(const std::string& so_path, double min_time_s) {
  auto text = readFile(profileSidecar(so_path));
  if (!text) return Error{so_path + " has no per-op clock description (" + profileSidecar(so_path) +
                          "): compile it with tune compile --profile"};
  json side = json::parse(*text, nullptr, false);
  if (side.is_discarded() || side.value("format", "") != "sextant-profile-1" || !side.contains("ops"))
    return Error{profileSidecar(so_path) + ": not a profile description (sextant-profile-1)"};
  ModelRunRequest r;
  r.so_path = std::filesystem::absolute(so_path).string();
  r.entry = side.value("entry", "_mlir_ciface_forward");
  r.inputs = side["inputs"].get<std::vector<std::vector<int64_t>>>();
  r.outputs = side["outputs"].get<std::vector<std::vector<int64_t>>>();
  r.min_time_s = min_time_s;
  r.profile = true;
  auto m = runModel(r);
  if (!m) return Error{m.error()};
  const json& ops = side["ops"];
  if (m->op_s.size() > ops.size())
    return Error{profileSidecar(so_path) + " describes " + std::to_string(ops.size()) + " ops, the network timed " +
                 std::to_string(m->op_s.size()) + ": the description is not this shared object's"};
  // An epilogue whose producer was fused into it holds the producer's work: one row, the producer's
  // kind and FLOPs. (The compiler marks an op fused when its clock times nothing after the
  // schedules.)
  std::vector<double> s(ops.size(), 0.0);
  for (size_t i = 0; i < m->op_s.size(); ++i) s[i] = m->op_s[i];
  json rows = json::array();
  std::vector<bool> merged(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i) {
    const int64_t p = ops[i].value("producer", int64_t(-1));
    if (p >= 0 && size_t(p) < ops.size() && ops[size_t(p)].value("fused", false) && !ops[i].value("fused", false))
      merged[size_t(p)] = true;
  }
  // The rows are the leaves: a call of a function whose ops are timed is their sum (and the call).
  double sum = 0, calls_s = 0;
  int fused = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].value("nested", false)) sum += s[i];
    if (ops[i].value("container", false)) {
      calls_s += s[i];
      continue;
    }
    if (ops[i].value("nested", false)) calls_s -= s[i];
    if (merged[i]) continue;
    json o = ops[i];
    o["s"] = s[i];
    const int64_t p = ops[i].value("producer", int64_t(-1));
    if (p >= 0 && size_t(p) < ops.size() && merged[size_t(p)]) {
      o["kind"] = ops[size_t(p)]["kind"];
      o["flops"] = ops[size_t(p)]["flops"];
      o["label"] = ops[size_t(p)]["label"].get<std::string>() + " + its epilogue";
      o["s"] = s[i] + s[size_t(p)];
    }
    if (ops[i].value("fused", false)) {
      ++fused;
      continue;
    }
    rows.push_back(o);
  }
  std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) { return a["s"].get<double>() > b["s"].get<double>(); });
  std::map<std::string, std::tuple<int, double, double>> kinds;  // ops, seconds, FLOPs
  for (const json& o : rows) {
    auto& [n, t, f] = kinds[o["kind"].get<std::string>()];
    ++n, t += o["s"].get<double>(), f += o["flops"].get<double>();
  }
  json jk = json::array();
  for (const auto& [k, v] : kinds)
    jk.push_back({{"kind", k}, {"ops", std::get<0>(v)}, {"s", std::get<1>(v)}, {"flops", std::get<2>(v)}});
  std::sort(jk.begin(), jk.end(), [](const json& a, const json& b) { return a["s"].get<double>() > b["s"].get<double>(); });
  // The whole call's mean, as the ops' times are means (a median beside sums of means leaves a
  // negative rest).
  double mean = 0;
  for (double t : m->times_s) mean += t / double(m->times_s.size());
  return json{{"so", so_path}, {"whole_s", mean}, {"whole_median_s", m->median_s}, {"timed_sum_s", sum}, {"calls", m->times_s.size()},
              {"in_calls_untimed_s", calls_s},
              {"fused_ops", fused}, {"kinds", jk}, {"ops", rows}};
}

void printProfile(const json& p, int top) {
  const double whole = p["whole_s"].get<double>(), sum = p["timed_sum_s"].get<double>();
  auto rate = [](double flops, double s, const std::string& kind) {
    if (flops <= 0 || s <= 0) return std::string("-");
    const bool fma = kind.find("conv") != std::string::npos || kind == "matmul";
    return fmt(fma ? "%.1f GFLOP/s" : "%.2f G/s", flops / s / 1e9);
  };
  printf("%s: %s ms a call (mean of %d profiled calls); the timed ops sum to %s ms; outside them: %s ms in "
         "the network's functions, %s ms in the functions it calls (calls, allocation, views)\n",
         p["so"].get<std::string>().c_str(), msText(whole).c_str(), p["calls"].get<int>(), msText(sum).c_str(),
         msText(whole - sum).c_str(), msText(p.value("in_calls_untimed_s", 0.0)).c_str());
  printf("\n%-16s %5s %10s %7s %16s\n", "kind", "ops", "ms", "share", "rate");
  for (const json& k : p["kinds"]) {
    const double s = k["s"].get<double>();
    printf("%-16s %5d %10s %6.1f%% %16s\n", k["kind"].get<std::string>().c_str(), k["ops"].get<int>(),
           msText(s).c_str(), 100 * s / whole, rate(k["flops"].get<double>(), s, k["kind"]).c_str());
  }
  printf("\n%-4s %10s %7s %16s  %s\n", "#", "ms", "share", "rate", "op (the ops that timed nothing were fused into "
                                                                    "a later one)");
  int i = 0;
  for (const json& o : p["ops"]) {
    if (i >= top) break;
    const double s = o["s"].get<double>();
    printf("%-4d %10s %6.1f%% %16s  %s\n", ++i, msText(s).c_str(), 100 * s / whole,
           rate(o["flops"].get<double>(), s, o["kind"]).c_str(), o["label"].get<std::string>().c_str());
  }
  if (int(p["ops"].size()) > top)
    printf("... %zu more ops (--top N, or --report json for every one)\n", p["ops"].size() - size_t(top));
  printf("'rate': GFLOP/s for convolutions and matmuls (an epilogue fused into its op counted with it); "
         "G/s: points of the iteration space per second for the rest\n");
}

int cmdProfile(const ProfileArgs& a) {
  auto p = profileNetwork(a.so, a.min_time);
  if (!p) return fail(p.error());
  if (a.report == "json") {
    printf("%s\n", p->dump(2).c_str());
    return 0;
  }
  printProfile(*p, a.top);
  return 0;
}

}  // namespace sextant::cli
