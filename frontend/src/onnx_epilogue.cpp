// Epilogues (importer.h): the elementwise nodes right after a convolution or matrix product (its
// bias, then Relu, Clip, an Add of a constant or of a tensor already computed: a residual) are
// lowered in the op's own function as one linalg.generic whose init is the op's result, updated in
// place. tune compile's CPU library matches that generic with the op and tiles it with the op's
// outermost (parallel) tiles, the op fused into each tile (codegen/src/library.cpp): the bias,
// activation and residual add run on each tile while it is in cache instead of as separate passes
// over the whole output.
#include <cmath>
#include <optional>

#include "importer.h"

namespace sextant::onnx_import {

namespace {

// A constant by name: known already, or the value of a Constant node the walk has not reached
// yet (exporters emit Clip's bounds just before the Clip).
const Const* constNamed(Importer& im, const std::string& name) {
  if (auto it = im.consts.find(name); it != im.consts.end()) return &it->second;
  auto w = im.writer.find(name);
  if (w == im.writer.end()) return nullptr;
  const onnx::NodeProto& n = im.graph->node(w->second);
  if (n.op_type() != "Constant" || n.attribute_size() != 1 || n.attribute(0).name() != "value") return nullptr;
  auto c = constOf(n.attribute(0).t());
  if (!c) return nullptr;
  return &(im.consts[name] = std::move(*c));
}

}  // namespace

// `c` as one value, or as one value per channel (shape {channels}) when it broadcasts to `shape`
// along `channel` only; nothing otherwise.
std::optional<Const> perChannel(const Const& c, const Shape& shape, int channel) {
  if (c.is_int) return std::nullopt;
  if (numel(c.shape) == 1) return Const{{1}, false, c.v};
  if (c.shape.size() > shape.size()) return std::nullopt;
  const size_t offset = shape.size() - c.shape.size();
  for (size_t j = 0; j < c.shape.size(); ++j)
    if (c.shape[j] != (int(offset + j) == channel ? shape[size_t(channel)] : 1)) return std::nullopt;
  return Const{{shape[size_t(channel)]}, false, c.v};
}

std::vector<std::string> Epilogue::tensors() const {
  std::vector<std::string> t;
  for (const EpilogueStep& s : steps)
    if (s.kind == EpilogueStep::kAddTensor) t.push_back(s.tensor);
  return t;
}

Epilogue planEpilogue(Importer& im, const Shape& shape, int channel, const Const* bias) {
  Epilogue ep;
  if (bias) ep.steps.push_back({EpilogueStep::kAddConst, *bias, "", 0, 0});
  std::string cur = im.out(0);
  while (ep.nodes.size() < 4) {
    // Only a value read once, by a node (not a graph output), goes on.
    auto u = im.uses.find(cur);
    auto r = im.reader.find(cur);
    if (u == im.uses.end() || u->second != 1 || r == im.reader.end()) break;
    const onnx::NodeProto& n = im.graph->node(r->second);
    if ((!n.domain().empty() && n.domain() != "ai.onnx") || n.output_size() != 1) break;
    EpilogueStep st{EpilogueStep::kRelu, {}, "", 0, 0};
    if (n.op_type() == "Relu" && n.input_size() == 1) {
      st.kind = EpilogueStep::kRelu;
    } else if (n.op_type() == "Clip") {
      st.kind = EpilogueStep::kClip;
      st.lo = -INFINITY, st.hi = INFINITY;
      for (const auto& a : n.attribute()) {
        if (a.name() == "min") st.lo = a.f();
        if (a.name() == "max") st.hi = a.f();
      }
      bool ok = true;
      for (int i : {1, 2}) {
        if (n.input_size() <= i || n.input(i).empty()) continue;
        const Const* c = constNamed(im, n.input(i));
        if (!c || c->v.size() != 1) ok = false;
        else (i == 1 ? st.lo : st.hi) = c->v[0];
      }
      if (!ok) break;
    } else if (n.op_type() == "Add" && n.input_size() == 2) {
      const std::string& other = n.input(0) == cur ? n.input(1) : n.input(0);
      if (other == cur) break;
      if (const Const* c = constNamed(im, other)) {
        auto pc = perChannel(*c, shape, channel);
        if (!pc) break;
        st.kind = EpilogueStep::kAddConst, st.c = std::move(*pc);
      } else if (auto v = im.vals.find(other); v != im.vals.end() && v->second.shape == shape) {
        st.kind = EpilogueStep::kAddTensor, st.tensor = other;  // computed already: a residual
      } else {
        break;
      }
    } else {
      break;
    }
    ep.steps.push_back(std::move(st));
    ep.nodes.push_back(r->second);
    cur = n.output(0);
  }
  ep.out = cur;
  return ep;
}

Val emitEpilogue(Emitter& em, const Val& acc, int channel, const Epilogue& ep, const std::vector<Val>& res) {
  if (ep.steps.empty()) return acc;
  const size_t rank = acc.shape.size();
  std::vector<Const> consts;  // the per-channel constants at acc's rank (stable: reserved)
  consts.reserve(ep.steps.size());
  std::vector<Operand> ops = {{&acc, nullptr}};
  std::vector<std::string> bounds;  // each step's scalar constants, emitted before the generic
  size_t t = 0;
  for (const EpilogueStep& s : ep.steps) {
    if (s.kind == EpilogueStep::kAddConst) {
      Const c = s.c;
      if (numel(c.shape) != 1) {
        c.shape.assign(rank, 1);
        c.shape[size_t(channel)] = int64_t(c.v.size());
      }
      consts.push_back(std::move(c));
      ops.push_back({nullptr, &consts.back()});
    } else if (s.kind == EpilogueStep::kAddTensor) {
      ops.push_back({&res.at(t++), nullptr});
    } else if (s.kind == EpilogueStep::kRelu) {
      bounds.push_back(em.f32(0));
    } else {
      bounds.push_back(em.f32(s.lo));
      bounds.push_back(em.f32(s.hi));
    }
  }
  auto fn = [&](Emitter& e, const std::vector<std::string>& a) {  // called by elementwise, below
    std::string x = a[0];
    size_t k = 1, b = 0;
    for (const EpilogueStep& s : ep.steps) {
      if (s.kind == EpilogueStep::kAddConst || s.kind == EpilogueStep::kAddTensor) {
        x = e.scalarOp("arith.addf", {x, a[k++]});
      } else if (s.kind == EpilogueStep::kRelu) {
        x = e.scalarOp("arith.maximumf", {x, bounds[b++]});
      } else {
        x = e.scalarOp("arith.maximumf", {x, bounds[b++]});
        x = e.scalarOp("arith.minimumf", {x, bounds[b++]});
      }
    }
    return x;
  };
  return em.elementwise(ops, fn, acc.perm, 0);
}

void defineEpilogue(Importer& im, const Epilogue& ep, const Val& result) {
  im.vals[ep.out] = result;
  im.absorbed.insert(ep.nodes.begin(), ep.nodes.end());
}

}  // namespace sextant::onnx_import
