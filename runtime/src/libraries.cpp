// The reference libraries, from the tuner's side: the probe and the measurements, each in a fresh
// sextant-libref process (runtime/libref/libref_main.cpp does the library work).
#include "sextant/runtime/libraries.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sextant/runtime/isolation.h"

namespace sextant {
namespace {

bool isExecutable(const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0; }

// Runs sextant-libref with `args` and returns what it printed on stdout. Called inside an isolated
// child (runIsolated): its failures become that child's (the same signal, or exit code 3 with the
// reason on stderr), so the caller sees a crash or a timeout as for any candidate.
std::string runLibref(const std::vector<std::string>& args) {
  const std::string exe = librefPath();
  int out[2];
  if (pipe(out) != 0) {
    fprintf(stderr, "cannot make a pipe for sextant-libref\n");
    _exit(3);
  }
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    bindOpenMpThreads();  // the libraries' OpenMP threads placed as the candidates' are
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    fprintf(stderr, "cannot run %s\n", exe.c_str());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n > 0) text.append(buf, size_t(n));
    else if (n == 0 || errno != EINTR) break;
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) raise(WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "sextant-libref exited with code %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    _exit(3);
  }
  return text;
}

}  // namespace

std::string CpuLibrary::describe(int threads, bool gemv, bool batched) const {
  std::string r = gemv && name != "onednn" ? "cblas_sgemv: M = 1" : routine;
  // A batched matmul: the BLAS routines run once per batch element; the matmul primitive takes the batch.
  if (batched && config != "matmul") r += " once per batch element";
  return version + " (" + r + ", " + kernels + " kernels, " + std::to_string(threads) + " thread" +
         (threads == 1 ? "" : "s") + ")";
}

std::string librefPath() {
  if (const char* e = getenv("SEXTANT_LIBREF"); e && *e) return e;
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, size_t(n));
    dir = dir.substr(0, dir.rfind('/'));
    if (isExecutable(dir + "/sextant-libref")) return dir + "/sextant-libref";
  }
#ifdef SEXTANT_LIBREF_BUILD_PATH
  if (isExecutable(SEXTANT_LIBREF_BUILD_PATH)) return SEXTANT_LIBREF_BUILD_PATH;
#endif
  return "";
}

std::vector<CpuLibrary> cpuLibrariesFor(const GemmWorkload& w) {
  std::vector<CpuLibrary> out;
  for (const CpuLibrary& l : cpuLibraries())
    if ((l.config == "conv") == w.isConv()) out.push_back(l);
  // bf16 x bf16 -> f32 and s8 x s8 -> s32 (issue #37): only oneDNN's matmul primitive computes
  // them here; the others stay listed with the reason (sextant-libref refuses them too).
  if (const char* low = lowPrecisionTypes(w)) {
    const std::string gemm = std::string("no ") + low + " GEMM";
    for (CpuLibrary& l : out) {
      if (l.name == "onednn" && l.config == "matmul") {
        if (l.available)
          l.routine = std::string("matmul primitive, ") + dtypeName(w.a_type) +
                      " weights reordered once, evicted before each call";
        continue;
      }
      l.available = false;
      const std::string lib = l.version.empty() ? (l.name == "openblas" ? "OpenBLAS" : "BLIS") : l.version;
      l.missing = l.name == "openblas" ? gemm + " in " + lib + "'s cblas interface as Sextant loads it"
                  : l.name == "blis"   ? gemm + " in " + lib
                  : l.name == "onednn" ? std::string("dnnl_sgemm is f32 only (the matmul primitive is measured)")
                                       : gemm;
    }
  }
  return out;
}

