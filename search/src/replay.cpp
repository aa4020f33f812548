#include "sextant/search/replay.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <unistd.h>

#include "sextant/common/strings.h"
#include "sextant/db/database.h"
#include "sextant/db/interchange.h"

namespace sextant {

namespace {

bool endsWith(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

Result<std::string> readText(const std::string& path) {
  if (!std::filesystem::exists(path)) return Error{path + ": no such file"};
  if (endsWith(path, ".gz")) {
    std::string cmd = "gzip -dc " + shellQuote(path) + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return Error{path + ": cannot run gzip"};
    std::string out;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (pclose(p) != 0) return Error{path + ": not a readable gzip file: " + out.substr(0, 200)};
    return out;
  }
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

Result<ReplayDataset> loadReplayDataset(const std::string& path, const std::string& target_key) {
  std::string db_path = path;
  std::string tmp;
  if (!endsWith(path, ".db")) {
    auto text = readText(path);
    if (!text) return Error{text.error()};
    tmp = (std::filesystem::temp_directory_path() / ("sextant-replay-" + std::to_string(getpid()) + ".db")).string();
    for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(tmp + s);
    auto db = Database::open(tmp);
    if (!db) return Error{db.error()};
    auto st = importRecordsJsonl(*db, *text, path);
    if (!st) return Error{st.error()};
    db_path = tmp;
  }
  ReplayDataset out;
  out.origin = path;
  {
    auto db = Database::open(db_path, /*create=*/false);
    if (!db) return Error{db.error()};
    auto recs = db->allRecords(false);
    if (!recs) return Error{recs.error()};
    std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
    for (const auto& r : *recs) {
      if (r.source != "measured") continue;
      if (!target_key.empty() && r.target_key != target_key) continue;
      auto key = std::make_tuple(r.workload_key, r.target_key, r.device);
      if (!index.count(key)) {
        auto w = parseWorkloadKey(r.workload_key);
        if (!w) continue;
        index[key] = out.workloads.size();
        out.workloads.push_back(ReplayWorkload{*w, r.target_key, {}, 0, r.device, r.cpu_model});
      }
      ReplayWorkload& rw = out.workloads[index[key]];
      ReplayEntry e{r.status == "ok", r.status == "ok" ? r.gflops : 0, r.times_s, r.compile_s};
      auto it = rw.by_candidate.find(r.candidate);
      if (it == rw.by_candidate.end() || (e.ok && (!it->second.ok || e.gflops > it->second.gflops)))
        rw.by_candidate[r.candidate] = e;
      if (e.ok) rw.best_gflops = std::max(rw.best_gflops, e.gflops);
    }
  }
  if (!tmp.empty())
    for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(tmp + s);
  if (out.workloads.empty()) return Error{path + ": no measured records" + (target_key.empty() ? "" : " for " + target_key)};
  return out;
}

ReplayWorkload withSpaceKeys(const ReplayWorkload& w, const Space& space) {
  ReplayWorkload out = w;
  out.by_candidate.clear();
  for (const auto& [key, e] : w.by_candidate)
    if (auto c = space.fromKey(key)) out.by_candidate[space.keyOf(*c)] = e;
  return out;
}

Space restrictToDataset(const Space& space, const ReplayWorkload& w) {
  std::set<std::vector<int64_t>> allowed;
  std::vector<std::set<int64_t>> seen(space.knobs().size());
  for (const auto& [key, e] : w.by_candidate) {
    auto c = space.fromKey(key);
    if (!c || !space.isValid(*c)) continue;
    auto v = space.values(*c);
    for (size_t i = 0; i < v.size(); ++i) seen[i].insert(v[i]);
    allowed.insert(std::move(v));
  }
  // Each knob keeps the values recorded: a knob the dataset predates (one value, "as before") is
  // no choice in the replay, as it was none when the records were made, so no step of a search
  // is spent on it.
  std::vector<Knob> knobs = space.knobs();
  for (size_t i = 0; i < knobs.size(); ++i) {
    if (seen[i].empty()) continue;
    std::vector<int64_t> kept;
    for (int64_t x : knobs[i].values)
      if (seen[i].count(x)) kept.push_back(x);
    knobs[i].values = std::move(kept);
  }
  std::vector<Constraint> cons = space.constraints();
  std::vector<int> all;
  for (size_t i = 0; i < space.knobs().size(); ++i) all.push_back(int(i));
  cons.push_back({"recorded in the replay dataset", all,
                  [allowed](const std::vector<int64_t>& v) { return allowed.count(v) > 0; }});
  return Space(space.name(), std::move(knobs), std::move(cons));
}

std::vector<Evaluation> ReplayEvaluator::evaluate(const std::vector<Candidate>& batch, const std::atomic<bool>& stop,
                                                  const std::function<void(size_t, const Evaluation&)>& on_result) {
  std::vector<Evaluation> out;
  for (size_t i = 0; i < batch.size() && !stop.load(); ++i) {
    Evaluation e;
    e.source = "replay";
    auto it = data_.by_candidate.find(space_.keyOf(batch[i]));
    if (it == data_.by_candidate.end()) {
      e.status = "replay_miss";
      e.message = "not in the replay dataset (no time is made up)";
      ++misses_;
    } else if (!it->second.ok) {
      e.status = "failed_in_dataset";
      e.message = "recorded as a failure";
    } else {
      e.status = "ok";
      e.measurement.status = MeasureStatus::Ok;
      e.measurement.gflops = it->second.gflops;
      e.measurement.times_s = it->second.times_s;
      e.message = "replayed from the dataset";
    }
    if (on_result) on_result(i, e);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace sextant
