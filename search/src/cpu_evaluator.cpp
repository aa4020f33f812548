#include <filesystem>
#include <memory>
#include <optional>
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

std::vector<CpuEvaluator::Compiled> CpuEvaluator::compile(const std::vector<std::string>& schedules) {
  const std::string payload = w_.payloadMlir();
  std::vector<Compiled> out(schedules.size());
  std::vector<IsolatedJob> jobs;
  for (size_t i = 0; i < schedules.size(); ++i) {
    out[i].path = o_.work_dir + "/cand" + std::to_string(counter_++) + ".so";
    jobs.push_back([payload, s = schedules[i], path = out[i].path]() {
      CompileOutcome c = compileCpuGemm(payload, s, path);
      return nlohmann::json{{"ok", c.ok}, {"stage", c.stage}, {"message", c.message}, {"seconds", c.seconds}}.dump();
    });
  }
  std::vector<ChildOutcome> done;
  {
    MachineLock lock(MachineLock::Mode::Compile);  // not while another process measures (issue #35)
    done = runIsolated(jobs, o_.jobs, o_.compile_timeout_s);
  }
  for (size_t i = 0; i < schedules.size(); ++i) {
    const ChildOutcome& co = done[i];
    auto j = nlohmann::json::parse(co.output, nullptr, false);
    Compiled& c = out[i];
    c.seconds = co.seconds;
    if (!co.finished() || j.is_discarded()) {
      // An LLVM fatal error or a crash in the compiler: its stderr says why.
      c.message = "compiler " + co.describe();
      if (!co.stderr_text.empty()) c.message += ": " + co.stderr_text.substr(0, 4000);
    } else if (!j.value("ok", false)) {
      c.message = j.value("stage", std::string()) + ": " + j.value("message", std::string()).substr(0, 4000);
      c.seconds = j.value("seconds", co.seconds);
    } else {
      c.ok = true;
      c.seconds = j.value("seconds", co.seconds);
    }
  }
  return out;
}

std::shared_ptr<std::optional<CpuEvaluator::Compiled>> CpuEvaluator::compiledOnce(const std::string& schedule) {
  auto& slot = compiled_once_[schedule];
  if (!slot) slot = std::make_shared<std::optional<Compiled>>();
  return slot;
}

std::function<std::string()> CpuEvaluator::sharedObject(const std::string& schedule) {
  auto compiled = compiledOnce(schedule);
  return [this, schedule, compiled]() {
    if (!*compiled) *compiled = compile({schedule}).front();
    return (*compiled)->ok ? (*compiled)->path : std::string();
  };
}

std::function<Measurement()> CpuEvaluator::measurer(const std::string& schedule) {
  auto compiled = compiledOnce(schedule);
  return [this, schedule, compiled]() {
    if (!*compiled) *compiled = compile({schedule}).front();
    if (!(*compiled)->ok) {
      Measurement m;
      m.status = MeasureStatus::LoadError;
      m.message = "compile failed: " + (*compiled)->message;
      return m;
    }
    return measureSharedObject(problem_, (*compiled)->path, o_.measure);
  };
}

std::vector<Evaluation> CpuEvaluator::compileAndMeasure(
    const std::vector<std::string>& schedules, const std::atomic<bool>& stop,
    const std::function<void(size_t, const Evaluation&)>& on_result) {
  std::vector<Compiled> compiled = compile(schedules);
  std::vector<Evaluation> out;
  for (size_t i = 0; i < schedules.size(); ++i) {
    if (stop.load()) break;
    Evaluation e;
    e.schedule = schedules[i];
    e.compile_s = compiled[i].seconds;
    if (!compiled[i].ok) {
      e.status = "compile_error";
      e.message = compiled[i].message;
    } else {
      e.measurement = measureSharedObject(problem_, compiled[i].path, o_.measure);
      if (stop.load()) break;  // interrupted during this measurement: nothing to record for it
      e.status = measureStatusName(e.measurement.status);
      e.message = e.measurement.message;
    }
    if (on_result) on_result(i, e);
    out.push_back(std::move(e));
  }
  for (const auto& c : compiled) {
    std::error_code ec;
    std::filesystem::remove(c.path, ec);
  }
  return out;
}

}  // namespace sextant
