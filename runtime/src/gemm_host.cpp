#include "sextant/runtime/gemm_host.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

namespace sextant {

uint16_t floatToHalfBits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) {                                              // infinity or NaN
    if (mant) return uint16_t(sign | 0x7e00u | (mant >> 13));     // quiet NaN, top payload bits
    return uint16_t(sign | 0x7c00u);
  }
  const int e = int(exp) - 127 + 15;  // biased half exponent
  if (e >= 31) return uint16_t(sign | 0x7c00u);
  if (e <= 0) {
    // Subnormal half: value = m * 2^-24 with m = (0x800000 | mant) >> (14 - e), rounded. Below
    // half the smallest subnormal (e < -10) everything rounds to zero.
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000u;  // the implicit bit
    const int shift = 14 - e;  // 14..24
    uint32_t m = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (m & 1))) ++m;  // may carry into the smallest normal: right
    return uint16_t(sign | m);
  }
  uint32_t h = sign | (uint32_t(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // a carry may reach infinity: right
  return uint16_t(h);
}

float halfBitsToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBf16Bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;  // ties to even; overflow reaches infinity
  return uint16_t(x >> 16);
}

float bf16BitsToFloat(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

float roundToDType(float f, DType t) {
  switch (t) {
    case DType::F32: return f;
    case DType::F16: return halfBitsToFloat(floatToHalfBits(f));
    case DType::BF16: return bf16BitsToFloat(floatToBf16Bits(f));
    // Integer types are the CPU's AMX route's (tune refuses them for GPU targets): rounded values.
    case DType::S8: return std::fmin(127.f, std::fmax(-128.f, std::nearbyint(f)));
    case DType::S32: return std::nearbyint(f);
  }
  return f;
}

void encodeDType(const float* in, int64_t n, DType t, void* out) {
  if (t == DType::S8 || t == DType::S32) {  // (the CPU's AMX route's types: not a GPU's)
    for (int64_t i = 0; i < n; ++i) {
      const float r = roundToDType(in[i], t);
      if (t == DType::S8) static_cast<int8_t*>(out)[i] = int8_t(r);
      else static_cast<int32_t*>(out)[i] = int32_t(r);
    }
    return;
  }
  if (t == DType::F32) {
    memcpy(out, in, size_t(n) * 4);
    return;
  }
  auto* o = static_cast<uint16_t*>(out);
  for (int64_t i = 0; i < n; ++i) o[i] = t == DType::F16 ? floatToHalfBits(in[i]) : floatToBf16Bits(in[i]);
}

void decodeDType(const void* in, int64_t n, DType t, float* out) {
  if (t == DType::S8 || t == DType::S32) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = t == DType::S8 ? float(static_cast<const int8_t*>(in)[i]) : float(static_cast<const int32_t*>(in)[i]);
    return;
  }
  if (t == DType::F32) {
    memcpy(out, in, size_t(n) * 4);
    return;
  }
  const auto* p = static_cast<const uint16_t*>(in);
  for (int64_t i = 0; i < n; ++i) out[i] = t == DType::F16 ? halfBitsToFloat(p[i]) : bf16BitsToFloat(p[i]);
}

Tolerance defaultTolerance(const GemmWorkload& w) {
  const double sk = std::sqrt(double(std::max<int64_t>(w.k, 1)));
  if (w.a_type == DType::F32 && w.b_type == DType::F32 && w.c_type == DType::F32) return {1e-3, 1e-4 * sk};
  return {1e-2, 1e-3 * sk};
}

namespace {

float elementAt(const std::vector<uint8_t>& bytes, int64_t index, DType t) {
  switch (t) {
    case DType::F32: {
      float f;
      memcpy(&f, bytes.data() + size_t(index) * 4, 4);
      return f;
    }
    case DType::F16: {
      uint16_t h;
      memcpy(&h, bytes.data() + size_t(index) * 2, 2);
      return halfBitsToFloat(h);
    }
    case DType::BF16: {
      uint16_t h;
      memcpy(&h, bytes.data() + size_t(index) * 2, 2);
      return bf16BitsToFloat(h);
    }
    case DType::S8: return float(int8_t(bytes[size_t(index)]));
    case DType::S32: {
      int32_t v;
      memcpy(&v, bytes.data() + size_t(index) * 4, 4);
      return float(v);
    }
  }
  return 0;
}

// Runs body(begin, end) over [0, n) on up to hardware_concurrency threads.
template <typename F>
void parallelFor(int64_t n, int64_t grain, F body) {
  int64_t threads = std::max<int64_t>(1, std::min<int64_t>(std::thread::hardware_concurrency(), n / std::max<int64_t>(grain, 1)));
  threads = std::min<int64_t>(threads, 64);
  if (threads <= 1) {
    body(int64_t(0), n);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t chunk = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b >= e) break;
    pool.emplace_back([=] { body(b, e); });
  }
  for (auto& th : pool) th.join();
}

