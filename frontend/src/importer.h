// importOnnx's state while it walks a graph, shared by the files that lower operators:
// onnx_import.cpp (the walk, constants and their folding, simple operators) and onnx_nn.cpp
// (convolutions, pools, matrix products, normalizations, softmax).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "emitter.h"

namespace sextant::onnx_import {

class Importer {
 public:
  Emitter em;
  std::map<std::string, Val> vals;     // tensors of the module, by ONNX name
  std::map<std::string, Const> consts; // values known at import time, by ONNX name
  const onnx::NodeProto* node = nullptr;
  int node_index = 0;
  int64_t opset = 13;
  // The graph around the walk: how many node inputs and graph outputs read each name, the node
  // that reads (last) and the node that writes each name, and the nodes an earlier node's
  // epilogue has already lowered (the walk skips them).
  const onnx::GraphProto* graph = nullptr;
  std::map<std::string, int> uses, reader, writer;
  std::set<int> absorbed;

  // "node 'NAME' (#3, Conv): msg" as an error.
  Error fail(const std::string& msg) const;
  std::string nodeName() const;  // its name, or its first output's when it has none
  size_t inputs() const { return size_t(node->input_size()); }
  bool has(size_t i) const { return int(i) < node->input_size() && !node->input(int(i)).empty(); }
  const std::string& in(size_t i) const { return node->input(int(i)); }
  const std::string& out(size_t i = 0) const { return node->output(int(i)); }
  bool isConst(size_t i) const { return has(i) && consts.count(in(i)); }
  const Const& cst(size_t i) const { return consts.at(in(i)); }
  // Input i as a tensor of the module (constants are emitted as f32 tensors).
  Result<Val> val(size_t i);
  Result<Operand> operand(size_t i);  // the Val or Const (valid until vals/consts change)

  const onnx::AttributeProto* attr(const std::string& name) const;
  int64_t attrInt(const std::string& name, int64_t def) const;
  double attrFloat(const std::string& name, double def) const;
  std::string attrString(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attrInts(const std::string& name, std::vector<int64_t> def = {}) const;
  // Integer list from attribute `name` (older opsets) or constant input `input` (newer ones).
  Result<std::vector<int64_t>> intsFrom(const std::string& name, size_t input, std::vector<int64_t> def = {}) const;

  void define(const Val& v, size_t output = 0) { vals[out(output)] = v; }
};

// Operator lowerings of onnx_nn.cpp; each reads im.node and defines its outputs.
Status lowerConv(Importer& im);
Status lowerPool(Importer& im);  // MaxPool, AveragePool
Status lowerGlobalPool(Importer& im);  // GlobalAveragePool, GlobalMaxPool
Status lowerGemm(Importer& im);
Status lowerMatMul(Importer& im);
Status lowerSoftmax(Importer& im);
Status lowerBatchNorm(Importer& im);
Status lowerLayerNorm(Importer& im);
Status lowerReduce(Importer& im);  // ReduceMean, ReduceSum, ReduceMax

// onnx_epilogue.cpp: the elementwise nodes after a convolution or matrix product that are
// computed in its function, on its result in place (bias, Relu, Clip, a residual Add), so that
// tune compile's CPU library fuses them into the op's tiles.
struct EpilogueStep {
  enum Kind { kAddConst, kAddTensor, kRelu, kClip } kind;
  Const c;             // kAddConst: one value, or one per channel (shape {channels})
  std::string tensor;  // kAddTensor: the other operand's ONNX name (same shape)
  double lo = 0, hi = 0;  // kClip
};
struct Epilogue {
  std::vector<EpilogueStep> steps;
  std::vector<int> nodes;  // the nodes it lowers
  std::string out;         // the name its result defines
  std::vector<std::string> tensors() const;  // the kAddTensor operands, in order
};
// `c` as one value, or as one value per channel (shape {channels}) when it broadcasts to `shape`
// along `channel` only (numpy rules); nothing otherwise.
std::optional<Const> perChannel(const Const& c, const Shape& shape, int channel);
// The epilogue of the current node's output 0, of logical shape `shape` with channels along
// logical dim `channel`; `bias` (one value per channel), if any, is its first step.
Epilogue planEpilogue(Importer& im, const Shape& shape, int channel, const Const* bias);
// In the op's function: `acc` with the steps applied in place; `res` the function's parameters
// holding the kAddTensor operands (acc's shape and order), in order.
Val emitEpilogue(Emitter& em, const Val& acc, int channel, const Epilogue& ep, const std::vector<Val>& res);
// Defines the epilogue's result and marks its nodes lowered.
void defineEpilogue(Importer& im, const Epilogue& ep, const Val& result);

// onnx_fold.cpp: an initializer or Constant's value; Reshape's target shape (0 copies the
// input's dim unless allowzero, -1 takes what is left); and folding: true (and the node's outputs
// defined as constants) if every input of the node is known at import, false if it must be emitted.
Result<Const> constOf(const onnx::TensorProto& t);
Result<Shape> reshapeTarget(const Shape& from, const std::vector<int64_t>& spec, bool allowzero);
// The shape a Reshape, Flatten, Squeeze or Unsqueeze node gives a value of shape `from` (tensor
// or constant alike).
Result<Shape> reshapedShape(Importer& im, const Shape& from);
// Slice bounds on a dimension of size n (negative counts from the end, clamped), step > 0.
struct SliceRange {
  int64_t start, count;
};
SliceRange sliceRange(int64_t n, int64_t start, int64_t end, int64_t step);
Result<bool> fold(Importer& im);

// onnx_tensor.cpp: elementwise operators and the tensor operators (Transpose, Reshape, Flatten,
// Squeeze, Unsqueeze, Concat, Slice, Pad, Gather, Expand, Identity, Dropout, Cast).
Status lowerElementwise(Importer& im);
Status lowerTensorOp(Importer& im);

// Normalizes an axis of a rank-`rank` tensor (negative counts from the end); false if out of range.
bool normalizeAxis(int64_t& axis, size_t rank);

}  // namespace sextant::onnx_import
