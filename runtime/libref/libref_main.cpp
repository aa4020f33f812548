// sextant-libref: measures one reference library (OpenBLAS, oneDNN's dnnl_sgemm and matmul
// primitive, BLIS) on one GEMM or batched-matmul workload (the BLAS ones once per batch element) in
// a process of its own (see sextant/runtime/libraries.h for why), through the tuner's harness.
// A bf16 x bf16 -> f32 or s8 x s8 -> s32 workload has oneDNN's matmul primitive only
// (onednn_matmul.cpp).
//
//   sextant-libref probe          JSON list of the library configurations worth measuring here
//   sextant-libref measure SPEC   SPEC: JSON {library, config, workload, seed, threads, warmup,
//                                 min_reps, max_reps, min_time_s, flush_cache, flush_bytes, rtol,
//                                 atol_per_k}; prints the measurement as JSON (measureKernelHere)
//   sextant-libref pair SPEC      SPEC as above plus kernel_so (a compiled candidate) and
//                                 memory_limit_bytes: both measured call by call, alternating
//                                 (measurePairHere); prints {"first": candidate, "second": library}
//
// Exit codes: 0 done (a failed verification is a result, printed), 2 bad usage, 3 the library
// cannot be loaded or configured as asked (the reason on stderr).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sextant/codegen/workload.h"
#include "sextant/hwspec/target.h"
#include "sextant/runtime/blas.h"
#include "sextant/runtime/cpu_runner.h"
#include "sextant/runtime/isolation.h"
#include "onednn_primitives.h"

using json = nlohmann::json;
using namespace sextant;

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using Cblas = OpenBlas::Sgemm;
using Cblasv = OpenBlas::Sgemv;
using Kernel = std::function<void(const float*, const float*, float*)>;

[[noreturn]] void die(const std::string& msg) {
  fprintf(stderr, "sextant-libref: %s\n", msg.c_str());
  exit(3);
}

void* openFirst(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

// A batched matmul as one call of `element` (a kernel for one batch element) per batch element.
Kernel perBatch(const GemmWorkload& w, Kernel element) {
  if (!w.batched()) return element;
  const int64_t sa = w.m * w.k, sb = w.k * w.n, sc = w.m * w.n, n = w.batch;
  return [=](const float* a, const float* b, float* c) {
    for (int64_t i = 0; i < n; ++i) element(a + i * sa, b + i * sb, c + i * sc);
  };
}

// A CBLAS sgemm (or sgemv where M = 1) call with the workload's layout, as GemmProblem::runBlas.
Kernel cblasKernel(const GemmWorkload& w, Cblas gemm, Cblasv gemv) {
  const bool ta = w.layout == Layout::TN, tb = w.layout == Layout::NT;
  if (w.m == 1 && gemv)
    return [=](const float* a, const float* b, float* c) {
      gemv(kRowMajor, tb ? kNoTrans : kTrans, tb ? int(w.n) : int(w.k), tb ? int(w.k) : int(w.n), 1.0f, b,
           tb ? int(w.k) : int(w.n), a, 1, 0.0f, c, 1);
    };
  return [=](const float* a, const float* b, float* c) {
    gemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, int(w.m), int(w.n), int(w.k), 1.0f, a,
         ta ? int(w.m) : int(w.k), b, tb ? int(w.k) : int(w.n), 0.0f, c, int(w.n));
  };
}

// ---- oneDNN: dnnl_sgemm (row-major), OpenMP threads.
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                          int64_t, float, float*, int64_t);
struct DnnlVersion {
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime, gpu_runtime;
};

std::string dnnlIsaName(int isa) {
  switch (isa) {
    case 0x1: return "sse41";
    case 0x3: return "avx";
    case 0x7: return "avx2";
    case 0x27: return "avx512_core";
    case 0x67: return "avx512_core_vnni";
    case 0xe7: return "avx512_core_bf16";
    case 0x3e7: return "avx512_core_amx";
    case 0x407: return "avx2_vnni";
    default: return "isa " + std::to_string(isa);
  }
}

struct Dnnl {
  void* h = nullptr;
  DnnlSgemm sgemm = nullptr;
  std::string version, kernels;
};

