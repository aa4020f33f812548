#include "sextant/codegen/mfma.h"

namespace sextant {

std::string MfmaIntrinsic::name() const {
  return "v_mfma_f32_" + shape() + (in == DType::BF16 ? "_bf16" : "_f16");
}

MfmaIntrinsic mfmaForKnob(int64_t knob, DType in) {
  MfmaIntrinsic mi;
  mi.in = in;
  if (knob == 1) mi.m = 32, mi.n = 32, mi.k = 8;
  else if (knob == 2) mi.m = 16, mi.n = 16, mi.k = 16;
  return mi;
}

// Each lane holds 4 consecutive K elements of one row of A (lanes 0..m-1: K 0..3, the next m
// lanes: K 4..7, ...), 4 consecutive K elements of one column of B likewise, and the result in
// blocks of 4 consecutive rows of one column: lanes 0..n-1 rows 0..3, lanes n..2n-1 rows 4..7, and
// so on for 64/n groups of lanes; register block g (elements 4g..4g+3) repeats that 4*64/n rows
// further down (32x32: 4 blocks, rows 8g + 4*(lane/32) + i; 16x16: one block).
MatPos mfmaLaneA(const MfmaIntrinsic& mi, int64_t lane, int64_t i) {
  return {lane % mi.m, 4 * (lane / mi.m) + i};
}

MatPos mfmaLaneB(const MfmaIntrinsic& mi, int64_t lane, int64_t i) {
  return {4 * (lane / mi.n) + i, lane % mi.n};
}

MatPos mfmaLaneC(const MfmaIntrinsic& mi, int64_t lane, int64_t i) {
  const int64_t rows_per_block = 4 * 64 / mi.n;
  return {(i / 4) * rows_per_block + 4 * (lane / mi.n) + i % 4, lane % mi.n};
}

}  // namespace sextant
