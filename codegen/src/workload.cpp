#include "sextant/codegen/workload.h"

#include <sstream>

#include "sextant/common/strings.h"

namespace sextant {

const char* dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

Result<DType> parseDType(const std::string& s) {
  if (s == "f32") return DType::F32;
  if (s == "f16") return DType::F16;
  if (s == "bf16") return DType::BF16;
  return Error{"unknown dtype '" + s + "' (known: f32, f16, bf16)"};
}

int dtypeBytes(DType t) { return t == DType::F32 ? 4 : 2; }

const char* layoutName(Layout l) {
  switch (l) {
    case Layout::NN: return "NN";
    case Layout::NT: return "NT";
    case Layout::TN: return "TN";
  }
  return "?";
}

Result<Layout> parseLayout(const std::string& s) {
  if (s == "NN" || s == "nn") return Layout::NN;
  if (s == "NT" || s == "nt") return Layout::NT;
  if (s == "TN" || s == "tn") return Layout::TN;
  return Error{"unknown layout '" + s + "' (known: NN, NT, TN)"};
}

std::string GemmWorkload::shapeString() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

std::string GemmWorkload::key() const {
  return std::string("gemm:") + layoutName(layout) + ":" + shapeString() + ":" + dtypeName(a_type) +
         "*" + dtypeName(b_type) + "->" + dtypeName(c_type);
}

int64_t GemmWorkload::bytesNeeded() const {
  return m * k * dtypeBytes(a_type) + k * n * dtypeBytes(b_type) + 2 * m * n * dtypeBytes(c_type);
}

static std::string tensorType(int64_t r, int64_t c, DType t) {
  return std::to_string(r) + "x" + std::to_string(c) + "x" + dtypeName(t);
}

std::string GemmWorkload::payloadMlir() const {
  const bool ta = layout == Layout::TN, tb = layout == Layout::NT;
  std::string aT = ta ? tensorType(k, m, a_type) : tensorType(m, k, a_type);
  std::string bT = tb ? tensorType(n, k, b_type) : tensorType(k, n, b_type);
  std::string cT = tensorType(m, n, c_type);
  std::string maps;
  if (ta || tb) {
    maps = std::string(" indexing_maps = [") +
           (ta ? "affine_map<(d0, d1, d2) -> (d2, d0)>" : "affine_map<(d0, d1, d2) -> (d0, d2)>") + ", " +
           (tb ? "affine_map<(d0, d1, d2) -> (d1, d2)>" : "affine_map<(d0, d1, d2) -> (d2, d1)>") +
           ", affine_map<(d0, d1, d2) -> (d0, d1)>]";
  }
  std::ostringstream o;
  o << "// Sextant payload for " << key() << "\n"
    << "func.func @sextant_gemm(%A: memref<" << aT << ">, %B: memref<" << bT << ">, %C: memref<" << cT
    << ">) attributes {llvm.emit_c_interface} {\n"
    << "  %a = bufferization.to_tensor %A restrict : memref<" << aT << "> to tensor<" << aT << ">\n"
    << "  %b = bufferization.to_tensor %B restrict : memref<" << bT << "> to tensor<" << bT << ">\n"
    << "  %c = bufferization.to_tensor %C restrict writable : memref<" << cT << "> to tensor<" << cT << ">\n"
    << "  %zero = arith.constant 0.0 : " << dtypeName(c_type) << "\n"
    << "  %z = linalg.fill ins(%zero : " << dtypeName(c_type) << ") outs(%c : tensor<" << cT
    << ">) -> tensor<" << cT << ">\n"
    << "  %r = linalg.matmul" << maps << " ins(%a, %b : tensor<" << aT << ">, tensor<" << bT
    << ">) outs(%z : tensor<" << cT << ">) -> tensor<" << cT << ">\n"
    << "  bufferization.materialize_in_destination %r in restrict writable %C : (tensor<" << cT
    << ">, memref<" << cT << ">) -> ()\n"
    << "  return\n"
    << "}\n";
  return o.str();
}

Result<GemmWorkload> makeGemmWorkload(const std::string& shape, const std::string& dtype, const std::string& layout) {
  auto w = parseGemmShape(shape);
  if (!w) return w;
  auto dt = parseDType(dtype);
  if (!dt) return Error{dt.error()};
  auto lay = parseLayout(layout);
  if (!lay) return Error{lay.error()};
  w->a_type = w->b_type = *dt;
  w->c_type = DType::F32;
  w->layout = *lay;
  return w;
}

Result<GemmWorkload> parseGemmShape(const std::string& shape) {
  auto parts = split(shape, 'x');
  if (parts.size() != 3)
    return Error{"malformed shape '" + shape + "': expected MxNxK, e.g. 1024x1024x1024"};
  int64_t v[3];
  for (int i = 0; i < 3; ++i) {
    if (!parseInt64(parts[i], v[i]))
      return Error{"malformed shape '" + shape + "': '" + parts[i] + "' is not an integer"};
    if (v[i] <= 0)
      return Error{"invalid shape '" + shape + "': every dimension must be positive"};
    if (v[i] > (int64_t(1) << 20))
      return Error{"invalid shape '" + shape + "': dimension " + parts[i] + " exceeds 1048576"};
  }
  GemmWorkload w;
  w.m = v[0];
  w.n = v[1];
  w.k = v[2];
  return w;
}

Result<GemmWorkload> parseWorkloadKey(const std::string& key) {
  auto parts = split(key, ':');
  if (parts.size() != 4 || parts[0] != "gemm") return Error{"malformed workload key '" + key + "'"};
  auto w = parseGemmShape(parts[2]);
  if (!w) return Error{"malformed workload key '" + key + "': " + w.error()};
  auto layout = parseLayout(parts[1]);
  if (!layout) return Error{"malformed workload key '" + key + "': " + layout.error()};
  w->layout = *layout;
  auto arrow = parts[3].find("->");
  auto star = parts[3].find('*');
  if (arrow == std::string::npos || star == std::string::npos || star > arrow)
    return Error{"malformed workload key '" + key + "'"};
  auto a = parseDType(parts[3].substr(0, star));
  auto b = parseDType(parts[3].substr(star + 1, arrow - star - 1));
  auto c = parseDType(parts[3].substr(arrow + 2));
  if (!a || !b || !c) return Error{"malformed workload key '" + key + "': bad dtype"};
  w->a_type = *a;
  w->b_type = *b;
  w->c_type = *c;
  return w;
}

Status validateForMemory(const GemmWorkload& w, int64_t available_bytes) {
  // Inputs, output, the reference result, and some headroom for the cache-flush buffer.
  int64_t need = w.bytesNeeded();
  if (need > available_bytes / 2) {
    return Error{"shape " + w.shapeString() + " needs " + std::to_string(need >> 20) +
                 " MiB of buffers, more than half of the " + std::to_string(available_bytes >> 20) +
                 " MiB of memory available"};
  }
  return okStatus();
}

}  // namespace sextant
