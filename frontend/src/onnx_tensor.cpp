// importOnnx: the layout-agnostic operators: elementwise math (any physical order; broadcasting as
// numpy's) and the tensor operators (transpose, reshape, concat, slice, pad, gather, expand).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "importer.h"

namespace sextant::onnx_import {

Status lowerElementwise(Importer& im) {
  const std::string& op = im.node->op_type();
  std::vector<Operand> ins;
  for (size_t i = 0; i < im.inputs(); ++i) {
    if (!im.has(i)) continue;
    auto o = im.operand(i);
    if (!o) return Error{o.error()};
    if (o->cst && o->cst->is_int && op != "Pow") return im.fail("an integer operand (only f32 tensors are computed)");
    ins.push_back(*o);
  }
  {
    std::vector<Shape> shapes;
    for (const Operand& o : ins) shapes.push_back(o.shape());
    if (auto b = broadcastShapes(shapes); !b) return im.fail(b.error());
  }
  ScalarFn fn;
  auto binop = [&](const char* name) {
    return [name](Emitter& e, const std::vector<std::string>& a) {
      std::string r = a[0];
      for (size_t i = 1; i < a.size(); ++i) r = e.scalarOp(name, {r, a[i]});
      return r;
    };
  };
  auto unop = [](const char* name) {
    return [name](Emitter& e, const std::vector<std::string>& a) { return e.scalarOp(name, {a[0]}); };
  };
  // Scalars the bodies need, made before the region.
  Emitter& em = im.em;
  if (op == "Add" || op == "Sum") fn = binop("arith.addf");
  else if (op == "Sub") fn = binop("arith.subf");
  else if (op == "Mul") fn = binop("arith.mulf");
  else if (op == "Div") fn = binop("arith.divf");
  else if (op == "Max") fn = binop("arith.maximumf");
  else if (op == "Min") fn = binop("arith.minimumf");
  else if (op == "Exp") fn = unop("math.exp");
  else if (op == "Log") fn = unop("math.log");
  else if (op == "Tanh") fn = unop("math.tanh");
  else if (op == "Erf") fn = unop("math.erf");
  else if (op == "Sqrt") fn = unop("math.sqrt");
  else if (op == "Neg") fn = unop("arith.negf");
  else if (op == "Abs") fn = unop("math.absf");
  else if (op == "Relu") {
    const std::string zero = em.f32(0);
    fn = [zero](Emitter& e, const std::vector<std::string>& a) { return e.scalarOp("arith.maximumf", {a[0], zero}); };
  } else if (op == "Reciprocal") {
    const std::string one = em.f32(1);
    fn = [one](Emitter& e, const std::vector<std::string>& a) { return e.scalarOp("arith.divf", {one, a[0]}); };
  } else if (op == "Sigmoid") {
    const std::string one = em.f32(1);
    fn = [one](Emitter& e, const std::vector<std::string>& a) {
      return e.scalarOp("arith.divf", {one, e.scalarOp("arith.addf", {one, e.scalarOp("math.exp", {e.scalarOp("arith.negf", {a[0]})})})});
    };
  } else if (op == "LeakyRelu") {
    const std::string zero = em.f32(0), alpha = em.f32(im.attrFloat("alpha", 0.01));
    fn = [zero, alpha](Emitter& e, const std::vector<std::string>& a) {
      return e.scalarOp("arith.addf", {e.scalarOp("arith.maximumf", {a[0], zero}),
                                       e.scalarOp("arith.mulf", {alpha, e.scalarOp("arith.minimumf", {a[0], zero})})});
    };
  } else if (op == "HardSigmoid" || op == "HardSwish") {
    const double alpha = op == "HardSwish" ? 1.0 / 6 : im.attrFloat("alpha", 0.2);
    const double beta = op == "HardSwish" ? 0.5 : im.attrFloat("beta", 0.5);
    const std::string zero = em.f32(0), one = em.f32(1), al = em.f32(alpha), be = em.f32(beta);
    const bool swish = op == "HardSwish";
    fn = [=](Emitter& e, const std::vector<std::string>& a) {
      std::string h = e.scalarOp("arith.addf", {e.scalarOp("arith.mulf", {al, a[0]}), be});
      h = e.scalarOp("arith.minimumf", {e.scalarOp("arith.maximumf", {h, zero}), one});
      return swish ? e.scalarOp("arith.mulf", {a[0], h}) : h;
    };
  } else if (op == "Clip") {
    // Bounds: inputs 1 and 2 (opset 11+) or attributes min / max (older).
    double lo = -INFINITY, hi = INFINITY;
    if (im.attr("min")) lo = im.attrFloat("min", lo);
    if (im.attr("max")) hi = im.attrFloat("max", hi);
    for (size_t i : {size_t(1), size_t(2)}) {
      if (!im.has(i)) continue;
      if (!im.isConst(i)) return im.fail("a bound that is not a constant");
      (i == 1 ? lo : hi) = im.cst(i).v.at(0);
    }
    ins.resize(1);
    const std::string l = em.f32(lo), h = em.f32(hi);
    fn = [l, h](Emitter& e, const std::vector<std::string>& a) {
      return e.scalarOp("arith.minimumf", {e.scalarOp("arith.maximumf", {a[0], l}), h});
    };
  } else if (op == "Pow") {
    if (ins.size() != 2 || !ins[1].cst || numel(ins[1].cst->shape) != 1)
      fn = binop("math.powf");
    else {
      const double p = ins[1].cst->v[0];
      if (p == 2) fn = [](Emitter& e, const std::vector<std::string>& a) { return e.scalarOp("arith.mulf", {a[0], a[0]}); };
      else if (p == 0.5) fn = unop("math.sqrt");
      else if (p == 1) fn = [](Emitter&, const std::vector<std::string>& a) { return a[0]; };
      else fn = binop("math.powf");
    }
  }
  if (!fn) return im.fail("not an elementwise operator");
  im.define(em.elementwise(ins, fn));
  return okStatus();
}

Status lowerTensorOp(Importer& im) {
  const std::string& op = im.node->op_type();
  Emitter& em = im.em;
  auto x = im.val(0);
  if (!x) return Error{x.error()};
  const size_t rank = x->shape.size();
  if (op == "Identity" || op == "Dropout" || (op == "Cast" && im.attrInt("to", 1) == onnx::TensorProto::FLOAT)) {
    im.define(*x);
    return okStatus();
  }
  if (op == "Transpose") {  // a new order of the same data: nothing moves until an op needs it
    std::vector<int64_t> pt = im.attrInts("perm");
    if (pt.empty())
      for (int64_t i = int64_t(rank) - 1; i >= 0; --i) pt.push_back(i);
    if (pt.size() != rank) return im.fail("perm has the wrong length");
    Val v = *x;
    std::vector<int> inv(rank);
    for (size_t j = 0; j < rank; ++j) inv[size_t(pt[j])] = int(j), v.shape[j] = x->shape[size_t(pt[j])];
    for (size_t i = 0; i < rank; ++i) v.perm[i] = inv[size_t(x->perm[i])];
    im.define(v);
    return okStatus();
  }
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    auto to = reshapedShape(im, x->shape);
    if (!to) return Error{to.error()};
    im.define(em.reshape(*x, *to));
    return okStatus();
  }
  if (op == "Concat") {
    int64_t axis = im.attrInt("axis", 0);
    if (!normalizeAxis(axis, rank)) return im.fail("axis out of range");
    const Perm perm = x->perm;
    const size_t pa = size_t(std::find(perm.begin(), perm.end(), int(axis)) - perm.begin());
    std::vector<std::pair<Val, Shape>> parts;
    Shape logical = x->shape;
    logical[size_t(axis)] = 0;
    for (size_t i = 0; i < im.inputs(); ++i) {
      auto v = im.val(i);
      if (!v) return Error{v.error()};
      if (v->shape.size() != rank) return im.fail("inputs of different ranks");
      Shape off(rank, 0);
      off[pa] = logical[size_t(axis)];
      logical[size_t(axis)] += v->shape[size_t(axis)];
      parts.push_back({em.transpose(*v, perm), off});
    }
    Val shape_of{"", logical, perm};
    im.define(em.insertSlices(shape_of.physical(), parts, logical, perm));
    return okStatus();
  }
  if (op == "Slice" || op == "Pad" || op == "Gather") {
    // Offsets / sizes / strides (or pads) on the logical dims, then mapped to the physical ones.
    Shape off(rank, 0), size = x->shape, step(rank, 1), lo(rank, 0), hi(rank, 0);
    bool squeeze = false;
    int64_t gather_axis = 0;
    if (op == "Slice") {
      auto starts = im.intsFrom("starts", 1), ends = im.intsFrom("ends", 2), axes = im.intsFrom("axes", 3);
      auto steps = im.intsFrom("steps", 4);
      if (!starts || !ends || !axes || !steps) return im.fail("bounds that are not constants");
      for (size_t k = 0; k < starts->size(); ++k) {
        int64_t a = axes->empty() ? int64_t(k) : (*axes)[k];
        if (!normalizeAxis(a, rank)) return im.fail("axis out of range");
        const int64_t st = steps->empty() ? 1 : (*steps)[k];
        if (st <= 0) return im.fail("negative or zero steps are not supported");
        const SliceRange r = sliceRange(x->shape[size_t(a)], (*starts)[k], (*ends)[k], st);
        off[size_t(a)] = r.start, step[size_t(a)] = st, size[size_t(a)] = r.count;
      }
    } else if (op == "Gather") {
      if (!im.isConst(1) || numel(im.cst(1).shape) != 1) return im.fail("only a constant single index is supported");
      gather_axis = im.attrInt("axis", 0);
      if (!normalizeAxis(gather_axis, rank)) return im.fail("axis out of range");
      int64_t k = im.cst(1).at(0);
      if (k < 0) k += x->shape[size_t(gather_axis)];
      off[size_t(gather_axis)] = k, size[size_t(gather_axis)] = 1;
      squeeze = im.cst(1).shape.empty();
    } else {
      if (im.attrString("mode", "constant") != "constant") return im.fail("only constant padding is supported");
      auto pads = im.intsFrom("pads", 1);
      if (!pads || pads->size() != 2 * rank) return im.fail("pads that are not a constant of 2 x rank values");
      for (size_t i = 0; i < rank; ++i) {
        if ((*pads)[i] < 0 || (*pads)[rank + i] < 0) return im.fail("negative pads are not supported");
        lo[i] = (*pads)[i], hi[i] = (*pads)[rank + i];
      }
    }
    Shape poff(rank), psize(rank), pstep(rank), plo(rank), phi(rank);
    for (size_t i = 0; i < rank; ++i) {
      const size_t l = size_t(x->perm[i]);
      poff[i] = off[l], psize[i] = size[l], pstep[i] = step[l], plo[i] = lo[l], phi[i] = hi[l];
    }
    if (op == "Pad") {
      const double value = im.isConst(2) ? im.cst(2).v.at(0) : 0.0;
      im.define(em.pad(*x, plo, phi, value));
    } else {
      Val v = em.slice(*x, poff, psize, pstep);
      if (op == "Gather") {
        Shape to = v.shape;
        if (squeeze) to.erase(to.begin() + gather_axis);
        v = em.reshape(v, to);
      }
      im.define(v);
    }
    return okStatus();
  }
  if (op == "Expand") {
    if (!im.isConst(1)) return im.fail("a target shape that is not a constant");
    Const zeros;
    for (double d : im.cst(1).v) zeros.shape.push_back(toInt(d));
    zeros.v.assign(size_t(numel(zeros.shape)), 0.0);
    if (auto b = broadcastShapes({x->shape, zeros.shape}); !b) return im.fail(b.error());
    Operand a{&*x, nullptr}, b{nullptr, &zeros};
    im.define(em.elementwise({a, b}, [](Emitter& e, const std::vector<std::string>& s) {
      return e.scalarOp("arith.addf", {s[0], s[1]});
    }));
    return okStatus();
  }
  return im.fail("not a tensor operator");
}


}  // namespace sextant::onnx_import
