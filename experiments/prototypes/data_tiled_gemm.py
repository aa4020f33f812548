#!/usr/bin/env python3
# Prototype, not a route of the tuner (issue #35 lead, 2026-11-26): a data-tiled ("mmt4d") CPU GEMM
# schedule for an NN linalg.matmul. transform.structured.pack on m and n (inner tiles reg_m, reg_n)
# packs A into micro-panels [M/reg_m][K][reg_m] (what BLIS's packm and oneDNN's copy_an produce),
# B (after pack_transpose outer_perm [1, 0]) into [N/reg_n][K][reg_n] and C into reg_m x reg_n
# blocks; the zero fill folds into C's pack (tensor.fold_into_pack_and_unpack + canonicalization);
# the packed op is tiled like the NN route (forall over tile_m/reg_m x tile_n/reg_n blocks, K chunks
# of tile_k, one register tile, unroll_k) and vectorized; the packs and the unpack are lowered to
# transposes, tiled and vectorized. Every operand is packed once per call (whole matrices).
# Usage: experiments/prototypes/data_tiled_gemm.py TILE_M TILE_N TILE_K REG_M REG_N UNROLL_K > s.mlir
#        build/tools/tune --schedule s.mlir --shape 1024x1024x1024 --db /tmp/p.db
# (tune verifies the result against the reference before it measures.) Measured: docs/results-blas.md,
# "Against the fastest library (Intel Xeon Cascade Lake, issue #35)".
import sys

if len(sys.argv) != 7:
    sys.exit("usage: data_tiled_gemm.py TILE_M TILE_N TILE_K REG_M REG_N UNROLL_K")

tm, tn, tk, rm, rn, uk = [int(x) for x in sys.argv[1:7]]
if tm % rm or tn % rn:
    sys.exit("TILE_M must be a multiple of REG_M and TILE_N of REG_N")
H='!transform.any_op'; PK='!transform.op<"linalg.pack">'; UPK='!transform.op<"linalg.unpack">'
LP=f'({PK}) -> (!transform.op<"tensor.pad">, !transform.op<"tensor.expand_shape">, !transform.op<"linalg.transpose">)'
print(f'''module attributes {{transform.with_named_sequence}} {{
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}}) {{
    %mm = transform.structured.match ops{{["linalg.matmul"]}} in %root : (!transform.any_op) -> !transform.any_op
    %f = transform.get_parent_op %mm {{deduplicate, op_name = "func.func"}} : ({H}) -> {H}
    %p = transform.structured.pack %mm packed_sizes = [{rm}, {rn}, 0] : ({H}) -> !transform.op<"linalg.generic">
    %bpack = transform.get_producer_of_operand %p[1] : (!transform.op<"linalg.generic">) -> {PK}
    %pt, %bpk, %bun = transform.structured.pack_transpose %bpack with_compute_op(%p) outer_perm = [1, 0] : ({PK}, !transform.op<"linalg.generic">) -> (!transform.op<"linalg.generic">, {PK}, !transform.any_op)
    transform.apply_patterns to %f {{
      transform.apply_patterns.tensor.fold_into_pack_and_unpack
      transform.apply_patterns.canonicalization
    }} : {H}
    %apack = transform.get_producer_of_operand %pt[0] : (!transform.op<"linalg.generic">) -> {PK}
    %cunpack = transform.get_consumers_of_result %pt[0] : (!transform.op<"linalg.generic">) -> {UPK}
    %t1, %blocks = transform.structured.tile_using_forall %pt tile_sizes [{tm//rm}, {tn//rn}, 0, 0, 0] : (!transform.op<"linalg.generic">) -> ({H}, {H})
    %t2, %kc = transform.structured.tile_using_for %t1 tile_sizes [0, 0, {tk}, 0, 0] : ({H}) -> ({H}, {H})
    %t3, %r1, %r2 = transform.structured.tile_using_for %t2 tile_sizes [1, 1, 0, 0, 0] interchange = [1, 0, 2, 3, 4] : ({H}) -> ({H}, {H}, {H})
    %t4, %kk = transform.structured.tile_using_for %t3 tile_sizes [0, 0, {uk}, 0, 0] : ({H}) -> ({H}, {H})
    transform.structured.vectorize %t4 vector_sizes [1, 1, {uk}, {rm}, {rn}] : {H}
    %apad, %aexp, %atr = transform.structured.lower_pack %apack : {LP}
    %atile, %al:3 = transform.structured.tile_using_for %atr tile_sizes [1, 16, {rm}] : (!transform.op<"linalg.transpose">) -> ({H}, {H}, {H}, {H})
    transform.structured.vectorize %atile : {H}
    %bpad, %bexp, %btr = transform.structured.lower_pack %bpk : {LP}
    %btile, %bl:3 = transform.structured.tile_using_for %btr tile_sizes [1, 16, {rn}] : (!transform.op<"linalg.transpose">) -> ({H}, {H}, {H}, {H})
    transform.structured.vectorize %btile : {H}
    %uempty, %utr, %ucol, %uslice = transform.structured.lower_unpack %cunpack : ({UPK}) -> (!transform.op<"tensor.empty">, !transform.op<"linalg.transpose">, !transform.op<"tensor.collapse_shape">, !transform.op<"tensor.extract_slice">)
    %utile, %ul:4 = transform.structured.tile_using_for %utr tile_sizes [1, {rm}, 1, {rn}] : (!transform.op<"linalg.transpose">) -> ({H}, {H}, {H}, {H}, {H})
    transform.structured.vectorize %utile : {H}
    transform.apply_patterns to %f {{
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.vector.drop_unit_dims_with_shape_cast
      transform.apply_patterns.canonicalization
    }} : {H}
    %loops = transform.structured.match ops{{["scf.for"]}} in %f : ({H}) -> !transform.op<"scf.for">
    transform.loop.hoist_loop_invariant_subsets %loops : !transform.op<"scf.for">
    transform.apply_patterns to %f {{
      transform.apply_patterns.vector.lower_contraction lowering_strategy = outerproduct
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_transpose lowering_strategy = shuffle_16x16
    }} : {H}
    transform.yield
  }}
}}''')
