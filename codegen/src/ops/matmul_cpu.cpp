// The GEMM family's CPU schedules (op_schedules.h): gemm and batch_matmul share the GEMM space
// and emitter (cpu_schedule.cpp; NT's transposed-B route: cpu_route_transposed_b.cpp; the batch on
// the forall, one element per block), and the library matcher of a contraction with its sizes and
// element widths. Their workloads: matmul.cpp.
#include <sstream>

#include "../cpu_schedule_internal.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/op_schedules.h"

namespace sextant {
namespace {

// A contraction's matcher: rank, two inputs, a mul-add body, m, n, k (and the batch) in place,
// their sizes and the operands' element widths. batch > 0: a rank-3 op with that batch.
void emitContractionChecks(std::ostream& o, const GemmWorkload& w, int64_t batch, const std::string& handle,
                           bool single_use) {
  const std::string H = "!transform.any_op", P = "!transform.param<i64>";
  auto param = [&](const std::string& name, int64_t v) {
    o << "      %" << name << " = transform.param.constant " << v << " : i64 -> " << P << "\n";
  };
  auto cmp = [&](const std::string& a, const std::string& b) {
    o << "      transform.match.param.cmpi eq %" << a << ", %" << b << " : " << P << "\n";
  };
  const int b = batch > 0 ? 1 : 0;  // loop offset of m, n, k
  o << "    %0 = transform.match.structured failures(propagate) " << handle << " : (" << H << ") -> " << H << " {\n"
    << "    ^bb0(%s: " << H << "):\n"
    << "      %rank = transform.match.structured.rank %s : (" << H << ") -> " << P << "\n";
  param("rank_want", 3 + b);
  cmp("rank", "rank_want");
  o << "      %ins = transform.match.structured.num_inputs %s : (" << H << ") -> " << P << "\n";
  param("two", 2);
  cmp("ins", "two");
  o << "      transform.match.structured.body %s { contraction = [\"arith.mulf\", \"arith.addf\"] } : " << H << "\n"
    << "      %batch, %md, %nd, %kd = transform.match.structured.classify_contraction_dims %s : (" << H << ") -> ("
    << P << ", " << P << ", " << P << ", " << P << ")\n";
  param("m_pos", b);
  param("n_pos", b + 1);
  param("k_pos", b + 2);
  cmp("md", "m_pos");
  cmp("nd", "n_pos");
  cmp("kd", "k_pos");
  if (b) {
    param("b_pos", 0);
    cmp("batch", "b_pos");
  }
  const char* dn[] = {"batch_size", "m", "n", "k"};
  int64_t dv[] = {batch, w.m, w.n, w.k};
  for (int d = 1 - b; d < 4; ++d) {
    o << "      %" << dn[d] << " = transform.match.structured.dim %s[" << d - 1 + b << "] : (" << H << ") -> " << P
      << "\n";
    param(std::string(dn[d]) + "_want", dv[d]);
    cmp(dn[d], std::string(dn[d]) + "_want");
  }
  const char* on[] = {"a", "b", "c"};
  int bits[] = {dtypeBytes(w.a_type) * 8, dtypeBytes(w.b_type) * 8, dtypeBytes(w.c_type) * 8};
  for (int x = 0; x < 3; ++x) {
    o << "      %" << on[x] << " = transform.match.structured." << (x < 2 ? "input" : "init") << " %s[" << (x < 2 ? x : 0)
      << "] : (" << H << ") -> !transform.any_value\n"
      << "      %" << on[x] << "_bits = transform.match.structured.elemental_bitwidth %" << on[x]
      << " : (!transform.any_value) -> " << P << "\n";
    param(std::string(on[x]) + "_bits_want", bits[x]);
    cmp(std::string(on[x]) + "_bits", std::string(on[x]) + "_bits_want");
  }
  if (single_use) o << "      %use = transform.match.structured.result %s[0] single : (" << H << ") -> " << H << "\n";
  o << "      transform.match.structured.yield %s : " << H << "\n"
    << "    }\n";
}

class MatmulSchedules : public CpuOpSchedules {
 public:
  explicit MatmulSchedules(bool batched) : batched_(batched) {}
  OpKind kind() const override { return batched_ ? OpKind::BatchMatmul : OpKind::Gemm; }

