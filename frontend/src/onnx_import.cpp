// importOnnx: reads an ONNX model with ONNX's protobuf classes and writes it as MLIR (linalg on
// tensors). This file: the walk over the graph and the operator table; onnx_fold.cpp folds what is
// known at import, onnx_tensor.cpp lowers the layout-agnostic operators, onnx_nn.cpp the rest.
#include "sextant/frontend/onnx_import.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "importer.h"
#include "sextant/common/strings.h"

namespace sextant {
namespace onnx_import {

std::string Importer::nodeName() const {
  return node->name().empty() ? (node->output_size() ? node->output(0) : "?") : node->name();
}

Error Importer::fail(const std::string& msg) const {
  return Error{"node '" + nodeName() + "' (#" + std::to_string(node_index) + ", " + node->op_type() + "): " + msg};
}

Result<Val> Importer::val(size_t i) {
  if (!has(i)) return fail("input " + std::to_string(i) + " is missing");
  if (auto it = vals.find(in(i)); it != vals.end()) return it->second;
  if (auto it = consts.find(in(i)); it != consts.end()) return em.constant(it->second);
  return fail("input '" + in(i) + "' is not produced by any earlier node, initializer or graph input");
}

Result<Operand> Importer::operand(size_t i) {
  if (!has(i)) return fail("input " + std::to_string(i) + " is missing");
  if (auto it = vals.find(in(i)); it != vals.end()) return Operand{&it->second, nullptr};
  if (auto it = consts.find(in(i)); it != consts.end()) return Operand{nullptr, &it->second};
  return fail("input '" + in(i) + "' is not produced by any earlier node, initializer or graph input");
}

const onnx::AttributeProto* Importer::attr(const std::string& name) const {
  for (const auto& a : node->attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
int64_t Importer::attrInt(const std::string& name, int64_t def) const {
  const auto* a = attr(name);
  return a ? a->i() : def;
}
double Importer::attrFloat(const std::string& name, double def) const {
  const auto* a = attr(name);
  return a ? a->f() : def;
}
std::string Importer::attrString(const std::string& name, const std::string& def) const {
  const auto* a = attr(name);
  return a ? a->s() : def;
}
std::vector<int64_t> Importer::attrInts(const std::string& name, std::vector<int64_t> def) const {
  const auto* a = attr(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}
Result<std::vector<int64_t>> Importer::intsFrom(const std::string& name, size_t input, std::vector<int64_t> def) const {
  if (attr(name)) return attrInts(name);
  if (!has(input)) return def;
  if (!isConst(input)) return fail("its " + name + " (input " + std::to_string(input) + ") is not a constant");
  std::vector<int64_t> out;
  for (double x : cst(input).v) out.push_back(toInt(x));
  return out;
}

bool normalizeAxis(int64_t& axis, size_t rank) {
  if (axis < 0) axis += int64_t(rank);
  return axis >= 0 && axis < int64_t(rank);
}

namespace {

using Lowering = Status (*)(Importer&);
const std::map<std::string, Lowering>& lowerings() {
  static const std::map<std::string, Lowering> table = {
      {"Conv", lowerConv}, {"MaxPool", lowerPool}, {"AveragePool", lowerPool},
      {"GlobalAveragePool", lowerGlobalPool}, {"GlobalMaxPool", lowerGlobalPool}, {"Gemm", lowerGemm},
      {"MatMul", lowerMatMul}, {"Softmax", lowerSoftmax}, {"BatchNormalization", lowerBatchNorm},
      {"LayerNormalization", lowerLayerNorm}, {"ReduceMean", lowerReduce}, {"ReduceSum", lowerReduce},
      {"ReduceMax", lowerReduce},
      {"Add", lowerElementwise}, {"Sub", lowerElementwise}, {"Mul", lowerElementwise}, {"Div", lowerElementwise},
      {"Sum", lowerElementwise}, {"Max", lowerElementwise}, {"Min", lowerElementwise}, {"Pow", lowerElementwise},
      {"Relu", lowerElementwise}, {"Clip", lowerElementwise}, {"Sigmoid", lowerElementwise},
      {"Tanh", lowerElementwise}, {"Erf", lowerElementwise}, {"Exp", lowerElementwise}, {"Log", lowerElementwise},
      {"Sqrt", lowerElementwise}, {"Neg", lowerElementwise}, {"Abs", lowerElementwise},
      {"Reciprocal", lowerElementwise}, {"LeakyRelu", lowerElementwise}, {"HardSigmoid", lowerElementwise},
      {"HardSwish", lowerElementwise},
      {"Identity", lowerTensorOp}, {"Dropout", lowerTensorOp}, {"Cast", lowerTensorOp},
      {"Transpose", lowerTensorOp}, {"Reshape", lowerTensorOp}, {"Flatten", lowerTensorOp},
      {"Squeeze", lowerTensorOp}, {"Unsqueeze", lowerTensorOp}, {"Concat", lowerTensorOp}, {"Slice", lowerTensorOp},
      {"Pad", lowerTensorOp}, {"Gather", lowerTensorOp}, {"Expand", lowerTensorOp},
  };
  return table;
}

// Folded only (their inputs must be known at import).
const std::set<std::string>& foldOnly() {
  static const std::set<std::string> s = {"Shape", "Constant", "ConstantOfShape", "Equal"};
  return s;
}

std::string memrefType(const Shape& s) {
  std::string t = "memref<";
  for (int64_t d : s) t += std::to_string(d) + "x";
  return t + "f32>";
}

}  // namespace
}  // namespace onnx_import

using namespace onnx_import;

std::vector<std::string> supportedOnnxOperators() {
  std::vector<std::string> out;
  for (const auto& [k, v] : lowerings()) out.push_back(k);
  out.insert(out.end(), foldOnly().begin(), foldOnly().end());
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::map<std::string, std::vector<int64_t>>> parseInputShapes(const std::string& spec) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const std::string& item : split(spec, ';')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return Error{"--input-shape '" + item + "': expected NAME=D0,D1,... (e.g. x=1,3,224,224; ';' between inputs)"};
    std::vector<int64_t> dims;
    for (const std::string& d : split(item.substr(eq + 1), ',')) {
      char* end = nullptr;
      const long long v = std::strtoll(d.c_str(), &end, 10);
      if (d.empty() || *end || v <= 0) return Error{"--input-shape '" + item + "': '" + d + "' is not a positive size"};
      dims.push_back(v);
    }
    out[item.substr(0, eq)] = dims;
  }
  return out;
}

Result<ImportedModel> importOnnx(const std::string& path, const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error{path + ": cannot read the file"};
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&f)) return Error{path + ": not an ONNX model (the protobuf does not parse)"};
  if (!model.has_graph() || model.graph().output_size() == 0)
    return Error{path + ": not an ONNX model (no graph with outputs)"};
  ImportedModel out;
  Importer im;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") im.opset = out.opset = o.version();
  out.producer = model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
  const onnx::GraphProto& g = model.graph();
  auto err = [&](const std::string& m) { return Error{path + ": " + m}; };

