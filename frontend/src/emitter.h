// The MLIR text writer behind importOnnx: SSA values of f32 tensors with a logical (ONNX) shape
// and a physical dimension order, constants, and the linalg/tensor ops the operators lower to.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sextant/common/result.h"

namespace sextant::onnx_import {

using Shape = std::vector<int64_t>;
using Perm = std::vector<int>;

int64_t numel(const Shape& s);
Perm identityPerm(size_t rank);
extern const Perm kNHWC;  // physical NHWC of a logical NCHW tensor: {0, 2, 3, 1}

// An integer held as a double (Const::v), saturated: exporters write INT64_MAX / INT64_MIN for
// "to the end" in Slice bounds, which a double does not hold exactly.
inline int64_t toInt(double d) {
  if (d >= 9.2e18) return INT64_MAX;
  if (d <= -9.2e18) return INT64_MIN;
  return int64_t(d);
}

// A constant known at import time (initializers, Constant nodes, folded shape arithmetic).
struct Const {
  Shape shape;
  bool is_int = false;
  std::vector<double> v;  // values, row-major (ints are exact up to 2^53)
  int64_t at(size_t i) const { return toInt(v[i]); }
};

// The same values with the dimensions in the order `perm` (dim i of the result is dim perm[i]).
Const permuted(const Const& c, const Perm& perm);

// numpy broadcasting of the shapes (aligned from the right, each dimension equal or 1): the
// broadcast shape, or an error when they do not broadcast.
Result<Shape> broadcastShapes(const std::vector<Shape>& shapes);

// An f32 tensor in the module: the tensor `ssa` holds the logical shape `shape` with its
// dimensions in the order `perm` (physical dim i is logical dim perm[i]).
struct Val {
  std::string ssa;
  Shape shape;
  Perm perm;
  Shape physical() const;
};

// The scalar body of an elementwise op: SSA names of the operands' elements -> the result's.
using ScalarFn = std::function<std::string(class Emitter&, const std::vector<std::string>&)>;

// An operand of an elementwise op: a tensor of the module or a constant.
struct Operand {
  const Val* val = nullptr;
  const Const* cst = nullptr;
  const Shape& shape() const { return val ? val->shape : cst->shape; }
};

class Emitter {
 public:
  std::string fresh();
  void line(const std::string& s) { body_ << "    " << s << "\n"; }
  std::string body() const { return body_.str(); }
  std::string functions() const { return functions_; }  // the private functions of call()

  // Emits what `body` emits as a private function of its own, @NAME (made unique), taking `args`,
  // and calls it. Tunable ops go there, one per function: a schedule's actions canonicalize the
  // function they are in, and must not touch (and erase) the other ops a library still matches.
  Val call(const std::string& name, const std::vector<Val>& args,
           const std::function<Val(const std::vector<Val>&)>& body);
  int64_t constantBytes() const { return const_bytes_; }

  static std::string type(const Shape& physical);  // tensor<1x3xf32>
  std::string f32(double x);                       // %cst of an f32 scalar (cached)
  std::string scalarOp(const std::string& op, const std::vector<std::string>& args);  // op on f32s

  Val constant(const Const& c, const Perm& perm = {});  // an f32 tensor constant (cached by content)
  Val transpose(const Val& x, const Perm& to);           // the same logical tensor in another order
  Val identity(const Val& x) { return transpose(x, identityPerm(x.shape.size())); }
  std::string empty(const Shape& physical);
  std::string filled(const Shape& physical, double value);

  // ONNX (numpy) broadcasting elementwise op (the operands' shapes must broadcast:
  // broadcastShapes); the result takes `out_perm` (empty: the first operand of the output's
  // rank's order). Constant operands of one element become scalars. `dest` >= 0: that operand (a
  // tensor of the result's shape and order) is the op's init, updated in place (read as %out).
  Val elementwise(const std::vector<Operand>& ins, const ScalarFn& fn, Perm out_perm = {}, int dest = -1);
  // Sum or max over logical `axes`, the axes kept with size 1; the result keeps x's order.
  Val reduce(const Val& x, const std::vector<int>& axes, bool max);
  Val reshape(const Val& x, const Shape& to);  // row-major reshape (materializes the identity order)
  Val pad(const Val& x, const Shape& low, const Shape& high, double value);  // on the physical dims
  Val slice(const Val& x, const Shape& offsets, const Shape& sizes, const Shape& strides);  // physical
  Val insertSlices(const Shape& physical, const std::vector<std::pair<Val, Shape>>& parts, const Shape& logical,
                   const Perm& perm);  // each part at a physical offset

 private:
  std::ostringstream body_;
  int next_ = 0;
  std::map<std::string, std::string> scalars_;
  std::map<std::string, Val> consts_;
  int64_t const_bytes_ = 0;
  bool in_region_ = false;
  std::string functions_;
  std::map<std::string, int> function_names_;
};

}  // namespace sextant::onnx_import
