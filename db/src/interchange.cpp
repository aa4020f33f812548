#include "sextant/db/interchange.h"

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

namespace sextant {

using json = nlohmann::json;

static json recordToJson(const RecordRow& r, const WorkloadRow& w, const TargetRow& t) {
  return json{{"workload",
               {{"key", w.key}, {"op", w.op}, {"m", w.m}, {"n", w.n}, {"k", w.k}, {"dtype_a", w.dtype_a},
                {"dtype_b", w.dtype_b}, {"dtype_c", w.dtype_c}, {"layout", w.layout}, {"flops", w.flops}}},
              {"target", {{"key", t.key}, {"name", t.name}, {"arch", t.arch}, {"device", t.device}, {"features", t.features}}},
              {"candidate", r.candidate},
              {"knobs", json::parse(r.knobs, nullptr, false)},
              {"schedule", r.schedule},
              {"status", r.status},
              {"source", r.source},
              {"message", r.message},
              {"times", r.times_s},
              {"median_s", r.median_s},
              {"cv", r.cv},
              {"gflops", r.gflops},
              {"compile_s", r.compile_s},
              {"max_abs_err", r.max_abs_err},
              {"tool_version", r.tool_version},
              {"llvm_version", r.llvm_version},
              {"cpu_model", r.cpu_model},
              {"device", r.device},
              {"created_at", r.created_at},
              {"schema_version", r.schema_version},
              {"stats", json::parse(r.stats.empty() ? std::string("{}") : r.stats, nullptr, false)},
              {"machine", r.machine},
              {"confirmations", r.confirmations},
              {"confirmed_times", r.confirmed_times},
              {"confirmed_gflops", r.confirmed_gflops}};
}

Result<std::string> exportRecordsJsonl(Database& db, const ExportOptions& o) {
  auto recs = db.allRecords(/*include_schedule=*/true);
  if (!recs) return Error{recs.error()};
  std::ostringstream out;
  out << json{{"format", "sextant-records"}, {"version", kRecordsFormatVersion}}.dump() << "\n";
  std::vector<std::string> lines;
  for (const auto& r : *recs) {
    if (!o.target_key.empty() && r.target_key != o.target_key) continue;
    if (!o.workload_key.empty() && r.workload_key != o.workload_key) continue;
    if (r.source == "predicted" && !o.include_predicted) continue;
    if (r.status != "ok" && !o.include_failures) continue;
    if (r.source == "measured" && !machineMatches(r.machine, o.machine)) continue;
    auto w = db.workload(r.workload_key);
    auto t = db.target(r.target_key);
    if (!w || !*w || !t || !*t) return Error{db.path() + ": record " + std::to_string(r.id) + " has no workload or target"};
    lines.push_back(recordToJson(r, **w, **t).dump());
  }
  std::sort(lines.begin(), lines.end());  // independent of insertion order
  for (const auto& l : lines) out << l << "\n";
  return out.str();
}

namespace {

template <typename T>
bool get(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  try {
    out = it->get<T>();
  } catch (...) {
    return false;
  }
  return true;
}

struct Parsed {
  RecordRow r;
  WorkloadRow w;
  TargetRow t;
};

Result<Parsed> parseLine(const json& j, int version) {
  Parsed p;
  if (!j.is_object()) return Error{"not a JSON object"};
  const json* w = j.contains("workload") ? &j["workload"] : nullptr;
  const json* t = j.contains("target") ? &j["target"] : nullptr;
  if (!w || !w->is_object()) return Error{"missing field 'workload'"};
  if (!t || !t->is_object()) return Error{"missing field 'target'"};
  const char* wf[] = {"key", "op", "dtype_a", "dtype_b", "dtype_c", "layout"};
  std::string* wv[] = {&p.w.key, &p.w.op, &p.w.dtype_a, &p.w.dtype_b, &p.w.dtype_c, &p.w.layout};
  for (int i = 0; i < 6; ++i)
    if (!get(*w, wf[i], *wv[i])) return Error{std::string("missing or invalid field 'workload.") + wf[i] + "'"};
  if (!get(*w, "m", p.w.m) || !get(*w, "n", p.w.n) || !get(*w, "k", p.w.k) || !get(*w, "flops", p.w.flops) ||
      p.w.m <= 0 || p.w.n <= 0 || p.w.k <= 0)
    return Error{"missing or invalid workload sizes"};
  const char* tf[] = {"key", "name", "arch", "device", "features"};
  std::string* tv[] = {&p.t.key, &p.t.name, &p.t.arch, &p.t.device, &p.t.features};
  for (int i = 0; i < 5; ++i)
    if (!get(*t, tf[i], *tv[i])) return Error{std::string("missing or invalid field 'target.") + tf[i] + "'"};
  RecordRow& r = p.r;
  r.workload_key = p.w.key;
  r.target_key = p.t.key;
  const char* rf[] = {"candidate", "schedule", "status", "source", "message", "tool_version",
                      "llvm_version", "cpu_model", "device", "created_at"};
  std::string* rv[] = {&r.candidate, &r.schedule, &r.status, &r.source, &r.message, &r.tool_version,
                       &r.llvm_version, &r.cpu_model, &r.device, &r.created_at};
  for (int i = 0; i < 10; ++i)
    if (!get(j, rf[i], *rv[i])) return Error{std::string("missing or invalid field '") + rf[i] + "'"};
  if (!j.contains("knobs") || !j["knobs"].is_object()) return Error{"missing or invalid field 'knobs'"};
  r.knobs = j["knobs"].dump();
  const char* nf[] = {"median_s", "cv", "gflops", "compile_s", "max_abs_err"};
  double* nv[] = {&r.median_s, &r.cv, &r.gflops, &r.compile_s, &r.max_abs_err};
  for (int i = 0; i < 5; ++i)
    if (!get(j, nf[i], *nv[i])) return Error{std::string("missing or invalid field '") + nf[i] + "'"};
  if (!get(j, "times", r.times_s)) return Error{"missing or invalid field 'times'"};
  if (!get(j, "schema_version", r.schema_version)) return Error{"missing or invalid field 'schema_version'"};
  if (j.contains("stats")) {  // absent in files written before schema 2
    if (!j["stats"].is_object()) return Error{"invalid field 'stats' (expected an object)"};
    r.stats = j["stats"].dump();
  }
  if (r.source != "measured" && r.source != "predicted" && r.source != "compiled")
    return Error{"unknown source '" + r.source + "'"};
  if (r.candidate.empty()) return Error{"empty candidate"};
  // Version 2 (issue #35) names the measuring machine and carries confirmations; a version-1
  // record gets the machine its fields tell (legacyMachineOf: never "this machine").
  if (version >= 2) {
    if (!get(j, "machine", r.machine) || r.machine.empty()) return Error{"missing or invalid field 'machine'"};
    if (!get(j, "confirmations", r.confirmations) || r.confirmations < 0 ||
        !get(j, "confirmed_times", r.confirmed_times) || !get(j, "confirmed_gflops", r.confirmed_gflops))
      return Error{"missing or invalid confirmation fields"};
  } else {
    r.machine = legacyMachineOf(r, p.t.arch);
  }
  return p;
}

}  // namespace

Result<ImportStats> importRecordsJsonl(Database& db, const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  std::vector<Parsed> parsed;
  bool header = false;
  int version = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    auto j = json::parse(line, nullptr, false);
    std::string where = name + ":" + std::to_string(lineno) + ": ";
    if (j.is_discarded()) return Error{where + "not valid JSON (truncated or corrupt file?)"};
    if (!header) {
      if (!j.is_object() || j.value("format", "") != "sextant-records")
        return Error{where + "not a Sextant records file (no {\"format\": \"sextant-records\"} header)"};
      if (j.value("version", 0) > kRecordsFormatVersion)
        return Error{where + "format version " + std::to_string(j.value("version", 0)) + " is newer than this Sextant reads (" +
                     std::to_string(kRecordsFormatVersion) + ")"};
      header = true;
      version = j.value("version", 1);
      continue;
    }
    auto p = parseLine(j, version);
    if (!p) return Error{where + p.error()};
    parsed.push_back(std::move(*p));
  }
  if (!header) return Error{name + ": empty file, not a Sextant records file"};

