#include <filesystem>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/runtime/isolation.h"
#include "sextant/search/evaluator.h"

namespace sextant {

CpuEvaluator::CpuEvaluator(const GemmWorkload& w, const Space& space, const GemmProblem& problem,
                           CpuEvaluatorOptions o)
    : w_(w), space_(space), problem_(problem), o_(std::move(o)) {
  if (o_.jobs <= 0) o_.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  if (o_.work_dir.empty()) {
    o_.work_dir = (std::filesystem::temp_directory_path() / ("sextant-" + std::to_string(getpid()))).string();
    owns_work_dir_ = true;
  }
  std::filesystem::create_directories(o_.work_dir);
}

CpuEvaluator::~CpuEvaluator() {
  std::error_code ec;
  if (owns_work_dir_) std::filesystem::remove_all(o_.work_dir, ec);
}

std::vector<Evaluation> CpuEvaluator::evaluate(const std::vector<Candidate>& batch, const std::atomic<bool>& stop,
                                               const std::function<void(size_t, const Evaluation&)>& on_result) {
  std::vector<std::string> schedules;
  for (const auto& c : batch) schedules.push_back(emitCpuGemmSchedule(w_, space_, c));
  return compileAndMeasure(schedules, stop, on_result);
}

Evaluation CpuEvaluator::evaluateSchedule(const std::string& schedule) {
  std::atomic<bool> never{false};
  return compileAndMeasure({schedule}, never, nullptr).front();
}

std::vector<Evaluation> CpuEvaluator::compileAndMeasure(
    const std::vector<std::string>& schedules, const std::atomic<bool>& stop,
    const std::function<void(size_t, const Evaluation&)>& on_result) {
  const std::string payload = w_.payloadMlir();
  std::vector<std::string> paths;
  std::vector<IsolatedJob> jobs;
  for (const auto& s : schedules) {
    paths.push_back(o_.work_dir + "/cand" + std::to_string(counter_++) + ".so");
    const std::string path = paths.back();
    jobs.push_back([payload, s, path]() {
      CompileOutcome c = compileCpuGemm(payload, s, path);
      return nlohmann::json{{"ok", c.ok}, {"stage", c.stage}, {"message", c.message}, {"seconds", c.seconds}}.dump();
    });
  }
  std::vector<ChildOutcome> compiled = runIsolated(jobs, o_.jobs, o_.compile_timeout_s);

  std::vector<Evaluation> out;
  for (size_t i = 0; i < schedules.size(); ++i) {
    if (stop.load()) break;
    Evaluation e;
    e.schedule = schedules[i];
    const ChildOutcome& co = compiled[i];
    auto j = nlohmann::json::parse(co.output, nullptr, false);
    e.compile_s = co.seconds;
    if (!co.finished() || j.is_discarded()) {
      e.status = "compile_error";
      e.message = "compiler " + co.describe();
      if (!co.stderr_text.empty()) e.message += ": " + co.stderr_text.substr(0, 4000);
    } else if (!j.value("ok", false)) {
      e.status = "compile_error";
      e.message = j.value("stage", std::string()) + ": " + j.value("message", std::string()).substr(0, 4000);
      e.compile_s = j.value("seconds", co.seconds);
    } else {
      e.compile_s = j.value("seconds", co.seconds);
      e.measurement = measureSharedObject(problem_, paths[i], o_.measure);
      e.status = measureStatusName(e.measurement.status);
      e.message = e.measurement.message;
    }
    std::error_code ec;
    std::filesystem::remove(paths[i], ec);
    if (on_result) on_result(i, e);
    out.push_back(std::move(e));
  }
  for (const auto& p : paths) {
    std::error_code ec;
    std::filesystem::remove(p, ec);
  }
  return out;
}

}  // namespace sextant