  Space space(const GemmWorkload& w, const HostCpu& cpu, int threads) const override {
    return cpu_detail::matmulSpace(w, cpu, threads);
  }
  Candidate defaultCandidate(const Space& space, const GemmWorkload& w) const override {
    return cpu_detail::matmulDefault(space, w);
  }
  std::vector<Candidate> seeds(const Space& space, const GemmWorkload& w) const override {
    return cpu_detail::matmulSeeds(space, w);
  }

  const char* payloadOp(const GemmWorkload&) const override { return batched_ ? "linalg.batch_matmul" : "linalg.matmul"; }
  std::vector<const char*> payloadOps() const override { return {batched_ ? "linalg.batch_matmul" : "linalg.matmul"}; }
  const char* title() const override { return "GEMM"; }
  std::string actions(const Space& space, const Candidate& c, const GemmWorkload& w, const std::string& ind) const override {
    if (cpu_detail::isAmxSpace(space)) return cpu_detail::emitAmxActions(space, c, ind, w.weights);
    return emitCpuGemmActions(space, c, ind, batched_, w.m, w.layout, w.k, w.n);
  }

  std::string matcherSignature(const GemmWorkload& w, int64_t batch) const override {
    return (batch > 0 ? std::to_string(batch) + "x" : std::string()) + w.gemmShapeString() + ":" +
           std::to_string(dtypeBytes(w.a_type) * 8) + "," + std::to_string(dtypeBytes(w.b_type) * 8) + "," +
           std::to_string(dtypeBytes(w.c_type) * 8);
  }
  void emitMatcherChecks(std::ostream& o, const GemmWorkload& w, int64_t batch, const std::string& handle,
                         bool single_use) const override {
    emitContractionChecks(o, w, batch, handle, single_use);
  }
  // AMX schedules (bf16, s8; issue #37) rewrite a whole (A, B, C) function (compiler_cpu_amx.cpp), not
  // one op of a user's module: not exported in this version.
  std::string notInLibraries(const GemmWorkload& w) const override {
    return cpu_detail::wantsAmx(w) ? "AMX (bf16, s8) schedules are not exported in this version: sextant-amx-gemm rewrites "
                                     "a whole GEMM function, not one op of a module"
                                   : "";
  }
  bool matcherChecksName() const override { return false; }
  int resultRank(const GemmWorkload&, int64_t batch) const override { return batch > 0 ? 3 : 2; }
  // A batched matmul's library entry is the GEMM of one element applied to each (batch > 0):
  // its actions come from the knobs. A GEMM's are the measured ones where they still apply (not
  // when they fuse an init that the op must keep).
  std::string libraryActions(const Space& space, const Candidate& c, const GemmWorkload& w, int64_t batch, bool keeps_init,
                             const std::string& recorded, const std::string& ind) const override {
    if (!recorded.empty() && batch == 0 && !(keeps_init && cpuActionsFuseOwnInit(recorded))) return recorded;
    return emitCpuGemmActions(space, c, ind, batch > 0, w.m, w.layout, keeps_init ? 0 : w.k, w.n);
  }

  CpuGemmView gemmView(const GemmWorkload& w, const Space& space, const Candidate& c) const override {
    CpuGemmView v;
    v.knobs = space.values(c);
    v.blocks = double(w.batch) * double(cpuParallelBlocks(w.m, w.n, v.knobs[0], v.knobs[1], space.valueOr(c, "outer_order", 0)));
    return v;
  }

 private:
  bool batched_;
};

}  // namespace

const CpuOpSchedules& gemmCpuSchedules() {
  static const MatmulSchedules s(false);
  return s;
}
const CpuOpSchedules& batchMatmulCpuSchedules() {
  static const MatmulSchedules s(true);
  return s;
}

}  // namespace sextant
