// Host side of GPU measurement: f16/bf16 conversions, the reference and the tolerance check.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>

#include "sextant/runtime/gemm_host.h"

using namespace sextant;

namespace {

float bitsToFloat(uint32_t x) {
  float f;
  memcpy(&f, &x, 4);
  return f;
}

GemmWorkload gemm(int64_t m, int64_t n, int64_t k, Layout l, DType in = DType::F32, DType out = DType::F32) {
  GemmWorkload w;
  w.m = m;
  w.n = n;
  w.k = k;
  w.layout = l;
  w.a_type = w.b_type = in;
  w.c_type = out;
  return w;
}

}  // namespace

TEST(Half, KnownBitPatterns) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalfBits(0.5f), 0x3800);
  EXPECT_EQ(floatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalfBits(0.1f), 0x2E66);
  EXPECT_EQ(floatToHalfBits(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(floatToHalfBits(65519.0f), 0x7BFF);  // below the halfway point to 65536
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7C00);  // the tie rounds to even: infinity
  EXPECT_EQ(floatToHalfBits(1e6f), 0x7C00);
  EXPECT_EQ(floatToHalfBits(-INFINITY), 0xFC00);
  EXPECT_EQ(floatToHalfBits(INFINITY), 0x7C00);
  EXPECT_EQ(floatToHalfBits(FLT_MAX), 0x7C00);
}

TEST(Half, SubnormalsAndUnderflow) {
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -14)), 0x0400);           // smallest normal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);           // smallest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1023.0f, -24)), 0x03FF);        // largest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1023.5f, -24)), 0x0400);        // tie: to even, the smallest normal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);           // tie between 0 and 1 ulp: 0
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25) * 1.0001f), 0x0001); // just above the tie
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0f, -25)), 0x0002);           // 1.5 ulp: tie to even (2)
  EXPECT_EQ(floatToHalfBits(std::ldexp(5.0f, -25)), 0x0002);           // 2.5 ulp: tie to even (2)
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(floatToHalfBits(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -140)), 0x0000);  // a float subnormal
  EXPECT_EQ(halfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0x8200), -std::ldexp(512.0f, -24));
}

TEST(Half, RoundingTiesToEven) {
  const float ulp = std::ldexp(1.0f, -10);  // at 1.0
  EXPECT_EQ(floatToHalfBits(1.0f + ulp / 2), 0x3C00);                     // tie, 0x3C00 is even
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * ulp / 2), 0x3C02);                 // tie, 0x3C01 odd: up
  EXPECT_EQ(floatToHalfBits(1.0f + ulp / 2 + std::ldexp(1.0f, -20)), 0x3C01);  // above the tie
  EXPECT_EQ(floatToHalfBits(1.0f + ulp / 2 - std::ldexp(1.0f, -20)), 0x3C00);  // below the tie
  EXPECT_EQ(floatToHalfBits(2047.0f + 0.5f), 0x67FF + 1);  // 2047.5 -> 2048 (0x6800)
}

TEST(Half, NaNStaysNaN) {
  uint16_t h = floatToHalfBits(std::nanf(""));
  EXPECT_EQ(h & 0x7C00, 0x7C00);
  EXPECT_NE(h & 0x03FF, 0);
  // A NaN whose payload lives only in the low bits must not become infinity.
  h = floatToHalfBits(bitsToFloat(0x7F800001u));
  EXPECT_EQ(h & 0x7C00, 0x7C00);
  EXPECT_NE(h & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7E00)));
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = halfBitsToFloat(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfBitsToFloat(floatToHalfBits(f))));
      continue;
    }
    ASSERT_EQ(floatToHalfBits(f), h) << std::hex << h;
  }
}

