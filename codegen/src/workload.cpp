#include "sextant/codegen/workload.h"

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/ops.h"

#include <vector>

#include "sextant/common/strings.h"

namespace sextant {

const char* dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::S8: return "s8";
    case DType::S32: return "s32";
  }
  return "?";
}

const char* mlirTypeName(DType t) {
  switch (t) {
    case DType::S8: return "i8";
    case DType::S32: return "i32";
    default: return dtypeName(t);
  }
}

Result<DType> parseDType(const std::string& s) {
  if (s == "f32") return DType::F32;
  if (s == "f16") return DType::F16;
  if (s == "bf16") return DType::BF16;
  if (s == "s8" || s == "i8") return DType::S8;
  if (s == "s32" || s == "i32") return DType::S32;
  return Error{"unknown dtype '" + s + "' (known: f32, f16, bf16, s8)"};
}

const char* lowPrecisionTypes(const GemmWorkload& w) {
  if (w.a_type == DType::BF16 && w.b_type == DType::BF16 && w.c_type == DType::F32) return "bf16 x bf16 -> f32";
  if (w.a_type == DType::S8 && w.b_type == DType::S8 && w.c_type == DType::S32) return "s8 x s8 -> s32";
  return nullptr;
}

int dtypeBytes(DType t) { return t == DType::F32 || t == DType::S32 ? 4 : t == DType::S8 ? 1 : 2; }

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

const char* opKindName(OpKind op) { return opOf(op).name(); }

std::string GemmWorkload::gemmShapeString() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

std::string GemmWorkload::shapeString() const { return opOf(op).shapeString(*this); }

std::string GemmWorkload::key() const {
  return std::string(opKindName(op)) + ":" + opOf(op).layoutField(*this) + ":" + shapeString() + ":" +
         dtypeName(a_type) + "*" + dtypeName(b_type) + "->" + dtypeName(c_type) + (weights ? ":weights" : "");
}

GemmWorkload GemmWorkload::element() const {
  GemmWorkload e = *this;
  e.op = OpKind::Gemm;
  e.batch = 1;
  return e;
}

double GemmWorkload::flops() const { return opOf(op).flops(*this); }

static int64_t elements(const OperandDims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}
int64_t GemmWorkload::aElements() const { return elements(opOf(op).operands(*this)[0]); }
int64_t GemmWorkload::bElements() const { return elements(opOf(op).operands(*this)[1]); }
int64_t GemmWorkload::cElements() const { return elements(opOf(op).operands(*this)[2]); }

int64_t GemmWorkload::bytesNeeded() const {
  return aElements() * dtypeBytes(a_type) + bElements() * dtypeBytes(b_type) + 2 * cElements() * dtypeBytes(c_type);
}

std::string GemmWorkload::payloadMlir() const {
  std::string text = opOf(op).payloadMlir(*this);
  // B is a weight: the compiler may read it in blocks the caller arranged (compiler.h).
  const std::string plain = "attributes {llvm.emit_c_interface}";
  if (const size_t at = text.find(plain); weights && at != std::string::npos)
    text.replace(at, plain.size(), std::string("attributes {llvm.emit_c_interface, ") + kWeightsAttr + "}");
  return text;
}

// "<op>:<layout>:<shape>:<a>*<b>-><c>", the op's own fields read by the op (ops.h).
Result<GemmWorkload> parseWorkloadKey(const std::string& key) {
  auto parts = split(key, ':');
  const bool weights = parts.size() == 5 && parts[4] == "weights";
  if (weights) parts.pop_back();
  if (parts.size() != 4) return Error{"malformed workload key '" + key + "'"};
  auto op = findOp(parts[0]);
  if (!op) return Error{"malformed workload key '" + key + "': " + op.error()};
  auto arrow = parts[3].find("->");
  auto star = parts[3].find('*');
  if (arrow == std::string::npos || star == std::string::npos || star > arrow)
    return Error{"malformed workload key '" + key + "'"};
  auto a = parseDType(parts[3].substr(0, star));
  auto b = parseDType(parts[3].substr(star + 1, arrow - star - 1));
  auto c = parseDType(parts[3].substr(arrow + 2));
  if (!a || !b || !c) return Error{"malformed workload key '" + key + "': bad dtype"};
  auto w = (*op)->fromKey(parts[1], parts[2], *a, *b, *c);
  if (!w) return Error{"malformed workload key '" + key + "': " + w.error()};
  if (weights) {
    if (w->op == OpKind::BatchMatmul) return Error{"malformed workload key '" + key + "': a batched matmul has no weights"};
    w->weights = true;
  }
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
