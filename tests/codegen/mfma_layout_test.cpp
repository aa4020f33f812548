// The code generator's MFMA lane layouts (codegen/src/mfma.cpp) against the independent model of
// the instructions (mfma_isa_model.h): each lane's registers built from the code generator's maps,
// the instruction applied, the result read back with the code generator's map must be A x B + C,
// exactly, for random integers. A wrong layout fails (checked with deliberately wrong maps).
#include <functional>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "mfma_isa_model.h"

namespace sextant {
namespace {

using Map = std::function<MatPos(const MfmaIntrinsic&, int64_t, int64_t)>;

// True if the maps reproduce A x B + C through the ISA model.
bool layoutReproducesProduct(const MfmaIntrinsic& mi, const Map& la, const Map& lb, const Map& lc, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-8, 8);
  std::vector<std::vector<double>> A(mi.m, std::vector<double>(mi.k)), B(mi.k, std::vector<double>(mi.n)),
      C(mi.m, std::vector<double>(mi.n));
  for (auto* M : {&A, &B, &C})
    for (auto& row : *M)
      for (auto& x : row) x = d(rng);
  std::vector<std::vector<double>> a(64, std::vector<double>(mi.aElems())), b(64, std::vector<double>(mi.bElems())),
      acc(64, std::vector<double>(mi.accElems()));
  for (int64_t l = 0; l < 64; ++l) {
    for (int64_t i = 0; i < mi.aElems(); ++i) a[l][i] = A[la(mi, l, i).row][la(mi, l, i).col];
    for (int64_t i = 0; i < mi.bElems(); ++i) b[l][i] = B[lb(mi, l, i).row][lb(mi, l, i).col];
    for (int64_t i = 0; i < mi.accElems(); ++i) acc[l][i] = C[lc(mi, l, i).row][lc(mi, l, i).col];
  }
  test::isaMfma(mi, a, b, acc);
  for (int64_t l = 0; l < 64; ++l)
    for (int64_t i = 0; i < mi.accElems(); ++i) {
      MatPos p = lc(mi, l, i);
      double want = C[p.row][p.col];
      for (int64_t k = 0; k < mi.k; ++k) want += A[p.row][k] * B[k][p.col];
      if (acc[l][i] != want) return false;
    }
  return true;
}

std::vector<MfmaIntrinsic> all() {
  std::vector<MfmaIntrinsic> out;
  for (DType t : {DType::F16, DType::BF16})
    for (int64_t knob : {1, 2}) out.push_back(mfmaForKnob(knob, t));
  return out;
}

TEST(MfmaLayout, IntrinsicTable) {
  EXPECT_EQ(mfmaForKnob(1, DType::F16).name(), "v_mfma_f32_32x32x8_f16");
  EXPECT_EQ(mfmaForKnob(2, DType::F16).name(), "v_mfma_f32_16x16x16_f16");
  EXPECT_EQ(mfmaForKnob(1, DType::BF16).name(), "v_mfma_f32_32x32x8_bf16");
  EXPECT_EQ(mfmaForKnob(2, DType::BF16).name(), "v_mfma_f32_16x16x16_bf16");
  for (const auto& mi : all()) {
    EXPECT_EQ(mi.aElems(), 4);
    EXPECT_EQ(mi.bElems(), 4);
    EXPECT_EQ(mi.accElems(), mi.m == 32 ? 16 : 4);
  }
}

TEST(MfmaLayout, MapsCoverEachMatrixOnce) {
  for (const auto& mi : all()) {
    std::set<std::pair<int64_t, int64_t>> a, b, c;
    for (int64_t l = 0; l < 64; ++l) {
      for (int64_t i = 0; i < 4; ++i) a.insert({mfmaLaneA(mi, l, i).row, mfmaLaneA(mi, l, i).col});
      for (int64_t i = 0; i < 4; ++i) b.insert({mfmaLaneB(mi, l, i).row, mfmaLaneB(mi, l, i).col});
      for (int64_t i = 0; i < mi.accElems(); ++i) c.insert({mfmaLaneC(mi, l, i).row, mfmaLaneC(mi, l, i).col});
    }
    EXPECT_EQ(int64_t(a.size()), mi.m * mi.k) << mi.name();
    EXPECT_EQ(int64_t(b.size()), mi.k * mi.n) << mi.name();
    EXPECT_EQ(int64_t(c.size()), mi.m * mi.n) << mi.name();
    for (auto [r, col] : c) EXPECT_TRUE(r < mi.m && col < mi.n);
  }
}

TEST(MfmaLayout, CodegenLayoutsReproduceTheProduct) {
  for (const auto& mi : all())
    for (unsigned seed = 1; seed <= 5; ++seed)
      EXPECT_TRUE(layoutReproducesProduct(mi, mfmaLaneA, mfmaLaneB, mfmaLaneC, seed)) << mi.name() << " seed " << seed;
}

TEST(MfmaLayout, WrongLayoutsFail) {
  // The check can fail: plausible mistakes (C transposed, the C register blocks in the other
  // order, A's K groups swapped with rows) are caught.
  Map c_transposed = [](const MfmaIntrinsic& mi, int64_t l, int64_t i) {
    MatPos p = mfmaLaneC(mi, l, i);
    return MatPos{p.col, p.row};
  };
  Map c_rows_contiguous = [](const MfmaIntrinsic& mi, int64_t l, int64_t i) {
    return MatPos{(i + mi.accElems() * (l / mi.n)) % mi.m, l % mi.n};
  };
  Map a_swapped = [](const MfmaIntrinsic& mi, int64_t l, int64_t i) {
    return MatPos{(4 * (l / mi.m) + i) % mi.m, l % mi.k};
  };
  for (const auto& mi : all()) {
    EXPECT_FALSE(layoutReproducesProduct(mi, mfmaLaneA, mfmaLaneB, c_transposed, 1)) << mi.name();
    EXPECT_FALSE(layoutReproducesProduct(mi, a_swapped, mfmaLaneB, mfmaLaneC, 1)) << mi.name();
    if (mi.m == 32) {
      EXPECT_FALSE(layoutReproducesProduct(mi, mfmaLaneA, mfmaLaneB, c_rows_contiguous, 1)) << mi.name();
    }
  }
}

}  // namespace
}  // namespace sextant
