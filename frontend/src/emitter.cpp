// The MLIR text writer behind importOnnx (emitter.h).
#include "emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cctype>
#include <cstring>

namespace sextant::onnx_import {

const Perm kNHWC = {0, 2, 3, 1};

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Perm identityPerm(size_t rank) {
  Perm p(rank);
  for (size_t i = 0; i < rank; ++i) p[i] = int(i);
  return p;
}

Shape Val::physical() const {
  Shape s(shape.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = shape[size_t(perm[i])];
  return s;
}

Const permuted(const Const& c, const Perm& perm) {
  Const r;
  r.is_int = c.is_int;
  for (int p : perm) r.shape.push_back(c.shape[size_t(p)]);
  Shape strides(c.shape.size(), 1);
  for (int i = int(c.shape.size()) - 2; i >= 0; --i) strides[size_t(i)] = strides[size_t(i) + 1] * c.shape[size_t(i) + 1];
  Shape idx(r.shape.size(), 0);
  const int64_t n = numel(r.shape);
  r.v.reserve(size_t(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t src = 0;
    for (size_t i = 0; i < idx.size(); ++i) src += idx[i] * strides[size_t(perm[i])];
    r.v.push_back(c.v[size_t(src)]);
    for (int i = int(idx.size()) - 1; i >= 0; --i) {
      if (++idx[size_t(i)] < r.shape[size_t(i)]) break;
      idx[size_t(i)] = 0;
    }
  }
  return r;
}

Result<Shape> broadcastShapes(const std::vector<Shape>& shapes) {
  Shape b;
  for (const Shape& s : shapes) {
    if (s.size() > b.size()) b.insert(b.begin(), s.size() - b.size(), 1);
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& d = b[b.size() - s.size() + i];
      if (d != s[i] && d != 1 && s[i] != 1) return Error{"operand shapes that do not broadcast"};
      if (d == 1) d = s[i];
    }
  }
  return b;
}

namespace {

std::string ints(const Shape& s, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? sep : "") + std::to_string(s[i]);
  return out;
}

std::string dims(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? ", d" : "d") + std::to_string(i);
  return out;
}

std::string map(int loops, const std::vector<std::string>& results) {
  std::string out = "affine_map<(" + dims(loops) + ") -> (";
  for (size_t i = 0; i < results.size(); ++i) out += (i ? ", " : "") + results[i];
  return out + ")>";
}

std::string iterators(int loops, const std::vector<bool>& reduction = {}) {
  std::string out = "[";
  for (int i = 0; i < loops; ++i)
    out += std::string(i ? ", " : "") + (!reduction.empty() && reduction[size_t(i)] ? "\"reduction\"" : "\"parallel\"");
  return out + "]";
}

std::string hexBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  char buf[16];
  snprintf(buf, sizeof buf, "0x%08X", u);
  return buf;
}

// The reassociation of a reshape between `rank` dims and one: [[0, 1, 2, ...]].
std::string allInOne(size_t rank) {
  std::string out = "[[";
  for (size_t i = 0; i < rank; ++i) out += (i ? ", " : "") + std::to_string(i);
  return out + "]]";
}

}  // namespace

std::string Emitter::fresh() { return "%v" + std::to_string(next_++); }

std::string Emitter::type(const Shape& physical) {
  if (physical.empty()) return "tensor<f32>";
  return "tensor<" + ints(physical, "x") + "xf32>";
}

std::string Emitter::f32(double x) {
  const std::string bits = hexBits(float(x));
  auto it = scalars_.find(bits);
  if (it != scalars_.end()) return it->second;
  std::string v = fresh();
  line(v + " = arith.constant " + bits + " : f32");
  if (!in_region_) scalars_[bits] = v;  // one made inside a region does not dominate what follows it
  return v;
}

std::string Emitter::scalarOp(const std::string& op, const std::vector<std::string>& args) {
  std::string v = fresh();
  std::string a;
  for (size_t i = 0; i < args.size(); ++i) a += (i ? ", " : "") + args[i];
  line(v + " = " + op + " " + a + " : f32");
  return v;
}

