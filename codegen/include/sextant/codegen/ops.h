// The op registry (issue #31): every op `tune --op` knows, with what the command line and the data
// flow need to know of it before a workload exists: its name, its shape syntax, how a workload is
// made from the command line's pieces, and which targets tune it. What follows from the workload
// (payload, FLOPs, key) is GemmWorkload's; the spaces and emitters dispatch on GemmWorkload::op.
// A new op adds an entry here (ops.cpp) and its workload kind.
#pragma once

#include <string>
#include <vector>

#include "sextant/codegen/workload.h"
#include "sextant/common/result.h"

namespace sextant {

struct OpInfo {
  OpKind kind;
  const char* name;           // "gemm", "batch_matmul": the --op value and the key's first field
  const char* default_shape;  // tuned when --shape is not given
  const char* summary;        // one line for --help
  bool gpu = false;           // GPU targets tune it too (every op tunes on the host CPU)
  // A workload from --shape, --dtype, --layout.
  Result<GemmWorkload> (*make)(const std::string& shape, const std::string& dtype, const std::string& layout);
};

const std::vector<OpInfo>& registeredOps();
// The op named `name`; the error is one line listing the known ops.
Result<const OpInfo*> findOp(const std::string& name);
const OpInfo& opInfo(OpKind kind);
// "gemm, batch_matmul, conv2d"
std::string knownOpNames();

}  // namespace sextant
