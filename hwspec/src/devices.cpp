#include "sextant/hwspec/devices.h"
#include "sextant/hwspec/gpu_target.h"

#include <cctype>
#include <cmath>
#include <regex>
#include <set>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "sextant/common/strings.h"

namespace sextant {

extern const char* const kBuiltinDevicesJson;  // generated from hwspec/data/devices.json

const DeviceSpec* DeviceTable::find(const std::string& name) const {
  for (const auto& d : devices)
    if (d.name == name) return &d;
  return nullptr;
}

const DeviceSpec* datasheetOf(const GpuTargetInfo& g) {
  const DeviceTable& t = builtinDeviceTable();
  return g.target.kind == TargetKind::Vulkan ? t.matchName(g.display) : t.find(g.target.device);
}

const DeviceSpec* DeviceTable::matchName(const std::string& device_name) const {
  // The name without spaces, dashes or case ("NVIDIA GeForce RTX 4090" -> "nvidiageforcertx4090");
  // an entry matches when its model (the key up to its first dash: "h100", "rtx4090", "mi300x")
  // is in it; the longest model wins ("l40s" over "l4"); among entries of one model, the one whose
  // variant ("pcie", "sxm", "80gb") is in the name too, else the first.
  std::string n;
  for (char c : device_name)
    if (std::isalnum(static_cast<unsigned char>(c))) n += char(std::tolower(static_cast<unsigned char>(c)));
  const DeviceSpec* best = nullptr;
  size_t best_len = 0;
  bool best_variant = false;
  for (const auto& d : devices) {
    const size_t dash = d.name.find('-');
    const std::string model = d.name.substr(0, dash);
    if (n.find(model) == std::string::npos) continue;
    const bool variant = dash != std::string::npos && n.find(d.name.substr(dash + 1)) != std::string::npos;
    if (model.size() > best_len || (model.size() == best_len && variant && !best_variant)) {
      best = &d, best_len = model.size(), best_variant = variant;
    }
  }
  return best;
}

namespace {

using json = nlohmann::json;

struct Range {
  double lo, hi;
};

// Plausible ranges: a value outside is a typo or a unit mistake.
const std::map<std::string, Range> kRanges = {
    {"compute_units", {1, 2000}},       {"boost_mhz", {100, 5000}},        {"fp32_tflops", {0.1, 2000}},
    {"fp16_tflops", {1, 20000}},        {"bf16_tflops", {0, 20000}},       {"mem_gb", {1, 4096}},
    {"bw_gbs", {10, 100000}},           {"l2_mb", {0.1, 1024}},            {"smem_per_cu_kb", {1, 4096}},
    {"smem_per_block_kb", {1, 4096}},   {"regs_per_cu", {1024, 1 << 22}}, {"warp_size", {32, 64}},
    {"max_threads_per_block", {32, 4096}}, {"max_threads_per_cu", {32, 8192}},
};
const std::set<std::string> kStringFields = {"name", "display", "vendor", "arch"};
const std::set<std::string> kListFields = {"matrix_shapes", "sources"};

}  // namespace

Result<DeviceTable> parseDeviceTable(const std::string& text, const std::string& origin) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Error{origin + ": not valid JSON"};
  if (!j.is_object() || j.value("format", "") != "sextant-hwspec")
    return Error{origin + ": not a Sextant hardware table (format must be \"sextant-hwspec\")"};
  DeviceTable t;
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() < 1)
    return Error{origin + ": missing or invalid 'version'"};
  t.version = j["version"];
  if (!j.contains("sources") || !j["sources"].is_object()) return Error{origin + ": missing 'sources'"};
  for (auto& [k, v] : j["sources"].items()) t.sources[k] = v.get<std::string>();
  if (j.contains("assumptions"))
    for (auto& a : j["assumptions"]) t.assumptions.push_back(a.get<std::string>());
  if (!j.contains("devices") || !j["devices"].is_array() || j["devices"].empty())
    return Error{origin + ": missing or empty 'devices'"};
  std::set<std::string> names;
  for (size_t i = 0; i < j["devices"].size(); ++i) {
    const json& d = j["devices"][i];
    std::string who = origin + ": device #" + std::to_string(i);
    if (!d.is_object()) return Error{who + ": not an object"};
    if (d.contains("name") && d["name"].is_string()) who = origin + ": device '" + d["name"].get<std::string>() + "'";
    for (auto& [k, v] : d.items())
      if (!kRanges.count(k) && !kStringFields.count(k) && !kListFields.count(k) && k != "notes")
        return Error{who + ": unknown field '" + k + "'"};
    DeviceSpec s;
    for (const auto& f : kStringFields) {
      if (!d.contains(f) || !d[f].is_string() || d[f].get<std::string>().empty())
        return Error{who + ": missing or empty field '" + f + "'"};
    }
    s.name = d["name"], s.display = d["display"], s.vendor = d["vendor"], s.arch = d["arch"];
    if (s.vendor != "nvidia" && s.vendor != "amd") return Error{who + ": field 'vendor' must be nvidia or amd"};
    static const std::regex arch_re(R"((sm_\d+[a-z]?)|(gfx[0-9a-f]+))");
    if (!std::regex_match(s.arch, arch_re)) return Error{who + ": field 'arch' '" + s.arch + "' is not sm_NN or gfxNNN"};
    std::map<std::string, double> num;
    for (const auto& [f, r] : kRanges) {
      if (!d.contains(f) || !d[f].is_number()) return Error{who + ": missing or non-numeric field '" + f + "'"};
      double v = d[f].get<double>();
      if (!(v >= r.lo && v <= r.hi))
        return Error{who + ": field '" + f + "' = " + std::to_string(v) + " is outside the plausible range [" +
                     std::to_string(r.lo) + ", " + std::to_string(r.hi) + "]"};
      num[f] = v;
    }
    s.compute_units = int64_t(num["compute_units"]);
    s.boost_mhz = num["boost_mhz"], s.fp32_tflops = num["fp32_tflops"], s.fp16_tflops = num["fp16_tflops"];
    s.bf16_tflops = num["bf16_tflops"], s.mem_gb = num["mem_gb"], s.bw_gbs = num["bw_gbs"], s.l2_mb = num["l2_mb"];
    s.smem_per_cu_kb = num["smem_per_cu_kb"], s.smem_per_block_kb = num["smem_per_block_kb"];
    s.regs_per_cu = int64_t(num["regs_per_cu"]), s.warp_size = int64_t(num["warp_size"]);
    s.max_threads_per_block = int64_t(num["max_threads_per_block"]);
    s.max_threads_per_cu = int64_t(num["max_threads_per_cu"]);
    if (s.warp_size != 32 && s.warp_size != 64) return Error{who + ": field 'warp_size' must be 32 or 64"};
    if (s.smem_per_block_kb > s.smem_per_cu_kb)
      return Error{who + ": field 'smem_per_block_kb' exceeds 'smem_per_cu_kb'"};
    if (s.max_threads_per_block > s.max_threads_per_cu)
      return Error{who + ": field 'max_threads_per_block' exceeds 'max_threads_per_cu'"};
    if (s.fp16_tflops < s.fp32_tflops) return Error{who + ": field 'fp16_tflops' is below 'fp32_tflops' (dense matrix peak expected)"};
    for (const auto& f : kListFields) {
      if (!d.contains(f) || !d[f].is_array() || d[f].empty()) return Error{who + ": missing or empty field '" + f + "'"};
      for (const auto& e : d[f])
        if (!e.is_string()) return Error{who + ": field '" + f + "' must list strings"};
    }
    for (const auto& e : d["matrix_shapes"]) {
      std::string shape = e;
      auto parts = split(shape, 'x');
      int64_t v = 0;
      if (parts.size() != 3 || !parseInt64(parts[0], v) || !parseInt64(parts[1], v) || !parseInt64(parts[2], v))
        return Error{who + ": field 'matrix_shapes' entry '" + shape + "' is not MxNxK"};
      s.matrix_shapes.push_back(shape);
    }
    for (const auto& e : d["sources"]) {
      std::string src = e;
      if (!t.sources.count(src)) return Error{who + ": field 'sources' names unknown source '" + src + "'"};
      s.sources.push_back(src);
    }
    if (d.contains("notes")) {
      if (!d["notes"].is_object()) return Error{who + ": field 'notes' must be an object"};
      for (auto& [k, v] : d["notes"].items()) {
        if (!kRanges.count(k) && !kStringFields.count(k) && !kListFields.count(k))
          return Error{who + ": a note names unknown field '" + k + "'"};
        s.notes[k] = v.get<std::string>();
      }
    }
    if (!names.insert(s.name).second) return Error{who + ": duplicate device name"};
    t.devices.push_back(std::move(s));
  }
  return t;
}

