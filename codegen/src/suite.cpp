#include "sextant/codegen/suite.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace sextant {

Result<WorkloadSuite> loadSuite(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Error{path + ": cannot read the suite file"};
  std::stringstream ss;
  ss << f.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{path + ": not a JSON object"};
  if (j.value("format", "") != "sextant-suite") return Error{path + ": not a Sextant suite (format must be sextant-suite)"};
  if (j.value("version", 0) != 1) return Error{path + ": unsupported suite version"};
  WorkloadSuite s;
  s.name = j.value("name", "");
  s.description = j.value("description", "");
  s.source = j.value("source", "");
  if (!j.contains("workloads") || !j["workloads"].is_array() || j["workloads"].empty())
    return Error{path + ": 'workloads' must be a non-empty array"};
  for (size_t i = 0; i < j["workloads"].size(); ++i) {
    const auto& e = j["workloads"][i];
    std::string where = path + ": workloads[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("key") || !e["key"].is_string()) return Error{where + ": missing 'key'"};
    auto w = parseWorkloadKey(e["key"].get<std::string>());
    if (!w) return Error{where + ": " + w.error()};
    const int64_t count = e.value("count", int64_t(1));
    if (count < 1) return Error{where + ": 'count' must be at least 1"};
    s.entries.push_back({e.value("name", e["key"].get<std::string>()), *w, count});
  }
  return s;
}

}  // namespace sextant
