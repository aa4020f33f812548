// The CPU route for B stored transposed (NT GEMMs, attention's Q.K^T batched matmuls) with
// pack_b = 1 (issue #31). Reading B in place, the NN micro-kernel needs a row of B (tile_n
// consecutive n at one k), which an NT B stores K apart: every K step transposes a register tile
// (31 GFLOP/s on a Q.K^T on Zen 4 in ../shared/notes/conv-batch-models.md). Here
// transform.structured.pack on n (inner tile tile_n) rewrites the op so that B becomes
// [N / tile_n][K][tile_n] (n innermost: the BLIS packed-B panel), produced once per call by a
// linalg.transpose tiled 16 x 16 and vectorized; A is untouched and C's pack and unpack are pure
// reshapes (tile_n divides N). The packed op's loops are (b,) m, N1, k, n0, tiled like the NN
// route's (b,) m, n, k.
#include <sstream>

#include "cpu_schedule_internal.h"

namespace sextant::cpu_detail {

// The register tiles (%t4) vectorized; `peel`: the register loop over M, whose last tile is
// partial (reg_m does not divide tile_m), is peeled first, so that the main loop's tiles vectorize
// unmasked and only the remainder's are masked. Unpeeled, every tile of such a block was masked
// and its accumulators went through memory at each K step: 2.6-4.0 GFLOP/s on Q.K^T batched
// matmuls with 6 x 16 tiles (the AVX2 default) on AMD EPYC Zen 3, 2026-11-30.
static std::string vectorizeTiles(const std::string& ind, const std::string& peel, const std::string& vsizes) {
  const std::string H = "!transform.any_op";
  auto vectorize = [&](const std::string& h) {
    return ind + "transform.structured.vectorize " + h + " vector_sizes " + vsizes + " : " + H + "\n";
  };
  if (peel.empty()) return vectorize("%t4");
  return ind + "// reg_m does not divide tile_m: full register tiles, then the remainder (masked).\n" +
         peelRegisterLoop(ind, peel, "interface{LinalgOp}") + vectorize("%t4_full") + vectorize("%t4_partial");
}

std::string emitTransposedBPackActions(const Space& space, const Candidate& c, const std::string& ind, bool batched,
                                       int64_t k_dim, int64_t n_dim) {
  const std::string P = "!transform.param<i64>", H = "!transform.any_op";
  const auto& k = space.knobs();
  auto v = space.values(c);
  const int64_t tile_m = v[0], tile_n = v[1], tile_k = v[2], reg_m = v[3], reg_n = v[4], unroll_k = v[5];
  const bool n_outer = v[6] == 1;
  const std::string b1 = batched ? "1, " : "", b0 = batched ? "0, " : "";
  const bool threaded = space.knobIndex("threads") >= 0;
  // Packed loops: (b,) m, N1, k, n0.
  auto sizes = [&](int64_t m, int64_t n1, int64_t kk, int64_t n0, const std::string& b) {
    return "[" + b + std::to_string(m) + ", " + std::to_string(n1) + ", " + std::to_string(kk) + ", " +
           std::to_string(n0) + "]";
  };
  // The register loops' columns outside their rows (tile_using_for's `interchange = [...]`,
  // transform.structured.fuse's `interchange [...]`).
  const std::string perm = batched ? "[0, 4, 1, 2, 3]" : "[3, 0, 1, 2]";
  const std::string PK = "!transform.op<\"linalg.pack\">", UPK = "!transform.op<\"linalg.unpack\">";
  const std::string lower_pack_types = "(" + PK + ") -> (!transform.op<\"tensor.pad\">, !transform.op<\"tensor.expand_shape\">, "
                                       "!transform.op<\"linalg.transpose\">)";
  const std::string lower_c = ind + "%cpad, %cexp, %ctr = transform.structured.lower_pack %cpack : " + lower_pack_types + "\n";
  // The op's own zero fill: with the whole of K in the register tiles (and no peeled remainder),
  // they start from zeros, as on the NN route (cpu_schedule.cpp); otherwise each block of C is
  // zeroed in the block. Left outside, the fill was one memset of the whole of C on one thread
  // before the parallel loop, which the product read back (docs/search.md).
  // Panel first (unbatched, at least two panels of B per thread): the forall runs over the panels
  // of B, each packed in its iteration (the transpose of K x tile_n, hot in L2 when the rows of A
  // run against it, block by block in a loop inside). Packing all of B once before the product
  // instead wrote and read back the whole transposed B (128x4096x4096 NT, Zen 5, 1 thread: 119-123
  // -> 207 GFLOP/s on the same knobs; docs/search.md).
  const int64_t threads = space.valueOr(c, "threads", 1);
  const bool panel_first = !batched && n_dim > 0 && n_dim / tile_n >= 2 * threads;
  const bool own_init = k_dim > 0,
             fill_in_registers = own_init && tile_k == k_dim && tile_m % reg_m == 0 && !panel_first;
  // On more than one thread the transpose of B runs in a forall of its own, unless it is in the
  // product's (panel first).
  const bool transpose_forall = threaded && !panel_first;
  std::ostringstream o;
  for (size_t i = 0; i < k.size(); ++i) o << ind << "%" << k[i].name << " = " << knobOp(k[i], v[i]) << "\n";
  o << ind << "// B is stored transposed: packed once per call into [N/tile_n][K][tile_n] panels (a transpose).\n"
    << ind << "%f = transform.get_parent_op %mm {deduplicate, op_name = \"func.func\"} : (" << H << ") -> " << H << "\n"
    << ind << "%p = transform.structured.pack %mm packed_sizes = [" << b0 << "0, " << tile_n << ", 0] : (" << H
    << ") -> " << H << "\n"
    << ind << "%bpack = transform.get_producer_of_operand %p[1] : (" << H << ") -> " << PK << "\n"
    << ind << "%cpack = transform.get_producer_of_operand %p[2] : (" << H << ") -> " << PK << "\n"
    << ind << "%cunpack = transform.get_consumers_of_result %p[0] : (" << H << ") -> " << UPK << "\n";
  // C's pack is a reshape (tile_n divides N). With the op's own fill it is lowered first and
  // canonicalized, which moves the fill past the reshape: the fill is then the packed op's init.
  if (own_init)
    o << ind << "// C's pack and unpack are reshapes: C's first, so that its fill becomes the packed op's init.\n"
      << lower_c << ind << "transform.apply_patterns to %f {\n"
      << ind << "  transform.apply_patterns.canonicalization\n"
      << ind << "} : " << H << "\n"
      << ind << "%sx_init = transform.get_producer_of_operand %p[2] : (" << H << ") -> " << H << "\n";
  o << ind << (panel_first ? "%t0" : "%t1") << ", %blocks = transform.structured.tile_using_forall %p tile_sizes "
    << (panel_first ? sizes(0, 1, 0, 0, "") : sizes(tile_m, 1, 0, 0, b1)) << " : (" << H << ") -> (" << H << ", " << H << ")\n"
    << (threaded
            ? ind + "transform.annotate %blocks \"sextant.num_threads\" = %threads : " + H + ", " + P + "\n"
            : std::string());
  if (panel_first)
    o << ind << "// Each panel of B packed in the panel's iteration, then the blocks of rows against it.\n"
      << ind << "%bpack_f, %blocks_b = transform.structured.fuse_into_containing_op %bpack into %blocks : (" << PK << ", "
      << H << ") -> (" << H << ", " << H << ")\n";
  if (own_init)
    o << ind << "%sx_fill_blk, %sx_blocks_f = transform.structured.fuse_into_containing_op %sx_init into "
      << (panel_first ? "%blocks_b" : "%blocks") << " : (" << H << ", " << H << ") -> (" << H << ", " << H << ")\n";
  if (panel_first)
    o << ind << "%t1, %mblocks = transform.structured.tile_using_for %t0 tile_sizes " << sizes(tile_m, 0, 0, 0, "")
      << " : (" << H << ") -> (" << H << ", " << H << ")\n";
  if (fill_in_registers) {
    o << ind << "%t3, %r1, %r2 = transform.structured.fuse %t1 tile_sizes " << sizes(reg_m, 0, 0, reg_n, b0)
      << (n_outer ? " interchange " + perm : "") << " : (" << H << ") -> (" << H << ", " << H << ", " << H << ")\n"
      << vectorizeFusedFill(ind, "%r1");
  } else {
    // The block's fill row by row: vectorized whole, a block of M x tile_n floats (1024 x 512 with
    // the panel first) became one vector that LLVM unrolled into 65,536 stores, 81 s of compile
    // per candidate on AVX2 (AMD EPYC Zen 3, 1024^3 NT, 2026-12-04).
    if (own_init)
      o << ind << "%sx_fill_row, %sx_fill_rows = transform.structured.tile_using_for %sx_fill_blk tile_sizes [" << b0
        << "1, 0, 0] : (" << H << ") -> (" << H << ", " << H << ")\n"
        << ind << "transform.structured.vectorize %sx_fill_row : " << H << "\n";
    o << ind << "%t2, %kc = transform.structured.tile_using_for %t1 tile_sizes " << sizes(0, 0, tile_k, 0, b0) << " : ("
      << H << ") -> (" << H << ", " << H << ")\n"
      << ind << "%t3, %r1, %r2 = transform.structured.tile_using_for %t2 tile_sizes " << sizes(reg_m, 0, 0, reg_n, b0)
      << (n_outer ? " interchange = " + perm : "") << " : (" << H << ") -> (" << H << ", " << H << ", " << H << ")\n";
  }
  o << ind << "%t4, %kk = transform.structured.tile_using_for %t3 tile_sizes " << sizes(0, 0, unroll_k, 0, b0) << " : ("
    << H << ") -> (" << H << ", " << H << ")\n"
    << vectorizeTiles(ind, tile_m % reg_m != 0 ? (n_outer ? "%r2" : "%r1") : "", sizes(reg_m, 1, unroll_k, reg_n, b1))
    << ind << "// The transpose of B, 16 x 16 tiles (tile_n and K are multiples of 16).\n"
    << (panel_first ? ind + "%bpack_c = transform.cast %bpack_f : " + H + " to " + PK + "\n" : std::string())
    << ind << "%bpad, %bexp, %btr = transform.structured.lower_pack " << (panel_first ? "%bpack_c" : "%bpack") << " : "
    << lower_pack_types << "\n"
    // On more than one thread the transpose runs in parallel too (a forall over the batch, else
    // over the panels), not on one thread before the parallel product (panel first: in its forall).
    << (transpose_forall
            ? ind + "%btr_f, %bforall = transform.structured.tile_using_forall %btr tile_sizes [1, 0, 0" +
                  (batched ? ", 0" : "") + "] : (!transform.op<\"linalg.transpose\">) -> (" + H + ", " + H + ")\n"
            : std::string())
    << ind << "%btile, %bl:" << (batched ? 4 : 3) << " = transform.structured.tile_using_for "
    << (transpose_forall ? "%btr_f" : "%btr") << " tile_sizes [" << b1 << "1, 16, 16] : ("
    << (transpose_forall ? H : std::string("!transform.op<\"linalg.transpose\">")) << ") -> (" << H << ", " << H
    << ", " << H << ", " << H << (batched ? ", " + H : std::string()) << ")\n"
    << ind << "transform.structured.vectorize %btile : " << H << "\n"
    << (own_init ? std::string() : ind + "// C's pack and unpack are reshapes.\n" + lower_c)
    << ind << "%uempty, %utr, %ucol, %uslice = transform.structured.lower_unpack %cunpack : (" << UPK
    << ") -> (!transform.op<\"tensor.empty\">, !transform.op<\"linalg.transpose\">, "
       "!transform.op<\"tensor.collapse_shape\">, !transform.op<\"tensor.extract_slice\">)\n"
    << ind << "transform.apply_patterns to %f {\n"
    << ind << "  transform.apply_patterns.vector.reduction_to_contract\n"
    << ind << "  transform.apply_patterns.vector.transfer_permutation_patterns\n"
    << ind << "  transform.apply_patterns.vector.lower_masked_transfers\n"
    << ind << "  transform.apply_patterns.vector.drop_unit_dims_with_shape_cast\n"
    << ind << "  transform.apply_patterns.canonicalization\n"
    << ind << "} : " << H << "\n"
    << ind << "// The C register tile stays in registers across the K loops.\n"
    << hoistAndLowerContractions(ind, ind + "  transform.apply_patterns.vector.lower_transpose lowering_strategy = shuffle_16x16\n",
                                 fill_in_registers ? foldFusedFillPatterns(ind) : std::string());
  return o.str();
}

}  // namespace sextant::cpu_detail
