// importOnnx's lowerings of convolutions, pools, matrix products, normalizations and softmax
// (importer.h). Convolutions and pools compute in NHWC with HWCF (HWC) filters, the layouts
// Sextant tunes convolutions in; matrix products are linalg.matmul / linalg.batch_matmul, which
// tune compile matches to tuned GEMM and batch_matmul schedules.
#include <algorithm>
#include <cmath>
#include <optional>

#include "importer.h"

namespace sextant::onnx_import {

namespace {

std::string pair(int64_t a, int64_t b) { return "dense<[" + std::to_string(a) + ", " + std::to_string(b) + "]> : tensor<2xi64>"; }

// The window of a 2-D conv or pool: kernel, strides, dilations, pads (top, left, bottom, right).
struct Window {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t oh = 0, ow = 0;
};

Result<Window> windowOf(Importer& im, const Shape& x, int64_t kh, int64_t kw, bool ceil_ok) {
  Window w;
  w.kh = kh, w.kw = kw;
  auto s = im.attrInts("strides", {1, 1}), d = im.attrInts("dilations", {1, 1}), p = im.attrInts("pads", {0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || p.size() != 4) return im.fail("only 2-D windows are supported");
  w.sh = s[0], w.sw = s[1], w.dh = d[0], w.dw = d[1], w.pt = p[0], w.pl = p[1], w.pb = p[2], w.pr = p[3];
  const int64_t H = x[2], W = x[3];
  const int64_t ekh = w.dh * (kh - 1) + 1, ekw = w.dw * (kw - 1) + 1;
  const std::string autopad = im.attrString("auto_pad", "NOTSET");
  if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
    const int64_t oh = (H + w.sh - 1) / w.sh, ow = (W + w.sw - 1) / w.sw;
    const int64_t ph = std::max<int64_t>(0, (oh - 1) * w.sh + ekh - H), pw = std::max<int64_t>(0, (ow - 1) * w.sw + ekw - W);
    const bool upper = autopad == "SAME_UPPER";
    w.pt = upper ? ph / 2 : ph - ph / 2, w.pb = ph - w.pt, w.pl = upper ? pw / 2 : pw - pw / 2, w.pr = pw - w.pl;
  } else if (autopad == "VALID") {
    w.pt = w.pl = w.pb = w.pr = 0;
  } else if (autopad != "NOTSET") {
    return im.fail("auto_pad " + autopad + " is not supported");
  }
  if (im.attrInt("ceil_mode", 0)) {
    if (!ceil_ok) return im.fail("ceil_mode 1 is not supported for this operator");
    // The extra rows and columns the ceiling adds, as more padding on the high side (max pools).
    for (auto [size, k, st, lo, hi] : {std::tuple<int64_t, int64_t, int64_t, int64_t*, int64_t*>{H, ekh, w.sh, &w.pt, &w.pb},
                                       {W, ekw, w.sw, &w.pl, &w.pr}}) {
      const int64_t span = size + *lo + *hi - k;
      int64_t o = (span + st - 1) / st + 1;
      if ((o - 1) * st >= size + *lo) --o;  // the last window must start inside the input or its low padding
      *hi += std::max<int64_t>(0, (o - 1) * st + k - (size + *lo + *hi));
    }
  }
  w.oh = (H + w.pt + w.pb - ekh) / w.sh + 1;
  w.ow = (W + w.pl + w.pr - ekw) / w.sw + 1;
  if (w.oh <= 0 || w.ow <= 0) return im.fail("the window is larger than the padded input");
  return w;
}

// A constant's values, reshaped (same order).
Const reshaped(const Const& c, Shape s) {
  Const r = c;
  r.shape = std::move(s);
  return r;
}

// y OP c elementwise (c broadcast as numpy does), e.g. a bias add or a scale.
Val withConst(Emitter& em, const Val& y, const Const& c, const char* op) {
  return em.elementwise({{&y, nullptr}, {nullptr, &c}},
                        [op](Emitter& e, const std::vector<std::string>& s) { return e.scalarOp(op, {s[0], s[1]}); });
}

Status addBias(Importer& im, Val y, size_t bias_input, int64_t channels) {
  if (im.has(bias_input)) {
    if (!im.isConst(bias_input)) return im.fail("a bias that is not a constant");
    y = withConst(im.em, y, reshaped(im.cst(bias_input), {1, channels, 1, 1}), "arith.addf");
  }
  im.define(y);
  return okStatus();
}

// A product of `a` [(B,) M, K] and `b` [(B,) K, N] (identity order) as linalg.matmul or
// linalg.batch_matmul, in a function of its own (Emitter::call); `b_const`: B is that constant,
// inside the function, instead of a tensor argument. `ep`: the epilogue computed there on the
// [M, N] result (channels: N), its tensors `res` given as [M, N] (2-D products only).
Val product(Importer& im, const Val& a, const Val* b, const Const* b_const, const Perm& b_perm, int64_t n,
            const Epilogue* ep = nullptr, const std::vector<Val>& res = {}) {
  Emitter& em = im.em;
  const std::string name = "matmul_" + im.nodeName();
  std::vector<Val> args = {a};
  if (b) args.push_back(*b);
  const size_t first_res = args.size();
  args.insert(args.end(), res.begin(), res.end());
  return em.call(name, args, [&](const std::vector<Val>& p) {
    const Val bv = b ? p[1] : em.constant(*b_const, b_perm);
    Shape o = a.shape;
    o.back() = n;
    const bool batched = o.size() == 3;
    const std::string init = em.filled(o, 0.0), r = em.fresh();
    em.line(r + (batched ? " = linalg.batch_matmul ins(" : " = linalg.matmul ins(") + p[0].ssa + ", " + bv.ssa +
            " : " + Emitter::type(a.shape) + ", " + Emitter::type(bv.physical()) + ") outs(" + init + " : " +
            Emitter::type(o) + ") -> " + Emitter::type(o));
    const Val acc{r, o, identityPerm(o.size())};
    if (!ep) return acc;
    return emitEpilogue(em, acc, int(o.size()) - 1, *ep, std::vector<Val>(p.begin() + long(first_res), p.end()));
  });
}

// The epilogue's tensors as the rows x n matrix a 2-D product computes: each in `order` (its
// producer's physical order), then reshaped row-major.
std::vector<Val> asRows(Importer& im, const Epilogue& ep, const Perm& order, int64_t rows, int64_t n) {
  std::vector<Val> out;
  for (const std::string& t : ep.tensors()) {
    const Val v = im.em.transpose(im.vals.at(t), order);
    out.push_back(im.em.reshape(Val{v.ssa, v.physical(), identityPerm(v.shape.size())}, {rows, n}));
  }
  return out;
}

}  // namespace

Status lowerConv(Importer& im) {
  auto x = im.val(0);
  if (!x) return Error{x.error()};
  if (x->shape.size() != 4) return im.fail("only 2-D convolutions (4-D inputs) are supported");
  if (!im.isConst(1)) return im.fail("filters that are not constants");
  const Const& W = im.cst(1);
  if (W.shape.size() != 4) return im.fail("the filter is not 4-D");
  const int64_t group = im.attrInt("group", 1), N = x->shape[0], C = x->shape[1], F = W.shape[0], cg = W.shape[1];
  if (group < 1 || C != cg * group || F % group) return im.fail("channels and groups do not agree");
  auto w = windowOf(im, x->shape, W.shape[2], W.shape[3], false);
  if (!w) return Error{w.error()};
  Emitter& em = im.em;
  const Shape out_phys = {N, w->oh, w->ow, F};
  const std::string attrs = "{dilations = " + pair(w->dh, w->dw) + ", strides = " + pair(w->sh, w->sw) + "}";
  // Each convolution in a function of its own (Emitter::call), with its padding (tune compile reads
  // the padding of a convolution from the tensor.pad that produces its input) and its filter.
  const Shape lo = {0, w->pt, w->pl, 0}, hi = {0, w->pb, w->pr, 0};
  const std::string name = "conv_" + im.nodeName();
  // The bias, activation and residual add after the convolution, computed in its function
  // (onnx_epilogue.cpp; not for grouped convolutions, which are one function per group).
  std::optional<Const> bias;
  if (im.has(2)) {
    if (!im.isConst(2)) return im.fail("a bias that is not a constant");
    bias = perChannel(reshaped(im.cst(2), {1, F, 1, 1}), {N, F, w->oh, w->ow}, 1);
  }
  const bool with_epilogue = (group == 1 || (group == C && F == C)) && (bias || !im.has(2));
  const Epilogue ep = with_epilogue ? planEpilogue(im, {N, F, w->oh, w->ow}, 1, bias ? &*bias : nullptr) : Epilogue{};
  auto withRes = [&](const Val& in) {  // the function's arguments: the input, the epilogue's tensors in NHWC
    std::vector<Val> a = {in};
    for (const std::string& t : ep.tensors()) a.push_back(em.transpose(im.vals.at(t), kNHWC));
    return a;
  };
  auto epilogueOf = [&](const Val& acc, const std::vector<Val>& p) {
    return ep.steps.empty() ? acc : emitEpilogue(em, acc, 1, ep, std::vector<Val>(p.begin() + 1, p.end()));
  };
  auto conv = [&](const Val& in, const Const& filter, int64_t f, bool with_ep) {  // groups of one: conv_2d_nhwc_hwcf
    return em.call(name, with_ep ? withRes(in) : std::vector<Val>{in}, [&](const std::vector<Val>& p) {
      const Val xp = em.pad(p[0], lo, hi, 0.0);
      const Val fc = em.constant(filter, {2, 3, 1, 0});  // OIHW -> HWIO
      const Shape o = {N, w->oh, w->ow, f};
      const std::string init = em.filled(o, 0.0), r = em.fresh();
      em.line(r + " = linalg.conv_2d_nhwc_hwcf " + attrs + " ins(" + xp.ssa + ", " + fc.ssa + " : " +
              Emitter::type(xp.physical()) + ", " + Emitter::type(fc.physical()) + ") outs(" + init + " : " +
              Emitter::type(o) + ") -> " + Emitter::type(o));
      const Val acc{r, {N, f, w->oh, w->ow}, kNHWC};
      return with_ep ? epilogueOf(acc, p) : acc;
    });
  };
  const Val xn = em.transpose(*x, kNHWC);
  Val y;
  if (group == 1 && W.shape[2] == 1 && W.shape[3] == 1 && w->pt + w->pl + w->pb + w->pr == 0) {
    // 1x1: a GEMM of the NHWC pixels [N*OH*OW, C] and the filter [C, F] (strided: the pixels it
    // reads first), tuned and applied as a GEMM.
    Val px = Val{xn.ssa, xn.physical(), identityPerm(4)};  // the NHWC data as it lies
    if (w->sh != 1 || w->sw != 1) px = em.slice(px, {0, 0, 0, 0}, {N, w->oh, w->ow, C}, {1, w->sh, w->sw, 1});
    const Val a2 = em.reshape(px, {N * w->oh * w->ow, C});
    const Const w2 = reshaped(W, {F, C});
    const Val g = product(im, a2, nullptr, &w2, {1, 0}, F, &ep, asRows(im, ep, kNHWC, N * w->oh * w->ow, F));
    const Val y4 = em.reshape(g, {N, w->oh, w->ow, F});
    y = Val{y4.ssa, {N, F, w->oh, w->ow}, kNHWC};
  } else if (group == 1) {
    y = conv(xn, W, F, true);
  } else if (group == C && F == C) {  // depthwise: linalg.depthwise_conv_2d_nhwc_hwc
    y = em.call(name, withRes(xn), [&](const std::vector<Val>& p) {
      const Val xp = em.pad(p[0], lo, hi, 0.0);
      const Val fc = em.constant(reshaped(W, {C, W.shape[2], W.shape[3]}), {1, 2, 0});
      const std::string init = em.filled(out_phys, 0.0), r = em.fresh();
      em.line(r + " = linalg.depthwise_conv_2d_nhwc_hwc " + attrs + " ins(" + xp.ssa + ", " + fc.ssa + " : " +
              Emitter::type(xp.physical()) + ", " + Emitter::type(fc.physical()) + ") outs(" + init + " : " +
              Emitter::type(out_phys) + ") -> " + Emitter::type(out_phys));
      return epilogueOf(Val{r, {N, F, w->oh, w->ow}, kNHWC}, p);
    });
  } else {  // grouped: one convolution per group, on a slice of the channels
    const int64_t fg = F / group, per = cg * W.shape[2] * W.shape[3];
    std::vector<std::pair<Val, Shape>> parts;
    const Shape xs = xn.physical();
    for (int64_t g = 0; g < group; ++g) {
      Const wg;
      wg.shape = {fg, cg, W.shape[2], W.shape[3]};
      wg.v.assign(W.v.begin() + g * fg * per, W.v.begin() + (g + 1) * fg * per);
      const Val in = em.slice(xn, {0, 0, 0, g * cg}, {xs[0], xs[1], xs[2], cg}, {1, 1, 1, 1});
      parts.push_back({conv(in, wg, fg, false), {0, 0, 0, g * fg}});
    }
    y = em.insertSlices(out_phys, parts, {N, F, w->oh, w->ow}, kNHWC);
  }
  if (!with_epilogue) return addBias(im, y, 2, F);
  defineEpilogue(im, ep, y);
  return okStatus();
}

Status lowerPool(Importer& im) {
  auto x = im.val(0);
  if (!x) return Error{x.error()};
  if (x->shape.size() != 4) return im.fail("only 2-D pools (4-D inputs) are supported");
  const bool max = im.node->op_type() == "MaxPool";
  if (im.node->output_size() > 1 && !im.node->output(1).empty()) return im.fail("the Indices output is not supported");
  auto k = im.attrInts("kernel_shape");
  if (k.size() != 2) return im.fail("only 2-D kernels are supported");
  auto w = windowOf(im, x->shape, k[0], k[1], max);
  if (!w) return Error{w.error()};
  if (!max && (w->dh != 1 || w->dw != 1)) return im.fail("dilated average pools are not supported");
  Emitter& em = im.em;
  const int64_t N = x->shape[0], C = x->shape[1];
  const Val xp = em.pad(em.transpose(*x, kNHWC), {0, w->pt, w->pl, 0}, {0, w->pb, w->pr, 0}, max ? -INFINITY : 0.0);
  const Shape o = {N, w->oh, w->ow, C};
  const std::string init = em.filled(o, max ? -INFINITY : 0.0), win = em.empty({k[0], k[1]}), r = em.fresh();
  em.line(r + " = linalg.pooling_nhwc_" + (max ? "max" : "sum") + " {dilations = " + pair(w->dh, w->dw) +
          ", strides = " + pair(w->sh, w->sw) + "} ins(" + xp.ssa + ", " + win + " : " + Emitter::type(xp.physical()) +
          ", " + Emitter::type({k[0], k[1]}) + ") outs(" + init + " : " + Emitter::type(o) + ") -> " + Emitter::type(o));
  Val y{r, {N, C, w->oh, w->ow}, kNHWC};
  if (!max) {
    // The divisor: the window's size, or (count_include_pad 0, the default) the input elements it covers.
    Const div;
    div.shape = {1, 1, w->oh, w->ow};
    for (int64_t i = 0; i < w->oh; ++i)
      for (int64_t j = 0; j < w->ow; ++j) {
        auto cover = [](int64_t o, int64_t s, int64_t p, int64_t kk, int64_t n) {
          const int64_t lo = o * s - p;
          return std::min(lo + kk, n) - std::max<int64_t>(lo, 0);
        };
        const double count = im.attrInt("count_include_pad", 0)
                                 ? double(k[0] * k[1])
                                 : double(cover(i, w->sh, w->pt, k[0], x->shape[2]) * cover(j, w->sw, w->pl, k[1], x->shape[3]));
        div.v.push_back(1.0 / count);
      }
    const bool uniform = std::all_of(div.v.begin(), div.v.end(), [&](double v) { return v == div.v[0]; });
    if (uniform) div.shape = {}, div.v.resize(1);
    y = withConst(em, y, div, "arith.mulf");
  }
  im.define(y);
  return okStatus();
}

Status lowerGlobalPool(Importer& im) {
  auto x = im.val(0);
  if (!x) return Error{x.error()};
  if (x->shape.size() < 3) return im.fail("the input has no spatial dimensions");
  std::vector<int> axes;
  int64_t count = 1;
  for (size_t i = 2; i < x->shape.size(); ++i) axes.push_back(int(i)), count *= x->shape[i];
  const bool max = im.node->op_type() == "GlobalMaxPool";
  Val y = im.em.reduce(*x, axes, max);
  if (!max) {
    Const s;
    s.v = {1.0 / double(count)};
    y = withConst(im.em, y, s, "arith.mulf");
  }
  im.define(y);
  return okStatus();
}

Status lowerGemm(Importer& im) {
  auto a = im.val(0);
  if (!a) return Error{a.error()};
  if (a->shape.size() != 2) return im.fail("A is not 2-D");
  Emitter& em = im.em;
  Val A = *a;
  if (im.attrInt("transA", 0)) A = Val{A.ssa, {A.shape[1], A.shape[0]}, {1 - A.perm[0], 1 - A.perm[1]}};
  A = em.identity(A);
  const double alpha = im.attrFloat("alpha", 1.0), beta = im.attrFloat("beta", 1.0);
  const bool tb = im.attrInt("transB", 0) != 0;
  Val y;
  const int64_t M = A.shape[0];
  if (im.isConst(1)) {  // weights: transposed and scaled by alpha here, once
    Const B = im.cst(1);
    for (double& v : B.v) v *= alpha;
    const int64_t n = B.shape[tb ? 0 : 1];
    // C (times beta) as the epilogue's bias when it is one value per column.
    std::optional<Const> bias;
    if (im.has(2) && im.isConst(2)) {
      bias = perChannel(im.cst(2), {M, n}, 1);
      if (bias)
        for (double& v : bias->v) v *= beta;
    }
    if (!im.has(2) || bias) {
      const Epilogue ep = planEpilogue(im, {M, n}, 1, bias ? &*bias : nullptr);
      defineEpilogue(im, ep, product(im, A, nullptr, &B, tb ? Perm{1, 0} : Perm{0, 1}, n, &ep, asRows(im, ep, {0, 1}, M, n)));
      return okStatus();
    }
    y = product(im, A, nullptr, &B, tb ? Perm{1, 0} : Perm{0, 1}, n);
  } else {
    auto bv = im.val(1);
    if (!bv) return Error{bv.error()};
    if (alpha != 1.0) return im.fail("alpha != 1 with a B that is not a constant");
    Val B = *bv;
    if (tb) B = Val{B.ssa, {B.shape[1], B.shape[0]}, {1 - B.perm[0], 1 - B.perm[1]}};
    B = em.identity(B);
    y = product(im, A, &B, nullptr, {}, B.shape[1]);
  }
  if (im.has(2)) {
    if (!im.isConst(2)) return im.fail("a C that is not a constant");
    Const c = im.cst(2);
    for (double& v : c.v) v *= beta;
    y = withConst(em, y, c, "arith.addf");
  }
  im.define(y);
  return okStatus();
}

Status lowerMatMul(Importer& im) {
  Emitter& em = im.em;
  auto a = im.val(0);
  if (!a) return Error{a.error()};
  const Shape as = a->shape;
  const Shape bs = im.isConst(1) ? im.cst(1).shape : (im.vals.count(im.in(1)) ? im.vals.at(im.in(1)).shape : Shape{});
  if (as.size() < 2 || bs.size() < 2) return im.fail("1-D operands are not supported");
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k) return im.fail("the inner dimensions differ");
  if (bs.size() == 2) {  // [..., M, K] x [K, N]: one GEMM over every row, with its epilogue
    const int64_t rows = numel(as) / k;
    const Val a2 = em.reshape(*a, {rows, k});
    Shape to = as;
    to.back() = n;
    const Epilogue ep = planEpilogue(im, to, int(to.size()) - 1, nullptr);
    const std::vector<Val> res = asRows(im, ep, identityPerm(to.size()), rows, n);
    Val y;
    if (im.isConst(1)) {
      y = product(im, a2, nullptr, &im.cst(1), {0, 1}, n, &ep, res);
    } else {
      auto b = im.val(1);
      if (!b) return Error{b.error()};
      const Val bi = em.identity(*b);
      y = product(im, a2, &bi, nullptr, {}, n, &ep, res);
    }
    defineEpilogue(im, ep, em.reshape(y, to));
    return okStatus();
  }
  // Batched: the same batch dims on both sides.
  if (as.size() != bs.size() || !std::equal(as.begin(), as.end() - 2, bs.begin()))
    return im.fail("batched products need the same batch dimensions on both sides (no broadcasting)");
  auto b = im.val(1);
  if (!b) return Error{b.error()};
  const int64_t batch = numel(as) / (m * k);
  const Val a3 = em.reshape(*a, {batch, m, k}), b3 = em.reshape(*b, {batch, k, n});
  Shape to = as;
  to.back() = n;
  im.define(em.reshape(product(im, a3, &b3, nullptr, {}, n), to));
  return okStatus();
}

