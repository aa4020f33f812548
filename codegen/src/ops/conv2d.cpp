// The `conv2d` op, workload level (ops.h; issue #31): linalg.conv_2d_nhwc_hwcf (input NHWC, filter
// HWCF, output NHWC; depthwise g = ic = oc: linalg.depthwise_conv_2d_nhwc_hwc, filter HWC), the
// problem a benchdnn descriptor (conv.h); grouped (1 < g < ic): a loop over the groups, each a
// linalg.conv_2d_nhwc_hwcf on its channels, filter kh x kw x ic/g x oc. m, n, k are its implicit GEMM's (output pixels, output
// channels, kh*kw*ic), what the GEMM-shaped parts of the data flow read. A 1x1 convolution with
// stride 1 and no padding is the GEMM of its collapsed operands (convIsGemm). Verified against
// direct loops accumulated in double. Its schedules: conv2d_cpu.cpp.
#include <algorithm>
#include <array>
#include <sstream>
#include <vector>

#include "payload_text.h"
#include "sextant/codegen/ops.h"

namespace sextant {
using ops_detail::shapedType;

namespace {

// Input, filter and output as stored in the layout (depthwise filter kh x kw x c; grouped kh x kw x
// ic/g x oc: group j's output channels j*oc/g.. read its ic/g input channels).
std::vector<OperandDims> convOperands(const ConvDesc& d) {
  if (d.layout == ConvLayout::NchwFchw)
    return {{d.mb, d.ic, d.ih, d.iw}, {d.oc, d.ic, d.kh, d.kw}, {d.mb, d.oc, d.oh, d.ow}};
  if (d.layout == ConvLayout::NhwcFhwc) return {{d.mb, d.ih, d.iw, d.ic}, {d.oc, d.kh, d.kw, d.ic}, {d.mb, d.oh, d.ow, d.oc}};
  return {{d.mb, d.ih, d.iw, d.ic},
          d.depthwise() ? OperandDims{d.kh, d.kw, d.ic} : OperandDims{d.kh, d.kw, d.ic / d.g, d.oc},
          {d.mb, d.oh, d.ow, d.oc}};
}

// linalg.conv_2d_nhwc_hwcf on the input padded by a tensor.pad (in the payload: the kernel pads,
// as a library's convolution does).
std::string convPayload(const GemmWorkload& w) {
  const ConvDesc& d = w.conv;
  const std::string t = dtypeName(w.a_type);
  const DType e = w.a_type;
  const bool nchw = d.layout == ConvLayout::NchwFchw;
  const std::vector<OperandDims> dims = convOperands(d);
  OperandDims padded = dims[0];  // the input with its zero border
  padded[nchw ? 2 : 1] = d.paddedH(), padded[nchw ? 3 : 2] = d.paddedW();
  const std::string in = shapedType(dims[0], e), inp = shapedType(padded, e), fil = shapedType(dims[1], e),
                    out = shapedType(dims[2], e);
  const std::string attrs = "{dilations = dense<[" + std::to_string(d.dh + 1) + ", " + std::to_string(d.dw + 1) +
                            "]> : tensor<2xi64>, strides = dense<[" + std::to_string(d.sh) + ", " + std::to_string(d.sw) +
                            "]> : tensor<2xi64>}";
  const bool pad = d.ph > 0 || d.pw > 0;
  std::ostringstream o;
  o << ops_detail::payloadHead(w.key(), in, fil, out, t);
  if (pad)
    o << "  %ap = tensor.pad %a low[0, " << (nchw ? "0, " : "") << d.ph << ", " << d.pw << (nchw ? "" : ", 0")
      << "] high[0, " << (nchw ? "0, " : "") << d.ph << ", " << d.pw << (nchw ? "" : ", 0")
      << "] {\n  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):\n    tensor.yield %zero : " << t
      << "\n  } : tensor<" << in << "> to tensor<" << inp << ">\n";
  if (d.g > 1 && !d.depthwise()) {
    // Grouped: one linalg.conv_2d_nhwc_hwcf per group on its slices of the channels (the input's
    // ic/g, the filter's and the output's oc/g), each output slice zero-filled first, in a loop
    // over the groups (what the ONNX importer writes as one function per group).
    const int64_t icg = d.ic / d.g, ocg = d.oc / d.g;
    const std::string xs = shapedType({d.mb, d.paddedH(), d.paddedW(), icg}, e), fs = shapedType({d.kh, d.kw, icg, ocg}, e),
                      os = shapedType({d.mb, d.oh, d.ow, ocg}, e);
    o << "  %g0 = arith.constant 0 : index\n  %g1 = arith.constant 1 : index\n  %gn = arith.constant " << d.g
      << " : index\n  %icg = arith.constant " << icg << " : index\n  %ocg = arith.constant " << ocg << " : index\n"
      << "  %r = scf.for %g = %g0 to %gn step %g1 iter_args(%acc = %c) -> (tensor<" << out << ">) {\n"
      << "    %ci = arith.muli %g, %icg : index\n    %co = arith.muli %g, %ocg : index\n"
      << "    %x = tensor.extract_slice " << (pad ? "%ap" : "%a") << "[0, 0, 0, %ci] [" << d.mb << ", " << d.paddedH() << ", "
      << d.paddedW() << ", " << icg << "] [1, 1, 1, 1] : tensor<" << inp << "> to tensor<" << xs << ">\n"
      << "    %f = tensor.extract_slice %b[0, 0, 0, %co] [" << d.kh << ", " << d.kw << ", " << icg << ", " << ocg
      << "] [1, 1, 1, 1] : tensor<" << fil << "> to tensor<" << fs << ">\n"
      << "    %o0 = tensor.extract_slice %acc[0, 0, 0, %co] [" << d.mb << ", " << d.oh << ", " << d.ow << ", " << ocg
      << "] [1, 1, 1, 1] : tensor<" << out << "> to tensor<" << os << ">\n"
      << "    %z = linalg.fill ins(%zero : " << t << ") outs(%o0 : tensor<" << os << ">) -> tensor<" << os << ">\n"
      << "    %y = " << convOpName(d) << " " << attrs << " ins(%x, %f : tensor<" << xs << ">, tensor<" << fs << ">) outs(%z : tensor<" << os << ">) -> tensor<" << os << ">\n"
      << "    %n = tensor.insert_slice %y into %acc[0, 0, 0, %co] [" << d.mb << ", " << d.oh << ", " << d.ow << ", " << ocg
      << "] [1, 1, 1, 1] : tensor<" << os << "> into tensor<" << out << ">\n"
      << "    scf.yield %n : tensor<" << out << ">\n"
      << "  }\n";
  } else {
    o << "  %z = linalg.fill ins(%zero : " << t << ") outs(%c : tensor<" << out << ">) -> tensor<" << out << ">\n"
      << "  %r = " << convOpName(d) << " " << attrs << " ins(" << (pad ? "%ap" : "%a") << ", %b : tensor<" << (pad ? inp : in) << ">, tensor<" << fil << ">) outs(%z : tensor<"
      << out << ">) -> tensor<" << out << ">\n";
  }
  o << "  bufferization.materialize_in_destination %r in restrict writable %C : (tensor<" << out << ">, memref<" << out
    << ">) -> ()\n"
    << "  return\n"
    << "}\n";
  return o.str();
}

// A 1x1 convolution with stride 1 and no padding as the GEMM it is: the NHWC input is M x K, the
// HWCF filter K x N and the NHWC output M x N, row-major, so the payload collapses the memrefs
// (no copy) and multiplies.
std::string conv1x1Payload(const GemmWorkload& w) {
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

// A 4-D row-major array of sizes `dims` with its dimensions permuted: dimension i of the result is
// dimension perm[i] of the source.
std::vector<float> permute4(const float* src, const std::array<int64_t, 4>& dims, const std::array<int, 4>& perm) {
  std::array<int64_t, 4> rdims, rstride;  // the result's sizes, and its stride for each source dimension
  for (int i = 0; i < 4; ++i) rdims[size_t(i)] = dims[size_t(perm[size_t(i)])];
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) rstride[size_t(perm[size_t(i)])] = stride, stride *= rdims[size_t(i)];
  std::vector<float> out(static_cast<size_t>(stride));
  int64_t k = 0;
  for (int64_t a = 0; a < dims[0]; ++a)
    for (int64_t b = 0; b < dims[1]; ++b)
      for (int64_t c = 0; c < dims[2]; ++c)
        for (int64_t e = 0; e < dims[3]; ++e)
          out[size_t(a * rstride[0] + b * rstride[1] + c * rstride[2] + e * rstride[3])] = src[k++];
  return out;
}

// Direct loops accumulated in double (input NHWC, filter HWCF or, depthwise, HWC; output NHWC;
// zero padding; benchdnn's dilation: a gap of d between taps).
void naiveNhwc(const ConvDesc& d, const float* in, const float* fil, float* out) {
  std::vector<double> acc(size_t(d.oc));  // one output pixel's channels
  for (int64_t n = 0; n < d.mb; ++n)
    for (int64_t oy = 0; oy < d.oh; ++oy)
      for (int64_t ox = 0; ox < d.ow; ++ox) {
        float* o = out + ((n * d.oh + oy) * d.ow + ox) * d.oc;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t ky = 0; ky < d.kh; ++ky) {
          const int64_t iy = oy * d.sh - d.ph + ky * (d.dh + 1);
          if (iy < 0 || iy >= d.ih) continue;
          for (int64_t kx = 0; kx < d.kw; ++kx) {
            const int64_t ix = ox * d.sw - d.pw + kx * (d.dw + 1);
            if (ix < 0 || ix >= d.iw) continue;
            const float* x = in + ((n * d.ih + iy) * d.iw + ix) * d.ic;
            if (d.depthwise()) {  // filter kh x kw x c: channel c reads input channel c
              const float* f = fil + (ky * d.kw + kx) * d.ic;
              for (int64_t c = 0; c < d.ic; ++c) acc[size_t(c)] += double(x[c]) * f[c];
              continue;
            }
            // Group j: output channels [j ocg, (j + 1) ocg) from input channels [j icg, (j + 1) icg).
            const int64_t icg = d.ic / d.g, ocg = d.oc / d.g;
            const float* f = fil + (ky * d.kw + kx) * icg * d.oc;
            for (int64_t j = 0; j < d.g; ++j)
              for (int64_t c = 0; c < icg; ++c) {
                const double xv = x[j * icg + c];
                const float* fr = f + c * d.oc;
                for (int64_t oc = j * ocg; oc < (j + 1) * ocg; ++oc) acc[size_t(oc)] += xv * fr[oc];
              }
          }
        }
        for (int64_t oc = 0; oc < d.oc; ++oc) o[oc] = float(acc[size_t(oc)]);
      }
}

class Conv2dOp : public OpDef {
 public:
  OpKind kind() const override { return OpKind::Conv2d; }
  const char* name() const override { return "conv2d"; }
  const char* defaultShape() const override { return "mb1ic64ih56oc64kh3ph1"; }
  const char* shapeSyntax() const override { return "a benchdnn descriptor"; }
  const char* summary() const override {
    return "2-D convolution (linalg.conv_2d_nhwc_hwcf): input NHWC, filter HWCF; --layout NCHW (FCHW filter), "
           "NHWC/FHWC; strides, padding, dilation, groups (one convolution per group), depthwise";
  }