TEST(Bf16, KnownBitPatternsAndTies) {
  EXPECT_EQ(floatToBf16Bits(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16Bits(-2.0f), 0xC000);
  EXPECT_EQ(floatToBf16Bits(3.14159265f), 0x4049);
  EXPECT_EQ(floatToBf16Bits(0.0f), 0x0000);
  EXPECT_EQ(floatToBf16Bits(-0.0f), 0x8000);
  const float ulp = std::ldexp(1.0f, -7);  // at 1.0
  EXPECT_EQ(floatToBf16Bits(1.0f + ulp / 2), 0x3F80);                                   // tie to even: down
  EXPECT_EQ(floatToBf16Bits(1.0f + 3 * ulp / 2), 0x3F82);                               // tie to even: up
  EXPECT_EQ(floatToBf16Bits(1.0f + ulp / 2 + std::ldexp(1.0f, -20)), 0x3F81);           // above the tie
  EXPECT_EQ(floatToBf16Bits(FLT_MAX), 0x7F80);                                          // rounds to infinity
  EXPECT_EQ(floatToBf16Bits(INFINITY), 0x7F80);
  EXPECT_EQ(floatToBf16Bits(-INFINITY), 0xFF80);
  uint16_t n = floatToBf16Bits(bitsToFloat(0x7F800001u));  // NaN with a low payload only
  EXPECT_EQ(n & 0x7F80, 0x7F80);
  EXPECT_NE(n & 0x007F, 0);
  EXPECT_EQ(bf16BitsToFloat(0x3F80), 1.0f);
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = bf16BitsToFloat(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(floatToBf16Bits(f), h) << std::hex << h;
  }
}

TEST(GemmReference, HandComputedInEveryLayout) {
  // A = [[1, 2], [3, 4]] (MxK), B = [[5, 6], [7, 8]] (KxN): C = [[19, 22], [43, 50]].
  const std::vector<double> want = {19, 22, 43, 50};
  struct Case {
    Layout l;
    std::vector<float> a, b;  // storage order
  } cases[] = {{Layout::NN, {1, 2, 3, 4}, {5, 6, 7, 8}},
               {Layout::NT, {1, 2, 3, 4}, {5, 7, 6, 8}},   // B stored NxK
               {Layout::TN, {1, 3, 2, 4}, {5, 6, 7, 8}}};  // A stored KxM
  for (const auto& c : cases) {
    auto p = GemmHostProblem::fromValues(gemm(2, 2, 2, c.l), c.a, c.b);
    ASSERT_TRUE(p.ok()) << p.error();
    EXPECT_TRUE(p->fullCheck());
    EXPECT_EQ(p->reference(), want) << layoutName(c.l);
    EXPECT_EQ(p->a(1, 0), 3.0f);
    EXPECT_EQ(p->b(0, 1), 6.0f);
  }
}

TEST(GemmReference, NonSquareLayoutsAgree) {
  // The same logical A (3x4) and B (4x2) stored three ways give the same reference.
  const int64_t M = 3, N = 2, K = 4;
  std::vector<float> A(M * K), B(K * N);
  for (int64_t i = 0; i < M * K; ++i) A[i] = float(i % 5) - 2;
  for (int64_t i = 0; i < K * N; ++i) B[i] = float(i % 3) * 0.5f - 0.25f;
  std::vector<float> At(K * M), Bt(N * K);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) At[k * M + i] = A[i * K + k];
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) Bt[j * K + k] = B[k * N + j];
  auto nn = GemmHostProblem::fromValues(gemm(M, N, K, Layout::NN), A, B);
  auto nt = GemmHostProblem::fromValues(gemm(M, N, K, Layout::NT), A, Bt);
  auto tn = GemmHostProblem::fromValues(gemm(M, N, K, Layout::TN), At, B);
  ASSERT_TRUE(nn.ok() && nt.ok() && tn.ok());
  EXPECT_EQ(nn->reference(), nt->reference());
  EXPECT_EQ(nn->reference(), tn->reference());
  double c01 = 0;
  for (int64_t k = 0; k < K; ++k) c01 += double(A[0 * K + k]) * double(B[k * N + 1]);
  EXPECT_EQ(nn->reference()[1], c01);
}

