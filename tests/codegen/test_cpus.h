// Synthetic host CPUs for tests that build schedule spaces: fixed, so that a space (and its
// fingerprint) does not depend on the machine the tests run on. No cache sizes.
#pragma once

#include "sextant/hwspec/target.h"

namespace sextant::test {

inline HostCpu vectorCpu(const char* isa, int bits, int registers) {
  HostCpu c;
  c.vector_isa = isa;
  c.vector_bits = bits;
  c.vector_registers = registers;
  return c;
}

// An AVX-512 CPU (32 vector registers of 512 bits) and an AVX2 one (16 of 256 bits).
inline HostCpu avx512() { return vectorCpu("avx512", 512, 32); }
inline HostCpu avx2() { return vectorCpu("avx2", 256, 16); }

}  // namespace sextant::test
