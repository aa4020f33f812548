// Synthetic host CPUs for tests that build schedule spaces: fixed, so that a space (and its
// fingerprint) does not depend on the machine the tests run on.
#pragma once

#include "sextant/hwspec/target.h"

namespace sextant::test {

// An AVX-512 CPU (32 vector registers of 512 bits); no cache sizes.
inline HostCpu avx512() {
  HostCpu c;
  c.vector_isa = "avx512";
  c.vector_bits = 512;
  c.vector_registers = 32;
  return c;
}

// An AVX2 CPU (16 vector registers of 256 bits).
inline HostCpu avx2() {
  HostCpu c;
  c.vector_isa = "avx2";
  c.vector_bits = 256;
  c.vector_registers = 16;
  return c;
}

}  // namespace sextant::test