  Result<GemmWorkload> make(const std::string& desc, const std::string& dtype, const std::string& layout) const override {
    auto lay = parseConvLayout(layout);
    if (!lay) return Error{lay.error()};
    auto d = parseConvDesc(desc);
    if (!d) return Error{d.error()};
    d->layout = *lay;
    if (d->g > 1 && *lay != ConvLayout::NhwcHwcf)
      return Error{std::string("grouped and depthwise convolutions are NHWC/HWCF only (not ") + convLayoutKey(*lay) + ")"};
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

  std::string layoutField(const GemmWorkload& w) const override { return convLayoutKey(w.conv.layout); }
  std::string shapeString(const GemmWorkload& w) const override { return w.conv.str(); }
  Result<GemmWorkload> fromKey(const std::string& layout, const std::string& shape, DType a, DType, DType) const override {
    if (layout != "NHWC" && layout != "NCHW" && layout != "NHWC_FHWC")
      return Error{"conv2d's layout field is NHWC, NCHW or NHWC_FHWC, not '" + layout + "'"};
    return make(shape, dtypeName(a), layout);
  }

  std::vector<OperandDims> operands(const GemmWorkload& w) const override { return convOperands(w.conv); }

  std::string payloadMlir(const GemmWorkload& w) const override {
    return convIsGemm(w) ? conv1x1Payload(w) : convPayload(w);
  }

  const char* referenceName(const GemmWorkload&) const override { return "direct loops"; }
  bool blasReference(const GemmWorkload&) const override { return false; }
  // Direct loops accumulated in double on NHWC / HWCF operands (naiveNhwc); other layouts are
  // permuted to those and the result back.
  void naiveReference(const GemmWorkload& w, const float* in, const float* fil, float* out) const override {
    const ConvDesc& d = w.conv;
    if (d.layout == ConvLayout::NhwcHwcf) return naiveNhwc(d, in, fil, out);
    const bool nchw = d.layout == ConvLayout::NchwFchw;
    const std::vector<float> f = nchw ? permute4(fil, {d.oc, d.ic, d.kh, d.kw}, {2, 3, 1, 0})
                                      : permute4(fil, {d.oc, d.kh, d.kw, d.ic}, {1, 2, 3, 0});
    if (!nchw) return naiveNhwc(d, in, f.data(), out);  // FHWC: only the filter differs
    const std::vector<float> x = permute4(in, {d.mb, d.ic, d.ih, d.iw}, {0, 2, 3, 1});
    std::vector<float> y(static_cast<size_t>(d.outputElements()));
    naiveNhwc(d, x.data(), f.data(), y.data());
    const std::vector<float> back = permute4(y.data(), {d.mb, d.oh, d.ow, d.oc}, {0, 3, 1, 2});
    std::copy(back.begin(), back.end(), out);
  }
  std::string elementName(const GemmWorkload& w, int64_t i) const override {
    const ConvDesc& d = w.conv;
    if (d.layout == ConvLayout::NchwFchw)
      return "output[n " + std::to_string(i / (d.oc * d.oh * d.ow)) + "][oc " + std::to_string(i / (d.oh * d.ow) % d.oc) +
             "][oh " + std::to_string(i / d.ow % d.oh) + "][ow " + std::to_string(i % d.ow) + "]";
    return "output[n " + std::to_string(i / (d.oh * d.ow * d.oc)) + "][oh " + std::to_string(i / (d.ow * d.oc) % d.oh) +
           "][ow " + std::to_string(i / d.oc % d.ow) + "][oc " + std::to_string(i % d.oc) + "]";
  }
};

}  // namespace

const OpDef& conv2dOp() {
  static const Conv2dOp op;
  return op;
}

Result<GemmWorkload> makeConvWorkload(const std::string& desc, const std::string& dtype, const std::string& layout) {
  return conv2dOp().make(desc, dtype, layout);
}

bool convIsGemm(const GemmWorkload& w) {
  const ConvDesc& d = w.conv;
  return w.isConv() && d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 && d.pw == 0 && d.g == 1 &&
         d.layout == ConvLayout::NhwcHwcf;
}

GemmWorkload convAsGemm(const GemmWorkload& w) {
  GemmWorkload g;
  g.m = w.m, g.n = w.n, g.k = w.k;
  g.a_type = w.a_type, g.b_type = w.b_type, g.c_type = w.c_type;
  g.weights = w.weights;  // (its filter a weight where the convolution's is: prefetch_b, the seeds)
  return g;
}

}  // namespace sextant
