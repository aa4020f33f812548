// Prints a GPU schedule (stage 1, or with --pipeline the pipelining stage) for a target, a workload
// key and a candidate key ("default" for the default candidate), for FileCheck and by hand.
#include <iostream>
#include <string>

#include "sextant/codegen/gpu_schedule.h"

int main(int argc, char** argv) {
  using namespace sextant;
  if (argc < 4) {
    std::cerr << "usage: emit_gpu_schedule TARGET WORKLOAD_KEY KNOBS|default [--pipeline|--plan|--size]\n";
    return 2;
  }
  auto t = resolveTarget(argv[1]);
  if (!t) return std::cerr << t.error() << "\n", 2;
  auto g = gpuTargetInfo(*t);
  if (!g) return std::cerr << g.error() << "\n", 2;
  auto w = parseWorkloadKey(argv[2]);
  if (!w) return std::cerr << w.error() << "\n", 2;
  Space s = buildGpuGemmSpace(*w, *g);
  std::string mode = argc > 4 ? argv[4] : "";
  if (mode == "--size") return std::cout << s.size() << " of " << s.rawSize() << "\n", 0;
  Candidate c;
  if (std::string(argv[3]) == "default") {
    c = defaultGpuCandidate(s);
  } else {
    auto r = s.fromKey(argv[3]);
    if (!r) return std::cerr << r.error() << "\n", 2;
    c = *r;
  }
  if (!s.isValid(c)) {
    std::cerr << "invalid candidate:";
    for (auto& v : s.violations(c)) std::cerr << " [" << v << "]";
    return std::cerr << "\n", 2;
  }
  auto p = planGpuGemm(*w, s, c);
  if (!p) return std::cerr << p.error() << "\n", 2;
  if (mode == "--pipeline") std::cout << emitGpuPipelineSchedule(*p);
  else if (mode == "--plan")
    std::cout << s.keyOf(c) << "\nthreads " << p->threads << " block " << p->block_dims[0] << "x" << p->block_dims[1]
              << " grid " << p->grid[0] << "x" << p->grid[1] << " smem " << p->smem_bytes << "\n";
  else std::cout << emitGpuGemmSchedule(*w, s, c);
  return 0;
}