Dnnl loadDnnl(int threads) {
  setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
  Dnnl d;
  d.h = openFirst({"libdnnl.so.2", "libdnnl.so.3", "libdnnl.so"});
  if (!d.h) return d;
  d.sgemm = reinterpret_cast<DnnlSgemm>(dlsym(d.h, "dnnl_sgemm"));
  auto ver = reinterpret_cast<const DnnlVersion* (*)()>(dlsym(d.h, "dnnl_version"));
  auto isa = reinterpret_cast<int (*)()>(dlsym(d.h, "dnnl_get_effective_cpu_isa"));
  if (auto set = reinterpret_cast<void (*)(int)>(dlsym(d.h, "omp_set_num_threads"))) set(threads);
  if (ver) {
    const DnnlVersion* v = ver();
    d.version = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  }
  if (isa) d.kernels = dnnlIsaName(isa());
  return d;
}

// ---- BLIS: its kernel family ("configuration") is chosen when it initialises, from
// BLIS_ARCH_TYPE (an index into its table of configurations) or from the CPU.
struct Blis {
  void* h = nullptr;
  Cblas sgemm = nullptr;
  Cblasv sgemv = nullptr;
  void (*set_threads)(int64_t) = nullptr;
  int (*query_id)() = nullptr;
  const char* (*arch_string)(int) = nullptr;
  std::string version;
  // Index of a configuration in this BLIS's table (-1: not built in); reads the table only.
  int archId(const std::string& name) const {
    for (int i = 0; i < 64; ++i) {
      const char* s = arch_string(i);
      if (!s) break;
      if (name == s) return i;
      if (std::string(s) == "generic") break;  // the table's last entry
    }
    return -1;
  }
  // Its kernel family: with BLIS_ARCH_TYPE set, only after BLIS has initialised (set_threads).
  std::string picked() const { return arch_string(query_id()); }
};

Blis loadBlis() {
  Blis b;
  b.h = openFirst({"libblis.so.4", "libblis.so.3", "libblis.so"});
  if (!b.h) return b;
  b.sgemm = reinterpret_cast<Cblas>(dlsym(b.h, "cblas_sgemm"));
  b.sgemv = reinterpret_cast<Cblasv>(dlsym(b.h, "cblas_sgemv"));
  b.set_threads = reinterpret_cast<void (*)(int64_t)>(dlsym(b.h, "bli_thread_set_num_threads"));
  b.query_id = reinterpret_cast<int (*)()>(dlsym(b.h, "bli_arch_query_id"));
  b.arch_string = reinterpret_cast<const char* (*)(int)>(dlsym(b.h, "bli_arch_string"));
  auto ver = reinterpret_cast<const char* (*)()>(dlsym(b.h, "bli_info_get_version_str"));
  if (ver) b.version = std::string("BLIS ") + ver();
  if (!b.sgemm || !b.set_threads || !b.query_id || !b.arch_string) b.h = nullptr;
  return b;
}

json entry(const std::string& name, const std::string& config, bool available, const std::string& missing,
           const std::string& version, const std::string& kernels, const std::string& routine, int config_index = -1) {
  return json{{"name", name},       {"config", config},   {"available", available},         {"missing", missing},
              {"version", version}, {"kernels", kernels}, {"routine", routine}, {"config_index", config_index}};
}

