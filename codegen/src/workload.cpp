#include "sextant/codegen/workload.h"

#include <initializer_list>
#include <sstream>
#include <vector>

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

const char* opKindName(OpKind op) {
  switch (op) {
    case OpKind::Gemm: return "gemm";
    case OpKind::BatchMatmul: return "batch_matmul";
    case OpKind::Conv2d: return "conv2d";
  }
  return "?";
}

std::string GemmWorkload::gemmShapeString() const {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

std::string GemmWorkload::shapeString() const {
  if (isConv()) return conv.str();
  return (batched() ? std::to_string(batch) + "x" : std::string()) + gemmShapeString();
}

std::string GemmWorkload::key() const {
  return std::string(opKindName(op)) + ":" + (isConv() ? "NHWC" : layoutName(layout)) + ":" + shapeString() + ":" +
         dtypeName(a_type) + "*" + dtypeName(b_type) + "->" + dtypeName(c_type);
}

GemmWorkload GemmWorkload::element() const {
  GemmWorkload e = *this;
  e.op = OpKind::Gemm;
  e.batch = 1;
  return e;
}

int64_t GemmWorkload::bytesNeeded() const {
  return aElements() * dtypeBytes(a_type) + bElements() * dtypeBytes(b_type) + 2 * cElements() * dtypeBytes(c_type);
}

// "4x8x16xf32": a tensor or memref type's shape and element type.
static std::string shapedType(std::initializer_list<int64_t> dims, DType t) {
  std::string s;
  for (int64_t d : dims) s += std::to_string(d) + "x";
  return s + dtypeName(t);
}
// A GEMM operand's type: r x c, with a leading batch dimension when b > 0.
static std::string tensorType(int64_t b, int64_t r, int64_t c, DType t) {
  return b > 0 ? shapedType({b, r, c}, t) : shapedType({r, c}, t);
}

// linalg.conv_2d_nhwc_hwcf on the input padded by a tensor.pad (in the payload: the kernel pads,
// as a library's convolution does).
static std::string convPayload(const GemmWorkload& w) {
  const ConvDesc& d = w.conv;
  const std::string t = dtypeName(w.a_type);
  const DType e = w.a_type;
  const std::string in = shapedType({d.mb, d.ih, d.iw, d.ic}, e),
                    inp = shapedType({d.mb, d.paddedH(), d.paddedW(), d.ic}, e),
                    out = shapedType({d.mb, d.oh, d.ow, d.oc}, e);
  // Depthwise: the filter is kh x kw x c (HWC).
  const std::string fil = d.depthwise() ? shapedType({d.kh, d.kw, d.ic}, e) : shapedType({d.kh, d.kw, d.ic, d.oc}, e);
  const bool pad = d.ph > 0 || d.pw > 0;
  std::ostringstream o;
  o << "// Sextant payload for " << w.key() << "\n"
    << "func.func @sextant_gemm(%A: memref<" << in << ">, %B: memref<" << fil << ">, %C: memref<" << out
    << ">) attributes {llvm.emit_c_interface} {\n"
    << "  %a = bufferization.to_tensor %A restrict : memref<" << in << "> to tensor<" << in << ">\n"
    << "  %b = bufferization.to_tensor %B restrict : memref<" << fil << "> to tensor<" << fil << ">\n"
    << "  %c = bufferization.to_tensor %C restrict writable : memref<" << out << "> to tensor<" << out << ">\n"
    << "  %zero = arith.constant 0.0 : " << t << "\n";
  if (pad)
    o << "  %ap = tensor.pad %a low[0, " << d.ph << ", " << d.pw << ", 0] high[0, " << d.ph << ", " << d.pw
      << ", 0] {\n  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):\n    tensor.yield %zero : " << t
      << "\n  } : tensor<" << in << "> to tensor<" << inp << ">\n";
  o << "  %z = linalg.fill ins(%zero : " << t << ") outs(%c : tensor<" << out << ">) -> tensor<" << out << ">\n"
    << "  %r = " << (d.depthwise() ? "linalg.depthwise_conv_2d_nhwc_hwc" : "linalg.conv_2d_nhwc_hwcf")
    << " {dilations = dense<[" << d.dh + 1 << ", " << d.dw + 1
    << "]> : tensor<2xi64>, strides = dense<[" << d.sh << ", " << d.sw << "]> : tensor<2xi64>} ins("
    << (pad ? "%ap" : "%a") << ", %b : tensor<" << (pad ? inp : in) << ">, tensor<" << fil << ">) outs(%z : tensor<"
    << out << ">) -> tensor<" << out << ">\n"
    << "  bufferization.materialize_in_destination %r in restrict writable %C : (tensor<" << out << ">, memref<" << out
    << ">) -> ()\n"
    << "  return\n"
    << "}\n";
  return o.str();
}

bool convIsGemm(const GemmWorkload& w) {
  const ConvDesc& d = w.conv;
  return w.isConv() && d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 && d.pw == 0 && d.g == 1;
}

GemmWorkload convAsGemm(const GemmWorkload& w) {
  GemmWorkload g;
  g.m = w.m, g.n = w.n, g.k = w.k;
  g.a_type = w.a_type, g.b_type = w.b_type, g.c_type = w.c_type;
  return g;
}

// A 1x1 convolution with stride 1 and no padding as the GEMM it is: the NHWC input is M x K, the
// HWCF filter K x N and the NHWC output M x N, row-major, so the payload collapses the memrefs
// (no copy) and multiplies.
static std::string conv1x1Payload(const GemmWorkload& w) {
  const ConvDesc& d = w.conv;
  const DType e = w.a_type;
  auto ty2 = [e](int64_t a, int64_t b) { return shapedType({a, b}, e); };
  const std::string in = shapedType({d.mb, d.ih, d.iw, d.ic}, e), fil = shapedType({1, 1, d.ic, d.oc}, e),
                    out = shapedType({d.mb, d.oh, d.ow, d.oc}, e);
  std::string body = convAsGemm(w).payloadMlir();
  const size_t start = body.find("func.func"), end = body.find('\n', start);
  std::ostringstream o;
  o << "// Sextant payload for " << w.key() << " (a 1x1 convolution: the GEMM of its collapsed operands)\n"
    << "func.func @sextant_gemm(%A4: memref<" << in << ">, %B4: memref<" << fil << ">, %C4: memref<" << out
    << ">) attributes {llvm.emit_c_interface} {\n"
    << "  %A = memref.collapse_shape %A4 [[0, 1, 2], [3]] : memref<" << in << "> into memref<" << ty2(w.m, w.k) << ">\n"
    << "  %B = memref.collapse_shape %B4 [[0, 1, 2], [3]] : memref<" << fil << "> into memref<" << ty2(w.k, w.n) << ">\n"
    << "  %C = memref.collapse_shape %C4 [[0, 1, 2], [3]] : memref<" << out << "> into memref<" << ty2(w.m, w.n)
    << ">\n"
    << body.substr(end + 1);
  return o.str();
}

std::string GemmWorkload::payloadMlir() const {
  if (convIsGemm(*this)) return conv1x1Payload(*this);
  if (isConv()) return convPayload(*this);
  const bool ta = layout == Layout::TN, tb = layout == Layout::NT;
  const int64_t b = batched() ? batch : 0;  // 0: no batch dimension
  std::string aT = ta ? tensorType(b, k, m, a_type) : tensorType(b, m, k, a_type);
  std::string bT = tb ? tensorType(b, n, k, b_type) : tensorType(b, k, n, b_type);
  std::string cT = tensorType(b, m, n, c_type);
  std::string maps;
  if ((ta || tb) && !batched()) {
    maps = std::string(" indexing_maps = [") +
           (ta ? "affine_map<(d0, d1, d2) -> (d2, d0)>" : "affine_map<(d0, d1, d2) -> (d0, d2)>") + ", " +
           (tb ? "affine_map<(d0, d1, d2) -> (d1, d2)>" : "affine_map<(d0, d1, d2) -> (d2, d1)>") +
           ", affine_map<(d0, d1, d2) -> (d0, d1)>]";
  } else if (ta || tb) {
    // MLIR 22 has no batch_matmul_transpose_b: transposed operands are indexing maps
    // (d0 batch, d1 m, d2 n, d3 k).
    maps = std::string(" indexing_maps = [") +
           (ta ? "affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>" : "affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>") +
           ", " +
           (tb ? "affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>" : "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>") +
           ", affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]";
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
    << "  %r = " << (batched() ? "linalg.batch_matmul" : "linalg.matmul") << maps << " ins(%a, %b : tensor<" << aT << ">, tensor<" << bT
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

// n positive integers separated by 'x'; `syntax` and `example` for the error.
static Result<std::vector<int64_t>> parseDims(const std::string& shape, size_t n, const char* syntax,
                                              const char* example) {
  auto parts = split(shape, 'x');
  if (parts.size() != n)
    return Error{"malformed shape '" + shape + "': expected " + syntax + ", e.g. " + example};
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (!parseInt64(parts[i], v[i]))
      return Error{"malformed shape '" + shape + "': '" + parts[i] + "' is not an integer"};
    if (v[i] <= 0)
      return Error{"invalid shape '" + shape + "': every dimension must be positive"};
    if (v[i] > (int64_t(1) << 20))
      return Error{"invalid shape '" + shape + "': dimension " + parts[i] + " exceeds 1048576"};
  }
  return v;
}

Result<GemmWorkload> parseGemmShape(const std::string& shape) {
  auto v = parseDims(shape, 3, "MxNxK", "1024x1024x1024");
  if (!v) return Error{v.error()};
  GemmWorkload w;
  w.m = (*v)[0];
  w.n = (*v)[1];
  w.k = (*v)[2];
  return w;
}

Result<GemmWorkload> parseBatchMatmulShape(const std::string& shape) {
  auto v = parseDims(shape, 4, "BxMxNxK (batch, then the GEMM's M, N, K)", "12x128x128x64");
  if (!v) return Error{v.error()};
  GemmWorkload w;
  w.op = OpKind::BatchMatmul;
  w.batch = (*v)[0];
  w.m = (*v)[1];
  w.n = (*v)[2];
  w.k = (*v)[3];
  return w;
}

Result<GemmWorkload> makeBatchMatmulWorkload(const std::string& shape, const std::string& dtype,
                                             const std::string& layout) {
  auto w = parseBatchMatmulShape(shape);
  if (!w) return w;
  auto g = makeGemmWorkload(w->gemmShapeString(), dtype, layout);
  if (!g) return g;
  g->op = OpKind::BatchMatmul;
  g->batch = w->batch;
  return g;
}

Result<GemmWorkload> makeConvWorkload(const std::string& desc, const std::string& dtype, const std::string& layout) {
  if (layout != "NN" && layout != "NHWC" && layout != "nhwc" && layout != "NHWC/HWCF")
    return Error{"conv2d layout '" + layout + "' is not supported yet (supported: NHWC, i.e. NHWC input and output, HWCF filter)"};
  auto d = parseConvDesc(desc);
  if (!d) return Error{d.error()};
  if (d->g != 1 && !d->depthwise())
    return Error{"grouped convolutions with 1 < g < ic (g" + std::to_string(d->g) +
                 ") are not supported yet; conv2d tunes g1 and depthwise (g = ic = oc)"};
  auto dt = parseDType(dtype);
  if (!dt) return Error{dt.error()};
  GemmWorkload w;
  w.op = OpKind::Conv2d;
  w.conv = *d;
  w.m = d->gemmM(), w.n = d->gemmN(), w.k = d->gemmK();
  w.a_type = w.b_type = *dt;
  w.c_type = DType::F32;
  return w;
}

Result<GemmWorkload> parseWorkloadKey(const std::string& key) {
  auto parts = split(key, ':');
  if (parts.size() == 4 && parts[0] == "conv2d") {
    auto arrow = parts[3].find("->"), star = parts[3].find('*');
    if (parts[1] != "NHWC" || arrow == std::string::npos || star == std::string::npos || star > arrow)
      return Error{"malformed workload key '" + key + "'"};
    auto w = makeConvWorkload(parts[2], parts[3].substr(0, star), parts[1]);
    if (!w) return Error{"malformed workload key '" + key + "': " + w.error()};
    return w;
  }
  if (parts.size() != 4 || (parts[0] != "gemm" && parts[0] != "batch_matmul"))
    return Error{"malformed workload key '" + key + "'"};
  auto w = parts[0] == "gemm" ? parseGemmShape(parts[2]) : parseBatchMatmulShape(parts[2]);
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
