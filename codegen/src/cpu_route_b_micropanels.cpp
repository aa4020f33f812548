// The CPU route that packs B into micro-panels (NN, unbatched, pack_b = 2; issue #35). pack_b = 1
// copies each K chunk's panel of B into a tile_k x tile_n buffer: its rows are tile_n floats apart,
// so the reg_n-wide column that one register tile reads over the chunk is tile_k lines a power of
// two apart, which share a few sets of L1 (512 columns: 2 KiB apart, two sets of a 32 KiB 8-way
// L1) and leave it before the next register tile of rows reuses them. Here
// transform.structured.pack on n (inner tile reg_n) and pack_transpose (outer dims swapped) make B
// [N / reg_n][K][reg_n], BLIS's packed B: each register tile reads one contiguous micro-panel of
// tile_k x reg_n floats. The pack is fused into the product's loops, so that each K chunk of each
// block of columns is packed where pack_b = 1 copies its panel (above the loop over m with
// outer_order 2, in the loop over n with 1, in the block with 0), by a vectorized transpose of
// rows of reg_n floats; A is untouched (or copied by pack_a as on the NN route) and C's pack and
// unpack are reshapes (reg_n divides N). The packed op's loops are m, N1, k, n0 (N1: micro-panels).
// Measured by hand first (2048^3, AMD EPYC Zen 3, AVX2, 1 thread, call by call against OpenBLAS):
// the space's best with pack_b = 1 0.82x; micro-panels with the same blocks 0.87x, with 128 x 512 x
// 256 blocks and A packed 0.88-0.92x (docs/search.md).
#include <sstream>

#include "cpu_schedule_internal.h"