  ImportStats st;
  std::vector<RecordRow> batch;
  for (auto& p : parsed) {
    ++st.read;
    if (auto s = db.upsertWorkload(p.w); !s) return Error{s.error()};
    if (auto s = db.upsertTarget(p.t); !s) return Error{s.error()};
    auto exact = db.countSame(p.r, true);
    if (!exact) return Error{exact.error()};
    bool in_batch = false;
    for (auto& b : batch)
      in_batch |= b.workload_key == p.r.workload_key && b.target_key == p.r.target_key && b.candidate == p.r.candidate &&
                  b.source == p.r.source && b.times_s == p.r.times_s && b.created_at == p.r.created_at;
    if (*exact > 0 || in_batch) {
      ++st.duplicates;
      continue;
    }
    auto same = db.countSame(p.r, false);
    if (!same) return Error{same.error()};
    if (*same > 0) ++st.conflicts;
    p.r.run_id = 0;  // runs are local to the database that ran them
    batch.push_back(p.r);
  }
  if (auto s = db.insertRecords(batch); !s) return Error{s.error()};
  st.inserted = int64_t(batch.size());
  return st;
}

Result<ImportStats> mergeDatabase(Database& into, Database& from) {
  ExportOptions o;
  o.include_predicted = true;
  auto text = exportRecordsJsonl(from, o);
  if (!text) return Error{text.error()};
  return importRecordsJsonl(into, *text, from.path());
}

}  // namespace sextant
