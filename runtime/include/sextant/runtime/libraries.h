// The reference libraries for f32 GEMM on the CPU (issue #35): OpenBLAS, oneDNN and BLIS, each at
// its best on this CPU (the fastest kernels it has for it, the workload's thread count and layout:
// NT/TN through its own transpose flags). A tuned kernel is compared with the fastest of them.
//
// Each library is measured in a fresh process, `sextant-libref` (runtime/libref/), through the same
// harness as the tuned kernels (verification against OpenBLAS's result, caches flushed before
// every repetition): oneDNN and BLIS run on GNU OpenMP, which hangs in a child forked from a
// process whose OpenMP threads already ran (tune's LibTorch), and BLIS fixes its kernels when it
// initialises. A library that is not installed is listed with the reason, never dropped silently.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sextant/runtime/cpu_runner.h"

namespace sextant {

struct CpuLibrary {
  std::string name;        // "openblas", "onednn", "blis"
  std::string config;      // the kernels asked for: BLIS "skx" / "haswell"; "" the library's own pick
  int config_index = -1;   // BLIS: the configuration's index in its table (BLIS_ARCH_TYPE)
  bool available = false;
  std::string missing;     // why it cannot be measured here (with the Debian package to install)
  std::string version;     // "OpenBLAS 0.3.21", "oneDNN 2.6.3", "BLIS 0.9.0"
  std::string kernels;     // what it runs on this CPU: "SkylakeX", "avx512_core_bf16", "skx"
  std::string routine;     // "cblas_sgemm", "dnnl_sgemm", "matmul primitive" (oneDNN's, config "matmul")
                           // (sgemv where M = 1 for OpenBLAS and BLIS)
  // "oneDNN 2.6.3 (dnnl_sgemm, avx512_core_bf16 kernels, 1 thread)".
  // batched: a batched matmul (the BLAS routines are called once per batch element).
  std::string describe(int threads, bool gemv = false, bool batched = false) const;
  std::string id() const { return config.empty() ? name : name + ":" + config; }
};

// Every library configuration worth measuring on this CPU, available or not (probed once per
// process by `sextant-libref probe`). BLIS is listed once per kernel family that can be the
// fastest here: skx and haswell on an AVX-512 CPU (it picks no AVX-512 kernels on CPUs it does not
// know, e.g. "generic" on AMD Zen 5), haswell on AVX2, and its own pick when that is another one.
const std::vector<CpuLibrary>& cpuLibraries();
// The configurations that compute workload w (issue #31): a convolution has oneDNN's convolution
// only; GEMMs and batched matmuls have the rest.
std::vector<CpuLibrary> cpuLibrariesFor(const GemmWorkload& w);

// One measurement of `lib` on the problem's workload with `o.blas_threads` threads, in a fresh
// sextant-libref process (isolated: a crash, hang or wrong result is a failed measurement). The
// problem's inputs are made again there from the same seed; its result is checked against
// OpenBLAS's (one thread) there.
Measurement measureLibrary(const GemmProblem& p, const CpuLibrary& lib, const MeasureOptions& o);

// The library and a compiled candidate (its shared object, as measureSharedObject takes it) in one
// sextant-libref process, call by call in alternating order (measurePairHere): {candidate, library},
// repetition i of each taken back to back. For the head-to-head of the winner with the reference
// on a machine whose speed changes within seconds. One thread only: the candidate's OpenMP runtime
// (LLVM's) and the libraries' (GNU's) would spin against each other in one process.
std::pair<Measurement, Measurement> measureLibraryPaired(const GemmProblem& p, const CpuLibrary& lib,
                                                         const std::string& so_path, const MeasureOptions& o);

// Where sextant-libref is: $SEXTANT_LIBREF, else beside the running program, else the build tree's.
// Empty when it is nowhere.
std::string librefPath();

}  // namespace sextant
