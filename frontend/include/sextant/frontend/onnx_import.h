// ONNX -> MLIR (issue #32): a model file becomes one module of linalg on tensors that tune compile
// and tune model compile as they compile any module. No MLIR here: the importer reads the model
// with ONNX's own protobuf classes (Debian libonnx-dev) and writes MLIR text.
//
// The module has one public function, @forward(inputs..., outputs...), every argument a row-major
// memref in the model's own (ONNX) layout and shape; outputs are written in place (destination
// passing), so the C entry point is `_mlir_ciface_forward(in0*, ..., out0*, ...)` with pointers to
// memref descriptors. Weights are constants inside the module. Inside, 4-D activations of
// convolutions and pools are kept NHWC (the layout Sextant tunes convolutions in): an NCHW input is
// transposed once, filters are transposed when the module is written (never per call), and
// layout-agnostic ops (elementwise, bias, residual adds) follow whatever layout their operand has.
// Shape arithmetic on constants (Shape, Gather, Concat, Unsqueeze, ...) is folded at import.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sextant/common/result.h"

namespace sextant {

struct ModelTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

struct ImportedModel {
  std::string mlir;                    // the module (func.func @forward)
  std::vector<ModelTensor> inputs;     // the model's graph inputs, in argument order
  std::vector<ModelTensor> outputs;    // then its outputs
  int64_t nodes = 0, folded = 0;       // nodes, and of those folded away at import
  int64_t weight_bytes = 0;            // constants embedded in the module
  std::string producer;                // e.g. "pytorch 1.13.1"
  int64_t opset = 0;
};

// Reads FILE.onnx. `input_shapes` gives static shapes to inputs by name (needed for dynamic
// dimensions; a graph input with a symbolic or unknown dimension is otherwise refused, naming it).
// Errors are one line: the file, and for an operator the importer does not handle, the node and
// its operator.
Result<ImportedModel> importOnnx(const std::string& path,
                                 const std::map<std::string, std::vector<int64_t>>& input_shapes = {});

// "x=1,3,224,224;mask=1,128" -> shapes by input name.
Result<std::map<std::string, std::vector<int64_t>>> parseInputShapes(const std::string& spec);

// The ONNX operators importOnnx handles.
std::vector<std::string> supportedOnnxOperators();

}  // namespace sextant