Val Emitter::constant(const Const& c, const Perm& perm_in) {
  const Perm perm = perm_in.empty() ? identityPerm(c.shape.size()) : perm_in;
  Val out{"", c.shape, perm};
  const Shape phys = out.physical();
  std::vector<float> data;  // the values in the physical order
  {
    const Const p = permuted(c, perm);
    data.assign(p.v.begin(), p.v.end());
  }
  std::string text;
  const bool splat = std::all_of(data.begin(), data.end(), [&](float x) { return std::memcmp(&x, &data[0], 4) == 0; });
  if (splat && !data.empty()) {
    text = "dense<" + hexBits(data[0]) + ">";
  } else {
    static const char* hex = "0123456789ABCDEF";
    text.reserve(data.size() * 8 + 16);
    text = "dense<\"0x";
    const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
    for (size_t i = 0; i < data.size() * 4; ++i) {
      text += hex[bytes[i] >> 4];
      text += hex[bytes[i] & 15];
    }
    text += "\">";
  }
  // Cached by content within a function (call() starts a function's cache afresh, so a weight,
  // emitted in its op's own function, does not stay in it).
  const std::string key = type(phys) + text;
  if (auto it = consts_.find(key); it != consts_.end()) return it->second;
  out.ssa = fresh();
  line(out.ssa + " = arith.constant " + text + " : " + type(phys));
  const_bytes_ += int64_t(data.size()) * 4;
  consts_[key] = out;
  return out;
}

std::string Emitter::empty(const Shape& physical) {
  std::string v = fresh();
  line(v + " = tensor.empty() : " + type(physical));
  return v;
}

std::string Emitter::filled(const Shape& physical, double value) {
  const std::string c = f32(value), e = empty(physical), v = fresh();
  line(v + " = linalg.fill ins(" + c + " : f32) outs(" + e + " : " + type(physical) + ") -> " + type(physical));
  return v;
}

Val Emitter::transpose(const Val& x, const Perm& to) {
  if (x.perm == to) return x;
  Val out{"", x.shape, to};
  Shape p(to.size());
  for (size_t i = 0; i < to.size(); ++i)
    p[i] = std::find(x.perm.begin(), x.perm.end(), to[i]) - x.perm.begin();
  const std::string e = empty(out.physical());
  out.ssa = fresh();
  line(out.ssa + " = linalg.transpose ins(" + x.ssa + " : " + type(x.physical()) + ") outs(" + e + " : " +
       type(out.physical()) + ") permutation = [" + ints(p) + "]");
  return out;
}

Val Emitter::call(const std::string& name_in, const std::vector<Val>& args,
                  const std::function<Val(const std::vector<Val>&)>& body) {
  std::string name;
  for (char c : name_in) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (const int n = function_names_[name]++; n > 0) name += "_" + std::to_string(n);
  // The callee's own text and constant caches (values of the caller are not visible in it).
  std::ostringstream saved_body;
  saved_body << body_.str();
  body_.str("");
  auto saved_scalars = std::move(scalars_);
  auto saved_consts = std::move(consts_);
  scalars_.clear(), consts_.clear();
  std::vector<Val> params;
  std::string sig, arg_types, arg_names;
  for (size_t i = 0; i < args.size(); ++i) {
    Val p = args[i];
    p.ssa = "%p" + std::to_string(i);
    params.push_back(p);
    sig += (i ? ", " : "") + p.ssa + ": " + type(p.physical());
    arg_types += (i ? ", " : "") + type(p.physical());
    arg_names += (i ? ", " : "") + args[i].ssa;
  }
  const Val r = body(params);
  functions_ += "  func.func private @" + name + "(" + sig + ") -> " + type(r.physical()) + " {\n" + body_.str() +
                "    return " + r.ssa + " : " + type(r.physical()) + "\n  }\n";
  body_.str("");
  body_ << saved_body.str();
  scalars_ = std::move(saved_scalars);
  consts_ = std::move(saved_consts);
  Val out = r;
  out.ssa = fresh();
  line(out.ssa + " = func.call @" + name + "(" + arg_names + ") : (" + arg_types + ") -> " + type(r.physical()));
  return out;
}

