// Floating-point freedoms of CPU kernels at the LLVM IR level (issue #35: the GEMV route).
//
// MLIR's vectorizer writes the GEMV route's partial sums as arith.mulf + arith.addf and its final
// per-column sums as vector.reduction <add>, both without fast-math flags: LLVM then keeps a
// multiply and an add per step (no FMA) and reduces each 16-lane vector with 16 ordered scalar adds.
// The GEMM and convolution routes are unaffected (they lower to explicit FMAs). Two freedoms, the
// ones C compilers grant by -ffp-contract=fast and by the reduction clauses of OpenMP/vectorizers:
//  - contract on every floating-point multiply, add and subtract: a multiply feeding an add may be
//    fused (one rounding instead of two: never less accurate);
//  - reassoc on the vector reduction intrinsics only: a vector's lanes are summed as a tree.
// Nothing else is reassociated: no loop's sum order changes outside the reductions MLIR already
// split (the schedule's split reduction is what reorders the sum, and verification bounds it).
#include "compiler_internal.h"

#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"

namespace sextant::detail {

int relaxCpuFloatMath(llvm::Module& m) {
  int changed = 0;
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& b : f)
      for (llvm::Instruction& i : b) {
        const unsigned op = i.getOpcode();
        if (op == llvm::Instruction::FMul || op == llvm::Instruction::FAdd || op == llvm::Instruction::FSub) {
          if (!i.hasAllowContract()) {
            i.setHasAllowContract(true);
            ++changed;
          }
          continue;
        }
        if (auto* ii = llvm::dyn_cast<llvm::IntrinsicInst>(&i)) {
          const auto id = ii->getIntrinsicID();
          if ((id == llvm::Intrinsic::vector_reduce_fadd || id == llvm::Intrinsic::vector_reduce_fmul) &&
              !ii->hasAllowReassoc()) {
            ii->setHasAllowReassoc(true);
            ++changed;
          }
        }
      }
  return changed;
}

}  // namespace sextant::detail
