// The op interface (issue #31), schedule level: what the CPU target needs of each op (ops.h has the
// workload level). One object per op: its schedule space, the untuned default and the extra
// starting points, the Transform-dialect actions of a candidate, the library matcher that finds the
// op in a user's module, and the cost model's view of a candidate. The stages call these through
// buildCpuGemmSpace, defaultCpuCandidate, cpuSeedCandidates, emitCpuGemmSchedule (cpu_schedule.h;
// the names are from when GEMM was the only op), buildLibrary (library.h) and the features
// (costmodel/features.h); none of them asks which op it holds.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sextant/codegen/space.h"
#include "sextant/codegen/workload.h"
#include "sextant/hwspec/target.h"

namespace sextant {

// A CPU candidate as the knobs of a blocked GEMM (the cost model's features read these, whatever the
// op): knobs[0..6] = tile_m, tile_n, tile_k, reg_m, reg_n, unroll_k, reg_loop_order (a GEMM-space
// candidate: all its knob values, in the space's order, of which these are the first seven);
// blocks: the parallel blocks of the outer forall.
struct CpuGemmView {
  std::vector<int64_t> knobs;
  double blocks = 1;
};

class CpuOpSchedules {
 public:
  virtual ~CpuOpSchedules() = default;
  virtual OpKind kind() const = 0;

  // ---- the search ----
  virtual Space space(const GemmWorkload& w, const HostCpu& cpu, int threads) const = 0;
  virtual Candidate defaultCandidate(const Space& space, const GemmWorkload& w) const = 0;
  // Starting points measured right after the default (none by default).
  virtual std::vector<Candidate> seeds(const Space&, const GemmWorkload&) const { return {}; }

  // ---- the schedule ----
  // The payload op the schedule's `%mm` handle matches (linalg.matmul, linalg.conv_2d_nhwc_hwcf...).
  virtual const char* payloadOp(const GemmWorkload& w) const = 0;
  // Every payload op this op's schedules may match (for reading actions back out of a schedule).
  virtual std::vector<const char*> payloadOps() const = 0;
  // "GEMM", "convolution": the schedule's title line.
  virtual const char* title() const = 0;
  // The actions on %mm (and %root) of a candidate, each line indented by `ind`.
  virtual std::string actions(const Space& space, const Candidate& c, const GemmWorkload& w,
                              const std::string& ind) const = 0;

  // ---- the library (tune export, tune compile) ----
  // A text equal for workloads whose ops the same matcher accepts (entries with equal signatures
  // share one matcher).
  virtual std::string matcherSignature(const GemmWorkload& w, int64_t batch) const = 0;
  // The checks of a transform.match.structured on `handle` that accept this workload's op and bind
  // it to %0 (batch > 0: a GEMM workload applied to the batch elements of a batched op);
  // single_use: the op's result has one user.
  virtual void emitMatcherChecks(std::ostream& o, const GemmWorkload& w, int64_t batch, const std::string& handle,
                                 bool single_use) const = 0;
  // Why a library cannot carry this workload's schedules (tune export skips such records with it as
  // the warning); empty: it can.
  virtual std::string notInLibraries(const GemmWorkload&) const { return ""; }
  // Whether those checks already check the op's name (else an epilogue matcher that needs a named
  // op adds the check).
  virtual bool matcherChecksName() const = 0;
  // The rank of the op's result (what an epilogue on it has).
  virtual int resultRank(const GemmWorkload& w, int64_t batch) const = 0;
  // The actions of a library entry: `recorded`, the actions the tuner measured (empty if none),
  // are used as they are where they still apply; keeps_init: the op accumulates into data that is
  // not a zero fill, which the actions must not fuse away.
  virtual std::string libraryActions(const Space& space, const Candidate& c, const GemmWorkload& w, int64_t batch,
                                     bool keeps_init, const std::string& recorded, const std::string& ind) const = 0;

  // ---- the cost model ----
  virtual CpuGemmView gemmView(const GemmWorkload& w, const Space& space, const Candidate& c) const = 0;
};

// The CPU schedules of the workload's op (codegen/src/ops/*_cpu.cpp, registered in ops_cpu.cpp).
const CpuOpSchedules& cpuSchedulesOf(OpKind kind);
inline const CpuOpSchedules& cpuSchedulesOf(const GemmWorkload& w) { return cpuSchedulesOf(w.op); }
// Every registered op's payload ops.
std::vector<const char*> allCpuPayloadOps();
// Whether CPU actions fuse the op's init (a zero fill) into their tiles themselves (then the init
// must be a linalg.fill).
bool cpuActionsFuseOwnInit(const std::string& actions);

const CpuOpSchedules& gemmCpuSchedules();
const CpuOpSchedules& batchMatmulCpuSchedules();
const CpuOpSchedules& conv2dCpuSchedules();

}  // namespace sextant
