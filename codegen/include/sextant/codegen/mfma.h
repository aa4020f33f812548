// AMD CDNA3 (gfx942) matrix-core instructions used by the MFMA route: their shapes and the lane
// layouts of their operands (which lane of the 64-lane wave holds which element of A, B and the
// accumulator), MLIR-free so that the schedule builder, the code generator (compiler_mfma.cpp)
// and the layout test all use this one table.
//
// Sources for the layouts: AMD "CDNA3 Instruction Set Architecture" guide (section 7, "Matrix
// Arithmetic Instructions", and AMD's matrix instruction calculator, which prints the same maps),
// as IREE states them (iree-org/iree compiler/src/iree/compiler/Codegen/Dialect/GPU/IR/
// IREEGPUAttrs.cpp, getSingleSubgroupLayout) and as upstream MLIR lowers the op
// (mlir/lib/Conversion/AMDGPUToROCDL/AMDGPUToROCDL.cpp, mfmaOpToIntrinsic;
// mlir/test/Conversion/AMDGPUToROCDL/mfma.mlir). tests/codegen/mfma_layout_test.cpp checks them
// against an independent model of the instruction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sextant/codegen/workload.h"

namespace sextant {

struct MfmaIntrinsic {
  int64_t m = 0, n = 0, k = 0;  // D[m x n] += A[m x k] * B[k x n], one wave of 64 lanes
  DType in = DType::F16;        // f16 or bf16 operands, f32 accumulation
  // Elements per lane: A and B 4 each (one 64-bit register pair), the accumulator m*n/64.
  int64_t aElems() const { return m * k / 64; }
  int64_t bElems() const { return k * n / 64; }
  int64_t accElems() const { return m * n / 64; }
  std::string name() const;  // "v_mfma_f32_32x32x8_f16", "v_mfma_f32_16x16x16_bf16" (the _1k form)
  std::string shape() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
};

// The gfx942 intrinsics of the route, by knob value: 1 -> 32x32x8, 2 -> 16x16x16 (0 is FMA).
// `in` is the workload's operand type.
MfmaIntrinsic mfmaForKnob(int64_t knob, DType in);

// A position in a logical matrix.
struct MatPos {
  int64_t row = 0, col = 0;
};
// Element i of lane `lane`'s register vector: A[row][col] (row in M, col in K), B[row][col] (row
// in K, col in N), accumulator/result C[row][col] (row in M, col in N).
MatPos mfmaLaneA(const MfmaIntrinsic& mi, int64_t lane, int64_t i);
MatPos mfmaLaneB(const MfmaIntrinsic& mi, int64_t lane, int64_t i);
MatPos mfmaLaneC(const MfmaIntrinsic& mi, int64_t lane, int64_t i);

}  // namespace sextant
