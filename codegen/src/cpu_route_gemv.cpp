// The GEMV routes of the CPU GEMM space: B stored N x K (NT: a weight matrix times a few tokens'
// activations) with M small (LLM decode steps). A stream over B's rows, K contiguous.
//
// gemv = 1 (issue #14; M > 1 in issue #35): tile_n columns of C per forall block, gemv_rows rows of
//   B at a time, the K loop a split reduction (transform.structured.tile_reduction_using_for)
//   whose M x gemv_rows x gemv_k partial sums stay in vector registers over K (or over a K block of
//   gemv_kblock), reduced into C at the end of each block. All M rows of A at once.
// gemv = 2 (issue #35, M = 2-16): the split-K route. transform.structured.split_reduction
//   {inner_parallel} first rewrites K as [K / gemv_k][gemv_k] with the gemv_k lanes a parallel
//   dimension, so the partial sums become an M x tile_n x gemv_k tensor of the forall block (8 KiB
//   at M = 8, tile_n = 16, gemv_k = 16) that lives across the K blocks; inside a K block, register
//   blocks of gemv_m rows of A x gemv_rows rows of B (e.g. 4 x 4: 16 accumulators, 8 loads per 16
//   FMAs, where gemv = 1 at M = 8 has 2 rows: 10 loads per 16 FMAs); the partial sums are reduced
//   once per block of C, after the last K block. Hand-measured on 8x4096x4096 and 16x4096x4096 NT
//   (AMD EPYC Zen 4, 1 thread, 2026-11-28, `tune --schedule`): 51 and 71 GFLOP/s where gemv = 1
//   reached 36-40 at M = 8, the GEMM route 49 at M = 16, oneDNN 45 and 64.
//
// gemv_k's values are whole vectors, then (AVX-512) half a vector: at M = 1 the stream over B with
// 256-bit vectors (8 rows x 8 of K per step) reaches 1.01-1.02x BLIS's sgemv call by call on the four
// decode shapes where 512-bit vectors reach 0.92-0.96x (AMD EPYC Zen 4, 1 thread, 2026-11-28; a C
// probe of the same loop: 5-8% more with ymm). BLIS's own kernel there is AVX2 (zen dotxf, 8 rows).
// On Zen 5 (whole 512-bit loads) the half width is the slowest (0.92-0.94x OpenBLAS where 32 of K
// reaches 1.06x): it is M = 1's default only where splitsWideVectors (hwspec) says so.
//
// The GEMM knobs stay at their first values on both routes. Records from before the knobs read as
// gemv 0 (the GEMM route) and gemv_m = M.
#include <algorithm>
#include <sstream>

#include "cpu_schedule_internal.h"
#include "sextant/codegen/cpu_schedule.h"

