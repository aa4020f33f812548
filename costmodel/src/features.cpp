#include "sextant/costmodel/features.h"

#include <algorithm>
#include <cmath>

namespace sextant {

std::vector<std::string> cpuGemmFeatureNames() {
  return {"log2 tile_m", "log2 tile_n", "log2 tile_k", "log2 reg_m", "log2 reg_n", "log2 unroll_k",
          "reg_loop_order",
          // derived
          "log2 A block bytes / L1", "log2 B block bytes / L2", "log2 C block bytes / L2",
          "log2 A+B+C block bytes / LLC", "log2 B panel bytes (tile_k x reg_n) / L1",
          "register tile FMAs per load", "accumulator registers / vector registers",
          "vectors per register-tile row", "log2 blocks (parallel)", "log2 K chunks",
          "log2 row stride of B (bytes)", "log2 register tiles per block",
          // workload
          "log2 M", "log2 N", "log2 K", "layout NT", "layout TN",
          // one-hot knob values: effects that are not monotonic in the value
          "reg_m=1", "reg_m=2", "reg_m=4", "reg_m=8", "reg_m=16", "reg_n=1 vector", "reg_n=2 vectors",
          "reg_n=4 vectors", "unroll_k=1", "unroll_k=2", "unroll_k=4", "unroll_k=8",
          "log2 micro-kernel K iterations (tile_k / unroll_k)", "log2 register tile elements",
          "tile_k<=32", "tile_k=64", "tile_k=128", "tile_k=256", "tile_k>=512"};
}

std::vector<float> cpuGemmFeatures(const GemmWorkload& w, const Space& space, const Candidate& c, const HostCpu& cpu) {
  auto v = space.values(c);
  const double tm = double(v[0]), tn = double(v[1]), tk = double(v[2]), rm = double(v[3]), rn = double(v[4]),
               uk = double(v[5]);
  const double vw = std::max(4, cpu.f32Lanes());
  const double l1 = double(cpu.l1d_bytes ? cpu.l1d_bytes : 48 << 10);
  const double l2 = double(cpu.l2_bytes ? cpu.l2_bytes : 1 << 21);
  const double llc = double(cpu.lastLevelCacheBytes());
  const double e = dtypeBytes(w.a_type);
  auto lg = [](double x) { return float(std::log2(std::max(x, 1e-9))); };
  auto is = [](bool b) { return b ? 1.f : 0.f; };
  const double cols = std::ceil(rn / vw);
  const double acc = rm * cols;
  const double loads = rm + cols;  // broadcasts of A plus vector loads of B per K step
  return {lg(tm), lg(tn), lg(tk), lg(rm), lg(rn), lg(uk), float(v[6]),
          lg(tm * tk * e / l1), lg(tk * tn * e / l2), lg(tm * tn * 4 / l2), lg((tm * tk + tk * tn) * e + tm * tn * 4) - lg(llc),
          lg(tk * rn * e / l1), float(acc / loads), float(acc / cpu.vector_registers), float(cols),
          lg(double(w.m) / tm * double(w.n) / tn), lg(double(w.k) / tk), lg(double(w.n) * e), lg(tm / rm * tn / rn),
          lg(double(w.m)), lg(double(w.n)), lg(double(w.k)), w.layout == Layout::NT ? 1.f : 0.f,
          w.layout == Layout::TN ? 1.f : 0.f,
          is(rm == 1), is(rm == 2), is(rm == 4), is(rm == 8), is(rm == 16), is(cols == 1), is(cols == 2),
          is(cols == 4), is(uk == 1), is(uk == 2), is(uk == 4), is(uk == 8), lg(tk / uk), lg(rm * rn),
          is(tk <= 32), is(tk == 64), is(tk == 128), is(tk == 256), is(tk >= 512)};
}

}  // namespace sextant
