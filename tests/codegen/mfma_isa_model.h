// An independent model of the gfx942 MFMA instructions the code generator uses, written from the
// CDNA3 ISA guide's matrix layouts as AMD's matrix instruction calculator prints them (matrix
// element -> lane and register item), the inverse of how codegen/src/mfma.cpp states them (lane
// and item -> matrix element). Tests build each lane's registers with the code generator's maps,
// apply the instruction through this model, and must get A x B + C back.
#pragma once

#include <cstdint>
#include <vector>

#include "sextant/codegen/mfma.h"

namespace sextant::test {

struct LaneItem {
  int64_t lane = 0, item = 0;
};

// v_mfma_f32_32x32x8{f16,bf16_1k}: A[i][k] in lane i + 32*(k/4), item k%4; B[k][j] in lane
// j + 32*(k/4), item k%4; D[i][j] in lane j + 32*((i/4)%2), item 4*(i/8) + i%4.
// v_mfma_f32_16x16x16{f16,bf16_1k}: A[i][k] in lane i + 16*(k/4), item k%4; B[k][j] in lane
// j + 16*(k/4), item k%4; D[i][j] in lane j + 16*(i/4), item i%4.
inline LaneItem isaA(const MfmaIntrinsic& mi, int64_t i, int64_t k) { return {i + mi.m * (k / 4), k % 4}; }
inline LaneItem isaB(const MfmaIntrinsic& mi, int64_t k, int64_t j) { return {j + mi.n * (k / 4), k % 4}; }
inline LaneItem isaD(const MfmaIntrinsic& mi, int64_t i, int64_t j) {
  if (mi.m == 32) return {j + 32 * ((i / 4) % 2), 4 * (i / 8) + i % 4};
  return {j + 16 * (i / 4), i % 4};
}

// One wave's instruction: a[lane][item], b[lane][item], acc[lane][item] (in: C, out: D).
inline void isaMfma(const MfmaIntrinsic& mi, const std::vector<std::vector<double>>& a,
                    const std::vector<std::vector<double>>& b, std::vector<std::vector<double>>& acc) {
  std::vector<std::vector<double>> d = acc;
  for (int64_t i = 0; i < mi.m; ++i)
    for (int64_t j = 0; j < mi.n; ++j) {
      LaneItem o = isaD(mi, i, j);
      double s = acc[o.lane][o.item];
      for (int64_t k = 0; k < mi.k; ++k) {
        LaneItem pa = isaA(mi, i, k), pb = isaB(mi, k, j);
        s += a[pa.lane][pa.item] * b[pb.lane][pb.item];
      }
      d[o.lane][o.item] = s;
    }
  acc = d;
}

}  // namespace sextant::test
