// The GEMM space's starting points (op_schedules.h): the untuned default candidate and the seeds
// measured right after it, and nearestValid, which finds the valid candidate closest to a wanted
// knob assignment.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "cpu_schedule_internal.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/op_schedules.h"

namespace sextant {

Candidate nearestValid(const Space& space, const std::map<std::string, int64_t>& wanted) {
  // Wanted index per knob: the value closest in log scale.
  const auto& knobs = space.knobs();
  std::vector<double> target(knobs.size(), 0);
  for (size_t i = 0; i < knobs.size(); ++i) {
    auto it = wanted.find(knobs[i].name);
    if (it == wanted.end()) continue;
    double best = std::numeric_limits<double>::max();
    for (size_t v = 0; v < knobs[i].values.size(); ++v) {
      // Flags (0/1) compare as they are: in log scale both would be 0.
      double d = it->second <= 1 ? std::fabs(double(knobs[i].values[v] - it->second))
                                 : std::fabs(std::log2(double(std::max<int64_t>(1, knobs[i].values[v]))) -
                                             std::log2(double(std::max<int64_t>(1, it->second))));
      if (d < best) best = d, target[i] = double(v);
    }
  }
  Candidate best;
  double best_d = std::numeric_limits<double>::max();
  for (uint64_t i = 0; i < space.size(); ++i) {
    Candidate c = space.at(i);
    double d = 0;
    for (size_t k = 0; k < c.size(); ++k) d += std::fabs(c[k] - target[k]);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

Candidate defaultCpuCandidate(const Space& space, const GemmWorkload& w) {
  return cpuSchedulesOf(w).defaultCandidate(space, w);
}

// The GEMV route's half-width gemv_k value (AVX-512: 8), 0 where the space has none.
static int64_t gemvHalfWidth(const Space& space) {
  const int i = space.knobIndex("gemv_k");
  if (i < 0) return 0;
  const auto& v = space.knobs()[size_t(i)].values;
  return v.size() > 1 && v.back() < v.front() ? v.back() : 0;
}

// M = 1's GEMV candidate (256 columns per block, 8 rows of B) with `first` of K per step for the
// default (!other) or, on AVX-512, the other vector width for the second starting point: half a
// vector, then a whole one where the CPU splits 512-bit operations (Zen 4); 32 of K, then half a
// vector elsewhere. Empty where there is no other width (no AVX-512).
static Candidate m1Gemv(const Space& space, bool other) {
  const int64_t half = gemvHalfWidth(space);
  if (other && half == 0) return {};
  const bool split = half > 0 && splitsWideVectors(hostCpu());
  const int64_t k = other ? (split ? 2 * half : half) : (split ? half : 32);
  return nearestValid(space, {{"gemv", 1}, {"tile_n", 256}, {"gemv_rows", 8}, {"gemv_k", k}});
}

Candidate cpu_detail::matmulDefault(const Space& space, const GemmWorkload& w) {
  if (isAmxSpace(space)) return amxDefault(space, w);
  // M = 1 with B stored N x K: the GEMV route, 256 columns per block, 8 rows of B x 32 elements of K
  // per step (the best of a hand sweep on 1x4096x4096 NT, AMD EPYC Zen 4, 2026-11-24: 12.1 GFLOP/s;
  // GEMM schedules reach 2.7-5.3 there); 8 elements of K (256-bit vectors) on AVX-512, below.
  // M = 2-16 (a gemv_kblock knob): the split-K GEMV route (cpu_route_gemv.cpp), 16 columns of C per
  // block, 16 of K per step, 16 accumulators as gemv_m rows of A x gemv_rows rows of B (4 x 4; 2 x 8
  // at M = 2), K in blocks of 512 where A (M x K floats) is larger than 32 KiB, K whole where it fits
  // L1. Hand sweep on AMD EPYC Zen 4, 1 thread, 2026-11-28 (`tune --knobs`), x4096x4096 NT:
  // M = 2 24.5 GFLOP/s (oneDNN 25), M = 4 37.6 (oneDNN 28), M = 8 55.0 (1.09x oneDNN call by
  // call), M = 16 70.0 (0.98x); the register-held GEMV route (gemv 1, the default before) reached
  // 36-40 at M = 8 and the GEMM route 49 at M = 16.
  if (space.knobIndex("gemv_kblock") >= 0) {
    const bool a_fits_l1 = w.m * w.k * 4 <= 32 * 1024;
    const int64_t gm = w.m <= 4 ? w.m : w.m % 4 == 0 ? 4 : w.m % 2 == 0 ? 2 : 1;
    const int64_t vw = space.knobs()[size_t(space.knobIndex("gemv_k"))].values.front();
    return nearestValid(space, {{"gemv", 2}, {"tile_n", 16}, {"gemv_m", gm}, {"gemv_rows", std::min<int64_t>(8, 16 / gm)},
                                {"gemv_k", vw}, {"gemv_kblock", a_fits_l1 ? 0 : 512}});
  }
  // On a CPU that splits 512-bit operations into halves (Zen 4), M = 1 streams B with 256-bit
  // vectors (gemv_k of half a vector, its last value): 1.01-1.02x BLIS's sgemv call by call on the
  // four decode shapes (1x4096x4096, 1x11008x4096, 1x4096x11008, 1x32000x4096 NT), where 512-bit
  // vectors reached 0.92-0.96x (AMD EPYC Zen 4, 1 thread, 2026-11-28, `tune --knobs ... --versus
  // blis`); a C probe of the same loop agrees (5-8%). On Zen 5 (2026-11-29) the half width was the
  // slowest of 8 / 16 / 32 of K: elsewhere 32 of K, the default before.
  if (int g = space.knobIndex("gemv"); g >= 0 && space.knobs()[size_t(g)].values.size() > 1)
    return m1Gemv(space, false);
  int vw = int(space.knobs()[space.knobIndex("reg_n")].values.front());
  // B stored transposed (NT) where the transposed-B route exists (issue #31): 32 x 32 blocks, K
  // chunks of 128, an 8 x two-vector register tile on B packed by a transpose (hand-measured on
  // AMD EPYC Zen 5, 1 thread, 2026-11-25: 200 GFLOP/s on the 32x512x512x128 Q.K^T, 220 on a
  // 512x512x128 GEMM and 232 on 1024^3, where the NN default reading B in place gave 80, 81 and 21).
  if (w.layout == Layout::NT && space.knobIndex("pack_b") >= 0 &&
      space.knobs()[size_t(space.knobIndex("pack_b"))].values.size() > 1 && w.k % 16 == 0 && w.n % 16 == 0)
    return nearestValid(space, {{"tile_m", 32}, {"tile_n", 32}, {"tile_k", 128}, {"reg_m", 8}, {"reg_n", 2 * vw},
                                {"unroll_k", 1}, {"reg_loop_order", 0}, {"pack_b", 1}, {"outer_order", 0}, {"pack_a", 0}});
  return nearestValid(space, {{"tile_m", 64}, {"tile_n", 64}, {"tile_k", 64}, {"reg_m", 8},
                              {"reg_n", vw}, {"unroll_k", 1}, {"reg_loop_order", 0}});
}

std::vector<Candidate> cpuSeedCandidates(const Space& space, const GemmWorkload& w) {
  return cpuSchedulesOf(w).seeds(space, w);
}

using KnobWants = std::vector<std::map<std::string, int64_t>>;

// The valid candidates nearest to each wanted assignment, without repeats, those that `keep`
// accepts.
template <typename Keep>
static std::vector<Candidate> nearestDistinct(const Space& space, const KnobWants& wants, Keep keep) {
  std::vector<Candidate> out;
  for (const auto& want : wants) {
    Candidate c = nearestValid(space, want);
    if (!c.empty() && keep(c) && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

// A weights GEMM with 7 x 7 pixels' rows (M = 49: ResNet-50's last-stage 1x1 convolutions; any M
// a multiple of 7 up to 64): register tiles of 7 rows, which the default's 8 leave a remainder of.
// Measured right after the default: the best of 150-200-trial searches on AMD EPYC Zen 5 (1 thread,
// 2026-12-01): 49x2048x512 tile_n 32, pack_a, outer_order 1, unroll_k 2 (229-231 GFLOP/s, 240-245
// with prefetch_b; default 153, oneDNN's dnnl_sgemm 190); 49x512x2048 tile_n 64, outer_order 0,
// unroll_k 4 (228-231; the first point 173, 206 with prefetch_b there). 32-trial searches found
// 192-208 (8-row tiles): the seeds are the default strategy's start, not its limit.
static std::vector<Candidate> sevenRowSeeds(const Space& space, const GemmWorkload& w) {
  if (!cpu_detail::nnWeights(w) || w.m % 7 != 0 || w.m > 64) return {};
  const int rn = space.knobIndex("reg_n");
  if (rn < 0) return {};
  const int64_t vw = space.knobs()[size_t(rn)].values.front();
  return nearestDistinct(
      space,
      {{{"tile_m", w.m}, {"tile_n", 2 * vw}, {"tile_k", 512}, {"reg_m", 7}, {"reg_n", 2 * vw}, {"unroll_k", 2},
        {"reg_loop_order", 0}, {"pack_b", 0}, {"outer_order", 1}, {"pack_a", 1}, {"prefetch_b", 1}},
       {{"tile_m", w.m}, {"tile_n", 4 * vw}, {"tile_k", 512}, {"reg_m", 7}, {"reg_n", 2 * vw}, {"unroll_k", 4},
        {"reg_loop_order", 0}, {"pack_b", 0}, {"outer_order", 0}, {"pack_a", 0}, {"prefetch_b", 0}}},
      [&](const Candidate& c) { return space.valueOr(c, "reg_m", 0) == 7; });
}

// Whether the space is the blocked GEMM route of an NN GEMM of at least 64 rows (the seed rules
// below) with vectors of `lanes` f32: reg_n's first value is one vector (its values are then 1, 2 and 4
// vectors; N not a multiple of the vector width starts them at 1) and the loop orders exist. NN
// spaces have no GEMV routes (those are NT only).
static bool blockedNnGemm(const Space& space, const GemmWorkload& w, int64_t lanes) {
  const int rn = space.knobIndex("reg_n");
  return rn >= 0 && w.layout == Layout::NN && w.m >= 64 && space.knobIndex("outer_order") >= 0 &&
         space.knobs()[size_t(rn)].values.front() == lanes;
}

// AVX2 (8 f32 lanes, 16 registers), an unbatched NN GEMM of at least 64 rows off the GEMV routes:
// the BLIS-like blockings around the register tile that fills the registers (6 rows x 2 vectors:
// 12 accumulators and 2 vectors of B), measured right after the default (8 x 1 vector over 64^3
// blocks: 26.6-28.8 GFLOP/s, 30% of the FMA peak). AMD EPYC Zen 3, 1 thread, 2026-12-04 (`tune
// --knobs ... --versus`, call by call; experiments/results/gemm_avx2_seeds_zen3.txt): B packed per
// K chunk of 256 in panels of 512 columns, loops over n, then K, then 128-row blocks of A read in
// place: 0.91x oneDNN at 1024^3, 0.84x at 2048^3, 0.80x OpenBLAS at 128x4096x4096; 64-row blocks
// of A packed, K chunks of 512: 0.89x at 2048^3. 150-trial searches without them had found 0.81x,
// 0.74x and 0.72x (experiments/results/cpu_gemm_vs_libs_zen3_t1_s69_before.txt); with them, the
// same command an hour later: 0.95x, 0.80x and 0.93x, every winner a 6 x 16 tile (..._s69.txt).
// Since pack_b 2 (B in 16-wide micro-panels, cpu_route_b_micropanels.cpp), where the space has it
// (not for weights), the seeds are micro-panel ones: against OpenBLAS call by call, same blocks,
// pack_b 1 -> 2: 0.87x -> 0.95x and 0.99x at 1024^3, 0.86x -> 0.86x and 0.90x -> 0.92x at 2048^3,
// 0.81x -> 0.85x and 0.82x -> 0.93x at 128x4096x4096; and 1024-column blocks, which halved pack_b 1
// (its rows 4 KiB apart), work with micro-panels: 64 x 1024 x 256, A in place, 0.93x / 0.98x /
// 0.93x on the three shapes, so it replaces the 128 x 512 x 256 one there (0.95x / 0.86x / 0.85x);
// 64 x 512 x 512 with A packed stays (0.99x / 0.92x / 0.93x)
// (experiments/results/gemm_avx2_micropanels_zen3.txt).
// Batched NN matmuls (attention's P.V; no packing or loop orders in their space): one seed, the
// same tile over 64 x 128 blocks with K whole up to 512 (the fill in the register tiles): 0.97x,
// 1.02x and 1.00x oneDNN's matmul primitive on the BERT and Llama P.V shapes, where 32-trial
// searches had found 0.80x, 0.94x and 0.76x (8 x 8 and peeled 6 x 16 tiles over 32-row blocks).
static std::vector<Candidate> avx2BlockedSeeds(const Space& space, const GemmWorkload& w) {
  if (!blockedNnGemm(space, w, 8)) return {};  // AVX2 only
  const Candidate def = cpu_detail::matmulDefault(space, w);
  // B in micro-panels where the space has them (pack_b 2: unbatched, B not a weight), else the
  // tile_k x tile_n panel copy.
  const int pb = space.knobIndex("pack_b");
  const auto& pbv = space.knobs()[size_t(pb)].values;
  const int64_t pack_b = std::find(pbv.begin(), pbv.end(), 2) != pbv.end() ? 2 : 1;
  auto blis = [&](int64_t tm, int64_t tn, int64_t tk, int64_t pa) {
    return std::map<std::string, int64_t>{{"tile_m", tm},        {"tile_n", tn},         {"tile_k", tk},
                                          {"reg_m", 6},          {"reg_n", 16},          {"unroll_k", 4},
                                          {"reg_loop_order", 1}, {"pack_b", pack_b},     {"outer_order", 2},
                                          {"pack_a", pa}};
  };
  const KnobWants wants =
      w.batched() ? KnobWants{{{"tile_m", 64}, {"tile_n", 128}, {"tile_k", 512}, {"reg_m", 6}, {"reg_n", 16},
                               {"unroll_k", 4}, {"reg_loop_order", 1}}}
      : pack_b == 2 ? KnobWants{blis(64, 512, 512, 1), blis(64, 1024, 256, 0)}
                    : KnobWants{blis(128, 512, 256, 0), blis(64, 512, 512, 1)};
  return nearestDistinct(space, wants, [&](const Candidate& c) { return c != def; });
}

// AVX-512 (16 f32 lanes, 32 registers) on an Intel CPU, an NN GEMM of at least 64 rows: the register
// tiles that fill the registers, 12 rows x 2 vectors (24 accumulators, BLIS's skx kernel and
// oneDNN's 48 x 8 transposed) and 6 x 4 vectors, over the
// BLIS order (loops over 1024-column blocks of n, then K chunks of 128 with B's panel copied,
// then 256-row blocks of A read in place; unroll_k 4), measured right after the default. Intel
// Xeon VM (Sapphire-Rapids-class, 2 vCPUs, 1 thread), 2026-12-07, `tune --knobs ... --versus
// onednn`, call by call (experiments/results/gemm_avx512_seeds_xeon.txt): 12 x 2 vectors 1.00x
// oneDNN at 1024^3, 0.95x at 2048^3, 1.01x at 128x4096x4096 (128-row blocks); 6 x 4 vectors 0.98x,
// 0.95x, 1.00x; the 8 x 2-vector tile of 100-trial searches' winners, same blocks, 0.94x, 0.89x,
// 0.92x (those searches reached 0.92x at 1024^3: cpu_gemm_layouts_xeon_t1_s71.txt). Not for NT
// (the transposed-B route: 12 rows there 0.66-0.79x) or TN. AMD's AVX-512 CPUs were not measured
// with them (Zen 4 / Zen 5 searches had reached 0.94-1.06x without seeds), so they keep their start.
// Batched NN matmuls (attention's P.V; no packing or loop orders in their space): 6 x 4 vectors
// over blocks of 128 and 64 rows with K whole up to 512, unroll_k 4, same day and machine, against
// oneDNN's matmul primitive call by call (`--versus onednn:matmul`,
// experiments/results/bmm_avx512_seeds_xeon.txt): 1.07x / 1.04x on 32x512x128x512, 1.06x / 1.04x
// on 12x512x64x512, 1.02x / 1.01x on 12x128x64x128, where 32-trial searches had shipped 4 x 4
// vectors over 16-row blocks and K chunks of 32 (0.84x-0.94x in bmm_vs_onednn_xeon_t1_s72.txt);
// 12 x 2 vectors 0.89-0.93x, K chunks of 128 or 256 0.59-0.93x.
//
// Weights GEMMs of a CNN's 1x1 convolutions over 28x28 pixels and more (M >= 512, a multiple of 8,
// K <= 512 and the filter within 1 MiB): first one 8 x 2-vector register tile per block, K whole,
// unroll_k 8, blocks m outer, the filter read in its stored blocks. Same machine, 2026-12-08,
// `tune --op conv2d --weights --knobs ... --versus onednn` against oneDNN's convolution primitive
// call by call (experiments/results/conv1x1_avx512_seeds_xeon.txt): 1.03x on 784x256x512 (ResNet-50
// stage 3's 1x1/512->256), 1.01x on 784x128x512, 1.00x on 3136x128x256, 1.05x on 784x512x128, 1.07x
// on 3136x64x64, 0.94-0.99x on 3136x64x256 and 3136x256x64, where 32-trial searches had shipped
// 0.88-0.95x (conv_vs_onednn_xeon_t1_s73.txt) and a 120-trial search found this point at its 115th
// measurement. Chunks of 256 of K 512: 0.97-0.98x; 128: 0.88-0.97x. Transformer weights GEMMs (K >
// 768, B of 2-9 MiB) ran at 0.51-0.60x with it: not there.
static bool convPointwiseWeights(const GemmWorkload& w) {
  return cpu_detail::nnWeights(w) && w.m >= 512 && w.m % 8 == 0 && w.k <= 512 && w.k * w.n * 4 <= (1 << 20);
}

static std::vector<Candidate> avx512BlockedSeeds(const Space& space, const GemmWorkload& w) {
  if (!blockedNnGemm(space, w, 16) || hostCpu().vendor != "GenuineIntel") return {};  // AVX-512 only
  const Candidate def = cpu_detail::matmulDefault(space, w);
  auto filled = [&](const Candidate& c) {
    return c != def && space.valueOr(c, "reg_m", 0) * space.valueOr(c, "reg_n", 0) == 24 * 16;
  };
  if (w.batched()) {
    auto pv = [](int64_t tm) {
      return std::map<std::string, int64_t>{{"tile_m", tm}, {"tile_n", 128},  {"tile_k", 512},
                                            {"reg_m", 6},   {"reg_n", 64},    {"unroll_k", 4},
                                            {"reg_loop_order", 0}};
    };
    return nearestDistinct(space, KnobWants{pv(128), pv(64)}, filled);
  }
  auto blis = [&](int64_t rm, int64_t rnv) {
    return std::map<std::string, int64_t>{{"tile_m", 256},       {"tile_n", 1024}, {"tile_k", 128},     {"reg_m", rm},
                                          {"reg_n", rnv},        {"unroll_k", 4},  {"reg_loop_order", 0},
                                          {"pack_b", 1},         {"outer_order", 2}, {"pack_a", 0}};
  };
  // The pointwise seed first (16 accumulators: never one of the register-filling seeds below).
  std::vector<Candidate> seeds;
  if (convPointwiseWeights(w)) {
    Candidate c = nearestValid(space, {{"tile_m", 8}, {"tile_n", 32}, {"tile_k", w.k}, {"reg_m", 8}, {"reg_n", 32},
                                       {"unroll_k", 8}, {"reg_loop_order", 0}, {"pack_b", 0}, {"outer_order", 0},
                                       {"pack_a", 0}});
    if (c != def && space.valueOr(c, "tile_m", 0) == 8 && space.valueOr(c, "tile_n", 0) == 32 &&
        space.valueOr(c, "reg_m", 0) == 8 && space.valueOr(c, "tile_k", 0) == w.k)
      seeds.push_back(std::move(c));
  }
  // Only tiles that fill the registers (24 accumulators of 16 floats), where nearestValid gives way.
  auto filling = nearestDistinct(space, KnobWants{blis(12, 32), blis(6, 64)}, filled);
  seeds.insert(seeds.end(), filling.begin(), filling.end());
  return seeds;
}

std::vector<Candidate> cpu_detail::matmulSeeds(const Space& space, const GemmWorkload& w) {
  if (isAmxSpace(space)) return amxSeeds(space, w);
  if (auto blocked = avx2BlockedSeeds(space, w); !blocked.empty()) return blocked;
  if (auto blocked = avx512BlockedSeeds(space, w); !blocked.empty()) return blocked;
  if (auto seven = sevenRowSeeds(space, w); !seven.empty()) {
    const Candidate def = matmulDefault(space, w);
    std::erase(seven, def);
    return seven;
  }
  // M = 1 on AVX-512, the other vector width right after the default: full-width vectors (16 of K
  // per step) where the default is half-width (Zen 4), half-width ones where it is 32 of K.
  if (int g = space.knobIndex("gemv"); g >= 0 && w.m == 1 && gemvHalfWidth(space) > 0) {
    Candidate c = m1Gemv(space, true);
    if (c.empty() || c == matmulDefault(space, w)) return {};
    return {c};
  }
  if (space.knobIndex("gemv_kblock") < 0 || w.m > 8) return {};
  const Candidate def = matmulDefault(space, w);
  if (space.valueOr(def, "gemv", 0) == 0) return {};
  // M = 2-8: the register-held GEMV route (gemv 1) with K whole, 16 of K per step, as many rows of
  // B as the registers hold (8 at M = 2, 4 at M = 4, 2 at M = 8: nearestValid gives way), measured
  // right after the default: the best of gemv 1 in hand sweeps on Zen 4, 1 thread, 2026-11-27
  // (`tune --knobs`): 2x4096x11008 NT 23.8 GFLOP/s against 9.1 with K blocks of 256, 4x11008x4096
  // 33.1 against 16.8-27.9 with K blocks, 8x4096x4096 36.0 against 17.9-30.8, 2x32000x4096 20.5
  // against 9.5-20.0 (experiments/results/gemv_kblock_zen4.txt).
  Candidate c = nearestValid(space, {{"gemv", 1}, {"tile_n", 256}, {"gemv_rows", 8}, {"gemv_k", 16}, {"gemv_kblock", 0},
                                     {"gemv_m", w.m}});
  if (c.empty() || c == def || space.valueOr(c, "gemv", 0) != 1 || space.valueOr(c, "gemv_kblock", 0) != 0) return {};
  return {c};
}

}  // namespace sextant
