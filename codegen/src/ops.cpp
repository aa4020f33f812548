// The op registry, workload level (ops.h). A new op: its OpDef in codegen/src/ops/ and a line here
// (and its CPU schedules in ops_cpu.cpp).
#include "sextant/codegen/ops.h"

namespace sextant {

const std::vector<const OpDef*>& registeredOps() {
  static const std::vector<const OpDef*> ops = {&gemmOp(), &batchMatmulOp(), &conv2dOp()};
  return ops;
}

double OpDef::flops(const GemmWorkload& w) const {
  return 2.0 * double(w.batch) * double(w.m) * double(w.n) * double(w.k);
}

std::string knownOpNames() {
  std::string s;
  for (const OpDef* op : registeredOps()) s += (s.empty() ? "" : ", ") + std::string(op->name());
  return s;
}

Result<const OpDef*> findOp(const std::string& name) {
  for (const OpDef* op : registeredOps())
    if (name == op->name()) return op;
  return Error{"unknown op '" + name + "' (known: " + knownOpNames() + ")"};
}

const OpDef& opOf(OpKind kind) {
  for (const OpDef* op : registeredOps())
    if (op->kind() == kind) return *op;
  return *registeredOps().front();
}

}  // namespace sextant
