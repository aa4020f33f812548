// importOnnx: constants (initializers, Constant nodes) and the folding of nodes whose inputs are
// all known at import, e.g. the shape arithmetic exporters emit (Shape, Gather, Unsqueeze, Concat).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "importer.h"

namespace sextant::onnx_import {

Result<Const> constOf(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return Error{"initializer '" + t.name() + "' keeps its data in an external file (not supported: save the model "
                 "with its weights inside)"};
  Const c;
  for (int64_t d : t.dims()) c.shape.push_back(d);
  const size_t n = size_t(numel(c.shape));
  const std::string& raw = t.raw_data();
  auto take = [&](auto zero, auto field) -> Status {
    using T = decltype(zero);
    if (!raw.empty()) {
      if (raw.size() != n * sizeof(T)) return Error{"initializer '" + t.name() + "' has the wrong data size"};
      for (size_t i = 0; i < n; ++i) {
        T x;
        std::memcpy(&x, raw.data() + i * sizeof(T), sizeof(T));
        c.v.push_back(double(x));
      }
    } else {
      for (auto x : field) c.v.push_back(double(x));
      if (c.v.size() != n) return Error{"initializer '" + t.name() + "' has the wrong number of values"};
    }
    return okStatus();
  };
  Status st = okStatus();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: st = take(float(0), t.float_data()); break;
    case onnx::TensorProto::DOUBLE: st = take(double(0), t.double_data()); break;
    case onnx::TensorProto::INT64: c.is_int = true, st = take(int64_t(0), t.int64_data()); break;
    case onnx::TensorProto::INT32: c.is_int = true, st = take(int32_t(0), t.int32_data()); break;
    case onnx::TensorProto::BOOL: c.is_int = true, st = take(uint8_t(0), t.int32_data()); break;
    default:
      return Error{"initializer '" + t.name() + "' has element type " + onnx::TensorProto_DataType_Name(t.data_type()) +
                   " (f32, f64, i64, i32 and bool constants are supported)"};
  }
  if (!st) return Error{st.error()};
  return c;
}

namespace {

// Element `flat` of broadcast shape `out` read from a tensor of shape `s`.
double at(const Const& c, const Shape& out, int64_t flat) {
  int64_t src = 0, stride = 1;
  for (int i = int(out.size()) - 1, j = int(c.shape.size()) - 1; i >= 0; --i, --j) {
    const int64_t idx = flat % out[size_t(i)];
    flat /= out[size_t(i)];
    if (j < 0) continue;
    if (c.shape[size_t(j)] != 1) src += idx * stride;
    stride *= c.shape[size_t(j)];
  }
  return c.v[size_t(src)];
}

Result<Const> binaryFold(const Const& a, const Const& b, const std::function<double(double, double)>& f) {
  auto shape = broadcastShapes({a.shape, b.shape});
  if (!shape) return Error{shape.error()};
  Const r;
  r.shape = *shape;
  r.is_int = a.is_int && b.is_int;
  const int64_t n = numel(r.shape);
  for (int64_t i = 0; i < n; ++i) r.v.push_back(f(at(a, r.shape, i), at(b, r.shape, i)));
  return r;
}

}  // namespace

// Reshape's target: 0 copies the input's dim, -1 takes what is left.
Result<Shape> reshapeTarget(const Shape& from, const std::vector<int64_t>& spec, bool allowzero) {
  Shape to;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allowzero) {
      if (i >= from.size()) return Error{"a 0 in the target shape beyond the input's rank"};
      d = from[i];
    }
    if (d == -1) {
      if (infer >= 0) return Error{"two -1 in the target shape"};
      infer = int(i);
      to.push_back(1);
      continue;
    }
    if (d < 0) return Error{"a negative dimension in the target shape"};
    known *= d;
    to.push_back(d);
  }
  if (infer >= 0) {
    if (known == 0 || numel(from) % known) return Error{"the target shape does not divide the input's size"};
    to[size_t(infer)] = numel(from) / known;
  }
  if (numel(to) != numel(from)) return Error{"the target shape has another number of elements than the input"};
  return to;
}

