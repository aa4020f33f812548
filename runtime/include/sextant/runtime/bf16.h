// bf16 (bfloat16: the upper 16 bits of an f32) for the CPU runner and the reference libraries
// (issue #37). A bf16 workload's problem holds f32 values that are exactly representable in bf16
// (its random inputs rounded once), so that the f32 reference (OpenBLAS on those values: every
// product exact in f32) and a kernel fed their bf16 copies compute the same sums.
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

// B (bf16, K x N row-major, or N x K with `transposed`) stored as the AMX route's packed weight
// (codegen/src/amx_kernel.h): VNNI tiles [N / 16][K / 32][16][32], tile (jt, kt) row p holding the
// K pair (32 kt + 2p, 32 kt + 2p + 1) of columns 16 jt.. interleaved. N % 16 == 0, K % 32 == 0.
inline void storeInAmxTiles(const uint16_t* b, bool transposed, int64_t k, int64_t n, uint16_t* dst) {
  for (int64_t jt = 0; jt < n / 16; ++jt)
    for (int64_t kt = 0; kt < k / 32; ++kt)
      for (int64_t p = 0; p < 16; ++p)
        for (int64_t j = 0; j < 16; ++j)
          for (int64_t v = 0; v < 2; ++v) {
            const int64_t kk = 32 * kt + 2 * p + v, nn = 16 * jt + j;
            *dst++ = transposed ? b[nn * k + kk] : b[kk * n + nn];
          }
}

}  // namespace sextant