namespace {
ScalarFn binary(const char* op) {
  return [op](Emitter& e, const std::vector<std::string>& s) { return e.scalarOp(op, {s[0], s[1]}); };
}
// (x - mean) / sqrt(var + eps) over the trailing `axes` of x.
Val normalize(Emitter& em, const Val& x, const std::vector<int>& axes, double eps) {
  int64_t count = 1;
  for (int a : axes) count *= x.shape[size_t(a)];
  Const inv;
  inv.v = {1.0 / double(count)};
  auto mean = [&](const Val& v) {
    return withConst(em, em.reduce(v, axes, false), inv, "arith.mulf");
  };
  const Val mu = mean(x);
  const Val d = em.elementwise({{&x, nullptr}, {&mu, nullptr}}, binary("arith.subf"));
  const Val sq = em.elementwise({{&d, nullptr}}, [](Emitter& e, const std::vector<std::string>& s) {
    return e.scalarOp("arith.mulf", {s[0], s[0]});
  });
  const Val var = mean(sq);
  const std::string ep = em.f32(eps);
  const Val rs = em.elementwise({{&var, nullptr}}, [ep](Emitter& e, const std::vector<std::string>& s) {
    return e.scalarOp("math.rsqrt", {e.scalarOp("arith.addf", {s[0], ep})});
  });
  return em.elementwise({{&d, nullptr}, {&rs, nullptr}}, binary("arith.mulf"));
}
}  // namespace