Result<Shape> reshapedShape(Importer& im, const Shape& from) {
  const std::string& op = im.node->op_type();
  const size_t rank = from.size();
  if (op == "Reshape") {
    if (!im.isConst(1)) return im.fail("a target shape that is not a constant (static shapes only)");
    std::vector<int64_t> spec;
    for (double d : im.cst(1).v) spec.push_back(toInt(d));
    auto t = reshapeTarget(from, spec, im.attrInt("allowzero", 0) != 0);
    if (!t) return im.fail(t.error());
    return *t;
  }
  if (op == "Flatten") {
    int64_t axis = im.attrInt("axis", 1);
    if (axis < 0) axis += int64_t(rank);
    Shape to = {1, 1};
    for (size_t i = 0; i < rank; ++i) to[int64_t(i) < axis ? 0 : 1] *= from[i];
    return to;
  }
  auto axes = im.intsFrom("axes", 1);
  if (!axes) return Error{axes.error()};
  std::vector<int64_t> ax = *axes;
  const bool unsqueeze = op == "Unsqueeze";
  for (int64_t& a : ax)
    if (!normalizeAxis(a, unsqueeze ? rank + ax.size() : rank)) return im.fail("axis out of range");
  Shape to;
  if (unsqueeze) {
    to = from;
    std::sort(ax.begin(), ax.end());
    for (int64_t a : ax) to.insert(to.begin() + a, 1);
  } else {
    for (size_t i = 0; i < rank; ++i)
      if (!(ax.empty() ? from[i] == 1 : std::count(ax.begin(), ax.end(), int64_t(i)) > 0)) to.push_back(from[i]);
  }
  return to;
}

SliceRange sliceRange(int64_t n, int64_t start, int64_t end, int64_t step) {
  int64_t s = start < 0 ? start + n : start, e = end < 0 ? end + n : end;
  s = std::clamp<int64_t>(s, 0, n), e = std::clamp<int64_t>(e, s, n);
  return {s, (e - s + step - 1) / step};
}

namespace {
// The logical shape of input i, whether a tensor or a constant.
Shape shapeOf(Importer& im, size_t i) {
  if (auto it = im.vals.find(im.in(i)); it != im.vals.end()) return it->second.shape;
  return im.consts.at(im.in(i)).shape;
}

}  // namespace


