// Text pieces of the ops' payloads (codegen/src/ops/).
#pragma once

#include <vector>
#include <sstream>
#include <string>

#include "sextant/codegen/workload.h"

namespace sextant::ops_detail {

// "4x8x16xf32": a tensor or memref type's shape and element type.
inline std::string shapedType(const std::vector<int64_t>& dims, DType t) {
  std::string s;
  for (int64_t d : dims) s += std::to_string(d) + "x";
  return s + mlirTypeName(t);
}

// The payload's head: the public function `sextant_gemm(%A, %B, %C)` on memrefs of the types `a`,
// `b`, `c` (C interface), the operands as tensors %a, %b, %c (C writable: destination-passing) and
// the zero %zero of type `zero`.
inline std::string payloadHead(const std::string& key, const std::string& a, const std::string& b, const std::string& c,
                               const std::string& zero) {
  std::ostringstream o;
  o << "// Sextant payload for " << key << "\n"
    << "func.func @sextant_gemm(%A: memref<" << a << ">, %B: memref<" << b << ">, %C: memref<" << c
    << ">) attributes {llvm.emit_c_interface} {\n"
    << "  %a = bufferization.to_tensor %A restrict : memref<" << a << "> to tensor<" << a << ">\n"
    << "  %b = bufferization.to_tensor %B restrict : memref<" << b << "> to tensor<" << b << ">\n"
    << "  %c = bufferization.to_tensor %C restrict writable : memref<" << c << "> to tensor<" << c << ">\n"
    << "  %zero = arith.constant " << (zero[0] == 'i' ? "0" : "0.0") << " : " << zero << "\n";
  return o.str();
}

}  // namespace sextant::ops_detail