namespace sextant::cpu_detail {

std::string emitBMicroPanelActions(const Space& space, const Candidate& c, const std::string& ind, int64_t k_dim) {
  const std::string P = "!transform.param<i64>", H = "!transform.any_op";
  const std::string PK = "!transform.op<\"linalg.pack\">", UPK = "!transform.op<\"linalg.unpack\">";
  const auto& k = space.knobs();
  auto v = space.values(c);
  const int64_t tile_m = v[0], tile_n = v[1], tile_k = v[2], reg_m = v[3], reg_n = v[4], unroll_k = v[5];
  const bool n_outer = v[6] == 1;
  const int64_t order = space.valueOr(c, "outer_order", 0);
  const bool pack_a = space.valueOr(c, "pack_a", 0) == 1;
  const bool threaded = space.knobIndex("threads") >= 0;
  const bool own_init = k_dim > 0;
  const int64_t panels = tile_n / reg_n;  // micro-panels per block of columns
  // (A stream, not a chain of string +: GCC 12 warns -Wrestrict on that chain, a false positive.)
  auto sizes = [](int64_t m, int64_t n1, int64_t kk, int64_t n0) {
    std::ostringstream s;
    s << "[" << m << ", " << n1 << ", " << kk << ", " << n0 << "]";
    return s.str();
  };
  const std::string lower_pack_types = "(" + PK + ") -> (!transform.op<\"tensor.pad\">, !transform.op<\"tensor.expand_shape\">, "
                                       "!transform.op<\"linalg.transpose\">)";
  const std::string lower_c = ind + "%cpad, %cexp, %ctr = transform.structured.lower_pack %cpack : " + lower_pack_types + "\n";
  std::ostringstream o;
  for (size_t i = 0; i < k.size(); ++i) o << ind << "%" << k[i].name << " = " << knobOp(k[i], v[i]) << "\n";
  o << ind << "// B in micro-panels [N/reg_n][K][reg_n]: pack on n, then the outer dims swapped.\n"
    << ind << "%f = transform.get_parent_op %mm {deduplicate, op_name = \"func.func\"} : (" << H << ") -> " << H << "\n"
    << ind << "%p0 = transform.structured.pack %mm packed_sizes = [0, " << reg_n << ", 0] : (" << H
    << ") -> !transform.op<\"linalg.generic\">\n"
    << ind << "%bpack0 = transform.get_producer_of_operand %p0[1] : (!transform.op<\"linalg.generic\">) -> " << PK << "\n"
    << ind << "%pg, %bpack, %bun = transform.structured.pack_transpose %bpack0 with_compute_op(%p0) outer_perm = [1, 0] : ("
    << PK << ", !transform.op<\"linalg.generic\">) -> (!transform.op<\"linalg.generic\">, " << PK << ", " << H << ")\n"
    << ind << "%p = transform.cast %pg : !transform.op<\"linalg.generic\"> to " << H << "\n"
    << ind << "%cpack = transform.get_producer_of_operand %p[2] : (" << H << ") -> " << PK << "\n"
    << ind << "%cunpack = transform.get_consumers_of_result %p[0] : (" << H << ") -> " << UPK << "\n";
  // C's pack is a reshape. With the op's own fill it is lowered first and canonicalized, which
  // moves the fill past the reshape: the fill is then the packed op's init, run in the blocks.
  if (own_init)
    o << ind << "// C's pack and unpack are reshapes: C's first, so that its fill becomes the packed op's init.\n"
      << lower_c << ind << "transform.apply_patterns to %f {\n"
      << ind << "  transform.apply_patterns.canonicalization\n"
      << ind << "} : " << H << "\n"
      << ind << "%sx_init = transform.get_producer_of_operand %p[2] : (" << H << ") -> " << H << "\n";
  const std::string forall = order == 1 ? sizes(tile_m, 0, 0, 0) : order == 2 ? sizes(0, panels, 0, 0) : sizes(tile_m, panels, 0, 0);
  o << ind << "%t1, %blocks = transform.structured.tile_using_forall %p tile_sizes " << forall << " : (" << H << ") -> (" << H
    << ", " << H << ")\n"
    << (threaded ? ind + "transform.annotate %blocks \"sextant.num_threads\" = %threads : " + H + ", " + P + "\n" : std::string())
    << ind << "%bpack_f, %blocks_b = transform.structured.fuse_into_containing_op %bpack into %blocks : (" << PK << ", " << H
    << ") -> (" << H << ", " << H << ")\n";
  // The block's fill one vector at a time (a whole row of an outer_order 1 block is all of N).
  if (own_init)
    o << ind << "%sx_fill_blk, %sx_blocks_f = transform.structured.fuse_into_containing_op %sx_init into %blocks_b : (" << H
      << ", " << H << ") -> (" << H << ", " << H << ")\n"
      << ind << "%sx_fill_v, %sx_fill_l:2 = transform.structured.tile_using_for %sx_fill_blk tile_sizes [1, 1, 0] : (" << H
      << ") -> (" << H << ", " << H << ", " << H << ")\n"
      << ind << "transform.structured.vectorize %sx_fill_v vector_sizes [1, 1, " << reg_n << "] : " << H << "\n";
  o << ind << "%t2, %kc = transform.structured.tile_using_for %t1 tile_sizes " << sizes(0, 0, tile_k, 0) << " : (" << H
    << ") -> (" << H << ", " << H << ")\n"
    << ind << "// This K chunk's micro-panels packed in the chunk's iteration.\n"
    << ind << "%bpack_k, %kc_b = transform.structured.fuse_into_containing_op %bpack_f into %kc : (" << H << ", " << H
    << ") -> (" << H << ", " << H << ")\n";
  std::vector<PanelCopy> copies;
  std::string cur = "%t2", bpack = "%bpack_k";
  if (order == 1 && pack_a) o << packOperand(ind, cur, 0, "pa", tile_m, tile_k, copies, 4), cur = "%pap";
  if (order == 1 || order == 2) {
    o << ind << "%t2i, %inner = transform.structured.tile_using_for " << cur << " tile_sizes "
      << (order == 1 ? sizes(0, panels, 0, 0) : sizes(tile_m, 0, 0, 0)) << " : (" << H << ") -> (" << H << ", " << H << ")\n";
    cur = "%t2i";
  }
  if (order == 1)  // each block of columns' micro-panels packed in the loop over them
    o << ind << "%bpack_n, %inner_b = transform.structured.fuse_into_containing_op %bpack_k into %inner : (" << H << ", " << H
      << ") -> (" << H << ", " << H << ")\n",
        bpack = "%bpack_n";
  if (order != 1 && pack_a) o << packOperand(ind, cur, 0, "pa", tile_m, tile_k, copies, 4), cur = "%pap";
  o << ind << "%t3, %r1, %r2 = transform.structured.tile_using_for " << cur << " tile_sizes " << sizes(reg_m, 1, 0, 0)
    << (n_outer ? " interchange = [1, 0, 2, 3]" : "") << " : (" << H << ") -> (" << H << ", " << H << ", " << H << ")\n"
    << ind << "%t4, %kk = transform.structured.tile_using_for %t3 tile_sizes " << sizes(0, 0, unroll_k, 0) << " : (" << H
    << ") -> (" << H << ", " << H << ")\n";
  const std::string vsizes = sizes(reg_m, 1, unroll_k, reg_n);
  auto vectorize = [&](const std::string& h) {
    return ind + "transform.structured.vectorize " + h + " vector_sizes " + vsizes + " : " + H + "\n";
  };
  if (tile_m % reg_m != 0)
    o << ind << "// reg_m does not divide tile_m: full register tiles, then the remainder (masked).\n"
      << peelRegisterLoop(ind, n_outer ? "%r2" : "%r1", "interface{LinalgOp}") << vectorize("%t4_full")
      << vectorize("%t4_partial");
  else
    o << vectorize("%t4");
  // The pack: a transpose of the chunk's [tile_k][N1][reg_n] to [N1][tile_k][reg_n], rows of reg_n
  // floats moved whole (no shuffles).
  const int64_t rows = tile_k % 8 == 0 ? 8 : packRows(tile_k);
  o << ind << "// The micro-panels' pack: rows of reg_n floats moved, " << rows << " at a time.\n"
    << ind << "%bpack_c = transform.cast " << bpack << " : " << H << " to " << PK << "\n"
    << ind << "%bpad, %bexp, %btr = transform.structured.lower_pack %bpack_c : " << lower_pack_types << "\n"
    << ind << "%btile, %bl:2 = transform.structured.tile_using_for %btr tile_sizes [1, " << rows
    << ", 0] : (!transform.op<\"linalg.transpose\">) -> (" << H << ", " << H << ", " << H << ")\n"
    << ind << "transform.structured.vectorize %btile vector_sizes [1, " << rows << ", " << reg_n << "] : " << H << "\n"
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
    << hoistAndLowerContractions(ind, "");
  // Last, as on the NN route: vectorized earlier, canonicalization would fold the copy back.
  for (const PanelCopy& pc : copies)
    o << ind << "transform.structured.vectorize " << pc.handle << " vector_sizes [" << packRows(pc.rows) << ", "
      << packCols(pc.width) << "] : " << H << "\n";
  return o.str();
}

}  // namespace sextant::cpu_detail