Status lowerSoftmax(Importer& im) {
  auto x = im.val(0);
  if (!x) return Error{x.error()};
  int64_t axis = im.attrInt("axis", im.opset >= 13 ? -1 : 1);
  if (!normalizeAxis(axis, x->shape.size())) return im.fail("axis out of range");
  if (im.opset < 13 && axis != int64_t(x->shape.size()) - 1)
    return im.fail("softmax before opset 13 over more than the last axis is not supported");
  Emitter& em = im.em;
  const Val mx = em.reduce(*x, {int(axis)}, true);
  const Val e = em.elementwise({{&*x, nullptr}, {&mx, nullptr}}, [](Emitter& m, const std::vector<std::string>& s) {
    return m.scalarOp("math.exp", {m.scalarOp("arith.subf", {s[0], s[1]})});
  });
  const Val sum = em.reduce(e, {int(axis)}, false);
  im.define(em.elementwise({{&e, nullptr}, {&sum, nullptr}}, binary("arith.divf")));
  return okStatus();
}

Status lowerBatchNorm(Importer& im) {
  auto x = im.val(0);
  if (!x) return Error{x.error()};
  for (size_t i = 1; i <= 4; ++i)
    if (!im.isConst(i)) return im.fail("statistics that are not constants (inference mode only)");
  if (x->shape.size() < 2) return im.fail("the input has no channel dimension");
  const double eps = im.attrFloat("epsilon", 1e-5);
  const int64_t C = x->shape[1];
  Shape s(x->shape.size(), 1);
  s[1] = C;
  Const scale, shift;
  scale.shape = shift.shape = s;
  for (int64_t c = 0; c < C; ++c) {  // y = x * scale + shift, folded here
    const double g = im.cst(1).v[size_t(c)], b = im.cst(2).v[size_t(c)], m = im.cst(3).v[size_t(c)];
    const double v = im.cst(4).v[size_t(c)];
    const double sc = g / std::sqrt(v + eps);
    scale.v.push_back(sc), shift.v.push_back(b - m * sc);
  }
  im.define(im.em.elementwise({{&*x, nullptr}, {nullptr, &scale}, {nullptr, &shift}},
                              [](Emitter& e, const std::vector<std::string>& a) {
                                return e.scalarOp("arith.addf", {e.scalarOp("arith.mulf", {a[0], a[1]}), a[2]});
                              }));
  return okStatus();
}