double dot(const float* x, const float* y, int64_t k) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= k; i += 4) {
    s0 += double(x[i]) * double(y[i]);
    s1 += double(x[i + 1]) * double(y[i + 1]);
    s2 += double(x[i + 2]) * double(y[i + 2]);
    s3 += double(x[i + 3]) * double(y[i + 3]);
  }
  for (; i < k; ++i) s0 += double(x[i]) * double(y[i]);
  return (s0 + s1) + (s2 + s3);
}

}  // namespace

// Rows of A and C are global: row r of batch element r / M (a batched matmul is a (B*M) x N C).
float GemmHostProblem::a(int64_t i, int64_t k) const {
  const int64_t e = i / w_.m, r = i % w_.m;
  return elementAt(a_bytes_, e * w_.m * w_.k + (w_.layout == Layout::TN ? k * w_.m + r : r * w_.k + k), w_.a_type);
}

float GemmHostProblem::b(int64_t k, int64_t j) const { return bOf(0, k, j); }

float GemmHostProblem::bOf(int64_t e, int64_t k, int64_t j) const {
  return elementAt(b_bytes_, e * w_.k * w_.n + (w_.layout == Layout::NT ? j * w_.k + k : k * w_.n + j), w_.b_type);
}

double GemmHostProblem::referenceEntry(int64_t i, int64_t j) const {
  std::vector<float> x(size_t(w_.k)), y(size_t(w_.k));
  for (int64_t k = 0; k < w_.k; ++k) {
    x[size_t(k)] = a(i, k);
    y[size_t(k)] = bOf(i / w_.m, k, j);
  }
  return dot(x.data(), y.data(), w_.k);
}

void GemmHostProblem::computeReference(const CheckPolicy& policy) {
  const int64_t Bt = w_.batch, M = w_.m * Bt, N = w_.n, K = w_.k;
  const double mnk = double(M) * double(N) * double(K);
  full_ = mnk <= double(policy.full_limit) || M * N <= policy.samples + 4;
  idx_.clear();
  if (full_) {
    // A as (B*M)xK and B transposed (B*N x K), both row-major, so every entry is a contiguous dot product.
    std::vector<float> at(size_t(M * K)), bt(size_t(Bt * N * K));
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) at[size_t(i * K + k)] = a(i, k);
    for (int64_t e = 0; e < Bt; ++e)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k) bt[size_t((e * N + j) * K + k)] = bOf(e, k, j);
    ref_.assign(size_t(M * N), 0.0);
    parallelFor(M, std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(N * K, 1)), [&](int64_t b0, int64_t e0) {
      for (int64_t i = b0; i < e0; ++i)
        for (int64_t j = 0; j < N; ++j)
          ref_[size_t(i * N + j)] = dot(&at[size_t(i * K)], &bt[size_t(((i / w_.m) * N + j) * K)], K);
    });
    return;
  }
  // A deterministic sample: the corners, then pseudo-random distinct entries.
  std::vector<int64_t> picks = {0, N - 1, (M - 1) * N, M * N - 1};
  std::mt19937_64 rng(0x5e47a47ull ^ uint64_t(M * 1000003 + N * 7919 + K));
  std::uniform_int_distribution<int64_t> d(0, M * N - 1);
  while (int64_t(picks.size()) < policy.samples + 4) picks.push_back(d(rng));
  std::sort(picks.begin(), picks.end());
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  while (int64_t(picks.size()) < policy.samples) {  // top up after duplicates
    picks.push_back(d(rng));
    std::sort(picks.begin(), picks.end());
    picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  }
  idx_ = std::move(picks);
  ref_.assign(idx_.size(), 0.0);
  parallelFor(int64_t(idx_.size()), 64, [&](int64_t b0, int64_t e0) {
    for (int64_t n = b0; n < e0; ++n) ref_[size_t(n)] = referenceEntry(idx_[size_t(n)] / N, idx_[size_t(n)] % N);
  });
}

