#include "sextant/costmodel/features.h"

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/codegen/op_schedules.h"
#include "sextant/hwspec/gpu_target.h"

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
          "tile_k<=32", "tile_k=64", "tile_k=128", "tile_k=256", "tile_k>=512",
          // version 2: relative to the workload and to the machine, so that one model serves
          // every shape and CPU
          "log2 tile_m / M", "log2 tile_n / N", "log2 tile_k / K", "log2 blocks / cores",
          "log2 block FLOP per byte", "log2 B panel (tile_k x tile_n) bytes / L2",
          "log2 A panel (tile_m x tile_k) bytes / L2", "row of A is a multiple of 4 KiB",
          "row of B is a multiple of 4 KiB", "log2 GFLOP of the workload",
          // the machine (a CPU counterpart of the GPU Blueprint)
          "log2 L1d KiB", "log2 L2 KiB", "f32 lanes / 16", "vector registers / 32", "log2 cores",
          // version 3: packing, the loops above the K chunks, and register tiles whose rows do not
          // divide the block (peeled) (issue #14)
          "pack_b", "pack_a", "outer_order=1", "outer_order=2", "reg_m=6", "reg_m=12", "reg_m=14",
          "register loop over M peeled",
          // version 4: the GEMV route (M = 1, NT; issue #14)
          "gemv", "log2 gemv rows", "gemv vectors per row"};
}

HostCpu cpuOfRecords(const std::string& llvm_cpu, const std::string& host_llvm_cpu, const HostCpu& host) {
  // The machine kinds this project records on are described by the table, whichever machine
  // trains: a record's features must not depend on where the model is trained (on the Zen 4 VM,
  // "this machine" once meant the Zen 5 records too, whose CPU model string is the same). L1d and
  // L2 per core as the machines report them; L3 is what a core shares: a CCD's 32 MiB on AMD (the
  // Zen 5 VMs report 508 MiB through CPUID), the socket's on Intel (datasheet figures).
  HostCpu c;
  c.llvm_cpu = llvm_cpu;
  c.vector_isa = "avx512", c.vector_bits = 512, c.vector_registers = 32;
  c.logical_cores = 2;  // this project's machine kinds
  c.cache_source = "table";
  if (llvm_cpu == "emeraldrapids" || llvm_cpu == "sapphirerapids" || llvm_cpu == "graniterapids") {
    c.l1d_bytes = 48 << 10, c.l2_bytes = 2 << 20, c.l3_bytes = int64_t(llvm_cpu == "emeraldrapids" ? 320 : 105) << 20;
  } else if (llvm_cpu == "icelake-server" || llvm_cpu == "skylake-avx512" || llvm_cpu == "cascadelake") {
    c.l1d_bytes = llvm_cpu == "icelake-server" ? 48 << 10 : 32 << 10;
    c.l2_bytes = llvm_cpu == "icelake-server" ? 5 << 18 : 1 << 20;
    c.l3_bytes = int64_t(llvm_cpu == "icelake-server" ? 48 : 33) << 20;
  } else if (llvm_cpu == "znver5" || llvm_cpu == "znver4") {
    c.l1d_bytes = (llvm_cpu == "znver5" ? 48 : 32) << 10, c.l2_bytes = 1 << 20, c.l3_bytes = 32 << 20;
  } else if (llvm_cpu.rfind("znver", 0) == 0 || llvm_cpu == "haswell" || llvm_cpu == "skylake" ||
             llvm_cpu == "alderlake") {
    c.vector_isa = "avx2", c.vector_bits = 256, c.vector_registers = 16;
    c.l1d_bytes = 32 << 10, c.l2_bytes = 512 << 10, c.l3_bytes = 32 << 20;
  } else if (llvm_cpu.empty() || llvm_cpu == host_llvm_cpu) {
    return host;  // a CPU the table does not know: this machine describes itself
  } else {
    c.cache_source = "";  // unknown CPU, not this one: AVX-512 and default caches assumed
  }
  return c;
}