  for (const auto& t : g.initializer()) {
    auto c = constOf(t);
    if (!c) return err(c.error());
    im.consts[t.name()] = std::move(*c);
  }
  std::string sig, prologue;
  for (const auto& in : g.input()) {
    if (im.consts.count(in.name())) continue;  // an initializer listed as an input (older exporters)
    const auto& tt = in.type().tensor_type();
    if (tt.elem_type() != onnx::TensorProto::FLOAT)
      return err("input '" + in.name() + "' is " + onnx::TensorProto_DataType_Name(tt.elem_type()) +
                 " (f32 inputs only)");
    ModelTensor t{in.name(), {}};
    if (auto it = shapes.find(in.name()); it != shapes.end()) {
      t.shape = it->second;
      if (int(t.shape.size()) != tt.shape().dim_size())
        return err("--input-shape " + in.name() + " has rank " + std::to_string(t.shape.size()) + ", the model's input " +
                   std::to_string(tt.shape().dim_size()));
    } else {
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto& dim = tt.shape().dim(d);
        if (!dim.has_dim_value() || dim.dim_value() <= 0)
          return err("input '" + in.name() + "' has a dynamic dimension " + std::to_string(d) +
                     (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : std::string()) +
                     ": give static shapes with --input-shape " + in.name() + "=D0,D1,...");
        t.shape.push_back(dim.dim_value());
      }
    }
    const std::string arg = "%arg" + std::to_string(out.inputs.size());
    sig += std::string(sig.empty() ? "" : ", ") + arg + ": " + memrefType(t.shape);
    const std::string v = im.em.fresh();
    prologue += "    " + v + " = bufferization.to_tensor " + arg + " restrict : " + memrefType(t.shape) + " to " +
                Emitter::type(t.shape) + "\n";
    im.vals[t.name] = Val{v, t.shape, identityPerm(t.shape.size())};
    out.inputs.push_back(t);
  }
  for (const auto& [name, dims] : shapes)
    if (!im.vals.count(name)) return err("--input-shape names '" + name + "', which is not an input of the model");