Result<GemmHostProblem> GemmHostProblem::fromValues(const GemmWorkload& w, const std::vector<float>& a,
                                                    const std::vector<float>& b, CheckPolicy policy) {
  if (w.m <= 0 || w.n <= 0 || w.k <= 0 || w.batch <= 0) return Error{"GEMM sizes must be positive (got " + w.key() + ")"};
  if (w.isConv()) return Error{"not a (batched) GEMM: " + w.key()};
  if (int64_t(a.size()) != w.batch * w.m * w.k || int64_t(b.size()) != w.batch * w.k * w.n)
    return Error{"input sizes do not match " + w.key()};
  GemmHostProblem p;
  p.w_ = w;
  p.a_bytes_.resize(a.size() * size_t(dtypeBytes(w.a_type)));
  p.b_bytes_.resize(b.size() * size_t(dtypeBytes(w.b_type)));
  encodeDType(a.data(), int64_t(a.size()), w.a_type, p.a_bytes_.data());
  encodeDType(b.data(), int64_t(b.size()), w.b_type, p.b_bytes_.data());
  p.computeReference(policy);
  return p;
}

Result<GemmHostProblem> GemmHostProblem::create(const GemmWorkload& w, uint64_t seed, CheckPolicy policy) {
  if (w.m <= 0 || w.n <= 0 || w.k <= 0) return Error{"GEMM sizes must be positive (got " + w.key() + ")"};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> a(size_t(std::max<int64_t>(w.batch, 1) * w.m * w.k)), b(size_t(std::max<int64_t>(w.batch, 1) * w.k * w.n));
  for (auto& x : a) x = d(rng);
  for (auto& x : b) x = d(rng);
  auto p = fromValues(w, a, b, policy);
  if (p) p->seed_ = seed;
  return p;
}

CheckResult checkGemmResult(const GemmHostProblem& p, const void* c, const Tolerance& t) {
  const GemmWorkload& w = p.workload();
  CheckResult r;
  r.checked = p.checkedEntries();
  int64_t first_bad = -1;
  double first_c = 0, first_ref = 0, first_err = 0;
  const auto& ref = p.reference();
  for (int64_t n = 0; n < r.checked; ++n) {
    const int64_t idx = p.checkedIndex(n);
    float cv;
    decodeDType(static_cast<const uint8_t*>(c) + size_t(idx) * size_t(dtypeBytes(w.c_type)), 1, w.c_type, &cv);
    const double rv = ref[size_t(n)];
    double err = std::fabs(double(cv) - rv);
    if (!std::isfinite(err)) err = 1e300;
    if (!(err <= t.atol + t.rtol * std::fabs(rv)) || !std::isfinite(cv)) {
      if (first_bad < 0) {
        first_bad = idx;
        first_c = cv;
        first_ref = rv;
        first_err = err;
      }
      ++r.failures;
    }
    r.max_abs_err = std::max(r.max_abs_err, err);
  }
  r.ok = r.failures == 0;
  if (!r.ok) {
    char msg[512];
    const int64_t row = first_bad / w.n, col = first_bad % w.n;
    char at[96];
    if (w.batched())
      snprintf(at, sizeof at, "[%lld][%lld][%lld]", (long long)(row / w.m), (long long)(row % w.m), (long long)col);
    else
      snprintf(at, sizeof at, "[%lld][%lld]", (long long)row, (long long)col);
    snprintf(msg, sizeof msg,
             "wrong result: C%s = %.9g, expected %.9g (|error| %.3g > %.3g + %.3g*|expected|); "
             "%lld of %lld checked entries wrong, max |error| %.3g",
             at, first_c, first_ref, first_err, t.atol, t.rtol, (long long)r.failures, (long long)r.checked,
             r.max_abs_err);
    r.message = msg;
  }
  return r;
}

}  // namespace sextant
