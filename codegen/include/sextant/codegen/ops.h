// The op interface (issue #31), workload level: one object per op that `tune --op` knows, saying
// what the data flow needs of a workload of it before any schedule exists: the command line (name,
// shape syntax, default shape), the workload key (its fields, and the workload again from them),
// the operands as stored, the FLOP count, the payload IR, and how a result is verified (the
// reference, the name of a wrong element). MLIR-free and schedule-free: the runner-only build
// (tune-runner on a GPU machine) links it. The CPU schedules of each op (space, default, seeds,
// emitter, library matcher, cost-model view) are its other half: op_schedules.h.
//
// The ops live in codegen/src/ops/: matmul.cpp (gemm, batch_matmul), conv2d.cpp; their schedules
// in matmul_cpu.cpp, conv2d_cpu.cpp. A new op adds its two files and a line in each registry
// (ops.cpp, ops_cpu.cpp): docs/architecture.md, "A new op".
#pragma once

#include <string>
#include <vector>

#include "sextant/codegen/workload.h"
#include "sextant/common/result.h"

namespace sextant {

// A row-major operand as the kernel's C interface takes it: its sizes, outermost first.
using OperandDims = std::vector<int64_t>;

class OpDef {
 public:
  virtual ~OpDef() = default;

  // ---- the command line ----
  virtual OpKind kind() const = 0;
  virtual const char* name() const = 0;          // the --op value and the key's first field
  virtual const char* defaultShape() const = 0;  // tuned when --shape is not given
  virtual const char* shapeSyntax() const = 0;   // for --help: "MxNxK", "a benchdnn descriptor"
  virtual const char* summary() const = 0;       // one line for --help
  virtual bool tunesOnGpu() const { return false; }  // every op tunes on the host CPU
  // A workload from --shape, --dtype, --layout; the error is one line.
  virtual Result<GemmWorkload> make(const std::string& shape, const std::string& dtype,
                                    const std::string& layout) const = 0;

  // ---- the workload key: "<name>:<layoutField>:<shape>:<a>*<b>-><c>" ----
  virtual std::string layoutField(const GemmWorkload& w) const = 0;
  virtual std::string shapeString(const GemmWorkload& w) const = 0;
  // The workload of a key's fields (its name is this op's); the error says what is wrong.
  virtual Result<GemmWorkload> fromKey(const std::string& layout, const std::string& shape, DType a, DType b,
                                       DType c) const = 0;

  // ---- sizes and work ----
  // A, B and C (input, filter, output) as the kernel takes them.
  virtual std::vector<OperandDims> operands(const GemmWorkload& w) const = 0;
  // The FLOPs of one call (GEMM-shaped ops: 2 x batch x M x N x K; a convolution's padding taps
  // counted, the usual convention).
  virtual double flops(const GemmWorkload& w) const;

  // ---- the payload: a public function `sextant_gemm(A, B, C)` on memrefs (C interface) ----
  virtual std::string payloadMlir(const GemmWorkload& w) const = 0;

  // ---- verification ----
  // What a result is checked against ("OpenBLAS", "direct loops").
  virtual const char* referenceName(const GemmWorkload& w) const = 0;
  // Whether the runtime verifies it with OpenBLAS (one sgemm per batch element, what the runtime
  // loads); otherwise with naiveReference.
  virtual bool blasReference(const GemmWorkload& w) const = 0;
  // The result computed by plain loops accumulating in double: the reference of ops without a
  // BLAS one, and the tests' check of the BLAS path.
  virtual void naiveReference(const GemmWorkload& w, const float* a, const float* b, float* c) const = 0;
  // The element of C at row-major index `i`, named for an error: "C[3][4]", "output[n 0][oh 1]...".
  virtual std::string elementName(const GemmWorkload& w, int64_t i) const = 0;
};

// Every registered op, in --help order.
const std::vector<const OpDef*>& registeredOps();
// The op named `name`; the error is one line listing the known ops.
Result<const OpDef*> findOp(const std::string& name);
const OpDef& opOf(OpKind kind);
inline const OpDef& opOf(const GemmWorkload& w) { return opOf(w.op); }
// "gemm, batch_matmul, conv2d"
std::string knownOpNames();

// The registered ops (codegen/src/ops/).
const OpDef& gemmOp();
const OpDef& batchMatmulOp();
const OpDef& conv2dOp();

}  // namespace sextant
