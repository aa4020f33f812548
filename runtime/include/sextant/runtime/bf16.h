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

}  // namespace sextant