namespace sextant::cpu_detail {

// The split-K route's partial sums of a block (M x tile_n x gemv_k floats) stay in L1 across the K
// blocks: at most 32 KiB. It also bounds the vectors of their zero fill and final reduction (a
// 2 x 1024 x 64 block took minutes to compile).
constexpr int64_t kSplitPartialBytes = 32 * 1024;

void addGemvKnobs(std::vector<Knob>& knobs, std::vector<Constraint>& cons, const GemmWorkload& w, int64_t vw,
                  int64_t nregs) {
  std::vector<int64_t> gk;
  if (gemvShaped(w))
    for (int64_t f : {1, 2, 4, 8})
      if (w.k % (vw * f) == 0) gk.push_back(vw * f);
  // Half-width vectors last (the first value stays the GEMM candidates' value and the split-K
  // default): on AVX-512 a 256-bit stream reads memory faster at M = 1 (see the top of the file).
  if (!gk.empty() && vw >= 16 && w.k % (vw / 2) == 0) gk.push_back(vw / 2);
  // Only spaces where the route exists have these knobs: every other space, its fingerprint and its
  // candidates' keys stay as they were.
  if (gk.empty()) return;
  // M = 1 keeps the space it had (the split-K route's register blocks need M > 1).
  const bool split = w.m > 1;
  knobs.push_back({"gemv", split ? std::vector<int64_t>{0, 1, 2} : std::vector<int64_t>{0, 1},
                   "1: the GEMV route (NT, M small): rows of B streamed with vector partial sums over K in registers; "
                   "2: split-K GEMV (partial sums of the block in memory across K blocks, gemv_m x gemv_rows register "
                   "blocks); 0: GEMM",
                   0});
  knobs.push_back({"gemv_rows", {1, 2, 4, 8}, "GEMV: rows of B (columns of C) per step", 1});
  knobs.push_back({"gemv_k", gk, "GEMV: elements of K per step (vector partial sums of that width per row)", gk.front()});
  const int gi = int(knobs.size()) - 3, ri = gi + 1, ki = gi + 2;
  std::vector<int> gemv_knobs = {ri, ki};
  // M > 1: K in blocks (issue #35), so that the block of A that every row of B meets stays in L1
  // (at 4 x 4096 A is 64 KiB: without blocks it streams from L2 once per gemv_rows rows of B).
  // 0: K whole. Measured by hand on 4x4096x4096 NT (Zen 5): 45-49 GFLOP/s with 512 against 35-45.
  int bi = -1, mi = -1;
  if (split) {
    std::vector<int64_t> kb = {0};
    for (int64_t b : {256, 512, 1024})
      if (b < w.k && w.k % b == 0 && b % gk.front() == 0) kb.push_back(b);
    knobs.push_back({"gemv_kblock", kb, "GEMV, M > 1: K in blocks of this size (0: whole), A's block kept in L1", 0});
    bi = int(knobs.size()) - 1;
    gemv_knobs.push_back(bi);
    // Rows of A per register block of the split-K route; M first (all rows: gemv = 1's only value).
    std::vector<int64_t> gm = {w.m};
    for (int64_t d : {1, 2, 4, 8})
      if (d < w.m && w.m % d == 0) gm.push_back(d);
    knobs.push_back({"gemv_m", gm, "split-K GEMV (gemv 2): rows of A per register block (M: all)", w.m});
    mi = int(knobs.size()) - 1;
    gemv_knobs.push_back(mi);
  }
  std::vector<int> all(knobs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int(i);
  std::vector<int64_t> first(knobs.size());
  for (size_t i = 0; i < knobs.size(); ++i) first[i] = knobs[i].values.front();
  cons.push_back(Constraint{"GEMV: GEMM knobs at their first values, GEMV knobs at theirs for GEMM", all,
                            [gi, gemv_knobs, first](const std::vector<int64_t>& v) {
                              const bool gemv = v[size_t(gi)] != 0;
                              for (size_t i = 0; i < v.size(); ++i) {
                                const bool gemv_knob =
                                    std::find(gemv_knobs.begin(), gemv_knobs.end(), int(i)) != gemv_knobs.end();
                                // tile_n and the route itself are free in both; the rest is fixed in one
                                if (i == 1 || int(i) == gi || gemv_knob != !gemv) continue;
                                if (v[i] != first[i]) return false;
                              }
                              return true;
                            }});
  if (split) {
    cons.push_back(Constraint{"GEMV: K blocks hold whole gemv_k steps", {ki, bi}, [ki, bi](const std::vector<int64_t>& v) {
                                return v[size_t(bi)] == 0 || v[size_t(bi)] % v[size_t(ki)] == 0;
                              }});
    const int64_t m = w.m;
    cons.push_back(Constraint{"GEMV: gemv_m below M only on the split-K route", {gi, mi},
                              [gi, mi, m](const std::vector<int64_t>& v) { return v[size_t(gi)] == 2 || v[size_t(mi)] == m; }});
  }
  // gemv 1: M x rows partial sums and M rows of A (gemv_k wide each) stay in registers.
  // gemv 2: gemv_m x rows partial sums, the rows of B, one row of A at a time; the block's partial
  // sums at most kSplitPartialBytes.
  const int64_t m = w.m;
  std::vector<int> reads = {1, gi, ri, ki};
  if (mi >= 0) reads.push_back(mi);
  cons.push_back(Constraint{"GEMV: rows divide tile_n, partial sums fit the vector registers", reads,
                            [gi, ri, ki, mi, vw, nregs, m](const std::vector<int64_t>& v) {
                              const int64_t route = v[size_t(gi)];
                              if (route == 0) return true;
                              const int64_t vecs = (v[size_t(ki)] + vw - 1) / vw, rows = v[size_t(ri)];
                              if (v[1] % rows != 0) return false;
                              if (route == 1) return m * rows * vecs + m * vecs <= nregs;
                              return v[size_t(mi)] * rows * vecs + rows * vecs + 1 <= nregs &&
                                     m * v[1] * v[size_t(ki)] * 4 <= kSplitPartialBytes;
                            }});
}

// Both routes: the knob ops, %f, the forall over blocks of tile_n columns (%t1) and its threads.
static std::string prologue(const Space& space, const Candidate& c, const std::string& ind, const std::string& comment) {
  const std::string P = "!transform.param<i64>", H = "!transform.any_op";
  const auto& k = space.knobs();
  auto v = space.values(c);
  std::ostringstream o;
  for (size_t i = 0; i < k.size(); ++i) o << ind << "%" << k[i].name << " = " << knobOp(k[i], v[i]) << "\n";
  o << ind << "// " << comment << "\n"
    << ind << "%f = transform.get_parent_op %mm {deduplicate, op_name = \"func.func\"} : (" << H << ") -> " << H << "\n"
    << ind << "%t1, %blocks = transform.structured.tile_using_forall %mm tile_sizes [0, %tile_n] : (" << H << ", "
    << P << ") -> (" << H << ", " << H << ")\n"
    << (space.knobIndex("threads") >= 0
            ? ind + "transform.annotate %blocks \"sextant.num_threads\" = %threads : " + H + ", " + P + "\n"
            : std::string());
  return o.str();
}

// Both routes: the partial sums' init and final reduction vectorized, the transfers cleaned up, the
// partial sums hoisted into registers over the K loop, the contractions and reductions lowered.
static std::string epilogue(const std::string& ind, const std::string& init, const std::string& merge,
                            const std::string& comment) {
  const std::string H = "!transform.any_op";
  return ind + "transform.structured.vectorize " + init + " : " + H + "\n" + ind + "transform.structured.vectorize " +
         merge + " : " + H + "\n" + ind + "transform.apply_patterns to %f {\n" + ind +
         "  transform.apply_patterns.vector.transfer_permutation_patterns\n" + ind +
         "  transform.apply_patterns.vector.lower_masked_transfers\n" + ind +
         "  transform.apply_patterns.canonicalization\n" + ind + "} : " + H + "\n" + ind + "// " + comment + "\n" +
         hoistAndLowerContractions(ind, ind + "  transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = innerreduction\n");
}

// gemv = 1: see the top of the file.
static std::string emitGemvRegisterActions(const Space& space, const Candidate& c, const std::string& ind, int64_t m) {
  const std::string P = "!transform.param<i64>", H = "!transform.any_op";
  const int64_t rows = space.valueOr(c, "gemv_rows", 1), kv = space.valueOr(c, "gemv_k", 16);
  const int64_t kblock = space.valueOr(c, "gemv_kblock", 0);
  std::ostringstream o;
  o << prologue(space, c, ind, "GEMV: rows of B streamed, vector partial sums over K in registers, reduced at the end.")
    << (kblock > 0 ? ind + "%t1k, %kblocks = transform.structured.tile_using_for %t1 tile_sizes [0, 0, %gemv_kblock] : (" +
                         H + ", " + P + ") -> (" + H + ", " + H + ")\n"
                   : std::string())
    << ind << "%t2, %rows = transform.structured.tile_using_for " << (kblock > 0 ? "%t1k" : "%t1")
    << " tile_sizes [0, %gemv_rows, 0] : (" << H << ", " << P << ") -> (" << H << ", " << H << ")\n"
    << ind << "%init, %partial, %merge, %kloop = transform.structured.tile_reduction_using_for %t2 by tile_sizes = [0, 0, "
    << kv << "] : (" << H << ") -> (" << H << ", " << H << ", " << H << ", " << H << ")\n"
    << ind << "transform.structured.vectorize %partial vector_sizes [" << m << ", " << rows << ", " << kv << "] : " << H << "\n"
    << epilogue(ind, "%init", "%merge", "The partial sums stay in registers across the K loop.");
  return o.str();
}

// gemv = 2: see the top of the file. The split op's loops are m, n, K / gemv_k (reduction),
// gemv_k (parallel).
static std::string emitGemvSplitActions(const Space& space, const Candidate& c, const std::string& ind, int64_t m) {
  const std::string H = "!transform.any_op";
  const int64_t rows = space.valueOr(c, "gemv_rows", 1), kv = space.valueOr(c, "gemv_k", 16);
  const int64_t kblock = space.valueOr(c, "gemv_kblock", 0), gm = space.valueOr(c, "gemv_m", m);
  const int64_t tile_n = space.valueOr(c, "tile_n", 16), chunk = tile_n % 16 == 0 ? 16 : tile_n;
  std::ostringstream o;
  o << prologue(space, c, ind, "Split-K GEMV: K as [K / gemv_k][gemv_k], the block's partial sums live across the K blocks.")
    << ind << "%init, %fill, %split, %merge = transform.structured.split_reduction %t1 {split_factor = " << kv
    << ", insert_split_dimension = 2, inner_parallel} : (" << H << ") -> (" << H << ", " << H << ", " << H << ", " << H
    << ")\n";
  std::string op = "%split";
  if (kblock > 0) {
    o << ind << "%s1, %kblocks = transform.structured.tile_using_for %split tile_sizes [0, 0, " << kblock / kv
      << ", 0] : (" << H << ") -> (" << H << ", " << H << ")\n";
    op = "%s1";
  }
  if (gm < m)
    o << ind << "%s2, %mblocks, %rows = transform.structured.tile_using_for " << op << " tile_sizes [" << gm << ", "
      << rows << ", 0, 0] : (" << H << ") -> (" << H << ", " << H << ", " << H << ")\n";
  else
    o << ind << "%s2, %rows = transform.structured.tile_using_for " << op << " tile_sizes [0, " << rows
      << ", 0, 0] : (" << H << ") -> (" << H << ", " << H << ")\n";
  o << ind << "%s3, %ksteps = transform.structured.tile_using_for %s2 tile_sizes [0, 0, 1, 0] : (" << H << ") -> (" << H
    << ", " << H << ")\n"
    << ind << "transform.structured.vectorize %s3 vector_sizes [" << gm << ", " << rows << ", 1, " << kv << "] : " << H << "\n"
    // The zero fill and the final reduction in chunks of 16 columns (whole-block vectors of 2 x 256
    // x 16 took seconds to compile).
    << ind << "%fill16, %fillloop = transform.structured.tile_using_for %fill tile_sizes [0, " << chunk << ", 0] : (" << H
    << ") -> (" << H << ", " << H << ")\n"
    << ind << "%merge16, %mergeloop = transform.structured.tile_using_for %merge tile_sizes [0, " << chunk << "] : (" << H
    << ") -> (" << H << ", " << H << ")\n"
    << epilogue(ind, "%fill16", "%merge16", "A register block's partial sums stay in registers across the K steps of a K block.");
  return o.str();
}

std::string emitGemvActions(const Space& space, const Candidate& c, const std::string& ind, int64_t m) {
  return space.valueOr(c, "gemv", 0) == 2 ? emitGemvSplitActions(space, c, ind, m)
                                          : emitGemvRegisterActions(space, c, ind, m);
}

}  // namespace sextant::cpu_detail
