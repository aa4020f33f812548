#include "sextant/runtime/blas.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <strings.h>
#include <unistd.h>

#include "sextant/hwspec/target.h"

namespace sextant {

std::string OpenBlas::describe(int with_threads) const {
  const int threads = with_threads > 0 ? with_threads : this->threads;
  std::string version = config;
  auto sp = version.find(' ', 9);  // "OpenBLAS 0.3.21 NO_LAPACKE ..."
  if (sp != std::string::npos) version = version.substr(0, sp);
  std::string d = version + " (" + corename + " kernels, " + std::to_string(threads) + " thread" +
                  (threads == 1 ? "" : "s");
  // Never a silent flattering ratio: say when the environment chose the kernels.
  const char* overridden = getenv("SEXTANT_OPENBLAS_CORETYPE_FROM_ENV");
  const std::string best = openBlasCoreTypeForHost();
  if (overridden && *overridden)
    d += std::string("; the environment asked for ") + overridden + ", overridden with the fastest kernels this CPU runs";
  else if (!best.empty() && strcasecmp(best.c_str(), corename.c_str()) != 0)
    d += "; forced by the environment: " + best + " kernels would be faster, so ratios to this reference flatter the "
         "tuned code";
  return d + ")";
}

std::string openBlasCoreTypeForHost() {
  const HostCpu& cpu = hostCpu();
  if (cpu.vector_isa == "avx512") return "SkylakeX";
  if (cpu.vector_isa == "avx2") return "Haswell";
  return "";
}

void configureOpenBlasEnvironment(char** argv) {
  if (getenv("SEXTANT_BLAS_CONFIGURED")) return;  // already re-executed once
  bool changed = false;
  if (!getenv("OPENBLAS_NUM_THREADS")) {
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    changed = true;
  }
  std::string core = openBlasCoreTypeForHost();
  const char* env_core = getenv("OPENBLAS_CORETYPE");
  if (!core.empty() && (!env_core || strcasecmp(env_core, core.c_str()) != 0)) {
    // The reference runs with the fastest kernels this CPU can run, whatever the environment
    // presets (SEXTANT_KEEP_OPENBLAS_CORETYPE=1 keeps the environment's; the report then says so).
    if (env_core && getenv("SEXTANT_KEEP_OPENBLAS_CORETYPE")) {
      // keep it
    } else {
      if (env_core) setenv("SEXTANT_OPENBLAS_CORETYPE_FROM_ENV", env_core, 1);
      setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
      changed = true;
    }
  }
  if (!changed) return;
  setenv("SEXTANT_BLAS_CONFIGURED", "1", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on, loadOpenBlas will tell
}

Result<const OpenBlas*> loadOpenBlas() {
  static OpenBlas blas;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    const std::string core = openBlasCoreTypeForHost();
    if (!getenv("OPENBLAS_CORETYPE") && !core.empty()) setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    void* h = nullptr;
    for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
      h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (h) break;
    }
    if (!h) {
      error = std::string("cannot load OpenBLAS (libopenblas.so.0): ") + dlerror() +
              " -- run scripts/setup.sh";
      return;
    }
    blas.sgemm = reinterpret_cast<OpenBlas::Sgemm>(dlsym(h, "cblas_sgemm"));
    blas.sgemv = reinterpret_cast<OpenBlas::Sgemv>(dlsym(h, "cblas_sgemv"));
    blas.dgemm = reinterpret_cast<OpenBlas::Dgemm>(dlsym(h, "cblas_dgemm"));
    auto get_config = reinterpret_cast<const char* (*)()>(dlsym(h, "openblas_get_config"));
    auto get_core = reinterpret_cast<const char* (*)()>(dlsym(h, "openblas_get_corename"));
    auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
    auto get_threads = reinterpret_cast<int (*)()>(dlsym(h, "openblas_get_num_threads"));
    if (!blas.sgemm) {
      error = "libopenblas has no cblas_sgemm";
      return;
    }
    if (set_threads) set_threads(1);
    blas.set_threads = set_threads;
    if (get_config) blas.config = get_config();
    if (get_core) blas.corename = get_core();
    if (get_threads) blas.threads = get_threads();
    const char* want = getenv("OPENBLAS_CORETYPE");
    if (want && strcasecmp(want, blas.corename.c_str()) != 0) {
      error = "OpenBLAS uses its " + blas.corename + " kernels although " + want +
              " was requested: it was loaded before it could be configured (another library links it). "
              "Start the program with OPENBLAS_CORETYPE=" + want + " and OPENBLAS_NUM_THREADS=1 in its environment.";
    }
  });
  if (!error.empty()) return Error{error};
  return &blas;
}

}  // namespace sextant