  im.graph = &g;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& in : g.node(i).input())
      if (!in.empty()) ++im.uses[in], im.reader[in] = i;
    for (const auto& o : g.node(i).output()) im.writer[o] = i;
  }
  for (const auto& o : g.output()) ++im.uses[o.name()];
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    im.node = &n, im.node_index = i;
    ++out.nodes;
    if (im.absorbed.count(i)) continue;  // lowered in an earlier node's epilogue
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      return err(im.fail("operator domain '" + n.domain() + "' is not supported").message);
    auto folded = fold(im);
    if (!folded) return err(folded.error());
    if (*folded) {
      ++out.folded;
      continue;
    }
    auto it = lowerings().find(n.op_type());
    if (it == lowerings().end())
      return err(im.fail(foldOnly().count(n.op_type())
                             ? "its inputs are not known at import (only constant " + n.op_type() + " is supported)"
                             : "operator " + n.op_type() + " is not supported (`tune model --help` lists those that are)")
                     .message);
    if (auto s = it->second(im); !s) return err(s.error());
  }

  std::string epilogue;
  for (const auto& o : g.output()) {
    Val v;
    if (auto it = im.vals.find(o.name()); it != im.vals.end()) v = it->second;
    else if (auto c = im.consts.find(o.name()); c != im.consts.end()) v = im.em.constant(c->second);
    else return err("output '" + o.name() + "' is not computed by the graph");
    v = im.em.identity(v);
    const std::string arg = "%arg" + std::to_string(out.inputs.size() + out.outputs.size());
    sig += std::string(sig.empty() ? "" : ", ") + arg + ": " + memrefType(v.shape);
    epilogue += "    bufferization.materialize_in_destination " + v.ssa + " in restrict writable " + arg + " : (" +
                Emitter::type(v.shape) + ", " + memrefType(v.shape) + ") -> ()\n";
    out.outputs.push_back({o.name(), v.shape});
  }
  out.weight_bytes = im.em.constantBytes();
  std::ostringstream os;
  os << "// Imported by Sextant from " << path << " (" << (out.producer.empty() ? "unknown producer" : out.producer)
     << ", opset " << out.opset << "): " << out.nodes << " nodes.\n"
     << "module {\n  func.func @forward(" << sig << ") {\n"
     << prologue << im.em.body() << epilogue << "    return\n  }\n" << im.em.functions() << "}\n";
  out.mlir = os.str();
  return out;
}

}  // namespace sextant