// C computed on the host from the problem's stored inputs, independently of the reference code,
// then encoded as c_type.
std::vector<uint8_t> hostGemm(const GemmHostProblem& p) {
  const GemmWorkload& w = p.workload();
  std::vector<float> a(size_t(w.m * w.k)), b(size_t(w.k * w.n));
  decodeDType(p.aBytes().data(), int64_t(a.size()), w.a_type, a.data());
  decodeDType(p.bBytes().data(), int64_t(b.size()), w.b_type, b.data());
  std::vector<float> c(size_t(w.m * w.n));
  for (int64_t i = 0; i < w.m; ++i)
    for (int64_t j = 0; j < w.n; ++j) {
      float s = 0;  // f32 accumulation, as a GPU kernel would
      for (int64_t k = 0; k < w.k; ++k) {
        float x = w.layout == Layout::TN ? a[k * w.m + i] : a[i * w.k + k];
        float y = w.layout == Layout::NT ? b[j * w.k + k] : b[k * w.n + j];
        s += x * y;
      }
      c[size_t(i * w.n + j)] = s;
    }
  std::vector<uint8_t> out(size_t(p.cBytes()));
  encodeDType(c.data(), int64_t(c.size()), w.c_type, out.data());
  return out;
}

void setC(std::vector<uint8_t>& c, DType t, int64_t idx, float v) { encodeDType(&v, 1, t, c.data() + idx * dtypeBytes(t)); }

TEST(GemmCheck, EveryLayoutAndDTypePassesAndCatchesOneWrongEntry) {
  for (Layout l : {Layout::NN, Layout::NT, Layout::TN})
    for (DType in : {DType::F32, DType::F16, DType::BF16})
      for (DType out : {DType::F32, DType::F16}) {
        GemmWorkload w = gemm(7, 5, 33, l, in, out);
        SCOPED_TRACE(w.key());
        auto p = GemmHostProblem::create(w, 7);
        ASSERT_TRUE(p.ok()) << p.error();
        EXPECT_TRUE(p->fullCheck());
        EXPECT_EQ(p->checkedEntries(), 35);
        auto c = hostGemm(*p);
        CheckResult ok = checkGemmResult(*p, c.data(), defaultTolerance(w));
        EXPECT_TRUE(ok.ok) << ok.message;
        EXPECT_EQ(ok.checked, 35);
        EXPECT_EQ(ok.failures, 0);
        EXPECT_TRUE(ok.message.empty());

        auto bad = c;
        setC(bad, out, 3 * 5 + 4, float(p->reference()[3 * 5 + 4]) + 0.5f);
        CheckResult r = checkGemmResult(*p, bad.data(), defaultTolerance(w));
        EXPECT_FALSE(r.ok);
        EXPECT_EQ(r.failures, 1);
        EXPECT_GE(r.max_abs_err, 0.4);
        EXPECT_NE(r.message.find("C[3][4]"), std::string::npos) << r.message;
        EXPECT_NE(r.message.find("1 of 35"), std::string::npos) << r.message;

        auto nan = c;
        setC(nan, out, 0, std::nanf(""));
        CheckResult rn = checkGemmResult(*p, nan.data(), defaultTolerance(w));
        EXPECT_FALSE(rn.ok);
        EXPECT_NE(rn.message.find("C[0][0] = nan"), std::string::npos) << rn.message;
      }
}

