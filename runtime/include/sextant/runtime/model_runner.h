// Calling a compiled model (tune model, tune compile FILE.onnx): its C entry point
// `_mlir_ciface_forward(in0*, ..., out0*, ...)` with memref descriptors of row-major f32 buffers,
// timed whole, in an isolated child (a crash or a hang is an error, not the tuner's end), with the
// machine lock of measurements held. No MLIR here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sextant/common/result.h"

namespace sextant {

struct ModelRunRequest {
  std::string so_path;
  std::string entry = "_mlir_ciface_forward";
  std::vector<std::vector<int64_t>> inputs, outputs;  // shapes, in argument order
  std::vector<std::vector<float>> input_data;         // empty: uniform random in [-1, 1) from `seed`
  std::vector<std::vector<float>> expected;           // optional: outputs to compare with
  bool return_outputs = false;                        // ModelRunResult::outputs (first call)
  uint64_t seed = 1;
  double min_time_s = 1.0;  // timed calls until this much time has passed...
  int min_calls = 5;        // ...and at least this many (after one untimed call)
  double timeout_s = 600;
  // A profiled network (tune compile --profile): each op's clock read after the timed calls
  // (ModelRunResult::op_s); an error if the shared object has none.
  bool profile = false;
};

struct ModelRunResult {
  std::vector<double> times_s;   // every timed call
  double median_s = 0, min_s = 0;
  // With `expected`: the largest |output - expected| and the largest |expected| over every output.
  double max_abs_error = -1, max_abs_expected = 0;
  std::vector<double> output_checksums;  // sum of each output's elements (first call)
  std::vector<std::vector<float>> outputs;  // with return_outputs
  // With profile: each op's mean seconds per timed call, by its id (CompileOutcome::profiled_ops).
  std::vector<double> op_s;
};

Result<ModelRunResult> runModel(const ModelRunRequest& r);

// A raw little-endian f32 file (e.g. tests/data/models/NAME.in0.f32).
Result<std::vector<float>> readF32File(const std::string& path);

}  // namespace sextant