const DeviceTable& builtinDeviceTable() {
  static const DeviceTable table = [] {
    auto t = parseDeviceTable(kBuiltinDevicesJson, "hwspec/data/devices.json");
    if (!t) {
      fprintf(stderr, "sextant: internal error: the built-in hardware table is invalid: %s\n", t.error().c_str());
      abort();
    }
    return *t;
  }();
  return table;
}

std::vector<double> Blueprint::rawFeatures(const DeviceSpec& d) {
  // Log scale: the figures span orders of magnitude and matter as ratios.
  return {std::log(double(d.compute_units)),
          std::log(d.boost_mhz),
          std::log(d.fp32_tflops),
          std::log(d.fp16_tflops),
          std::log1p(d.bf16_tflops),
          std::log(d.mem_gb),
          std::log(d.bw_gbs),
          std::log(d.l2_mb),
          std::log(d.smem_per_cu_kb),
          std::log(d.smem_per_block_kb),
          std::log(double(d.regs_per_cu)),
          std::log(double(d.warp_size)),
          std::log(double(d.max_threads_per_cu)),
          std::log(d.fp16_tflops * 1000.0 / d.bw_gbs)};  // matrix FLOP per byte: the roofline ridge
}

Blueprint fitBlueprint(const DeviceTable& table, int dims) {
  Blueprint b;
  b.table_version = table.version;
  b.features = {"log compute_units", "log boost_mhz",  "log fp32_tflops",     "log fp16_tflops",
                "log1p bf16_tflops", "log mem_gb",     "log bw_gbs",          "log l2_mb",
                "log smem_per_cu_kb", "log smem_per_block_kb", "log regs_per_cu", "log warp_size",
                "log max_threads_per_cu", "log fp16 flop/byte"};
  const int n = int(table.devices.size()), f = int(b.features.size());
  Eigen::MatrixXd X(n, f);
  for (int i = 0; i < n; ++i) {
    auto r = Blueprint::rawFeatures(table.devices[size_t(i)]);
    for (int k = 0; k < f; ++k) X(i, k) = r[size_t(k)];
  }
  b.mean.resize(size_t(f));
  b.scale.resize(size_t(f));
  for (int k = 0; k < f; ++k) {
    double m = X.col(k).mean();
    double sd = std::sqrt((X.col(k).array() - m).square().sum() / std::max(1, n - 1));
    b.mean[size_t(k)] = m;
    b.scale[size_t(k)] = sd > 1e-12 ? sd : 1.0;  // a constant figure carries no information
    X.col(k) = (X.col(k).array() - m) / b.scale[size_t(k)];
  }
  Eigen::MatrixXd cov = (X.transpose() * X) / std::max(1, n - 1);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(cov);
  const Eigen::VectorXd& ev = es.eigenvalues();  // ascending
  double total = ev.sum();
  dims = std::min(dims, f);
  for (int c = 0; c < dims; ++c) {
    int idx = f - 1 - c;
    Eigen::VectorXd v = es.eigenvectors().col(idx);
    // Fixed sign: the component's largest-magnitude loading is positive.
    Eigen::Index arg;
    v.cwiseAbs().maxCoeff(&arg);
    if (v(arg) < 0) v = -v;
    b.components.emplace_back(v.data(), v.data() + f);
    b.explained.push_back(total > 0 ? ev(idx) / total : 0);
  }
  return b;
}

std::vector<double> Blueprint::embed(const DeviceSpec& d) const {
  auto r = rawFeatures(d);
  std::vector<double> out;
  for (const auto& comp : components) {
    double s = 0;
    for (size_t k = 0; k < r.size(); ++k) s += comp[k] * (r[k] - mean[k]) / scale[k];
    out.push_back(s);
  }
  return out;
}

}  // namespace sextant