int probe() {
  json out = json::array();
  auto ob = loadOpenBlas();
  if (ob) {
    std::string v = (*ob)->describe(1);
    out.push_back(entry("openblas", "", true, "", v.substr(0, v.find(" (")), (*ob)->corename, "cblas_sgemm"));
  } else {
    out.push_back(entry("openblas", "", false, ob.error() + " (Debian: libopenblas-dev)", "", "", ""));
  }
  Dnnl d = loadDnnl(1);
  if (d.h && d.sgemm)
    out.push_back(entry("onednn", "", true, "", d.version, d.kernels, "dnnl_sgemm"));
  else
    out.push_back(entry("onednn", "", false, "libdnnl.so.2 not found (Debian: libdnnl-dev)", "", "", ""));
  // Its primitives (issue #31): matmul (the batched matmul's reference; for GEMMs another
  // contender) and convolution (the only contender for conv2d).
  for (auto [config, routine] : {std::pair<const char*, const char*>{"matmul", "matmul primitive"},
                                 {"conv", "convolution primitive, its reordered weights evicted before each call"}}) {
    if (!d.h)
      out.push_back(entry("onednn", config, false, "libdnnl.so.2 not found (Debian: libdnnl-dev)", "", "", ""));
    else if (!libref::onednnPrimitivesBuilt())
      out.push_back(entry("onednn", config, false, libref::kOnednnHeadersMissing, "", "", ""));
    else
      out.push_back(entry("onednn", config, true, "", d.version, d.kernels, routine));
  }
  Blis b = loadBlis();
  if (!b.h) {
    out.push_back(entry("blis", "", false, "libblis.so.4 not found (Debian: libblis-dev)", "", "", ""));
  } else {
    const HostCpu& cpu = hostCpu();
    std::vector<std::string> configs;
    if (cpu.vector_isa == "avx512" && b.archId("skx") >= 0) configs.push_back("skx");
    if ((cpu.vector_isa == "avx512" || cpu.vector_isa == "avx2") && b.archId("haswell") >= 0)
      configs.push_back("haswell");
    const std::string own = b.picked();
    if (own != "generic" && std::find(configs.begin(), configs.end(), own) == configs.end()) configs.push_back(own);
    if (configs.empty()) configs.push_back(own);
    for (const auto& c : configs) out.push_back(entry("blis", c, true, "", b.version, c, "cblas_sgemm", b.archId(c)));
  }
  printf("%s\n", out.dump().c_str());
  return 0;
}

