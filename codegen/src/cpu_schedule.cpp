#include "sextant/codegen/cpu_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "cpu_schedule_internal.h"
#include "sextant/codegen/compiler.h"
#include "sextant/codegen/op_schedules.h"

namespace sextant {
using cpu_detail::dividing;
using cpu_detail::hoistAndLowerContractions;
using cpu_detail::knobOp;
using cpu_detail::addGemvKnobs;
using cpu_detail::packCols;
using cpu_detail::packOperand;
using cpu_detail::packRows;
using cpu_detail::PanelCopy;

std::vector<int64_t> cpu_detail::dividing(const std::vector<int64_t>& options, int64_t dim, int64_t cap) {
  std::vector<int64_t> out;
  for (int64_t v : options)
    if (v <= dim && dim % v == 0) out.push_back(v);
  if (dim <= cap && std::find(out.begin(), out.end(), dim) == out.end()) out.push_back(dim);
  if (out.empty()) {
    // An awkward size (e.g. prime): fall back to its largest divisors under the cap.
    for (int64_t d = std::min(dim, cap); d >= 1 && out.size() < 4; --d)
      if (dim % d == 0) out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Space buildCpuGemmSpace(const GemmWorkload& w, const HostCpu& cpu, int threads) {
  return cpuSchedulesOf(w).space(w, cpu, threads);
}

Space cpu_detail::matmulSpace(const GemmWorkload& w, const HostCpu& cpu, int threads) {
  if (wantsAmx(w)) return amxSpace(w, threads);
  const int64_t vw = std::max(4, cpu.f32Lanes());
  const int64_t nregs = cpu.vector_registers;
  std::vector<Knob> knobs;
  std::vector<int64_t> tile_m = dividing({8, 16, 32, 64, 128, 256, 512}, w.m, 512);
  std::vector<int64_t> tile_n = dividing({16, 32, 64, 128, 256, 512, 1024}, w.n, 1024);
  // x joins the sorted values v where it is not one of them.
  auto add = [](std::vector<int64_t>& v, int64_t x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.insert(std::upper_bound(v.begin(), v.end(), x), x);
  };
  // Threads > 1, unbatched: M / threads and N / threads (a whole vector's multiple) as well, so that
  // shapes whose sizes have no power-of-two divisor split evenly: MobileNetV2's 196 x 96 x 576 on 2
  // threads offered tile_m 196 only and tile_n 16 / 32 / 96 (3 blocks of 32 for 2 threads, or 16-wide
  // register tiles). Only spaces that gain a value change (and with them their fingerprints).
  if (threads > 1 && !w.batched()) {
    if (w.m % threads == 0 && w.m / threads >= 8 && w.m / threads <= 512) add(tile_m, w.m / threads);
    if (w.n % threads == 0 && (w.n / threads) % vw == 0 && w.n / threads <= 1024) add(tile_n, w.n / threads);
  }
  knobs.push_back({"tile_m", tile_m, "rows of C per outer (cache) block"});
  knobs.push_back({"tile_n", tile_n, "columns of C per outer (cache) block"});
  // K chunks of 8 (2026-11-29): with a register tile 4 x 64 read in place, 8 rows of B (16 KiB) stay
  // in L1 across the block's register tiles; TVM MetaSchedule's winner on 128x4096x4096 is that
  // point (tile 128x512x8, with unroll_k 2 as emitted below: 214-226 GFLOP/s against 204-207 with
  // chunks of 16; AMD EPYC Zen 5, docs/search.md). Not where the GEMV routes' knobs are (NT, M <=
  // kGemvMaxM): those spaces, their fingerprints and size stay as they were (one more value would
  // take the split-K space past what Space enumerates).
  std::vector<int64_t> tile_k = dividing(gemvShaped(w) ? std::vector<int64_t>{16, 32, 64, 128, 256, 512}
                                                       : std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512},
                                            w.k, 512);
  // NN weights GEMMs whose K has no large power-of-two divisor (CNN channel counts: 576, 960, 1152,
  // 2304 > 512): also the largest multiple of 16 up to 512 that divides K (960 -> 480, 576 -> 288),
  // where the powers of two stopped at 64. Only the weights spaces (tune model's tasks; other
  // spaces keep their fingerprints).
  if (nnWeights(w) && w.k > 512)
    for (int64_t d = 512; d >= 128; d -= 16)
      if (w.k % d == 0) {
        add(tile_k, d);
        break;
      }
  knobs.push_back({"tile_k", tile_k, "K chunk per block (the packed-panel depth in BLIS terms)"});
  std::vector<int64_t> reg_n = {vw, 2 * vw, 4 * vw};
  if (w.n % vw != 0) reg_n = {1, 2, 4, 8};
  // N a multiple of 8 but not of the vector width (AVX-512: MobileNetV2's 24-channel projections,
  // 3136x24x144): also a whole vector, its register loop over N peeled (one full 16-wide tile,
  // then an unmasked 8-wide remainder), where 8-wide tiles ran at half the FMA width. NN only,
  // unbatched; other shapes keep their space and fingerprint.
  const bool split_n = vw > 8 && w.n % vw != 0 && w.n % 8 == 0 && w.n > vw && w.layout == Layout::NN && !w.batched();
  if (split_n) reg_n.push_back(vw);
  // 6, 12, 14: the row counts that fill 32 AVX-512 registers (6 x 4 vectors, 12-14 x 2) or 16 AVX2
  // ones (6 x 2); they divide no power-of-two tile, so the register loop over M is peeled (full
  // tiles, then a masked remainder).
  // 7 only where it divides M (issue #31): the 7x7-pixel 1x1 convolutions of CNNs are M = 49
  // GEMMs, whose one M block of 49 rows 7 register tiles of 7 cover without a remainder; other
  // shapes keep the space (and fingerprint) they had.
  std::vector<int64_t> reg_m = {1, 2, 4, 6, 8, 12, 14, 16};
  if (w.m % 7 == 0) reg_m.insert(std::lower_bound(reg_m.begin(), reg_m.end(), 7), 7);
  knobs.push_back({"reg_m", reg_m, "rows of the register tile (a remainder that tile_m leaves is peeled)"});
  knobs.push_back({"reg_n", reg_n, "columns of the register tile (multiples of the vector width)"});
  knobs.push_back({"unroll_k", {1, 2, 4, 8}, "K steps per micro-kernel iteration (unrolled FMAs)"});
  knobs.push_back({"reg_loop_order", {0, 1}, "0: register tiles row-major (m outer), 1: n outer"});

  auto divides = [](int a, int b, std::string name) {
    return Constraint{name, {a, b}, [a, b](const std::vector<int64_t>& v) { return v[b] % v[a] == 0; }};
  };
  std::vector<Constraint> cons;
  cons.push_back(Constraint{"reg_m at most tile_m", {0, 3}, [](const std::vector<int64_t>& v) { return v[3] <= v[0]; }});
  // (With split_n, a constraint below that also allows the N peel; every other space keeps this one
  // and its fingerprint.)
  if (!split_n) cons.push_back(divides(4, 1, "reg_n divides tile_n"));
  cons.push_back(divides(5, 2, "unroll_k divides tile_k"));
  // Accumulators (reg_m vectors per reg_n/vw column group) plus one row of B vectors must fit in
  // the architectural vector registers, or the micro-kernel spills.
  cons.push_back(Constraint{"register tile fits the vector registers", {3, 4},
                            [vw, nregs](const std::vector<int64_t>& v) {
                              int64_t cols = (v[4] + vw - 1) / vw;
                              return v[3] * cols + cols <= nregs;
                            }});
  if (threads > 1)
    knobs.push_back({"threads", {threads}, "OpenMP threads running the forall of cache blocks (tune --threads)"});
  // Packing of the B panel (issue #14): each K chunk's tile_k x tile_n panel of B copied into a
  // contiguous buffer (row stride tile_n instead of N) that the micro-kernels then read. NN and TN
  // (B is K x N in both; NT stores B transposed); records from before the knob read as 0 (B read
  // in place, as before).
  // Batched matmuls (issue #31): the emitter has neither packing nor loop orders nor the GEMV
  // route for them yet, so those knobs have one value there.
  const bool batched = w.batched();
  // NT (issue #31): pack_b = 1 is the transposed-B route (cpu_route_transposed_b.cpp): B packed
  // once per call, by a transpose, into K x tile_n panels; batched or not.
  const bool nt = w.layout == Layout::NT;
  // pack_b = 2 (issue #35): B in reg_n-wide micro-panels (cpu_route_b_micropanels.cpp), each K
  // chunk's packed where pack_b = 1 copies its panel. Offered where it was measured: AVX2 (8-float
  // vectors), NN, unbatched, B not a weight (tune model's tasks keep their compile-time packing of
  // weights), N a multiple of the vector width; every other space and its fingerprint stay as they
  // were. 2048^3 on AMD EPYC Zen 3, 1 thread, call by call against OpenBLAS: 0.82x with the space's
  // best before, 0.88-0.92x by hand with micro-panels (docs/search.md).
  const bool micro_panels = vw == 8 && w.layout == Layout::NN && !batched && !w.weights && w.n % vw == 0 && !gemvShaped(w);
  knobs.push_back({"pack_b", micro_panels ? std::vector<int64_t>{0, 1, 2}
                             : nt || !batched ? std::vector<int64_t>{0, 1}
                                              : std::vector<int64_t>{0},
                   micro_panels ? "1: copy each K chunk's B panel (tile_k x tile_n) into a contiguous buffer first; 2: pack it into "
                                  "reg_n-wide micro-panels (tile_k x reg_n each, contiguous); 0: read B in place"
                                : "1: copy each K chunk's B panel (tile_k x tile_n) into a contiguous buffer first (NT: B transposed "
                                  "once per call into K x tile_n panels); 0: read B in place",
                   0});
  const int pack_b_i = int(knobs.size()) - 1;  // (pack_b 2 needs reg_n to divide N: it divides tile_n, which divides N)
  // The loops above the K chunks (issue #14): 0 = a forall over (tile_m x tile_n) blocks (as
  // before); 1 = a forall over tile_m row blocks, the K chunks, then a loop over tile_n (the A
  // block is reused across it: pack_a packs it once per K chunk); 2 = a forall over tile_n column
  // blocks, the K chunks, then a loop over tile_m (BLIS/GotoBLAS order: the B panel is reused
  // across it, pack_b packs it once per K chunk). Batched GEMMs are emitted as 0 whatever the knob.
  knobs.push_back({"outer_order", batched ? std::vector<int64_t>{0} : std::vector<int64_t>{0, 1, 2},
                   "loops above the K chunks: 0 forall over (m, n) blocks; 1 forall over m, then K, then n; "
                   "2 forall over n, then K, then m",
                   0});
  const int order_i = int(knobs.size()) - 1;
  if (threads > 1) {
    // At least as many forall iterations as threads, or as many as the smallest tiles make (tiny
    // shapes).
    // A batched matmul's forall runs over the batch too (one element per block).
    const int64_t m = w.m, n = w.n, b = w.batch;
    const int64_t most = b * ((m + knobs[0].values.front() - 1) / knobs[0].values.front()) *
                         ((n + knobs[1].values.front() - 1) / knobs[1].values.front());
    const int64_t need = std::min<int64_t>(threads, most);
    cons.push_back(Constraint{"at least as many blocks as threads", {0, 1, order_i},
                              [m, n, b, need, order_i](const std::vector<int64_t>& v) {
                                return b * cpuParallelBlocks(m, n, v[0], v[1], v[size_t(order_i)]) >= need;
                              }});
  }
  // Packing of the A block (issue #14): each K chunk's tile_m x tile_k block of A copied into a
  // contiguous buffer (row stride tile_k instead of K). NN and NT (A is M x K in both).
  knobs.push_back({"pack_a", w.layout != Layout::TN && !batched ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0},
                   "1: copy each K chunk's A block (tile_m x tile_k) into a contiguous buffer first; 0: read A in place", 0});
  // Prefetch of the next B panel (issue #31; compiler_cpu_prefetch.cpp, insertPanelPrefetches): B a
  // constant weight (a network's, streamed from memory: each panel is read from DRAM once), NN,
  // unbatched. With outer_order 1 the loop over tile_n blocks runs each panel past every register
  // tile of the block's rows; each register tile's K loop then also prefetches (into L2) the rows of
  // the next panel, so that the first register tile of that panel no longer waits for DRAM. The
  // 7x7-pixel 1x1 convolutions of ResNet-50 (49x2048x512, reg_m 7, AMD EPYC Zen 5, 1 thread): 229-231
  // -> 240-245 GFLOP/s; on other winners neutral to 12% slower (docs/search.md), hence a knob. Only
  // up to 64 rows (each weight used by at most 64 rows: B's stream matters most there): offered to
  // every weights GEMM, it cost TinyLlama's prefill (M = 128) 2.5-3.5% in 32-trial searches (the
  // cost model does not see the knob, so half the points it ranks high were prefetch twins). Other
  // spaces (and their fingerprints) stay as they were.
  if (nnWeights(w) && w.m <= 64) {
    knobs.push_back({"prefetch_b", {0, 1},
                     "1 (outer_order 1): each register tile's K loop also prefetches the next tile_n block's B panel "
                     "into L2 (weights streamed from memory); 0: none",
                     0});
    const int pf_i = int(knobs.size()) - 1;
    cons.push_back(Constraint{"prefetch_b: outer_order 1 and at least two register tiles of rows per block",
                              {0, 3, order_i, pf_i}, [order_i, pf_i](const std::vector<int64_t>& v) {
                                return v[size_t(pf_i)] == 0 || (v[size_t(order_i)] == 1 && v[0] >= 2 * v[3]);
                              }});
  }
  if (nt) {
    // The transposed-B route: forall over (m, n) blocks, A read in place, the transpose in 16 x 16
    // tiles.
    const int pack_a_i = int(knobs.size()) - 1;
    const int64_t kdim = w.k;
    cons.push_back(Constraint{"NT pack_b: outer_order 0, pack_a 0, tile_n and K multiples of 16",
                              {1, pack_b_i, order_i, pack_a_i},
                              [pack_b_i, order_i, pack_a_i, kdim](const std::vector<int64_t>& v) {
                                return v[size_t(pack_b_i)] == 0 ||
                                       (v[size_t(order_i)] == 0 && v[size_t(pack_a_i)] == 0 && v[1] % 16 == 0 &&
                                        kdim % 16 == 0);
                              }});
  }
  addGemvKnobs(knobs, cons, w, vw, nregs);
  if (split_n) {
    // reg_n divides tile_n, or the N-peeled register loop: a whole vector over a tile that leaves 8,
    // one peel per schedule (reg_m divides tile_m) and B read in place.
    cons.push_back(Constraint{"reg_n divides tile_n, or a whole vector over a tile that leaves 8 (peeled; reg_m divides tile_m, pack_b 0)",
                              {0, 1, 3, 4, pack_b_i}, [pack_b_i, vw](const std::vector<int64_t>& v) {
                                return v[1] % v[4] == 0 || (v[4] == vw && v[1] > vw && v[1] % vw == 8 && v[0] % v[3] == 0 &&
                                                            v[size_t(pack_b_i)] == 0);
                              }});
  }
  return Space("cpu_gemm_v1", std::move(knobs), std::move(cons));
}

int64_t cpuParallelBlocks(int64_t m, int64_t n, int64_t tile_m, int64_t tile_n, int64_t outer_order) {
  const int64_t bm = (m + tile_m - 1) / tile_m, bn = (n + tile_n - 1) / tile_n;
  return outer_order == 1 ? bm : outer_order == 2 ? bn : bm * bn;
}

std::string cpu_detail::knobOp(const Knob& k, int64_t selected) {
  std::ostringstream o;
  o << "transform.tune.knob<\"" << k.name << "\"> = " << selected << " : i64 from options = [";
  for (size_t i = 0; i < k.values.size(); ++i) o << (i ? ", " : "") << k.values[i];
  o << "] -> !transform.param<i64>";
  return o.str();
}

// Rows of a panel copied per vector step (the copy is tiled by rows, each step one rows x width
// vector).
int64_t cpu_detail::packRows(int64_t rows) { return rows % 4 == 0 ? 4 : rows % 2 == 0 ? 2 : 1; }
// Columns of a panel copied per vector step: the largest divisor of the width up to 64 floats, so a
// step is at most 4 x 64 floats (16 AVX-512 registers). One vector across a whole 512-wide panel
// (as before 2026-11-24) spilled thousands of registers: at 2048^3 the copy loops then held 7,000
// moves and the kernel ran at 72 instead of 100 GFLOP/s (AMD EPYC Zen 4).
int64_t cpu_detail::packCols(int64_t width) {
  if (width <= 64) return width;
  for (int64_t d = std::min<int64_t>(width, 64); d > 1; --d)
    if (width % d == 0) return d;
  return width;  // a prime width over 64: one step (no such tile in today's spaces)
}

// One operand of the matmul %op copied into a contiguous buffer: a nofold pad of that operand
// (A: 0, B: 1), rewritten as a linalg.copy into a fresh tensor and tiled by rows (vectorized at
// the end of the script, see emitCpuGemmActions). The matmul on the copy is %<name>p; the copy's
// handle, rows and width go to `copies`.
std::string cpu_detail::packOperand(const std::string& ind, const std::string& op, int operand, const std::string& name,
                                    int64_t rows, int64_t width, std::vector<PanelCopy>& copies, int loops) {
  const std::string H = "!transform.any_op";
  const int64_t cols = packCols(width);
  const bool split = cols != width;  // the copy is tiled by columns too
  std::ostringstream o;
  o << ind << "// " << name << ": this K chunk's " << (operand == 0 ? "A block" : "B panel")
    << " copied into a contiguous buffer.\n"
    << ind << "%" << name << "p, %" << name << "_pad, %" << name << "_unused = transform.structured.pad " << op
    << " {padding_values = [0.0 : f32, 0.0 : f32, 0.0 : f32], padding_dimensions = [" << (loops == 4 ? "0, 1, 2, 3" : "0, 1, 2") << "], nofold_flags = ["
    << (operand == 0 ? "1, 0" : "0, 1") << ", 0], copy_back_op = \"none\"} : (" << H << ") -> (" << H << ", " << H
    << ", " << H << ")\n"
    << ind << "%" << name << "_panel = transform.structured.rewrite_in_destination_passing_style %" << name
    << "_pad : (" << H << ") -> " << H << "\n"
    << ind << "%" << name << "_copy, %" << name << "_copy_loop" << (split ? ", %" + name + "_copy_cols" : "")
    << " = transform.structured.tile_using_for %" << name << "_panel tile_sizes [" << packRows(rows) << ", "
    << (split ? cols : 0) << "] : (" << H << ") -> (" << H << ", " << H << (split ? ", " + H : "") << ")\n";
  copies.push_back({"%" + name + "_copy", rows, width});
  return o.str();
}

// The register tiles (%t4) vectorized with the register tile's sizes. `peel`: the register loop
// over M (that handle), whose last tile is partial, is peeled first (transform.loop.peel): the
// main loop's tiles are full and vectorize unmasked, the remainder's masked (upstream:
// mlir/test/Dialect/Linalg/transform-op-peel-and-vectorize.mlir).
// `n_rest` > 0: the peeled loop is the one over N instead, its remainder n_rest columns wide
// (vectorized at that width, static, so no masks are left).
static std::string vectorizeRegisterTiles(const std::string& ind, const std::string& b1, const std::string& peel,
                                          bool fill, int64_t n_rest, const std::string& k_size) {
  const std::string P = "!transform.param<i64>", H = "!transform.any_op";
  // The columns of a part's register tiles: %reg_n, or the N remainder's static width (one param fewer).
  auto cols = [&](bool partial) {
    return partial && n_rest > 0 ? std::make_pair(std::to_string(n_rest), std::string())
                                 : std::make_pair(std::string("%reg_n"), ", " + P);
  };
  auto vectorize = [&](const std::string& h) {
    const auto [n, np] = cols(h == "%t4_partial");
    return ind + "transform.structured.vectorize " + h + " vector_sizes [" + b1 + "%reg_m, " + n + ", " + k_size + "] : " + H +
           ", " + P + np + ", " + P + "\n";
  };
  if (peel.empty()) return vectorize("%t4");
  std::ostringstream o;
  // (With a fused fill in the register loop, the contraction alone: a GEMM is a linalg.matmul or a
  // matmul-shaped linalg.generic.)
  // (library.cpp's epilogue variant rewrites the GEMM's list: keep its text.)
  const std::string ops = !fill ? "interface{LinalgOp}"
                          : b1.empty() ? "ops{[\"linalg.matmul\", \"linalg.generic\"]}"
                                       : "ops{[\"linalg.batch_matmul\", \"linalg.generic\"]}";
  o << ind << (n_rest > 0 ? "// reg_n does not divide tile_n: full register tiles, then the remainder.\n"
                          : "// reg_m does not divide tile_m: full register tiles, then the remainder (masked).\n")
    << cpu_detail::peelRegisterLoop(ind, peel, ops) << vectorize("%t4_full") << vectorize("%t4_partial");
  // Each part's register tiles start with their own (fused) zero fill, vectorized with the register
  // tile's sizes (the remainder's fill is not static).
  if (fill)
    for (const std::string part : {"full", "partial"}) {
      const auto [n, np] = cols(part == "partial");
      o << ind << "%sx_fill_" << part << " = transform.structured.match ops{[\"linalg.fill\"]} in %" << part << " : (" << H
        << ") -> " << H << "\n"
        << ind << "transform.structured.vectorize %sx_fill_" << part << " vector_sizes [" << b1 << "%reg_m, " << n << "] : " << H << ", "
        << P << np << "\n";
    }
  return o.str();
}

std::string cpu_detail::peelRegisterLoop(const std::string& ind, const std::string& loop, const std::string& ops) {
  const std::string H = "!transform.any_op", F = "!transform.op<\"scf.for\">";
  return ind + "%mloop = transform.cast " + loop + " : " + H + " to " + F + "\n" + ind +
         "%full, %partial = transform.loop.peel %mloop : (" + F + ") -> (" + H + ", " + H + ")\n" + ind +
         "%t4_full = transform.structured.match " + ops + " in %full : (" + H + ") -> " + H + "\n" + ind +
         "%t4_partial = transform.structured.match " + ops + " in %partial : (" + H + ") -> " + H + "\n";
}

std::string cpu_detail::vectorizeFusedFill(const std::string& ind, const std::string& loop) {
  const std::string H = "!transform.any_op";
  return ind + "%sx_fill_reg = transform.structured.match ops{[\"linalg.fill\"]} in " + loop + " : (" + H + ") -> " + H +
         "\n" + ind + "transform.structured.vectorize %sx_fill_reg : " + H + "\n";
}

std::string cpu_detail::foldFusedFillPatterns(const std::string& ind) {
  return ind + "  transform.apply_patterns.canonicalization\n" + ind +
         "  transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers\n";
}

// The loops of %f matched again (canonicalization replaced them), the loop-invariant register
// tiles hoisted out of them (the accumulators stay in registers across the K loops), then the
// contractions lowered to FMAs; `also`: more lowering patterns in that last set.
std::string cpu_detail::hoistAndLowerContractions(const std::string& ind, const std::string& also,
                                                  const std::string& before) {
  const std::string H = "!transform.any_op";
  return ind + "%loops = transform.structured.match ops{[\"scf.for\"]} in %f : (" + H +
         ") -> !transform.op<\"scf.for\">\n" + ind +
         "transform.loop.hoist_loop_invariant_subsets %loops : !transform.op<\"scf.for\">\n" +
         (before.empty() ? std::string() : ind + "transform.apply_patterns to %f {\n" + before + ind + "} : " + H + "\n") + ind +
         "transform.apply_patterns to %f {\n" + ind +
         "  transform.apply_patterns.vector.lower_contraction lowering_strategy = outerproduct\n" + ind +
         "  transform.apply_patterns.vector.lower_outerproduct\n" + also + ind + "} : " + H + "\n";
}

std::string emitCpuGemmActions(const Space& space, const Candidate& c, const std::string& ind, bool batched,
                               int64_t m, Layout layout, int64_t k_dim, int64_t n_dim) {
  if (cpu_detail::isAmxSpace(space)) return cpu_detail::emitAmxActions(space, c, ind, false);
  if (!batched && space.valueOr(c, "gemv", 0) != 0) return cpu_detail::emitGemvActions(space, c, ind, m);
  if (layout == Layout::NT && space.valueOr(c, "pack_b", 0) == 1)
    return cpu_detail::emitTransposedBPackActions(space, c, ind, batched, k_dim, n_dim);
  if (space.valueOr(c, "pack_b", 0) == 2) return cpu_detail::emitBMicroPanelActions(space, c, ind, k_dim);
  auto v = space.values(c);
  const auto& k = space.knobs();
  const bool n_outer = v[6] == 1;
  const std::string P = "!transform.param<i64>", H = "!transform.any_op";
  std::ostringstream o;
  const bool threaded = space.knobIndex("threads") >= 0;
  auto knob = [&](const char* name) { return space.valueOr(c, name, 0); };
  // Batched GEMMs (see below) are not packed and keep order 0. A partial register tile is peeled
  // as in a GEMM (the main loop's tiles vectorize unmasked): until 2026-11-30 it was masked in every
  // iteration instead, its accumulators read and written at each K step (6 x 16 tiles over blocks
  // of 32 rows, the AVX2 choice: 2.7 GFLOP/s against 39 peeled on a 32x512x512x128 batched matmul,
  // AMD EPYC Zen 3, 1 thread).
  const bool pack_a = knob("pack_a") == 1 && !batched, pack_b = knob("pack_b") == 1 && !batched;
  const int64_t order = batched ? 0 : knob("outer_order");
  const int64_t tile_m = v[0], tile_n = v[1], tile_k = v[2];
  // The output's zero fill goes into the register tiles when each of them holds its whole
  // reduction (tile_k = K: no K chunks), peeled remainder included: each register tile's
  // accumulators start as zeros instead of being read back from a memset C, and folding drops the
  // fill's own stores (C is written once, at the end), as on the direct convolution route
  // (cpu_conv.cpp). Measured: docs/search.md and docs/models.md (the GEMMs' fills).
  // Batched GEMMs too (since 2026-12-01): left outside, the fill was one memset of the whole C on
  // one thread before the parallel loop (12x128x64x128 on 2 threads, AMD EPYC Zen 5: see
  // docs/search.md).
  const bool fuse_fill = k_dim > 0 && tile_k == k_dim;
  const bool peeled_n = tile_n % v[4] != 0 && !batched;  // (the space allows it with reg_m dividing tile_m)
  const bool peeled = tile_m % v[3] != 0 || peeled_n;
  for (size_t i = 0; i < k.size(); ++i) o << ind << "%" << k[i].name << " = " << knobOp(k[i], v[i]) << "\n";
  if (fuse_fill)
    o << ind << "%sx_init = transform.get_producer_of_operand %mm[2] : (" << H << ") -> " << H << "\n";
  // A batched GEMM has a leading batch loop: one batch element per forall iteration, 0 (not
  // tiled) in the other tile sizes, 1 in the vector sizes.
  const std::string b1 = batched ? "1, " : "", b0 = batched ? "0, " : "";
  // Rows and columns of the register loops swapped (tile_using_for writes `interchange = [...]`,
  // transform.structured.fuse `interchange [...]`).
  const std::string perm = batched ? "[0, 2, 1, 3]" : "[1, 0, 2]", interchange = " interchange = " + perm;
  const std::string forall_sizes = order == 1 ? "%tile_m, 0" : order == 2 ? "0, %tile_n" : "%tile_m, %tile_n";
  o << ind << "%f = transform.get_parent_op %mm {deduplicate, op_name = \"func.func\"} : (" << H << ") -> " << H << "\n"
    << ind << "%t1, %blocks = transform.structured.tile_using_forall %mm tile_sizes [" << b1 << forall_sizes << "]"
    << " : (" << H << ", " << P << (order == 0 ? ", " + P : std::string()) << ") -> (" << H << ", " << H << ")\n"
    << (threaded ? ind + "transform.annotate %blocks \"sextant.num_threads\" = %threads : " + H + ", " + P + "\n"
                 : std::string())
    << (fuse_fill ? ind + "%sx_fill_blk, %sx_blocks_f = transform.structured.fuse_into_containing_op %sx_init into %blocks : (" +
                        H + ", " + H + ") -> (" + H + ", " + H + ")\n"
                  : ind + "%t2, %kc = transform.structured.tile_using_for %t1 tile_sizes [" + b0 + "0, 0, %tile_k] : (" + H +
                        ", " + P + ") -> (" + H + ", " + H + ")\n");
  // prefetch_b: the function is marked, and after bufferization its register tiles' K loops prefetch
  // the next tile_n block's B panel (compiler_cpu.cpp, insertPanelPrefetches).
  if (space.valueOr(c, "prefetch_b", 0) == 1)
    o << ind << "transform.annotate %f \"" << kPrefetchBAttr << "\" : " << H << "\n";
  // Each operand is packed at the outermost level where its panel no longer changes: A above the
  // loop over n (order 1), B above the loop over m (order 2), otherwise in the K chunk's block.
  std::vector<PanelCopy> copies;
  std::string cur = fuse_fill ? "%t1" : "%t2";
  auto pack = [&](int operand) {
    o << (operand == 0 ? packOperand(ind, cur, 0, "pa", tile_m, tile_k, copies)
                       : packOperand(ind, cur, 1, "pb", tile_k, tile_n, copies));
    cur = operand == 0 ? "%pap" : "%pbp";
  };
  if (order == 1 && pack_a) pack(0);
  if (order == 2 && pack_b) pack(1);
  if ((order == 1 || order == 2) && fuse_fill) {  // (transform.structured.fuse takes sizes, not params)
    o << ind << "%t2i, %inner = transform.structured.fuse " << cur << " tile_sizes ["
      << (order == 1 ? "0, " + std::to_string(tile_n) : std::to_string(tile_m) + ", 0") << ", 0] : (" << H << ") -> (" << H
      << ", " << H << ")\n";
    cur = "%t2i";
  } else if (order == 1 || order == 2) {
    o << ind << "%t2i, %inner = transform.structured.tile_using_for " << cur << " tile_sizes ["
      << (order == 1 ? "0, %tile_n" : "%tile_m, 0") << ", 0] : (" << H << ", " << P << ") -> (" << H << ", " << H
      << ")\n";
    cur = "%t2i";
  }
  if (order != 1 && pack_a) pack(0);
  if (order != 2 && pack_b) pack(1);
  if (fuse_fill)
    o << ind << "%t3, %r1, %r2 = transform.structured.fuse " << cur << " tile_sizes [" << b0 << v[3] << ", " << v[4] << ", 0]"
      << (n_outer ? " interchange " + perm : "") << " : (" << H << ") -> (" << H << ", " << H << ", " << H << ")\n"
      << (peeled ? std::string()  // (vectorized with each part of the peeled loop, below)
                 : cpu_detail::vectorizeFusedFill(ind, "%r1"));
  else
    o << ind << "%t3, %r1, %r2 = transform.structured.tile_using_for " << cur << " tile_sizes [" << b0 << "%reg_m, %reg_n, 0]"
      << (n_outer ? interchange : "") << " : (" << H << ", " << P << ", " << P << ") -> (" << H << ", " << H << ", " << H
      << ")\n";
  // unroll_k = 2 (not batched): the register tiles one K step wide, their K loop unrolled twice
  // (transform.loop.unroll) instead of two-step-wide tiles. A two-step tile reads each row of A
  // as a pair, which LLVM loads as one 8-byte vector and broadcasts with shuffles (vmovsd,
  // vmovshdup, vbroadcastss from a register: FP-pipe work beside the FMAs); the unrolled loop
  // broadcasts each element from memory. 128x4096x4096 (tile 128x512x8, reg 4x64, AMD EPYC
  // Zen 5): 193-203 -> 214-218 GFLOP/s (docs/search.md). 4 and 8 keep wide tiles: unrolled
  // loops of 4 ran at 160-179 there, wide tiles of 4 and 8 at 197-205. Batched GEMMs too where
  // their register tiles are whole (a partial one is masked in every iteration there, and unrolled
  // it ran slower: 12x384x384x64 with 6 x 64 tiles over 128 rows 59 -> 45 GFLOP/s; whole tiles
  // 177-200 -> 191-205, NT read in place 25 -> 54).
  const bool loop_unroll = v[5] == 2 && (!batched || (tile_m % v[3] == 0 && tile_n % v[4] == 0));
  const std::string k_size = loop_unroll ? "%k_step" : "%unroll_k";  // the register tiles' K steps
  if (loop_unroll) o << ind << "%k_step = transform.param.constant 1 : i64 -> " << P << "\n";
  o << ind << "%t4, %kk = transform.structured.tile_using_for %t3 tile_sizes [" << b0 << "0, 0, " << k_size << "] : (" << H
    << ", " << P << ") -> (" << H << ", " << H << ")\n";
  // (The K loops are marked, then unrolled after the vectorization: a peeled register loop's
  // remainder has a copy of its own, and peeling invalidates the handle %kk. The mark becomes
  // `sextant.unroll_k = 1` before the unrolling, so that the schedule of another op of the same
  // function, applied after this one, does not unroll these loops again.)
  if (loop_unroll) o << ind << "transform.annotate %kk \"sextant.unroll_k\" : " << H << "\n";
  o << vectorizeRegisterTiles(ind, b1, !peeled ? "" : peeled_n ? (n_outer ? "%r1" : "%r2") : (n_outer ? "%r2" : "%r1"),
                              fuse_fill, peeled_n ? tile_n % v[4] : 0, k_size);
  if (loop_unroll)
    o << ind << "%kk_loops = transform.structured.match ops{[\"scf.for\"]} attributes {sextant.unroll_k} in %f : (" << H
      << ") -> !transform.op<\"scf.for\">\n"
      << ind << "transform.annotate %kk_loops \"sextant.unroll_k\" = %k_step : !transform.op<\"scf.for\">, " << P << "\n"
      << ind << "transform.loop.unroll %kk_loops {factor = 2} : !transform.op<\"scf.for\">\n";
  o << ind << "transform.apply_patterns to %f {\n"
    << ind << "  transform.apply_patterns.vector.reduction_to_contract\n"
    << ind << "  transform.apply_patterns.vector.transfer_permutation_patterns\n"
    << ind << "  transform.apply_patterns.vector.lower_masked_transfers\n"
    << (batched ? ind + "  transform.apply_patterns.vector.drop_unit_dims_with_shape_cast\n" : std::string())
    << ind << "  transform.apply_patterns.canonicalization\n"
    << ind << "} : " << H << "\n"
    << ind << "// Canonicalization replaced the loops: match them again, then keep the C register tile\n"
    << ind << "// in registers across the K loops.\n"
    // (Folded before the contractions are lowered: canonicalized after it, their chains of
    // vector.insert become one vector.from_elements of every scalar.)
    << hoistAndLowerContractions(ind, "", fuse_fill ? cpu_detail::foldFusedFillPatterns(ind) : std::string());
  // Last: vectorized earlier, canonicalization would fold a copy back into a slice insertion,
  // which bufferizes to a memrefCopy call.
  for (const PanelCopy& p : copies)
    o << ind << "transform.structured.vectorize " << p.handle << " vector_sizes [" << packRows(p.rows) << ", "
      << packCols(p.width) << "] : " << H << "\n";
  return o.str();
}

// The line of a schedule that binds %mm to the payload's op.
static std::string matchLine(const char* op) {
  return std::string("%mm = transform.structured.match ops{[\"") + op +
         "\"]} in %root : (!transform.any_op) -> !transform.any_op";
}

std::string cpuGemmActionsOf(const std::string& schedule) {
  std::istringstream in(schedule);
  std::string line, actions;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      for (const char* op : allCpuPayloadOps()) inside = inside || line.find(matchLine(op)) != std::string::npos;
      continue;
    }
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, std::string::npos, "transform.yield") == 0) return actions;
    actions += line + "\n";
  }
  return std::string();  // no match line, or no yield after it
}

std::string emitCpuGemmSchedule(const GemmWorkload& w, const Space& space, const Candidate& c) {
  const CpuOpSchedules& op = cpuSchedulesOf(w);
  std::ostringstream o;
  o << "// Sextant CPU " << op.title() << " schedule (space " << space.name() << " " << space.fingerprint() << ")\n"
    << "// workload: " << w.key() << "\n"
    << "// knobs: " << space.keyOf(c) << "\n"
    << "module attributes {transform.with_named_sequence} {\n"
    << "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n"
    << "    " << matchLine(op.payloadOp(w)) << "\n"
    << op.actions(space, c, w, "    ")
    << "    transform.yield\n"
    << "  }\n"
    << "}\n";
  return o.str();
}

}  // namespace sextant
