// The CPU GEMM schedule space and its Transform-dialect emitter (text only, no MLIR headers).
//
// Structure of every schedule (BLIS-like; see README "CPU schedule space"):
//   forall over (tile_m x tile_n) blocks  ->  for over K in tile_k chunks
//     -> for over register tiles reg_m x reg_n (order set by reg_loop_order)
//       -> for over K in unroll_k steps -> vector.contract [reg_m, reg_n, unroll_k]
//   then the C register tile is hoisted out of the K loops (kept in registers) and contractions
//   are lowered to outer products (FMAs on the host's widest vectors).
#pragma once

#include <string>

#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/hwspec/target.h"

namespace sextant {

// threads > 1: kernels whose forall of cache blocks runs on that many threads (a one-value knob
// "threads", emitted as the forall's "sextant.num_threads" attribute, which the CPU lowering
// reads); the blocks must then be at least as many as the threads. 1: the space as before.
Space buildCpuGemmSpace(const GemmWorkload& w, const HostCpu& cpu, int threads = 1);
// Why the CPU target cannot tune this workload on this CPU (one line; empty: it can). bf16 and s8
// GEMMs go to the AMX route (issue #37, cpu_route_amx.cpp), which needs the AMX unit of the type and
// whole tiles.
std::string cpuWorkloadUnsupported(const GemmWorkload& w, const HostCpu& cpu);
// The untuned default: a fixed heuristic (64x64 blocks, K chunks of 64, an 8 x one-vector
// register tile, no K unrolling; NT: the transposed-B route with 32x32 blocks, K chunks of 128, an
// 8 x two-vector tile; M <= 8 NT: the GEMV route), snapped to the nearest valid point of the space.
Candidate defaultCpuCandidate(const Space& space, const GemmWorkload& w);
// Other starting points a tuning run measures right after the default (TuneOptions::seeds), where
// the best default differs between CPUs: for M = 2-8 NT with K blocks in the default GEMV, the
// same route with K whole (the faster one on AMD EPYC Zen 4, the slower one on Zen 5 where the
// default was chosen). Empty for every other workload.
std::vector<Candidate> cpuSeedCandidates(const Space& space, const GemmWorkload& w);
// Iterations of the forall that runs on threads: (m, n) blocks for outer_order 0, row blocks for
// 1, column blocks for 2.
int64_t cpuParallelBlocks(int64_t m, int64_t n, int64_t tile_m, int64_t tile_n, int64_t outer_order);
// The valid candidate nearest (in knob-index distance) to the given knob values.
Candidate nearestValid(const Space& space, const std::map<std::string, int64_t>& wanted);
// Convolutions (issue #31; cpu_conv.cpp): the direct route's space, default and actions (on the
// handle %mm of the linalg.conv_2d_nhwc_hwcf). buildCpuGemmSpace, defaultCpuCandidate and
// emitCpuGemmSchedule call them for a Conv2d workload.
Space buildCpuConvSpace(const GemmWorkload& w, const HostCpu& cpu, int threads = 1);
// Iterations of the direct route's forall: (tile_oh x tile_ow x tile_f) blocks of every image.
int64_t cpuConvParallelBlocks(const ConvDesc& d, int64_t tile_oh, int64_t tile_ow, int64_t tile_f);
Candidate defaultCpuConvCandidate(const Space& space, const GemmWorkload& w);
// The direct route's seeds, measured right after the default (cpu_conv.cpp).
std::vector<Candidate> cpuConvSeeds(const Space& space, const GemmWorkload& w);
// fuse_init: the zero fill of the output goes into the register tiles where the schedule allows
// (false: the op's init is left alone, for an op that accumulates into its output).
// layout: the operands' (NCHW tiles the same sizes at its loops' positions; NHWC / FHWC transposes
// the filter to HWCF in the kernel first).
std::string emitCpuConvActions(const Space& space, const Candidate& c, const std::string& indent, bool depthwise = false,
                               bool fuse_init = true, ConvLayout layout = ConvLayout::NhwcHwcf);
// The largest M that has the GEMV routes (gemv knob; layout NT).
constexpr int64_t kGemvMaxM = 16;
// A Transform-dialect script whose knobs are transform.tune.knob ops with `selected` filled.
std::string emitCpuGemmSchedule(const GemmWorkload& w, const Space& space, const Candidate& c);
// The body of that script: knob ops, then the schedule applied to the handle `%mm` (consumed),
// each line prefixed by `indent`. Shared by the standalone script and exported libraries.
// `batched`: the op has a leading batch loop (linalg.batch_matmul), one batch element per block.
// `m`: the workload's M (the GEMV route vectorizes all of its rows at once). `layout`: NT with
// pack_b = 1 takes the transposed-B route (B packed by a transpose once per call). `k`: the
// workload's K (0: unknown); with tile_k = K the zero fill of C goes into the register tiles.
// `n`: the workload's N (0: unknown; the transposed-B route then keeps one transpose of all of B).
std::string emitCpuGemmActions(const Space& space, const Candidate& c, const std::string& indent,
                               bool batched = false, int64_t m = 1, Layout layout = Layout::NN, int64_t k = 0,
                               int64_t n = 0);
// The actions of a schedule in emitCpuGemmSchedule's form (the lines between the match of the
// matmul and the sequence's yield, as emitCpuGemmActions wrote them with a 4-space indent); empty
// if the script does not have that form. tune export / compile apply a record's measured actions.
std::string cpuGemmActionsOf(const std::string& schedule);

}  // namespace sextant