// true and the outputs defined if the node was folded; false if it must be emitted.
Result<bool> fold(Importer& im) {
  const std::string& op = im.node->op_type();
  if (op == "Shape") {  // of any static tensor
    if (!im.vals.count(im.in(0)) && !im.consts.count(im.in(0))) return false;
    Const c;
    c.is_int = true;
    const Shape s = shapeOf(im, 0);
    int64_t start = im.attrInt("start", 0), end = im.attrInt("end", int64_t(s.size()));
    if (start < 0) start += int64_t(s.size());
    if (end < 0) end += int64_t(s.size());
    start = std::clamp<int64_t>(start, 0, int64_t(s.size()));
    end = std::clamp<int64_t>(end, start, int64_t(s.size()));
    for (int64_t i = start; i < end; ++i) c.v.push_back(double(s[size_t(i)]));
    c.shape = {int64_t(c.v.size())};
    im.consts[im.out()] = c;
    return true;
  }
  if (op == "Constant") {
    const auto* a = im.attr("value");
    Const c;
    if (a && a->has_t()) {
      auto r = constOf(a->t());
      if (!r) return im.fail(r.error());
      c = *r;
    } else if (const auto* f = im.attr("value_float")) {
      c.v = {f->f()};
    } else if (const auto* i = im.attr("value_int")) {
      c.is_int = true, c.v = {double(i->i())};
    } else if (const auto* is = im.attr("value_ints")) {
      c.is_int = true, c.shape = {is->ints_size()};
      for (auto x : is->ints()) c.v.push_back(double(x));
    } else if (const auto* fs = im.attr("value_floats")) {
      c.shape = {fs->floats_size()};
      for (auto x : fs->floats()) c.v.push_back(double(x));
    } else {
      return im.fail("a Constant without a supported value attribute");
    }
    im.consts[im.out()] = c;
    return true;
  }
  if (op == "ConstantOfShape") {
    if (!im.isConst(0)) return false;
    Const c;
    for (double d : im.cst(0).v) c.shape.push_back(toInt(d));
    double value = 0;
    if (const auto* a = im.attr("value"); a && a->has_t()) {
      auto r = constOf(a->t());
      if (!r) return im.fail(r.error());
      value = r->v.empty() ? 0 : r->v[0];
      c.is_int = r->is_int;
    }
    c.v.assign(size_t(numel(c.shape)), value);
    im.consts[im.out()] = c;
    return true;
  }
  for (size_t i = 0; i < im.inputs(); ++i)
    if (im.has(i) && !im.isConst(i)) return false;
  if (im.inputs() == 0) return false;
  const Const& a = im.cst(0);
  Const r;
  static const std::map<std::string, std::function<double(double, double)>> binary = {
      {"Add", [](double x, double y) { return x + y; }}, {"Sub", [](double x, double y) { return x - y; }},
      {"Mul", [](double x, double y) { return x * y; }}, {"Pow", [](double x, double y) { return std::pow(x, y); }},
      {"Equal", [](double x, double y) { return double(x == y); }},
      {"Max", [](double x, double y) { return std::max(x, y); }},
      {"Min", [](double x, double y) { return std::min(x, y); }}};
  if (auto it = binary.find(op); it != binary.end() && im.inputs() == 2) {
    auto f = binaryFold(a, im.cst(1), it->second);
    if (!f) return im.fail(f.error());
    r = std::move(*f);
    if (op == "Equal") r.is_int = true;
  } else if (op == "Div" && im.inputs() == 2) {
    const bool ints = a.is_int && im.cst(1).is_int;
    auto f = binaryFold(a, im.cst(1), [ints](double x, double y) { return ints ? std::trunc(x / y) : x / y; });
    if (!f) return im.fail(f.error());
    r = std::move(*f);
  } else if (op == "Sqrt" || op == "Neg" || op == "Identity" || op == "Cast" || op == "Reciprocal") {
    r = a;
    for (double& x : r.v) x = op == "Sqrt" ? std::sqrt(x) : op == "Neg" ? -x : op == "Reciprocal" ? 1 / x : x;
    if (op == "Cast") {
      const int64_t to = im.attrInt("to", onnx::TensorProto::FLOAT);
      r.is_int = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32 || to == onnx::TensorProto::BOOL;
      if (r.is_int)
        for (double& x : r.v) x = std::trunc(x);
    }
  } else if (op == "Gather") {
    int64_t axis = im.attrInt("axis", 0);
    if (!normalizeAxis(axis, a.shape.size())) return im.fail("axis out of range");
    const Const& idx = im.cst(1);
    r.is_int = a.is_int;
    r.shape.assign(a.shape.begin(), a.shape.begin() + axis);
    r.shape.insert(r.shape.end(), idx.shape.begin(), idx.shape.end());
    r.shape.insert(r.shape.end(), a.shape.begin() + axis + 1, a.shape.end());
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= a.shape[size_t(i)];
    for (size_t i = size_t(axis) + 1; i < a.shape.size(); ++i) inner *= a.shape[i];
    const int64_t dim = a.shape[size_t(axis)];
    for (int64_t o = 0; o < outer; ++o)
      for (double d : idx.v) {
        int64_t k = toInt(d) < 0 ? toInt(d) + dim : toInt(d);
        if (k < 0 || k >= dim) return im.fail("index out of range");
        for (int64_t j = 0; j < inner; ++j) r.v.push_back(a.v[size_t((o * dim + k) * inner + j)]);
      }
  } else if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" || op == "Flatten") {
    auto to = reshapedShape(im, a.shape);
    if (!to) return Error{to.error()};
    r = a;
    r.shape = *to;  } else if (op == "Concat") {
    int64_t axis = im.attrInt("axis", 0);
    if (!normalizeAxis(axis, a.shape.size())) return im.fail("axis out of range");
    r.is_int = a.is_int;
    r.shape = a.shape;
    r.shape[size_t(axis)] = 0;
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= a.shape[size_t(i)];
    for (size_t i = 0; i < im.inputs(); ++i) r.shape[size_t(axis)] += im.cst(i).shape[size_t(axis)];
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < im.inputs(); ++i) {
        const Const& c = im.cst(i);
        const int64_t chunk = numel(c.shape) / std::max<int64_t>(outer, 1);
        r.v.insert(r.v.end(), c.v.begin() + o * chunk, c.v.begin() + (o + 1) * chunk);
      }
  } else if (op == "Transpose") {
    Perm perm;
    for (int64_t p : im.attrInts("perm")) perm.push_back(int(p));
    if (perm.empty())
      for (int i = int(a.shape.size()) - 1; i >= 0; --i) perm.push_back(i);
    r = permuted(a, perm);
  } else if (op == "Slice" && a.shape.size() == 1) {
    auto starts = im.intsFrom("starts", 1), ends = im.intsFrom("ends", 2);
    auto steps = im.intsFrom("steps", 4, {1});
    if (!starts || !ends || !steps || starts->size() != 1 || ends->size() != 1) return false;
    const int64_t step = (*steps)[0];
    if (step <= 0) return false;
    const SliceRange range = sliceRange(a.shape[0], (*starts)[0], (*ends)[0], step);
    r.is_int = a.is_int;
    for (int64_t i = 0; i < range.count; ++i) r.v.push_back(a.v[size_t(range.start + i * step)]);
    r.shape = {range.count};
  } else {
    return false;
  }
  im.consts[im.out()] = r;
  return true;
}


}  // namespace sextant::onnx_import
