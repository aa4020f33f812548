// Pieces of the CPU spaces and emitters shared by their routes (cpu_schedule.cpp: the GEMM route;
// cpu_route_gemv.cpp: the GEMV routes; cpu_route_transposed_b.cpp: B stored transposed, packed by
// a transpose; cpu_conv.cpp: convolutions).
#pragma once

#include <string>
#include <vector>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/hwspec/target.h"

namespace sextant::cpu_detail {

// The values of `options` that divide `dim`, plus `dim` itself when at most `cap`; for an awkward
// size none of them divides, its largest divisors under the cap. Sorted.
std::vector<int64_t> dividing(const std::vector<int64_t>& options, int64_t dim, int64_t cap);

// A transform.tune.knob op with `selected` filled.
std::string knobOp(const Knob& k, int64_t selected);
// The loops of %f matched again, the loop-invariant register tiles hoisted out of them, then the
// contractions lowered to FMAs; `also`: more lowering patterns in that last set; `before`: patterns
// applied between the hoisting and the lowering (a set of their own).
// A register loop whose last tile is partial (handle `loop`) peeled: %full and %partial, and the
// register tiles matched by `ops` in each, %t4_full and %t4_partial (upstream:
// mlir/test/Dialect/Linalg/transform-op-peel-and-vectorize.mlir).
std::string peelRegisterLoop(const std::string& ind, const std::string& loop, const std::string& ops);
std::string hoistAndLowerContractions(const std::string& ind, const std::string& also,
                                      const std::string& before = std::string());
// A zero fill fused into the register loop `loop` (a handle), matched there and vectorized with
// the register tile's static sizes.
std::string vectorizeFusedFill(const std::string& ind, const std::string& loop);
// The patterns that fold such a fill into the accumulators (hoistAndLowerContractions' `before`).
std::string foldFusedFillPatterns(const std::string& ind);
// The transposed-B packing route (layout NT, pack_b = 1): B (N x K, or B x N x K) packed once per
// call into [N / tile_n][K][tile_n] panels by a vectorized transpose, then the register-tiled
// micro-kernel of the NN route on the packed panels.
// k_dim > 0: the op's init is its own zero fill (not a value the op must keep; k_dim is K), which
// then starts the register tiles as zeros (tile_k = K) or runs in the product's blocks, instead of
// as one pass over C before them.
// n_dim: N (0: unknown). An unbatched op with at least two panels per thread packs each panel of B
// in the forall over the panels, just before the rows of A run against it (panel first).
std::string emitTransposedBPackActions(const Space& space, const Candidate& c, const std::string& ind, bool batched,
                                       int64_t k_dim, int64_t n_dim);

// Panel copies (pack_a, pack_b = 1): rows of a panel copied per vector step, and columns (the
// largest divisor of the width up to 64 floats).
int64_t packRows(int64_t rows);
int64_t packCols(int64_t width);
struct PanelCopy {
  std::string handle;
  int64_t rows, width;
};
// One operand of the op `op` (A: 0, B: 1) copied into a contiguous buffer (a nofold pad of it,
// rewritten as a copy and tiled by rows); the op on the copy is %<name>p, the copy goes to `copies`
// (vectorized at the end of the script). `loops`: the op's loop count (3: a matmul; 4: the packed
// op of the B micro-panel route).
std::string packOperand(const std::string& ind, const std::string& op, int operand, const std::string& name,
                        int64_t rows, int64_t width, std::vector<PanelCopy>& copies, int loops = 3);
// The B micro-panel route (NN, unbatched, pack_b = 2; cpu_route_b_micropanels.cpp): each K chunk's
// panel of B packed, in the product's loops, into reg_n-wide micro-panels [tile_n / reg_n][tile_k]
// [reg_n] (BLIS's packed B), the register tiles reading one micro-panel each. k_dim > 0: the op's
// init is its own zero fill (run in the product's blocks).
std::string emitBMicroPanelActions(const Space& space, const Candidate& c, const std::string& ind, int64_t k_dim);

// The workloads the GEMV routes are for (NT, M <= kGemvMaxM, not batched; addGemvKnobs adds them
// where K also splits into vectors).
// An NN, unbatched GEMM whose B is a weight (a network's constant: each panel streamed from memory
// once): the spaces with prefetch_b and tile_k's large divisor, the seven-row seeds.
inline bool nnWeights(const GemmWorkload& w) { return w.weights && w.layout == Layout::NN && !w.batched(); }
inline bool gemvShaped(const GemmWorkload& w) { return w.m <= kGemvMaxM && w.layout == Layout::NT && !w.batched(); }
// The GEMV routes (cpu_route_gemv.cpp; NT, M <= kGemvMaxM): their knobs and constraints appended to
// the GEMM space's (none where the route does not exist), and their actions (knob gemv 1 or 2).
void addGemvKnobs(std::vector<Knob>& knobs, std::vector<Constraint>& cons, const GemmWorkload& w, int64_t vw,
                  int64_t nregs);
std::string emitGemvActions(const Space& space, const Candidate& c, const std::string& ind, int64_t m);

// The AMX route (cpu_route_amx.cpp; issue #37): bf16 x bf16 -> f32 GEMMs, their kernels written by
// the pass sextant-amx-gemm (compiler_cpu_amx.cpp). wantsAmx: the workload's types ask for it (the
// GEMM family's space is then amxSpace); amxUnsupported: why this CPU or workload cannot take it
// (one line; empty: it can).
bool wantsAmx(const GemmWorkload& w);
std::string amxUnsupported(const GemmWorkload& w, const HostCpu& cpu);
bool isAmxSpace(const Space& space);
int64_t amxKStep(const GemmWorkload& w);  // K values per tile: 32 bf16, 64 s8 (a 64-byte tile row)
Space amxSpace(const GemmWorkload& w, int threads);
Candidate amxDefault(const Space& space, const GemmWorkload& w);
std::vector<Candidate> amxSeeds(const Space& space, const GemmWorkload& w);
// b_packed: the workload's B is a weight (`weights`), stored in VNNI tiles by the caller once.
std::string emitAmxActions(const Space& space, const Candidate& c, const std::string& ind, bool b_packed);

// The GEMM family's space, untuned default and extra starting points (cpu_schedule.cpp), which
// the gemm and batch_matmul ops' schedules (ops/matmul_cpu.cpp) and 1x1 convolutions use.
Space matmulSpace(const GemmWorkload& w, const HostCpu& cpu, int threads);
Candidate matmulDefault(const Space& space, const GemmWorkload& w);
std::vector<Candidate> matmulSeeds(const Space& space, const GemmWorkload& w);

}  // namespace sextant::cpu_detail