Val Emitter::elementwise(const std::vector<Operand>& ins, const ScalarFn& fn, Perm out_perm, int dest) {
  // The broadcast logical shape (the callers check that the operands broadcast).
  std::vector<Shape> shapes;
  for (const Operand& o : ins) shapes.push_back(o.shape());
  const Shape shape = broadcastShapes(shapes).value();
  const size_t rank = shape.size();
  if (out_perm.empty()) {
    out_perm = identityPerm(rank);
    for (const Operand& o : ins)
      if (o.val && o.val->shape.size() == rank) {
        out_perm = o.val->perm;
        break;
      }
  }
  Val out{"", shape, out_perm};
  const Shape phys = out.physical();
  std::vector<int> loop_of(rank);  // logical output dim -> loop dim
  for (size_t i = 0; i < rank; ++i) loop_of[size_t(out_perm[i])] = int(i);

  std::vector<std::string> scalars(ins.size());  // scalar constants' SSA names
  std::vector<Val> tensors;                       // tensor operands, in order
  std::vector<int> tensor_of(ins.size(), -1);
  std::vector<std::string> maps;
  for (size_t k = 0; k < ins.size(); ++k) {
    const Operand& o = ins[k];
    if (int(k) == dest) continue;  // the init, read as %out
    if (o.cst && numel(o.cst->shape) == 1) {
      scalars[k] = f32(o.cst->v[0]);
      continue;
    }
    Val v = o.val ? *o.val : constant(*o.cst, o.cst->shape.size() == rank ? out_perm : Perm{});
    std::vector<std::string> res;
    for (size_t j = 0; j < v.perm.size(); ++j) {
      const size_t lj = size_t(v.perm[j]), lo = lj + rank - v.shape.size();
      res.push_back(v.shape[lj] == 1 && shape[lo] != 1 ? "0" : "d" + std::to_string(loop_of[lo]));
    }
    maps.push_back(map(int(rank), res));
    tensor_of[k] = int(tensors.size());
    tensors.push_back(v);
  }
  maps.push_back(map(int(rank), [&] {
    std::vector<std::string> r;
    for (size_t i = 0; i < rank; ++i) r.push_back("d" + std::to_string(i));
    return r;
  }()));
  const std::string init = dest >= 0 ? ins[size_t(dest)].val->ssa : empty(phys);
  std::string ins_text, ins_types, args;
  for (size_t t = 0; t < tensors.size(); ++t) {
    ins_text += (t ? ", " : "") + tensors[t].ssa;
    ins_types += (t ? ", " : "") + type(tensors[t].physical());
    args += "%a" + std::to_string(t) + ": f32, ";
  }
  out.ssa = fresh();
  std::string head = out.ssa + " = linalg.generic {indexing_maps = [";
  for (size_t i = 0; i < maps.size(); ++i) head += (i ? ", " : "") + maps[i];
  head += "], iterator_types = " + iterators(int(rank)) + "}";
  if (!tensors.empty()) head += " ins(" + ins_text + " : " + ins_types + ")";
  head += " outs(" + init + " : " + type(phys) + ") {";
  line(head);
  line("^bb0(" + args + "%out: f32):");
  std::vector<std::string> elems(ins.size());
  for (size_t k = 0; k < ins.size(); ++k)
    elems[k] = int(k) == dest ? "%out" : tensor_of[k] >= 0 ? "%a" + std::to_string(tensor_of[k]) : scalars[k];
  // The body's own SSA values need names unique in the function: fresh() gives them.
  in_region_ = true;
  const std::string r = fn(*this, elems);
  in_region_ = false;
  line("  linalg.yield " + r + " : f32");
  line("} -> " + type(phys));
  return out;
}

Val Emitter::reduce(const Val& x, const std::vector<int>& axes, bool max) {
  // On the physical dims: the result keeps x's order, the reduced dims with size 1.
  const Shape phys = x.physical();
  const int rank = int(phys.size());
  std::vector<bool> red(size_t(rank), false);
  for (int i = 0; i < rank; ++i) red[size_t(i)] = std::count(axes.begin(), axes.end(), x.perm[size_t(i)]) > 0;
  Shape kept, keep_phys = phys, keep_logical = x.shape;
  for (int a : axes) keep_logical[size_t(a)] = 1;
  std::vector<std::string> in_res, out_res;
  for (int i = 0; i < rank; ++i) {
    in_res.push_back("d" + std::to_string(i));
    if (red[size_t(i)]) {
      keep_phys[size_t(i)] = 1;
    } else {
      kept.push_back(phys[size_t(i)]);
      out_res.push_back("d" + std::to_string(i));
    }
  }
  const std::string init = filled(kept, max ? -INFINITY : 0.0);
  std::string r = fresh();
  line(r + " = linalg.generic {indexing_maps = [" + map(rank, in_res) + ", " + map(rank, out_res) +
       "], iterator_types = " + iterators(rank, red) + "} ins(" + x.ssa + " : " + type(phys) + ") outs(" + init +
       " : " + type(kept) + ") {");
  line("^bb0(%in: f32, %acc: f32):");
  in_region_ = true;
  std::string v = scalarOp(max ? "arith.maximumf" : "arith.addf", {"%in", "%acc"});
  in_region_ = false;
  line("  linalg.yield " + v + " : f32");
  line("} -> " + type(kept));
  // Back to the rank of the input: each kept dim with the reduced dims after it (leading reduced
  // dims join the first group).
  std::vector<std::vector<int>> grp;
  std::vector<int> leading;
  for (int i = 0; i < rank; ++i) {
    if (!red[size_t(i)]) grp.push_back({i});
    else if (grp.empty()) leading.push_back(i);
    else grp.back().push_back(i);
  }
  if (!grp.empty()) grp.front().insert(grp.front().begin(), leading.begin(), leading.end());
  std::string groups = "[";
  for (size_t k = 0; k < grp.size(); ++k) {
    groups += std::string(k ? ", " : "") + "[";
    for (size_t j = 0; j < grp[k].size(); ++j) groups += (j ? ", " : "") + std::to_string(grp[k][j]);
    groups += "]";
  }
  groups += "]";
  Val out{fresh(), keep_logical, x.perm};
  line(out.ssa + " = tensor.expand_shape " + r + " " + groups + " output_shape [" + ints(keep_phys) + "] : " +
       type(kept) + " into " + type(keep_phys));
  return out;
}