std::vector<float> cpuGemmFeatures(const GemmWorkload& w, const Space& space, const Candidate& c, const HostCpu& cpu) {
  // The candidate as the knobs of a blocked GEMM, whatever the op (its schedules say how: a
  // convolution's direct route reads as its implicit GEMM; op_schedules.h).
  const CpuGemmView view = cpuSchedulesOf(w).gemmView(w, space, c);
  const std::vector<int64_t>& v = view.knobs;
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
  // The row length of B as the micro-kernels read it: tile_n with pack_b (a contiguous copy of the
  // panel), reg_n with pack_b 2 (micro-panels: issue #35), N in place.
  auto knob = [&](const char* name) { return space.valueOr(c, name, 0); };
  const double b_row = knob("pack_b") == 2 ? rn : knob("pack_b") == 1 ? tn : double(w.n);
  // Likewise A's row with pack_a (tile_k), and the forall's blocks with the outer loop order.
  const double a_row = knob("pack_a") == 1 ? tk : double(w.k);
  const double blocks = view.blocks;
  return {lg(tm), lg(tn), lg(tk), lg(rm), lg(rn), lg(uk), float(v[6]),
          lg(tm * tk * e / l1), lg(tk * tn * e / l2), lg(tm * tn * 4 / l2), lg((tm * tk + tk * tn) * e + tm * tn * 4) - lg(llc),
          lg(tk * rn * e / l1), float(acc / loads), float(acc / cpu.vector_registers), float(cols),
          lg(blocks), lg(double(w.k) / tk), lg(b_row * e), lg(tm / rm * tn / rn),
          lg(double(w.m)), lg(double(w.n)), lg(double(w.k)), w.layout == Layout::NT ? 1.f : 0.f,
          w.layout == Layout::TN ? 1.f : 0.f,
          is(rm == 1), is(rm == 2), is(rm == 4), is(rm == 8), is(rm == 16), is(cols == 1), is(cols == 2),
          is(cols == 4), is(uk == 1), is(uk == 2), is(uk == 4), is(uk == 8), lg(tk / uk), lg(rm * rn),
          is(tk <= 32), is(tk == 64), is(tk == 128), is(tk == 256), is(tk >= 512),
          // version 2
          lg(tm / double(w.m)), lg(tn / double(w.n)), lg(tk / double(w.k)),
          lg(blocks / std::max(1, cpu.logical_cores)),
          lg(2 * tm * tn * tk / ((tm * tk + tk * tn) * e + tm * tn * 4)), lg(tk * tn * e / l2), lg(tm * tk * e / l2),
          is(int64_t(a_row * e) % 4096 == 0), is(int64_t(b_row * e) % 4096 == 0),
          lg(2.0 * double(w.m) * double(w.n) * double(w.k) / 1e9),
          lg(l1 / 1024), lg(l2 / 1024), float(vw / 16), float(cpu.vector_registers / 32.0),
          lg(double(std::max(1, cpu.logical_cores))),
          // version 3
          is(knob("pack_b") >= 1), is(knob("pack_a") == 1), is(knob("outer_order") == 1), is(knob("outer_order") == 2),
          is(rm == 6), is(rm == 12), is(rm == 14), is(v[0] % v[3] != 0),
          // version 4
          // the GEMV routes: 1 (partial sums in registers), 2 (split-K, issue #35: the same feature
          // slot, so that models trained before the route read its candidates as GEMV ones)
          float(knob("gemv")), knob("gemv") != 0 ? lg(double(knob("gemv_rows"))) : 0.f,
          knob("gemv") != 0 ? float(double(knob("gemv_k")) / vw) : 0.f};
}

std::vector<std::string> gpuGemmFeatureNames() {
  return {"log_block_m", "log_block_n", "log_block_k", "mma", "log_warp_m", "log_warp_n", "log_thread_m",
          "log_thread_n", "log_copy_bits", "pipeline", "swizzle", "log_threads", "log_warps", "smem_kb",
          "smem_share", "occupancy", "log_blocks", "waves", "wave_tail", "intensity", "log_outputs_per_lane",
          "log_k_steps", "log_m", "log_n", "log_k", "input_bytes", "registers", "spill_bytes", "known_regs",
          // MFMA (gfx942): the intrinsic and the LDS operand layout
          "mfma_16x16x16", "lds_k_major", "lds_pad",
          // Hopper (sm_90a): warpgroup MMA fed by TMA, and its warp-specialised form
          "wgmma", "warp_specialized"};
}

std::vector<float> gpuGemmFeatures(const GemmWorkload& w, const Space& space, const Candidate& c,
                                   const GpuTargetInfo& g, int64_t registers, int64_t spill_bytes) {
  auto l2 = [](double x) { return float(std::log2(std::max(1.0, x))); };
  auto pr = planGpuGemm(w, space, c);
  std::vector<float> f;
  if (!pr) return std::vector<float>(gpuGemmFeatureNames().size(), 0.f);
  const GpuPlan& p = *pr;
  const double warps = double(p.threads) / double(g.warp_size);
  Occupancy occ = estimateOccupancy(g, p.threads, registers, p.smem_bytes);
  const double blocks = double(p.grid[0] * p.grid[1]);
  const double slots = double(std::max<int64_t>(1, occ.blocks_per_cu) * g.compute_units);
  const double waves = blocks / slots;
  const double staged = double(p.block_m + p.block_n) * double(p.block_k) * dtypeBytes(w.a_type);
  const double outputs_per_lane = p.mma ? double(p.warp_m * p.warp_n) / double(p.warp_size) : double(p.thread_m * p.thread_n);
  f = {l2(double(p.block_m)), l2(double(p.block_n)), l2(double(p.block_k)), p.mma ? 1.f : 0.f,
       p.mma ? l2(double(p.warp_m)) : 0.f, p.mma ? l2(double(p.warp_n)) : 0.f,
       p.mma ? 0.f : l2(double(p.thread_m)), p.mma ? 0.f : l2(double(p.thread_n)), l2(double(p.copy_bits)),
       float(p.pipeline), p.swizzle ? 1.f : 0.f, l2(double(p.threads)), l2(warps), float(p.smem_bytes / 1024.0),
       float(double(p.smem_bytes) / double(std::max<int64_t>(1, g.smem_per_cu_bytes))), float(occ.fraction),
       l2(blocks), float(std::min(waves, 64.0)), float(waves - std::floor(waves)),
       float(2.0 * p.block_m * p.block_n * p.block_k / std::max(1.0, staged)), l2(outputs_per_lane),
       l2(double(w.k / p.block_k)), l2(double(w.m)), l2(double(w.n)), l2(double(w.k)), float(dtypeBytes(w.a_type)),
       float(registers), float(spill_bytes), registers >= 0 ? 1.f : 0.f,
       p.mfma.m == 16 ? 1.f : 0.f, p.lds_k_major ? 1.f : 0.f, p.lds_pad > 0 ? 1.f : 0.f,
       p.wgmma ? 1.f : 0.f, p.warp_specialize ? 1.f : 0.f};
  return f;
}

}  // namespace sextant
