// Benchmark: the size of the CPU schedule space and the time to build it (every valid point is
// enumerated when the space is made; issue #14's bound: under a second), for the benchmark shapes
// of issue #14, on this machine's CPU description, with 1 and with all cores' threads.
//
// usage: bench_space [MxNxK ...]
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "sextant/codegen/cpu_schedule.h"

using namespace sextant;

int main(int argc, char** argv) {
  std::vector<std::string> shapes(argv + 1, argv + argc);
  if (shapes.empty()) shapes = {"512x512x512", "1024x1024x1024", "2048x2048x2048", "128x4096x4096", "3136x64x576"};
  const HostCpu cpu = hostCpu();
  printf("CPU schedule spaces for this CPU (%s, %d-bit vectors, %d registers), built 3 times each; time = the slowest build\n",
         cpu.model.c_str(), cpu.vector_bits, cpu.vector_registers);
  printf("%-16s %8s %12s %12s %10s\n", "shape", "threads", "raw points", "valid", "build s");
  for (const auto& s : shapes) {
    GemmWorkload w;
    if (sscanf(s.c_str(), "%ldx%ldx%ld", &w.m, &w.n, &w.k) != 3) {
      fprintf(stderr, "not MxNxK: %s\n", s.c_str());
      return 2;
    }
    for (int threads : {1, std::max(1, cpu.logical_cores)}) {
      double worst = 0;
      Space space;
      for (int i = 0; i < 3; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        space = buildCpuGemmSpace(w, cpu, threads);
        worst = std::max(worst, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      printf("%-16s %8d %12llu %12llu %10.3f\n", s.c_str(), threads, (unsigned long long)space.rawSize(),
             (unsigned long long)space.size(), worst);
      if (cpu.logical_cores <= 1) break;
    }
  }
  return 0;
}