Val Emitter::reshape(const Val& x_in, const Shape& to) {
  const Val x = identity(x_in);
  if (x.shape == to) return x;
  std::string flat = x.ssa;
  const Shape n = {numel(x.shape)};
  if (x.shape.size() != 1) {
    flat = fresh();
    line(flat + " = tensor.collapse_shape " + x.ssa + " " + (x.shape.empty() ? "[]" : allInOne(x.shape.size())) +
         " : " + type(x.shape) + " into " + type(n));
  }
  if (to.size() == 1) return Val{flat, to, identityPerm(1)};
  Val out{fresh(), to, identityPerm(to.size())};
  if (to.empty())
    line(out.ssa + " = tensor.collapse_shape " + flat + " [] : " + type(n) + " into " + type(to));
  else
    line(out.ssa + " = tensor.expand_shape " + flat + " " + allInOne(to.size()) + " output_shape [" + ints(to) +
         "] : " + type(n) + " into " + type(to));
  return out;
}

Val Emitter::pad(const Val& x, const Shape& low, const Shape& high, double value) {
  bool any = false;
  for (size_t i = 0; i < low.size(); ++i) any = any || low[i] != 0 || high[i] != 0;
  if (!any) return x;
  Shape phys = x.physical();
  Shape logical = x.shape;
  for (size_t i = 0; i < phys.size(); ++i) {
    phys[i] += low[i] + high[i];
    logical[size_t(x.perm[i])] = phys[i];
  }
  const std::string c = f32(value);
  Val out{fresh(), logical, x.perm};
  line(out.ssa + " = tensor.pad " + x.ssa + " low[" + ints(low) + "] high[" + ints(high) + "] {");
  std::string idx;
  for (size_t i = 0; i < phys.size(); ++i) idx += (i ? ", " : "") + std::string("%i") + std::to_string(i) + ": index";
  line("^bb0(" + idx + "):");
  line("  tensor.yield " + c + " : f32");
  line("} : " + type(x.physical()) + " to " + type(phys));
  return out;
}

Val Emitter::slice(const Val& x, const Shape& offsets, const Shape& sizes, const Shape& strides) {
  Shape logical = x.shape;
  for (size_t i = 0; i < sizes.size(); ++i) logical[size_t(x.perm[i])] = sizes[i];
  Val out{fresh(), logical, x.perm};
  line(out.ssa + " = tensor.extract_slice " + x.ssa + "[" + ints(offsets) + "] [" + ints(sizes) + "] [" +
       ints(strides) + "] : " + type(x.physical()) + " to " + type(sizes));
  return out;
}

Val Emitter::insertSlices(const Shape& physical, const std::vector<std::pair<Val, Shape>>& parts,
                          const Shape& logical, const Perm& perm) {
  std::string cur = empty(physical);
  for (const auto& [part, offsets] : parts) {
    const std::string next = fresh();
    const Shape ps = part.physical();
    line(next + " = tensor.insert_slice " + part.ssa + " into " + cur + "[" + ints(offsets) + "] [" + ints(ps) +
         "] [" + ints(Shape(ps.size(), 1)) + "] : " + type(ps) + " into " + type(physical));
    cur = next;
  }
  return Val{cur, logical, perm};
}

}  // namespace sextant::onnx_import
