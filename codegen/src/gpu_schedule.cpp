// The GPU GEMM schedules as Transform-dialect text: the tuner's stage scripts and a library's
// named-sequence bodies (the space and the plan are in gpu_space.cpp).
#include "sextant/codegen/gpu_schedule.h"

#include <sstream>

namespace sextant {

namespace {

std::string ty(DType t) { return dtypeName(t); }

}  // namespace

namespace {

std::string knobOp(const Knob& k, int64_t selected) {
  std::ostringstream o;
  o << "%knob_" << k.name << " = transform.tune.knob<\"" << k.name << "\"> = " << selected
    << " : i64 from options = [";
  for (size_t i = 0; i < k.values.size(); ++i) o << (i ? ", " : "") << k.values[i];
  o << "] -> !transform.param<i64>";
  return o.str();
}

const char* H = "!transform.any_op";

// The wgmma route is one pass of our own (compiler_wgmma.cpp) applied to handle %`target`.
std::string wgmmaPass(const std::string& I, const GpuPlan& p, const std::string& target, const std::string& result) {
  std::ostringstream o;
  o << I << "// Hopper: TMA loads (" << p.pipeline << " stages, 128-byte swizzle, mbarriers) + wgmma.mma_async, "
    << p.block_m / p.warpgroup_m << " warpgroup(s) of " << p.warpgroup_m << " rows"
    << (p.warp_specialize ? " + a TMA producer warpgroup" : "") << " (Sextant's own pass, sm_90a;\n"
    << I << "// tune compile and sextant-opt have it, a stock mlir-opt does not).\n"
    << I << "%" << result << " = transform.apply_registered_pass \"sextant-wgmma-gemm\" with options = { \"block-m\" = "
    << p.block_m << ", \"block-n\" = " << p.block_n << ", \"warpgroup-m\" = " << p.warpgroup_m << ", \"stages\" = "
    << p.pipeline << (p.warp_specialize ? ", \"warp-specialize\" = true" : "") << " } to %" << target << " : (" << H << ") -> " << H << "\n";
  return o.str();
}

}  // namespace

namespace {

// Where the emitted text lives: the standalone scripts (the tuner's stages, matching ops in the
// whole module) or a library's named sequences (one matched op; the lowering of its function).
enum class Form { Script, Library };

// The op-level part of stage 1: block tiles (C initialisation fused in), K chunks, promotion of
// the A and B tiles, their copies mapped to threads, warp or thread tiles. Reads %mm and %fill.
void emitOpStage(std::ostringstream& o, const std::string& I, const GemmWorkload& w, const GpuPlan& p) {
  const std::string pa = ty(w.a_type), pb = ty(w.b_type), pc = ty(w.c_type);
  // A batched matmul (Vulkan): one batch element per block (grid z), a leading 0 elsewhere.
  const bool bt = p.batch > 0;
  const std::string b1 = bt ? "1, " : "", b0 = bt ? "0, " : "", bz = bt ? "#gpu.block<z>, " : "";
  o << I << "// Block tiles, with the C initialisation fused in.\n"
    << I << "%t1, %blk = transform.structured.tile_using_forall %mm tile_sizes [" << b1 << p.block_m << ", " << p.block_n
    << "] (mapping = [" << bz << "#gpu.block<y>, #gpu.block<x>]) : (" << H << ") -> (" << H << ", " << H << ")\n"
    << I << "%ff, %blk2 = transform.structured.fuse_into_containing_op %fill into %blk : (" << H << ", " << H
    << ") -> (" << H << ", " << H << ")\n"
    << I << "%t2, %kl = transform.structured.tile_using_for %t1 tile_sizes [" << b0 << "0, 0, " << p.block_k << "] : (" << H
    << ") -> (" << H << ", " << H << ")\n";
  const bool promote = p.promote_a || p.promote_b;
  if (promote) {
    const std::string which = p.promote_a && p.promote_b ? "the A and B tiles" : p.promote_a ? "the A tile" : "the B tile";
    o << I << "// Promote " << which << " (nofold pads become " << (p.vulkan ? "workgroup" : "shared") << "-memory buffers below).\n"
      << I << "%padded, %pad, %copy = transform.structured.pad %t2 {padding_values = [0.0 : " << pa << ", 0.0 : "
      << pb << ", 0.0 : " << pc << "], padding_dimensions = [" << (bt ? "0, 1, 2, 3" : "0, 1, 2") << "], nofold_flags = [" << (p.promote_a ? 1 : 0) << ", "
      << (p.promote_b ? 1 : 0) << ", 0], copy_back_op = \"none\"}"
      << " : (" << H << ") -> (" << H << ", " << H << ", " << H << ")\n"
      << I << "%pad_forall, %tiled_pad = transform.structured.gpu.map_copy_to_threads %pad total_num_threads = "
      << p.threads << " desired_bit_alignment = " << p.copy_bits << " : (" << H << ") -> (" << H << ", " << H << ")\n";
    if (p.promote_a && p.promote_b)
      o << I << "%copy_a, %copy_b = transform.split_handle %tiled_pad : (" << H << ") -> (" << H << ", " << H << ")\n"
        << I << "transform.structured.vectorize %copy_a vector_sizes [" << b1 << p.copy_tile_a[0] << ", " << p.copy_tile_a[1]
        << "] : " << H << "\n"
        << I << "transform.structured.vectorize %copy_b vector_sizes [" << b1 << p.copy_tile_b[0] << ", " << p.copy_tile_b[1]
        << "] : " << H << "\n";
    else {
      const auto& t = p.promote_a ? p.copy_tile_a : p.copy_tile_b;
      o << I << "transform.structured.vectorize %tiled_pad vector_sizes [" << b1 << t[0] << ", " << t[1] << "] : " << H << "\n";
    }
  } else {
    o << I << "// No promotion: each thread reads its A and B elements from global memory.\n"
      << I << "%padded = transform.merge_handles %t2 {deduplicate} : " << H << "\n";
  }
  if (p.mma) {
    o << I << "// Warp tiles (linear warp ids), C initialisation over all threads.\n"
      << I << "%t3, %wf = transform.structured.tile_using_forall %padded tile_sizes [" << p.warp_m << ", " << p.warp_n
      << "] (mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (" << H << ") -> (" << H << ", " << H
      << ")\n"
      << I << "%fillt, %fillthr = transform.structured.tile_using_forall %ff tile_sizes [" << p.fill_tile[0] << ", "
      << p.fill_tile[1] << "] (mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]) : (" << H
      << ") -> (" << H << ", " << H << ")\n";
  } else {
    o << I << "// Thread tiles: each thread computes thread_m x thread_n outputs.\n"
      << I << "%t3, %thr = transform.structured.tile_using_forall %padded tile_sizes [" << b0 << p.thread_m << ", "
      << p.thread_n << "] (mapping = [#gpu.thread<y>, #gpu.thread<x>]) : (" << H << ") -> (" << H << ", " << H
      << ")\n"
      << I << "%fillt, %fillthr = transform.structured.tile_using_forall %ff tile_sizes [" << b0 << p.thread_m << ", "
      << p.thread_n << "] (mapping = [#gpu.thread<y>, #gpu.thread<x>]) : (" << H << ") -> (" << H << ", " << H
      << ")\n";
  }
  // Workgroup memory: MLIR 22's SPIR-V conversion cannot map #gpu.address_space<workgroup>; it
  // maps the integer memory space 3 to Workgroup (../shared/notes/vulkan.md).
  if (promote)
    o << I << "%buf, %newops = transform.structured.bufferize_to_allocation %pad_forall {memory_space = "
      << (p.vulkan ? "3" : "#gpu.address_space<workgroup>") << ", bufferize_destination_only} : " << H << "\n";
}

// The rank memory transfers are lowered to: 1 (1-D vectors), or 0 (scalars) for a Vulkan kernel
// without vec4 accesses.
int transferRank(const GpuPlan& p) { return p.vulkan && !p.vec4 ? 0 : 1; }

// 2-D vector transfers of function %`f` lowered to 1-D (needed before cp.async groups and before
// NVVM), with one more pattern set applied alongside (`also`).
// Vulkan (rank 0): scalar loads and stores, the arithmetic stays vector; MLIR 22 lowers a
// vector<4xf32> load of a scalar buffer to a pointer bitcast that spirv-val and the validation
// layer reject (llvm/llvm-project#213192).
std::string lowerTransfers(const std::string& I, const std::string& f, const std::string& also, int rank = 1) {
  std::ostringstream o;
  o << I << "transform.apply_patterns to %" << f << " {\n"
    << I << "  transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = " << rank << " full_unroll = true\n"
    << I << "} : " << H << "\n"
    << I << "transform.apply_patterns to %" << f << " {\n"
    << I << "  transform.apply_patterns.vector.lower_transfer max_transfer_rank = " << rank << "\n"
    << I << "  transform.apply_patterns." << also << "\n"
    << I << "  transform.apply_patterns.canonicalization\n"
    << I << "} : " << H << "\n"
    << I << "transform.apply_cse to %" << f << " : " << H << "\n";
  return o.str();
}

// The function-level part of stage 1: vectorisation, bufferisation, the launch and its thread
// mapping, the contraction lowered to tensor-core fragments or FMA outer products. The script
// form matches the function in the module (%root); the library form starts from %func (the
// function holding the matched op) and follows the handles the transforms return.
void emitFunctionStage(std::ostringstream& o, const std::string& I, const GpuPlan& p, Form form) {
  const bool lib = form == Form::Library;
  auto matchFunc = [&](const std::string& name, const std::string& in) {
    o << I << "%" << name << " = transform.structured.match ops{[\"func.func\"]} in %" << in << " : (" << H
      << ") -> " << H << "\n";
  };
  auto sameFunc = [&](const std::string& name, const std::string& of) {
    o << I << "%" << name << " = transform.merge_handles %" << of << " {deduplicate} : " << H << "\n";
  };
  if (!lib) matchFunc("func", "root");
  o << I << "%vf = transform.structured.vectorize_children_and_apply_patterns %func : (" << H << ") -> " << H << "\n"
    << I << "transform.apply_patterns to %vf {\n"
    << I << "  transform.apply_patterns.canonicalization\n"
    << I << "  transform.apply_patterns.linalg.tiling_canonicalization\n"
    << I << "} : " << H << "\n"
    << I << "transform.apply_cse to %vf : " << H << "\n";
  if (lib) {
    // Function boundaries stay as they are: the function already takes memrefs.
    o << I << "transform.bufferization.eliminate_empty_tensors %vf : " << H << "\n"
      << I << "%f2 = transform.bufferization.one_shot_bufferize layout{IdentityLayoutMap} %vf "
      << "{memcpy_op = \"linalg.copy\"} : (" << H << ") -> " << H << "\n";
  } else {
    o << I << "transform.bufferization.eliminate_empty_tensors %root : " << H << "\n"
      << I << "%bufd = transform.bufferization.one_shot_bufferize layout{IdentityLayoutMap} %root "
      << "{bufferize_function_boundaries = true, memcpy_op = \"linalg.copy\"} : (" << H << ") -> " << H << "\n";
    matchFunc("f2", "bufd");
  }
  o << I << "// CSE then canonicalize, twice: bufferization self-copies must go before hoisting.\n"
    << I << "transform.apply_cse to %f2 : " << H << "\n"
    << I << "transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : " << H << "\n"
    << I << "transform.apply_cse to %f2 : " << H << "\n"
    << I << "transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : " << H << "\n"
    << I << "%f2v = transform.structured.vectorize_children_and_apply_patterns %f2 : (" << H << ") -> " << H << "\n"
    << I << "%launch = transform.gpu.map_forall_to_blocks %f2v {generate_gpu_launch} : (" << H << ") -> " << H << "\n"
    << I << "%l2 = transform.gpu.map_nested_forall_to_threads %launch block_dims = [" << p.block_dims[0] << ", "
    << p.block_dims[1] << ", " << p.block_dims[2] << "]" << (p.mma && p.warp_size != 32 ? " warp_size = " + std::to_string(p.warp_size) : "")
    << " : (" << H << ") -> " << H << "\n";
  if (lib)
    o << I << "%f3 = transform.get_parent_op %l2 {op_name = \"func.func\"} : (" << H << ") -> " << H << "\n";
  else
    matchFunc("f3", "bufd");
  o << I << "transform.apply_cse to %f3 : " << H << "\n"
    << I << "transform.apply_patterns to %f3 {\n"
    << I << "  transform.apply_patterns.canonicalization\n"
    << I << "  transform.apply_patterns.memref.fold_memref_alias_ops\n"
    << I << "  transform.apply_patterns.gpu.eliminate_barriers\n"
    << I << "} : " << H << "\n"
    << I << "transform.apply_cse to %f3 : " << H << "\n";
  if (p.mma) {
    const bool mfma = p.mfma.m > 0;
    // Vulkan: 16x16x16 cooperative-matrix fragments (the space's shape, kVulkanCoopMatrixShape).
    const std::string shape = mfma       ? std::to_string(p.mfma.m) + ", " + std::to_string(p.mfma.n) + ", " +
                                               std::to_string(p.mfma.k)
                              : p.vulkan ? "16, 16, 16"
                                         : "16, 8, 16";
    o << I << "// Mixed-precision contraction, unrolled to the "
      << (mfma ? p.mfma.name() + " MFMA" : p.vulkan ? std::string("16x16x16 cooperative-matrix") : "m16n8k16 tensor-core")
      << " shape; then the C\n"
      << I << "// fragments are hoisted out of the K loop (after unrolling: one accumulator per fragment).\n"
      << I << "transform.apply_patterns to %f3 {\n"
      << I << "  transform.apply_patterns.vector.fold_arith_extension\n"
      << I << "  transform.apply_patterns.canonicalization\n"
      << I << "} : " << H << "\n"
      << I << "transform.apply_patterns to %f3 {\n"
      << I << "  transform.apply_patterns.gpu.unroll_vectors_subgroup_mma [" << shape << "]\n"
      << I << "  transform.apply_patterns.canonicalization\n"
      << I << "} : " << H << "\n"
      << I << "transform.apply_cse to %f3 : " << H << "\n"
      << I << "%h = transform.structured.hoist_redundant_vector_transfers %f3 : (" << H << ") -> " << H << "\n";
  } else {
    o << I << "// Keep the thread's C tile in registers across the K loop, then FMA outer products.\n";
    if (p.vulkan)
      // f16 inputs: the widening folded into the contraction, so that the outer products widen
      // 4-lane slices, not whole operand tiles (SPIR-V vectors have at most 4 lanes).
      o << I << "transform.apply_patterns to %f3 { transform.apply_patterns.vector.fold_arith_extension } : " << H << "\n";
    if (p.batch > 0)
      // Before the hoisting, so that the loop carries a 2-D C tile (a 1 x m x n one, extracted and
      // broadcast in the loop, sends the lowering below into an endless rewrite loop).
      o << I << "// Batched: the unit batch dimension of the thread's vectors dropped.\n"
        << I << "transform.apply_patterns to %f3 {\n"
        << I << "  transform.apply_patterns.vector.cast_away_vector_leading_one_dim\n"
        << I << "  transform.apply_patterns.canonicalization\n"
        << I << "} : " << H << "\n";
    o << I << "%h = transform.structured.hoist_redundant_vector_transfers %f3 : (" << H << ") -> " << H << "\n";
    if (lib) sameFunc("f5", "h");
    else matchFunc("f5", "bufd");
    o << I << "transform.apply_patterns to %f5 {\n"
      << I << "  transform.apply_patterns.vector.lower_masked_transfers\n"
      << I << "  transform.apply_patterns.vector.lower_contraction lowering_strategy = outerproduct\n"
      << I << "  transform.apply_patterns.vector.transfer_permutation_patterns\n"
      << I << "  transform.apply_patterns.vector.lower_outerproduct\n"
      << I << "  transform.apply_patterns.vector.lower_transpose\n"
      << I << "  transform.apply_patterns.vector.lower_broadcast\n"
      << I << "  transform.apply_patterns.canonicalization\n"
      << I << "} : " << H << "\n"
      << lowerTransfers(I, "f5", "vector.lower_shape_cast", transferRank(p));
  }
  if (lib) sameFunc("f4", "h");
  else matchFunc("f4", "bufd");
  o << I << "transform.apply_patterns to %f4 { transform.apply_patterns.canonicalization } : " << H << "\n"
    << I << "transform.apply_cse to %f4 : " << H << "\n";
  if (!p.mma)
    o << I << "// 2-D from_elements (the hoisted C tile) have no ROCDL lowering: unroll them to rows, last\n"
      << I << "// (canonicalization would fold them back).\n"
      << I << "transform.apply_patterns to %f4 { transform.apply_patterns.vector.unroll_from_elements } : " << H << "\n";
}


// Stage 3 on the function %f: multi-buffering, cp.async groups, software pipelining (or, for
// tensor cores without pipelining, the transfers' lowering alone). `scope` holds the launch.
void emitPipelineStage(std::ostringstream& o, const std::string& I, const GpuPlan& p, const std::string& scope) {
  // MFMA (AMD): no cp.async; its double buffering is a pass of our own, run afterwards
  // (sextant-lds-double-buffer, compiler_lds_pipeline.cpp).
  if (p.pipeline <= 1 || p.mfma.m != 0) {
    o << lowerTransfers(I, "f", "memref.fold_memref_alias_ops", transferRank(p));
    return;
  }
  o << I << "transform.bufferization.buffer_loop_hoisting %f : " << H << "\n"
    << I << "%allocs = transform.structured.match ops{[\"memref.alloc\"]} in %f : (" << H
    << ") -> !transform.op<\"memref.alloc\">\n"
    << I << "%mb = transform.memref.multibuffer %allocs {factor = " << p.pipeline
    << " : i64, skip_analysis} : (!transform.op<\"memref.alloc\">) -> " << H << "\n"
    << lowerTransfers(I, "f", "memref.fold_memref_alias_ops")
    << I << "transform.apply_patterns to %f { transform.apply_patterns.gpu.eliminate_barriers } : " << H << "\n"
    << I << "%f2 = transform.nvgpu.create_async_groups %f {bypass_l1} : (" << H << ") -> " << H << "\n"
    << I << "transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : " << H << "\n"
    << I << "%launch = transform.structured.match ops{[\"gpu.launch\"]} in %" << scope << " : (" << H << ") -> " << H
    << "\n"
    << I << "%loops = transform.structured.match ops{[\"scf.for\"]} in %launch : (" << H << ") -> " << H << "\n"
    << I << "%kloop = transform.split_handle %loops : (" << H << ") -> (" << H << ")\n"
    << I << "%p = transform.nvgpu.pipeline_shared_memory_copies failures(propagate) %kloop {depth = " << p.pipeline
    << ", peel_epilogue} : (" << H << ") -> " << H << "\n";
}

}  // namespace

std::string emitGpuGemmSchedule(const GemmWorkload& w, const Space& space, const Candidate& c) {
  auto pr = planGpuGemm(w, space, c);
  if (!pr) return "// invalid GPU candidate: " + pr.error() + "\n";
  const GpuPlan& p = *pr;
  auto v = space.values(c);
  std::ostringstream o;
  const std::string I = "    ";
  o << "// Sextant GPU GEMM schedule (space " << space.name() << " " << space.fingerprint() << ")\n"
    << "// workload: " << w.key() << "\n"
    << "// knobs: " << space.keyOf(c) << "\n"
    << "// threads per block: " << p.threads << ", shared memory: " << p.smem_bytes << " bytes\n"
    << "module attributes {transform.with_named_sequence} {\n"
    << "  transform.named_sequence @__transform_main(%root: " << H << " {transform.consumed}) {\n";
  for (size_t i = 0; i < space.knobs().size(); ++i) o << I << knobOp(space.knobs()[i], v[i]) << "\n";
  if (p.wgmma) {
    o << I << "%func = transform.structured.match ops{[\"func.func\"]} in %root : (" << H << ") -> " << H << "\n"
      << wgmmaPass(I, p, "func", "kernel") << I << "transform.yield\n"
      << "  }\n"
      << "}\n";
    return o.str();
  }
  o << I << "%mm = transform.structured.match ops{[\"" << (w.batched() ? "linalg.batch_matmul" : "linalg.matmul") << "\"]} in %root : (" << H << ") -> " << H << "\n"
    << I << "%fill = transform.structured.match ops{[\"linalg.fill\"]} in %root : (" << H << ") -> " << H << "\n";
  emitOpStage(o, I, w, p);
  emitFunctionStage(o, I, p, Form::Script);
  o << I << "transform.yield\n"
    << "  }\n"
    << "}\n";
  return o.str();
}

std::string emitGpuPipelineSchedule(const GpuPlan& p) {
  if ((p.pipeline <= 1 && !p.mma) || p.wgmma) return "";
  const std::string I = "    ";
  std::ostringstream o;
  if (p.mfma.m != 0)
    o << "// Sextant GPU: lower the remaining 2-D transfers" << (p.pipeline > 1 ? " (LDS double buffering follows)" : "")
      << ".\n";
  else if (p.pipeline <= 1)  // tensor cores without pipelining: the transfers still have to become 1-D
    o << "// Sextant GPU: lower the remaining 2-D transfers (no pipelining).\n";
  else
    o << "// Sextant GPU pipelining: " << p.pipeline << " shared-memory buffers, cp.async groups, software pipeline.\n"
      << "// The wait-group counts of the steady-state loop are set afterwards from the number of commit\n"
      << "// groups per iteration (the compiler counts them), then the function is canonicalized.\n";
  o << "module attributes {transform.with_named_sequence} {\n"
    << "  transform.named_sequence @__transform_main(%root: " << H << " {transform.readonly}) {\n"
    << I << "%f = transform.structured.match ops{[\"func.func\"]} in %root : (" << H << ") -> " << H << "\n";
  emitPipelineStage(o, I, p, "root");
  o << I << "transform.yield\n  }\n}\n";
  return o.str();
}

std::string emitGpuLibraryActions(const GemmWorkload& w, const Space& space, const Candidate& c,
                                  const std::string& I, const std::string& function_tag) {
  auto pr = planGpuGemm(w, space, c);
  if (!pr) return I + "// invalid GPU candidate: " + pr.error() + "\n";
  std::ostringstream o;
  o << I << "%fill = transform.get_producer_of_operand %mm[2] : (" << H << ") -> " << H << "\n"
    << I << "%fn = transform.get_parent_op %mm {op_name = \"func.func\"} : (" << H << ") -> " << H << "\n";
  if (!pr->wgmma) emitOpStage(o, I, w, *pr);
  o << I << "// The rest runs on the whole function (bufferisation, the launch): marked for the lowering.\n"
    << I << "transform.annotate %fn \"" << function_tag << "\" : " << H << "\n";
  return o.str();
}

std::string emitGpuLibraryLowering(const GemmWorkload& w, const Space& space, const Candidate& c,
                                   const std::string& I) {
  auto pr = planGpuGemm(w, space, c);
  if (!pr) return I + "// invalid GPU candidate: " + pr.error() + "\n";
  std::ostringstream o;
  if (pr->wgmma) o << wgmmaPass(I, *pr, "func", "kernel");
  else emitFunctionStage(o, I, *pr, Form::Library);
  return o.str();
}

std::string emitGpuLibraryFinish(const GemmWorkload& w, const Space& space, const Candidate& c, const std::string& I,
                                 bool nvidia) {
  auto pr = planGpuGemm(w, space, c);
  if (!pr) return I + "// invalid GPU candidate: " + pr.error() + "\n";
  const GpuPlan& p = *pr;
  std::ostringstream o;
  if (p.wgmma) return I + "// wgmma: the kernel is complete (written by sextant-wgmma-gemm).\n";
  if (p.vulkan && !p.mma)
    return I + "// Vulkan: workgroup buffers stay allocations in memory space 3 (SPIR-V Workgroup variables).\n";
  // What the tuner's compiler does between and after its scripts (compileGpuGemm), as transforms.
  o << I << "%f0 = transform.merge_handles %fin {deduplicate} : " << H << "\n";
  std::string f = "f0";
  auto pass = [&](const std::string& name, const std::string& options) {
    std::string next = "f_" + std::to_string(o.tellp());
    o << I << "%" << next << " = transform.apply_registered_pass \"" << name << "\""
      << (options.empty() ? "" : " with options = { " + options + " }") << " to %" << f << " : (" << H << ") -> "
      << H << "\n";
    f = next;
  };
  if (p.vulkan) {
    o << I << "// Cooperative matrices: the accumulators from zero in registers (Sextant's own pass: tune compile and\n"
      << I << "// sextant-opt have it, a stock mlir-opt does not), the fragments to gpu.subgroup_mma_*, then the\n"
      << I << "// copies' transfers lowered. Workgroup buffers stay allocations in memory space 3.\n";
    pass("sextant-accumulators-from-zero", "");
    pass("convert-vector-to-gpu", "");
    pass("canonicalize", "");
    pass("cse", "");
    pass("sextant-sink-mma-constants", "");
    o << I << "%f = transform.merge_handles %" << f << " {deduplicate} : " << H << "\n";
    emitPipelineStage(o, I, p, "f");
    return o.str();
  }
  const bool bf16_mma = p.mma && nvidia && w.a_type == DType::BF16;
  if (p.mma && nvidia) {
    if (bf16_mma) {
      o << I << "// bf16: the kernel retyped to f16 of the same bits for MLIR 22's f16 tensor-core route (Sextant's\n"
        << I << "// own pass, with sextant-nvvm-mma-bf16 below: tune compile and sextant-opt have them).\n";
      pass("sextant-bf16-mma-as-f16", "");
    }
    o << I << "// Tensor-core fragments: vector -> nvgpu (ldmatrix, mma.sync).\n";
    pass("convert-vector-to-gpu", "\"use-nvgpu\" = true");
    pass("canonicalize", "");
    pass("cse", "");
  } else if (p.mma) {
    o << I << "// Matrix cores: wave-level contractions -> amdgpu.mfma with per-lane operand loads (Sextant's\n"
      << I << "// own pass: tune compile and sextant-opt have it, a stock mlir-opt does not).\n";
    pass("sextant-vector-to-mfma",
         "\"shape\" = \"" + p.mfma.shape() + "\"" + (p.lds_k_major ? ", \"lds-k-major\" = true" : "") +
             (p.lds_pad ? ", \"lds-pad\" = " + std::to_string(p.lds_pad) : ""));
    pass("canonicalize", "");
    pass("cse", "");
  }
  if ((nvidia && p.pipeline > 1) || p.mma) {
    const bool cp_async = nvidia && p.pipeline > 1;
    o << I << "// " << (cp_async ? "cp.async software pipeline" : "The copies' transfers lowered to 1-D")
      << ".\n"
      << I << "%f = transform.merge_handles %" << f << " {deduplicate} : " << H << "\n";
    emitPipelineStage(o, I, p, "f2");
    f = "f";
    if (!cp_async && p.pipeline > 1) {
      o << I << "// LDS double buffering: the next K tile's global loads before the current tile's MFMAs (Sextant's\n"
        << I << "// own pass, as sextant-vector-to-mfma).\n";
      pass("sextant-lds-double-buffer", "");
      pass("canonicalize", "");
      pass("cse", "");
    }
    if (cp_async) {
      // One commit group per promoted operand (A, B) per iteration (checked: the transform fails
      // otherwise): pipelined waits may leave groups * (depth - 1) groups pending, as
      // fixAsyncWaitCounts in the compiler counts; then canonicalization, as there.
      o << I << "%groups = transform.structured.match ops{[\"nvgpu.device_async_create_group\"]} in %p : (" << H
        << ") -> " << H << "\n"
        << I << "%ngroups = transform.num_associations %groups : (" << H << ") -> !transform.param<i64>\n"
        << I << "%two = transform.param.constant 2 : i64 -> !transform.param<i64>\n"
        << I << "transform.match.param.cmpi eq %ngroups, %two : !transform.param<i64>\n"
        << I << "%waits = transform.structured.match ops{[\"nvgpu.device_async_wait\"]} in %p : (" << H << ") -> "
        << H << "\n"
        << I << "%pending = transform.param.constant " << 2 * (p.pipeline - 1) << " : i32 -> !transform.param<i32>\n"
        << I << "transform.annotate %waits \"numGroups\" = %pending : " << H << ", !transform.param<i32>\n"
        << I << "transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : " << H << "\n";
      f = "f2";
    }
  }
  if (p.swizzle) {
    o << I << "// XOR-swizzled shared-memory addresses against ldmatrix bank conflicts.\n";
    pass("nvgpu-optimize-shared-memory", "");
  }
  if (p.dynamic_smem) {
    o << I << "// Over 48 KiB: the tiles become views of one extern dynamic shared array (Sextant's own pass).\n";
    pass("sextant-dynamic-shared-memory", "");
  }
  o << I << "// Workgroup buffers become static shared memory / LDS.\n";
  pass("promote-buffers-to-stack", "\"max-alloc-size-in-bytes\" = 16777216");
  o << I << "%allocas = transform.structured.match ops{[\"memref.alloca\"]} in %" << f
    << " : (" << H << ") -> !transform.op<\"memref.alloca\">\n"
    << I << "%gg, %glob = transform.memref.alloca_to_global %allocas : (!transform.op<\"memref.alloca\">) -> (" << H
    << ", " << H << ")\n";
  if (bf16_mma) {
    o << I << "// bf16: nvgpu -> nvvm here, then each mma.sync of the retyped kernel becomes .bf16.\n";
    pass("convert-nvgpu-to-nvvm", "");
    pass("sextant-nvvm-mma-bf16", "");
  }
  return o.str();
}

}  // namespace sextant
