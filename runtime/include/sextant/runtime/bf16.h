// bf16 (bfloat16: the upper 16 bits of an f32) and s8 for the CPU runner and the reference libraries
// (issue #37). A bf16 workload's problem holds f32 values that are exactly representable in bf16
// (its random inputs rounded once), so that the f32 reference (OpenBLAS on those values: every
// product exact in f32) and a kernel fed their bf16 copies compute the same sums; an s8 workload's
// holds integers in [-128, 127], its reference exact (sums in doubles), its kernels writing s32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sextant {

// Round to nearest, ties to even (NaN kept a NaN).
inline uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
inline float fromBf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float roundToBf16(float f) { return fromBf16(toBf16(f)); }
inline void toBf16(const float* src, size_t n, uint16_t* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = toBf16(src[i]);
}

inline void toS8(const float* src, size_t n, int8_t* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = int8_t(src[i] < -128.f ? -128 : src[i] > 127.f ? 127 : int(src[i]));
}

// B (bf16 or s8: T of 2 or 1 bytes; K x N row-major, or N x K with `transposed`) stored as the AMX
// route's packed weight (codegen/src/amx_kernel.h): VNNI tiles [N / 16][K / s][16][s] with s =
// 64 / sizeof(T) K values per tile, tile (jt, kt) row p holding the K group of v = 4 / sizeof(T)
// values (s kt + v p ..) of columns 16 jt.. interleaved. N % 16 == 0, K % s == 0.
template <typename T>
void storeInAmxTiles(const T* b, bool transposed, int64_t k, int64_t n, T* dst) {
  constexpr int64_t s = 64 / int64_t(sizeof(T)), v = 4 / int64_t(sizeof(T));
  for (int64_t jt = 0; jt < n / 16; ++jt)
    for (int64_t kt = 0; kt < k / s; ++kt)
      for (int64_t p = 0; p < 16; ++p)
        for (int64_t j = 0; j < 16; ++j)
          for (int64_t q = 0; q < v; ++q) {
            const int64_t kk = s * kt + v * p + q, nn = 16 * jt + j;
            *dst++ = transposed ? b[nn * k + kk] : b[kk * n + nn];
          }
}

}  // namespace sextant