TEST(GemmCheck, ToleranceBoundary) {
  GemmWorkload w = gemm(4, 4, 16, Layout::NN);
  auto p = GemmHostProblem::create(w);
  ASSERT_TRUE(p.ok());
  Tolerance t = defaultTolerance(w);
  EXPECT_DOUBLE_EQ(t.rtol, 1e-3);
  EXPECT_DOUBLE_EQ(t.atol, 1e-4 * 4);
  EXPECT_DOUBLE_EQ(defaultTolerance(gemm(4, 4, 16, Layout::NN, DType::F16)).rtol, 1e-2);
  EXPECT_DOUBLE_EQ(defaultTolerance(gemm(4, 4, 16, Layout::NN, DType::BF16)).atol, 1e-3 * 4);
  const double ref = p->reference()[5];
  const double bound = t.atol + t.rtol * std::fabs(ref);
  std::vector<float> c(16);
  for (int i = 0; i < 16; ++i) c[size_t(i)] = float(p->reference()[size_t(i)]);
  c[5] = float(ref + 0.9 * bound);
  EXPECT_TRUE(checkGemmResult(*p, c.data(), t).ok);
  c[5] = float(ref + 1.1 * bound);
  EXPECT_FALSE(checkGemmResult(*p, c.data(), t).ok);
}

TEST(GemmCheck, SampledCheckOfALargeProblem) {
  GemmWorkload w = gemm(40, 30, 8, Layout::NT, DType::F16);
  CheckPolicy policy{0, 64};  // never all entries
  auto p = GemmHostProblem::create(w, 3, policy);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->fullCheck());
  EXPECT_GE(p->checkedEntries(), 64);
  EXPECT_LT(p->checkedEntries(), 40 * 30);
  const auto& idx = p->checkedIndices();
  ASSERT_EQ(int64_t(idx.size()), p->checkedEntries());
  EXPECT_TRUE(std::is_sorted(idx.begin(), idx.end()));
  for (int64_t corner : {int64_t(0), int64_t(29), int64_t(39 * 30), int64_t(40 * 30 - 1)})
    EXPECT_TRUE(std::binary_search(idx.begin(), idx.end(), corner)) << corner;
  for (size_t n = 0; n < idx.size(); ++n)
    EXPECT_EQ(p->reference()[n], p->referenceEntry(idx[n] / 30, idx[n] % 30));
  // Deterministic: the same sample every time.
  auto again = GemmHostProblem::create(w, 3, policy);
  EXPECT_EQ(again->checkedIndices(), idx);

  auto c = hostGemm(*p);
  EXPECT_TRUE(checkGemmResult(*p, c.data(), defaultTolerance(w)).ok);
  auto bad = c;
  int64_t victim = idx[idx.size() / 2];
  setC(bad, DType::F32, victim, 100.0f);
  CheckResult r = checkGemmResult(*p, bad.data(), defaultTolerance(w));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.checked, p->checkedEntries());
  EXPECT_NE(r.message.find("C[" + std::to_string(victim / 30) + "][" + std::to_string(victim % 30) + "]"),
            std::string::npos)
      << r.message;
}

TEST(GemmInputs, DeterministicRoundedAndInRange) {
  GemmWorkload w = gemm(16, 8, 12, Layout::TN, DType::BF16);
  auto p1 = GemmHostProblem::create(w, 11), p2 = GemmHostProblem::create(w, 11), p3 = GemmHostProblem::create(w, 12);
  ASSERT_TRUE(p1.ok() && p2.ok() && p3.ok());
  EXPECT_EQ(p1->aBytes(), p2->aBytes());
  EXPECT_EQ(p1->bBytes(), p2->bBytes());
  EXPECT_NE(p1->aBytes(), p3->aBytes());
  EXPECT_EQ(p1->aBytes().size(), size_t(16 * 12 * 2));
  EXPECT_EQ(p1->cBytes(), 16 * 8 * 4);
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t k = 0; k < 12; ++k) {
      float v = p1->a(i, k);
      EXPECT_LE(std::fabs(v), 1.0f);
      EXPECT_EQ(roundToDType(v, DType::BF16), v);
    }
  EXPECT_FALSE(GemmHostProblem::create(gemm(0, 4, 4, Layout::NN)).ok());
}