Status lowerLayerNorm(Importer& im) {
  auto x = im.val(0);
  if (!x) return Error{x.error()};
  int64_t axis = im.attrInt("axis", -1);
  if (!normalizeAxis(axis, x->shape.size())) return im.fail("axis out of range");
  std::vector<int> axes;
  for (size_t i = size_t(axis); i < x->shape.size(); ++i) axes.push_back(int(i));
  Emitter& em = im.em;
  Val y = normalize(em, em.identity(*x), axes, im.attrFloat("epsilon", 1e-5));
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!im.has(i)) continue;
    auto o = im.operand(i);
    if (!o) return Error{o.error()};
    y = em.elementwise({{&y, nullptr}, *o}, binary(i == 1 ? "arith.mulf" : "arith.addf"));
  }
  im.define(y);
  return okStatus();
}

Status lowerReduce(Importer& im) {
  auto x = im.val(0);
  if (!x) return Error{x.error()};
  auto axes = im.intsFrom("axes", 1);
  if (!axes) return Error{axes.error()};
  std::vector<int> ax;
  int64_t count = 1;
  for (int64_t a : *axes) {
    if (!normalizeAxis(a, x->shape.size())) return im.fail("axis out of range");
    ax.push_back(int(a)), count *= x->shape[size_t(a)];
  }
  if (ax.empty()) {
    if (im.attrInt("noop_with_empty_axes", 0)) {
      im.define(*x);
      return okStatus();
    }
    for (size_t i = 0; i < x->shape.size(); ++i) ax.push_back(int(i)), count *= x->shape[i];
  }
  const std::string& op = im.node->op_type();
  Emitter& em = im.em;
  Val y = em.reduce(*x, ax, op == "ReduceMax");
  if (op == "ReduceMean") {
    Const inv;
    inv.v = {1.0 / double(count)};
    y = withConst(em, y, inv, "arith.mulf");
  }
  if (!im.attrInt("keepdims", 1)) {
    Shape to;
    for (size_t i = 0; i < y.shape.size(); ++i)
      if (std::find(ax.begin(), ax.end(), int(i)) == ax.end()) to.push_back(y.shape[i]);
    y = em.reshape(y, to);
  }
  im.define(y);
  return okStatus();
}

}  // namespace sextant::onnx_import
