// The CPU convolution space and its direct route (issue #31; IREE's CPUConvTileAndDecomposeExpert,
// for linalg.conv_2d_nhwc_hwcf and linalg.depthwise_conv_2d_nhwc_hwc, whose loops are (n, oh, ow,
// c, kh, kw): the same tiling without the channel reduction;
// measured in ../shared/notes/conv-batch-models.md at 100-116 GFLOP/s on ResNet-50 layers on Zen 4,
// oneDNN's speed): linalg.conv_2d_nhwc_hwcf, loops (n, oh, ow, f, kh, kw, c), tiled
//   forall over (1, tile_oh, tile_ow, tile_f) blocks
//     -> for over the register tile (oh 1, reg_ow output columns, reg_f output channels)
//       -> for over (kh 1, tile_kw, tile_c) steps of the reduction
// then decomposed to conv_1d (kh = oh = 1), vectorized, the accumulators hoisted out of the
// reduction loops and the contractions lowered to FMAs.
#include <algorithm>
#include <sstream>

#include "cpu_schedule_internal.h"
#include "sextant/codegen/cpu_schedule.h"

namespace sextant {
using cpu_detail::dividing;
using cpu_detail::hoistAndLowerContractions;
using cpu_detail::knobOp;
using cpu_detail::vectorizeFusedFill;

int64_t cpuConvParallelBlocks(const ConvDesc& d, int64_t tile_oh, int64_t tile_ow, int64_t tile_f) {
  return d.mb * (d.oh / tile_oh) * (d.ow / tile_ow) * (d.oc / tile_f);
}

Space buildCpuConvSpace(const GemmWorkload& w, const HostCpu& cpu, int threads) {
  const ConvDesc& d = w.conv;
  const int64_t vw = std::max(4, cpu.f32Lanes()), nregs = cpu.vector_registers;
  std::vector<Knob> knobs;
  knobs.push_back({"tile_oh", dividing({1, 2, 4, 7, 8, 14, 16, 28, 32, 56}, d.oh, 64), "output rows per forall block"});
  knobs.push_back({"tile_ow", dividing({7, 8, 14, 16, 28, 32, 56, 64, 112}, d.ow, 128),
                   "output columns per forall block"});
  knobs.push_back({"tile_f", dividing({16, 32, 64, 128, 256}, d.oc, 256), "output channels per forall block"});
  knobs.push_back({"reg_ow", dividing({1, 2, 4, 6, 7, 8, 12, 14, 16}, d.ow, 16),
                   "output columns of the register tile"});
  std::vector<int64_t> rf = {vw, 2 * vw, 4 * vw};
  if (d.oc % vw != 0) rf = dividing({1, 2, 4, 8}, d.oc, 8);
  knobs.push_back({"reg_f", rf, "output channels of the register tile (multiples of the vector width)"});
  // Depthwise: each output channel reads one input channel, nothing to reduce over channels.
  knobs.push_back({"tile_c", dividing({1, 2, 4, 8, 16, 32}, d.ic / d.g, 4), "input channels per reduction step"});
  knobs.push_back({"tile_kw", d.kw > 1 ? std::vector<int64_t>{1, d.kw} : std::vector<int64_t>{1},
                   "filter columns per reduction step (1, or the whole filter row)"});
  knobs.push_back({"reg_loop_order", {0, 1}, "0: register tiles over output columns outer, 1: channels outer"});
  // The reduction over input channels in chunks at the block level (a cache tile, GEMM's tile_k):
  // each chunk's filter slice (kh x kw x block_c x tile_f) stays in L2 while every register tile of
  // the block uses it; the accumulators are loaded and stored once per chunk. The whole reduction
  // (ic: as before the knob, which old records read) streamed the block's whole filter slice
  // through each register tile: 2.4-9.4 MB on ResNet-50's 256- and 512-channel 3x3 layers.
  // Depthwise convolutions reduce over no channels: one value.
  const bool depthwise = d.depthwise();
  std::vector<int64_t> bc = {d.ic};
  if (!depthwise)
    for (int64_t v : {16, 32, 64, 128, 256})
      if (v < d.ic && d.ic % v == 0) bc.push_back(v);
  std::sort(bc.begin(), bc.end());
  knobs.push_back({"block_c", bc, "input channels per block-level reduction chunk (a cache tile; ic: the whole reduction)",
                   d.ic});
  std::vector<Constraint> cons;
  cons.push_back(Constraint{"tile_c divides block_c", {5, 8}, [](const std::vector<int64_t>& v) { return v[8] % v[5] == 0; }});
  cons.push_back(Constraint{"reg_ow divides tile_ow", {1, 3}, [](const std::vector<int64_t>& v) { return v[1] % v[3] == 0; }});
  cons.push_back(Constraint{"reg_f divides tile_f", {2, 4}, [](const std::vector<int64_t>& v) { return v[2] % v[4] == 0; }});
  cons.push_back(Constraint{"register tile fits the vector registers", {3, 4}, [vw, nregs](const std::vector<int64_t>& v) {
                              const int64_t cols = (v[4] + vw - 1) / vw;
                              return v[3] * cols + cols <= nregs;
                            }});
  if (threads > 1) {
    knobs.push_back({"threads", {threads}, "OpenMP threads running the forall of blocks (tune --threads)"});
    const int64_t most = d.mb * d.oh * d.ow * ((d.oc + 15) / 16);
    const int64_t need = std::min<int64_t>(threads, most);
    cons.push_back(Constraint{"at least as many blocks as threads", {0, 1, 2}, [d, need](const std::vector<int64_t>& v) {
                                return cpuConvParallelBlocks(d, v[0], v[1], v[2]) >= need;
                              }});
  }
  return Space("cpu_conv2d_v1", std::move(knobs), std::move(cons));
}

Candidate defaultCpuConvCandidate(const Space& space, const GemmWorkload& w) {
  // The field notes' direct schedule (8 output rows x the whole row x 64 channels per block, an
  // 8 x 2-vector register tile, 4 channels per step, kw 1).
  // The reduction in chunks of 64 channels from 256 input channels up (measured, Zen 5, 1 thread,
  // this default otherwise: 156 -> 224 GFLOP/s on ResNet-50's 3x3/2 256-channel layer, 183 -> 234
  // on its 14x14 3x3 256-channel one, 105 -> 144 on the 1x1/2 1024 -> 2048 downsample; 182 -> 161
  // on the 3x3/2 512-channel one and 195 -> 190 on the 7x7 3x3 512-channel one, where the tuner has
  // the whole reduction to try).
  const int64_t vw = space.knobs()[size_t(space.knobIndex("reg_f"))].values.front();
  const bool depthwise = w.conv.depthwise();
  return nearestValid(space, {{"tile_oh", 8}, {"tile_ow", w.conv.ow}, {"tile_f", 64}, {"reg_ow", 8}, {"reg_f", 2 * vw},
                              {"tile_c", 4}, {"tile_kw", 1}, {"reg_loop_order", 0},
                              {"block_c", !depthwise && w.conv.ic >= 256 ? 64 : w.conv.ic}});
}

// The direct route's starting points after the default: on an Intel AVX-512 CPU, a 3x3 (any kw > 1)
// NHWC convolution of at least 32 input channels (per group) starts from blocks of up to 14 output rows by the
// whole row by 32 channels, a 7 x 2-vector register tile (channels outer), one input channel x the
// whole filter row per step and the reduction in chunks of 16 channels: the best of a 120-trial
// search on ResNet-50's 3x3/2 256-channel layer. Hand-measured call by call against oneDNN's
// convolution primitive (Intel Xeon, Sapphire-Rapids-class, 1 thread, 2026-12-08, `tune --op conv2d
// --weights --knobs ... --versus onednn`; experiments/results/conv_avx512_seeds_xeon.txt): 1.00x
// on that layer, 1.02x on the 28x28 3x3 128-channel one, 1.07x on the 14x14 256-channel one, 1.21x on
// the 3x3/2 512-channel one, 0.98x on the 56x56 64-channel one and 0.88x on the 3x3/2 128-channel
// one, where 32-trial searches had shipped 0.86x, 0.93x, 1.00x, 1.10x, 0.96x and 0.93x
// (conv_vs_onednn_xeon_t1_s73.txt); 4 channels per step with kw 1 0.85-1.05x. The strided 1x1
// downsamples measured 0.71-0.91x with it: not there. Other CPUs keep their start (none measured).
std::vector<Candidate> cpuConvSeeds(const Space& space, const GemmWorkload& w) {
  const ConvDesc& d = w.conv;
  const int rf = space.knobIndex("reg_f");
  if (rf < 0 || space.knobs()[size_t(rf)].values.front() != 16 || hostCpu().vendor != "GenuineIntel" ||
      d.depthwise() || d.g != 1 || d.kw < 2 || d.ic < 32 || d.layout != ConvLayout::NhwcHwcf)
    return {};
  const Candidate def = defaultCpuConvCandidate(space, w);
  Candidate c = nearestValid(space, {{"tile_oh", std::min<int64_t>(d.oh, 14)}, {"tile_ow", d.ow}, {"tile_f", 32},
                                     {"reg_ow", 7}, {"reg_f", 32}, {"tile_c", 1}, {"tile_kw", d.kw},
                                     {"reg_loop_order", 1}, {"block_c", 16}});
  if (c.empty() || c == def || space.valueOr(c, "block_c", 0) != 16 || space.valueOr(c, "tile_kw", 0) != d.kw) return {};
  return {c};
}

std::string emitCpuConvActions(const Space& space, const Candidate& c, const std::string& ind, bool depthwise,
                               bool fuse_init, ConvLayout layout) {
  const std::string P = "!transform.param<i64>", H = "!transform.any_op";
  const auto& k = space.knobs();
  auto v = space.values(c);
  auto val = [&](const char* n) { return std::to_string(space.valueOr(c, n, 1)); };
  const bool f_outer = space.valueOr(c, "reg_loop_order", 0) == 1;
  // NCHW / FCHW (linalg.conv_2d_nchw_fchw): loops (n, f, oh, ow, c, kh, kw) instead of (n, oh, ow,
  // f, kh, kw, c); the same tiles at those positions. NHWC / FHWC: transpose_conv2d first (the
  // filter transposed to HWCF by a linalg.transpose in the kernel), then the NHWC / HWCF schedule.
  const bool nchw = layout == ConvLayout::NchwFchw;
  const std::string mm = layout == ConvLayout::NhwcFhwc ? "%mm_fhwc" : "%mm";  // the op's handle
  // The reduction over channels in chunks of block_c around the register tiles (the whole of it:
  // no loop, the schedule as before the knob).
  const int64_t block_c = space.valueOr(c, "block_c", 0);
  std::string blockC, t1c = "%t1";
  if (!depthwise && block_c > 0 && block_c < space.knobs()[size_t(space.knobIndex("block_c"))].values.back()) {
    blockC = ind + "// The reduction over channels in chunks of block_c, each chunk's filter slice reused by every\n" + ind +
             "// register tile of the block.\n" + ind +
             "%t1c, %cl = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 0, 0, " +
             (nchw ? std::to_string(block_c) + ", 0, 0" : "0, 0, " + std::to_string(block_c)) + "] : (" + H + ") -> (" + H + ", " + H + ")\n";
    t1c = "%t1c";
  }
  // The output's zero fill goes into the register tiles when the whole reduction is in registers
  // (depthwise layers, unchunked ones): each register tile's accumulators start as zeros, none
  // read from memory, and folding drops the fill's own stores (the tile is written once, at the
  // end). The fill, a memset of the whole output before the kernel, then read back, is gone; on
  // a chunked reduction it stays (a later chunk must not zero the tile again). Its matcher checks
  // that the init is a linalg.fill. Measured (Zen 5, 1 thread): MobileNetV2 4.92-5.04 -> 4.74-4.83
  // ms per call, the same tuned database compiled both ways; the kernels measured cold by the tuner
  // within the noise (a 56x56 3x3 layer +2%). Fused without the folding, the zero stores stayed
  // and MobileNetV2 went to 5.17 ms.
  const bool fuse_fill = fuse_init && t1c == "%t1";
  std::ostringstream o;
  for (size_t i = 0; i < k.size(); ++i) o << ind << "%" << k[i].name << " = " << knobOp(k[i], v[i]) << "\n";
  if (layout == ConvLayout::NhwcFhwc)
    o << ind << "// TOSA's filter layout: transposed to HWCF in the kernel (decompose takes no FHWC).\n"
      << ind << "%mm_fhwc = transform.structured.transpose_conv2d %mm : (" << H << ") -> " << H << "\n";
  if (fuse_fill)
    o << ind << "%sx_init = transform.get_producer_of_operand " << mm << "[2] : (" << H << ") -> " << H << "\n";
  o << ind << "%f = transform.get_parent_op " << mm << " {deduplicate, op_name = \"func.func\"} : (" << H << ") -> " << H << "\n"
    << ind << "%t1, %blocks = transform.structured.tile_using_forall " << mm << " tile_sizes [1, "
    << (nchw ? val("tile_f") + ", " + val("tile_oh") + ", " + val("tile_ow")
             : val("tile_oh") + ", " + val("tile_ow") + ", " + val("tile_f"))
    << "] : (" << H << ") -> (" << H << ", " << H << ")\n"
    << (space.knobIndex("threads") >= 0
            ? ind + "transform.annotate %blocks \"sextant.num_threads\" = %threads : " + H + ", " + P + "\n"
            : std::string())
    << blockC;
  if (fuse_fill)
    o << ind << "%sx_fill_blk, %sx_blocks_f = transform.structured.fuse_into_containing_op %sx_init into %blocks : (" << H
      << ", " << H << ") -> (" << H << ", " << H << ")\n";
  o << ind << "// The register tile: one output row, reg_ow columns, reg_f channels.\n"
    << ind << "%t2, %r:3 = transform.structured." << (fuse_fill ? "fuse " : "tile_using_for ") << t1c << " tile_sizes [0, "
    << (nchw ? val("reg_f") + ", 1, " + val("reg_ow") : "1, " + val("reg_ow") + ", " + val("reg_f")) << ", 0, 0"
    << (depthwise ? "" : ", 0") << "]"
    // (The loops in the register tile's order: (oh, ow, f), or (oh, f, ow) with f outer; NCHW's
    // dimensions are (f, oh, ow).)
    << (nchw != f_outer ? (fuse_fill ? " interchange " : " interchange = ") +
                              std::string(nchw ? "[0, 2, 3, 1]" : "[0, 1, 3, 2]")
                        : std::string())
    << " : (" << H
    << ") -> (" << H << ", " << H << ", " << H << ", " << H << ")\n";
  if (fuse_fill)
    o << vectorizeFusedFill(ind, "%r#0");
  o
    << ind << "// The reduction in steps of one filter row, tile_kw columns"
    << (depthwise ? " (depthwise: no reduction over channels)" : ", tile_c channels") << ".\n"
    << ind << "%t3, %s:" << (depthwise ? 2 : 3) << " = transform.structured.tile_using_for %t2 tile_sizes [0, 0, 0, 0, "
    << (nchw ? val("tile_c") + ", 1, " + val("tile_kw") : "1, " + val("tile_kw") + (depthwise ? "" : ", " + val("tile_c")))
    << "] : (" << H << ") -> (" << H << ", " << H << ", " << H << (depthwise ? "" : ", " + H) << ")\n";
  // (NCHW: its first loop is over channels, and the input's rows are its dimension 2; the
  // narrowing reads NHWC's.)
  if (!nchw)
    o << ind << "// (The loop over the filter's rows skips the rows on the input's zero padding after the\n"
      << ind << "// schedule: compiler_cpu_conv_rows.cpp.)\n"
      << ind << "transform.annotate %s#0 \"sextant.filter_rows\" : " << H << "\n";
  o
    << ind << "%d = transform.structured.decompose %t3 : (" << H << ") -> " << H << "\n"
    << ind << "transform.structured.vectorize %d : " << H << "\n"
    << ind << "transform.apply_patterns to %f {\n"
    << ind << "  transform.apply_patterns.vector.reduction_to_contract\n"
    << ind << "  transform.apply_patterns.vector.transfer_permutation_patterns\n"
    << ind << "  transform.apply_patterns.vector.lower_masked_transfers\n"
    << ind << "  transform.apply_patterns.canonicalization\n"
    << ind << "} : " << H << "\n"
    << ind << "// The accumulators stay in registers across the reduction loops; canonicalization then drops\n"
    << ind << "// the loop arguments hoisting left unchanged (the register tile and its rank-reduced view:\n"
    << ind << "// two arguments on one buffer, which bufferization would copy into a new buffer per tile).\n"
    << hoistAndLowerContractions(ind, ind + "  transform.apply_patterns.canonicalization\n" +
                                          (fuse_fill ? ind + "  transform.apply_patterns.vector.cast_away_vector_leading_one_dim\n" + ind +
                                                           "  transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers\n"
                                                     : std::string()));
  return o.str();
}

}  // namespace sextant
