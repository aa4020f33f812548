// Prints the CPU schedule for a shape (or a workload key: batched matmuls, layouts) and candidate
// key (AVX-512 host model; THREADS > 1: the threaded space, whose keys carry threads=N), for
// FileCheck and hand measurements.
#include <cstdlib>
#include <iostream>

#include "sextant/codegen/cpu_schedule.h"

int main(int argc, char** argv) {
  using namespace sextant;
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: emit_schedule MxNxK|WORKLOAD_KEY KNOBS [THREADS]\n";
    return 2;
  }
  const std::string shape = argv[1];
  auto w = shape.find(':') != std::string::npos ? parseWorkloadKey(shape) : parseGemmShape(shape);
  if (!w) return std::cerr << w.error() << "\n", 2;
  HostCpu cpu;
  cpu.vector_bits = 512;
  cpu.vector_registers = 32;
  Space s = buildCpuGemmSpace(*w, cpu, argc == 4 ? std::atoi(argv[3]) : 1);
  auto c = s.fromKey(argv[2]);
  if (!c || !s.isValid(*c)) return std::cerr << "invalid candidate\n", 2;
  std::cout << emitCpuGemmSchedule(*w, s, *c);
  return 0;
}