const std::vector<CpuLibrary>& cpuLibraries() {
  static std::vector<CpuLibrary> libs;
  static std::once_flag once;
  std::call_once(once, [] {
    auto unavailable = [](const std::string& why) {
      std::vector<CpuLibrary> out;
      for (const char* n : {"openblas", "onednn", "blis"}) {
        CpuLibrary l;
        l.name = n;
        l.missing = why;
        out.push_back(l);
      }
      return out;
    };
    if (librefPath().empty()) {
      libs = unavailable("sextant-libref, which measures the libraries, was not found beside tune (build it: "
                         "scripts/build.sh)");
      return;
    }
    ChildOutcome co = runIsolated([] { return runLibref({"probe"}); }, 60);
    auto j = nlohmann::json::parse(co.output, nullptr, false);
    if (!co.finished() || !j.is_array()) {
      libs = unavailable("sextant-libref probe failed: " + co.describe() + " " + co.stderr_text.substr(0, 300));
      return;
    }
    for (const auto& e : j) {
      CpuLibrary l;
      l.name = e.value("name", "");
      l.config = e.value("config", "");
      l.config_index = e.value("config_index", -1);
      l.available = e.value("available", false);
      l.missing = e.value("missing", "");
      l.version = e.value("version", "");
      l.kernels = e.value("kernels", "");
      l.routine = e.value("routine", "");
      libs.push_back(l);
    }
    // $SEXTANT_REFERENCE_LIBRARIES (e.g. "openblas,onednn"): measure only these; the others are
    // listed as excluded (a shorter final comparison, or a test of a missing library).
    if (const char* only = getenv("SEXTANT_REFERENCE_LIBRARIES"); only && *only) {
      const std::string list = std::string(",") + only + ",";
      for (CpuLibrary& l : libs)
        if (l.available && list.find("," + l.name + ",") == std::string::npos &&
            list.find("," + l.id() + ",") == std::string::npos) {
          l.available = false;
          l.missing = std::string("excluded by SEXTANT_REFERENCE_LIBRARIES=") + only;
        }
    }
  });
  return libs;
}

namespace {

nlohmann::json librefSpec(const GemmProblem& p, const CpuLibrary& lib, const MeasureOptions& o) {
  return nlohmann::json{{"library", lib.name},          {"config", lib.config},     {"config_index", lib.config_index},
                        {"workload", p.workload().key()},
                        {"seed", p.seed()},             {"threads", o.blas_threads}, {"warmup", o.warmup},
                        {"min_reps", o.min_reps},       {"max_reps", o.max_reps},   {"min_time_s", o.min_time_s},
                        {"flush_cache", o.flush_cache}, {"flush_bytes", o.flush_bytes}, {"rtol", o.rtol},
                        {"atol_per_k", o.atol_per_k}};
}

Measurement notMeasured(const CpuLibrary& lib, const std::string& why) {
  Measurement m;
  m.status = MeasureStatus::LoadError;
  m.message = lib.id() + " not measured: " + why;
  return m;
}

// The inputs and OpenBLAS's reference are made again in sextant-libref: allow for that.
double setupSeconds(const GemmProblem& p) { return 5 + double(p.workload().flops()) / 20e9; }

}  // namespace

Measurement measureLibrary(const GemmProblem& p, const CpuLibrary& lib, const MeasureOptions& o) {
  if (!lib.available) return notMeasured(lib, lib.missing);
  const nlohmann::json spec = librefSpec(p, lib, o);
  MachineLock lock(MachineLock::Mode::Measure);
  ChildOutcome co = runIsolated([&] { return runLibref({"measure", spec.dump()}); }, o.timeout_s + setupSeconds(p));
  return measurementFromChild(co, p.workload());
}

std::pair<Measurement, Measurement> measureLibraryPaired(const GemmProblem& p, const CpuLibrary& lib,
                                                         const std::string& so_path, const MeasureOptions& o) {
  if (!lib.available) return {notMeasured(lib, lib.missing), notMeasured(lib, lib.missing)};
  if (o.blas_threads != 1) {
    const Measurement m = notMeasured(lib, "paired measurements run on one thread only");
    return {m, m};
  }
  nlohmann::json spec = librefSpec(p, lib, o);
  spec["kernel_so"] = so_path;
  spec["memory_limit_bytes"] = o.memory_limit_bytes == 0 ? defaultChildMemoryLimit() : o.memory_limit_bytes;
  MachineLock lock(MachineLock::Mode::Measure);
  // Twice the calls of one measurement, in one child.
  ChildOutcome co = runIsolated([&] { return runLibref({"pair", spec.dump()}); }, 2 * o.timeout_s + setupSeconds(p));
  return pairFromChild(co, p.workload());
}

}  // namespace sextant
