// Prints the measured f32 FMA peak of this CPU (sextant::measureFmaPeak, runtime/src/fma_peak.cpp):
// the figure that experiments/cpu_gemm_vs_blas and `tune`'s summary quote kernels' shares of.
//
// usage: fma_peak [--threads N] [--seconds S] [--json]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sextant/runtime/fma_peak.h"

int main(int argc, char** argv) {
  int threads = 1;
  double seconds = 0.3;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--json") {
      json = true;
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: fma_peak [--threads N] [--seconds S] [--json]\n"
          "Measures this CPU's f32 FMA throughput (GFLOP/s) with register-only vector FMAs on N threads\n"
          "(default 1): AVX-512 and AVX2 where the CPU runs them; the best of 5 repetitions of about S\n"
          "seconds (default 0.3) each.\n");
      return 0;
    } else {
      std::fprintf(stderr, "fma_peak: unknown argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (threads < 1 || seconds <= 0) {
    std::fprintf(stderr, "fma_peak: --threads must be >= 1 and --seconds > 0\n");
    return 2;
  }
  const sextant::FmaPeak p = sextant::measureFmaPeak(threads, seconds);
  if (json) {
    std::printf("{\"threads\": %d, \"peak_gflops\": %.2f, \"isa\": \"%s\"", p.threads, p.gflops, p.isa.c_str());
    for (const auto& [n, g] : p.per_isa) std::printf(", \"%s_gflops\": %.2f", n.c_str(), g);
    std::printf("}\n");
  } else {
    for (const auto& [n, g] : p.per_isa) std::printf("%-7s %d thread(s): %.1f GFLOP/s f32\n", n.c_str(), p.threads, g);
    std::printf("peak: %.1f GFLOP/s f32 (%s, %d thread(s), measured)\n", p.gflops, p.isa.c_str(), p.threads);
  }
  return 0;
}
