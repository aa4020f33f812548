// The op registry, schedule level (op_schedules.h). A new op: its CpuOpSchedules in
// codegen/src/ops/ and a line here (and its OpDef in ops.cpp).
#include "sextant/codegen/op_schedules.h"

#include "sextant/codegen/ops.h"

namespace sextant {

static const std::vector<const CpuOpSchedules*>& registeredSchedules() {
  static const std::vector<const CpuOpSchedules*> s = {&gemmCpuSchedules(), &batchMatmulCpuSchedules(),
                                                       &conv2dCpuSchedules()};
  return s;
}

const CpuOpSchedules& cpuSchedulesOf(OpKind kind) {
  for (const CpuOpSchedules* s : registeredSchedules())
    if (s->kind() == kind) return *s;
  return *registeredSchedules().front();
}

std::vector<const char*> allCpuPayloadOps() {
  std::vector<const char*> out;
  for (const CpuOpSchedules* s : registeredSchedules())
    for (const char* op : s->payloadOps()) out.push_back(op);
  return out;
}

bool cpuActionsFuseOwnInit(const std::string& actions) { return actions.find("%sx_init = ") != std::string::npos; }

}  // namespace sextant
