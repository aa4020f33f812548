// The AMX route (issue #37): bf16 x bf16 -> f32 GEMM on Intel AMX tile registers. MLIR 22 has the
// `amx` dialect but no transform that reaches it from linalg with accumulators kept in tile
// registers across the K loop (`--convert-vector-to-amx` stores and reloads C at every K step:
// ~7x slower; ../shared/notes/amx.md), so the kernel (bf16 x bf16 -> f32 or s8 x s8 -> s32) is written here as MLIR text, from a
// candidate's knobs, by the pass `sextant-amx-gemm` (compiler_cpu_amx.cpp) that a schedule applies
// with transform.apply_registered_pass. MLIR-free: the tests read the text.
#pragma once

#include <cstdint>
#include <string>

#include "sextant/common/result.h"

namespace sextant::detail {

struct AmxParams {
  int64_t m = 0, n = 0, k = 0;  // the GEMM (M % 16 == 0, N % 16 == 0, K a multiple of kStep())
  // s8 x s8 -> s32 (tdpbssd: a tile row is 64 K values, in quads) instead of bf16 x bf16 -> f32
  // (tdpbf16ps: 32 K values, in pairs).
  bool int8 = false;
  int64_t kStep() const { return int8 ? 64 : 32; }  // K values per tile (a 64-byte row)
  int64_t vnni() const { return int8 ? 4 : 2; }     // K values interleaved per column
  bool b_transposed = false;    // B stored N x K (layout NT); else K x N
  int64_t block_m = 32, block_n = 32, block_k = 256;  // the cache blocks (multiples of the register block)
  int64_t tiles_m = 2, tiles_n = 2;  // accumulator tiles of 16 x 16 f32 (s32) per register block
  int64_t unroll_k = 1;              // K steps of one tile (kStep()) per iteration of the innermost loop
  int64_t reg_order = 0;             // 0: register blocks row by row (m outer); 1: n outer
  // The order of the block loops: 0: K, M, N (a K block of packed B reused by every row block);
  // 1: N, K, M (one N block of packed B at a time; wide N); 2: M, N, K (C blocks finished one by one).
  int64_t outer_order = 0;
  // B is a weight the caller stores once in the packed layout (the workload's `weights`): the kernel
  // reads its tiles in place and exports kAmxBTilesSymbol; otherwise it packs B in every call.
  bool b_packed = false;
  // Threads > 1: the outermost block loop over M or N (and B's packing) is an scf.parallel, run on
  // OpenMP threads (each thread configures its own tiles: LLVM's ldtilecfg in the outlined body).
  int64_t threads = 1;
};

// Exported by a kernel that takes B already packed into VNNI tiles (returns 1): the caller stores
// it so once, with storeInAmxTiles (runtime/include/sextant/runtime/bf16.h).
inline constexpr const char* kAmxBTilesSymbol = "sextant_amx_b_tiles";

// Whether the knobs make a kernel: the register block fits the 8 tile registers (tiles_m x tiles_n
// accumulators, plus tiles_m A and tiles_n B tiles), the blocks divide the sizes and hold whole
// register blocks, the sizes are whole tiles.
Status checkAmxParams(const AmxParams& p);

// The kernel as MLIR text: a module with `func.func @<fname>(A, B, C)` (memrefs, row-major) whose
// body packs B into VNNI tiles (each 16 K-pairs (s8: quads) x 16 columns, 1 KiB, contiguous; a private
// global buffer of the module, as large as B) and multiplies with amx.tile_mulf (s8: tile_muli), accumulators as
// !amx.tile loop-carried values, the first K block starting from zero tiles (peeled: C is never
// read), C stored once per K block.
std::string amxKernelText(const AmxParams& p, const std::string& fname);

}  // namespace sextant::detail