// `measure SPEC` (the library alone) and `pair SPEC` (the library and the compiled candidate in
// SPEC's kernel_so, call by call: measurePairHere, the candidate first).
int measure(const json& spec, bool pair) {
  auto w = parseWorkloadKey(spec.value("workload", ""));
  if (!w) die("bad workload: " + w.error());
  const std::string lib = spec.value("library", ""), config = spec.value("config", "");
  // bf16 x bf16 -> f32 and s8 x s8 -> s32 (issue #37): of the libraries here only oneDNN's matmul
  // primitive computes them (Debian's OpenBLAS 0.3.21 exports no cblas_sbgemm nor an integer GEMM
  // in its cblas interface, BLIS 0.9 has neither, dnnl_sgemm is f32).
  const bool f32 = w->a_type == DType::F32 && w->b_type == DType::F32 && w->c_type == DType::F32;
  const char* low = lowPrecisionTypes(*w);
  if (!f32 && !(low && !w->isConv()))
    die("no reference library is measured on " + w->key() +
        " (f32, and bf16 x bf16 -> f32 and s8 x s8 -> s32 GEMMs, only)");
  if (low && (lib == "openblas" || lib == "blis" || (lib == "onednn" && config != "matmul"))) {
    const std::string who = lib == "openblas" ? "OpenBLAS (its cblas interface as Sextant loads it)"
                            : lib == "blis"   ? "BLIS"
                            : config.empty()  ? "oneDNN's dnnl_sgemm"
                                              : "oneDNN's " + config;
    die(who + " has no " + low + " GEMM (" + w->key() + "): oneDNN's matmul primitive measures it");
  }
  const int threads = std::max(1, spec.value("threads", 1));
  MeasureOptions o;
  o.warmup = spec.value("warmup", o.warmup);
  o.min_reps = spec.value("min_reps", o.min_reps);
  o.max_reps = spec.value("max_reps", o.max_reps);
  o.min_time_s = spec.value("min_time_s", o.min_time_s);
  o.flush_cache = spec.value("flush_cache", o.flush_cache);
  o.flush_bytes = spec.value("flush_bytes", o.flush_bytes);
  o.rtol = spec.value("rtol", o.rtol);
  o.atol_per_k = spec.value("atol_per_k", o.atol_per_k);
  // The library is loaded and configured before the inputs are made: BLIS and oneDNN read their
  // environment once.
  Kernel kernel;
  Dnnl d;
  Blis b;
  if (lib == "onednn") {
    d = loadDnnl(threads);
    if (!d.h || !d.sgemm) die("oneDNN (libdnnl.so.2) cannot be loaded");
    if (w->isConv() != (config == "conv")) die("oneDNN's " + (config.empty() ? std::string("dnnl_sgemm") : config) +
                                                 " does not compute " + w->key());
    if (config == "matmul" || config == "conv") {
      auto mm = config == "conv" ? libref::makeOnednnConv(d.h, *w) : libref::makeOnednnMatmul(d.h, *w);
      if (!mm.kernel) die(mm.error);
      kernel = mm.kernel;
    } else if (!config.empty()) {
      die("unknown oneDNN configuration '" + config + "' (known: matmul, conv, or none for dnnl_sgemm)");
    } else {
      const bool ta = w->layout == Layout::TN, tb = w->layout == Layout::NT;
      const GemmWorkload wl = *w;
      DnnlSgemm f = d.sgemm;
      kernel = perBatch(wl, [=](const float* a, const float* bb, float* c) {
        f(ta ? 'T' : 'N', tb ? 'T' : 'N', wl.m, wl.n, wl.k, 1.0f, a, ta ? wl.m : wl.k, bb, tb ? wl.k : wl.n, 0.0f, c,
          wl.n);
      });
    }
  } else if (w->isConv()) {
    die(lib + " has no convolution");
  } else if (lib == "blis") {
    // BLIS fixes its kernels when it is loaded: the configuration's index (from the probe) goes
    // into its environment first, and what it picked is checked after.
    const int index = spec.value("config_index", -1);
    if (!config.empty()) {
      if (index < 0) die("no index for BLIS's " + config + " kernels (from sextant-libref probe)");
      setenv("BLIS_ARCH_TYPE", std::to_string(index).c_str(), 1);
    }
    setenv("BLIS_NUM_THREADS", std::to_string(threads).c_str(), 1);
    b = loadBlis();
    if (!b.h) die("BLIS (libblis.so.4) cannot be loaded");
    b.set_threads(threads);  // (initialises BLIS: its kernel table must exist before the query below)
    const std::string picked = b.picked();
    if (!config.empty() && picked != config) die("BLIS runs its " + picked + " kernels although " + config + " were asked for");
    kernel = perBatch(*w, cblasKernel(*w, b.sgemm, b.sgemv));
  } else if (lib != "openblas") {
    fprintf(stderr, "sextant-libref: unknown library '%s'\n", lib.c_str());
    return 2;
  }
  auto p = GemmProblem::create(*w, spec.value("seed", uint64_t(42)));
  if (!p) die(p.error());
  if (lib == "openblas") {
    if (p->blas().set_threads) p->blas().set_threads(threads);
    const GemmProblem& prob = *p;
    kernel = [&prob](const float* a, const float* bb, float* c) { prob.runBlas(a, bb, c); };
  }
  KernelFn lib_kernel = [&](float* a, float* bb, float* c) { kernel(a, bb, c); };
  if (!pair) {
    printf("%s\n", measureKernelHere(*p, lib_kernel, o).c_str());
    return 0;
  }
  const std::string so = spec.value("kernel_so", "");
  if (so.empty()) die("pair: no kernel_so in the specification");
  limitChildAddressSpace(spec.value("memory_limit_bytes", -1ll));
  std::string error;
  KernelFn candidate = loadSharedObjectKernel(*w, so, error);
  if (!candidate) {
    const json failed{{"status", "load_error"}, {"message", error}};
    const json skipped{{"status", "load_error"}, {"message", "not measured: the other kernel of the pair failed (load_error)"}};
    printf("%s\n", json{{"first", failed}, {"second", skipped}}.dump().c_str());
    return 0;
  }
  printf("%s\n", measurePairHere(*p, candidate, lib_kernel, o).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS with the fastest kernels this CPU runs, one thread, as tune configures it (re-executes
  // itself once when the environment asked for other kernels).
  configureOpenBlasEnvironment(argv);
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "probe" && argc == 2) return probe();
  if ((cmd == "measure" || cmd == "pair") && argc == 3) {
    auto spec = json::parse(argv[2], nullptr, false);
    if (!spec.is_object()) {
      fprintf(stderr, "sextant-libref: the %s specification is not a JSON object\n", cmd.c_str());
      return 2;
    }
    return measure(spec, cmd == "pair");
  }
  fprintf(stderr,
          "usage: sextant-libref probe | sextant-libref measure SPEC | sextant-libref pair SPEC\n"
          "  Measures OpenBLAS, oneDNN or BLIS in a process of its own for tune's final comparison\n"
          "  (pair: call by call against the compiled candidate in SPEC's kernel_so).\n");
  return 2;
}
