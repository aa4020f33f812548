// Turns candidates into records: schedule text -> compiled artifact -> measurement. The CPU
// evaluator compiles each candidate in an isolated child (in parallel) and then measures the
// compiled ones one at a time (never two at once, and never while compiling).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/runtime/cpu_runner.h"

namespace sextant {

struct Evaluation {
  std::string schedule;    // the exact Transform script
  std::string status;      // ok, compile_error, crash, timeout, wrong_result, load_error
  std::string message;
  double compile_s = 0;
  Measurement measurement; // valid when status is ok
  std::string source = "measured";  // "compiled": GPU kernel compiled and analysed, not run
  std::string stats = "{}";         // JSON: GPU compile statistics and pre-flight verdict
  std::string device;               // where it was measured, when not the tuning host
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Evaluates in order; stops early (returning fewer results) when `stop` becomes true.
  // `on_result` is called after each candidate.
  virtual std::vector<Evaluation> evaluate(const std::vector<Candidate>& batch, const std::atomic<bool>& stop,
                                           const std::function<void(size_t, const Evaluation&)>& on_result) = 0;
};

struct CpuEvaluatorOptions {
  MeasureOptions measure;
  int jobs = 0;                 // parallel compilations; 0: the number of cores
  double compile_timeout_s = 180;
  std::string work_dir;         // where shared objects are written; empty: a fresh temporary
                                // directory, removed afterwards
};

class CpuEvaluator : public Evaluator {
 public:
  CpuEvaluator(const GemmWorkload& w, const Space& space, const GemmProblem& problem, CpuEvaluatorOptions o);
  ~CpuEvaluator() override;  // removes the work directory
  std::vector<Evaluation> evaluate(const std::vector<Candidate>& batch, const std::atomic<bool>& stop,
                                   const std::function<void(size_t, const Evaluation&)>& on_result) override;
  // Compiles and measures one given schedule text.
  Evaluation evaluateSchedule(const std::string& schedule);
  // A function that measures `schedule` each time it is called (compiled once, on first call);
  // a compile failure comes back as a LoadError measurement. For the final comparison.
  std::function<Measurement()> measurer(const std::string& schedule);
  // A function that gives `schedule`'s compiled shared object (compiled once, shared with its
  // measurer; "" when it does not compile). For the head-to-head call by call.
  std::function<std::string()> sharedObject(const std::string& schedule);

  struct Compiled {
    bool ok = false;
    std::string path;     // the shared object when ok
    std::string message;  // the failure otherwise
    double seconds = 0;
  };
  // Compiles in parallel isolated children (at most `jobs` at once).
  std::vector<Compiled> compile(const std::vector<std::string>& schedules);

 private:
  std::vector<Evaluation> compileAndMeasure(const std::vector<std::string>& schedules, const std::atomic<bool>& stop,
                                            const std::function<void(size_t, const Evaluation&)>& on_result);
  std::shared_ptr<std::optional<Compiled>> compiledOnce(const std::string& schedule);
  GemmWorkload w_;
  const Space& space_;
  std::map<std::string, std::shared_ptr<std::optional<Compiled>>> compiled_once_;  // by schedule text
  const GemmProblem& problem_;
  CpuEvaluatorOptions o_;
  uint64_t counter_ = 0;
  bool owns_work_dir_ = false;
};

}  // namespace sextant
