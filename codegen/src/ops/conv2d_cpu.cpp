// The conv2d op's CPU schedules (op_schedules.h): the direct route (cpu_conv.cpp) and, for a 1x1
// convolution with stride 1 and no padding, the GEMM space and emitter on its collapsed operands
// (convIsGemm). The library matcher checks the op's name, every loop size, the strides and the
// dilations, so 3x3/2 and 3x3/1 with the same loop sizes are told apart. Its workload: conv2d.cpp.
#include <sstream>

#include "../cpu_schedule_internal.h"
#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/op_schedules.h"

namespace sextant {

namespace {

// A convolution's matcher: the op's name, every loop size ((n, oh, ow, f, kh, kw, c), or (n, oh,
// ow, c, kh, kw) depthwise), the strides and the dilations. The padding is the producer's (a
// tensor.pad), not the op's. The op is bound to %0; single_use: its result must have one user.
void emitConvChecks(std::ostream& o, const GemmWorkload& w, const std::string& handle, bool single_use) {
  const std::string H = "!transform.any_op", P = "!transform.param<i64>";
  const ConvDesc& d = w.conv;
  const bool dw = d.depthwise();
  auto param = [&](const std::string& name, int64_t v) {
    o << "      %" << name << " = transform.param.constant " << v << " : i64 -> " << P << "\n";
  };
  auto cmp = [&](const std::string& a, const std::string& b) {
    o << "      transform.match.param.cmpi eq %" << a << ", %" << b << " : " << P << "\n";
  };
  o << "    transform.match.operation_name " << handle << " [\"" << convOpName(d) << "\"] : " << H << "\n"
    << "    %0 = transform.match.structured failures(propagate) " << handle << " : (" << H << ") -> " << H << " {\n"
    << "    ^bb0(%s: " << H << "):\n";
  const std::vector<int64_t> dims = dw ? std::vector<int64_t>{d.mb, d.oh, d.ow, d.oc, d.kh, d.kw}
                                       : std::vector<int64_t>{d.mb, d.oh, d.ow, d.oc, d.kh, d.kw, d.ic};
  for (size_t k = 0; k < dims.size(); ++k) {
    o << "      %d" << k << " = transform.match.structured.dim %s[" << k << "] : (" << H << ") -> " << P << "\n";
    const std::string dk = std::string("d").append(std::to_string(k)), want = dk + "_want";
    param(want, dims[k]);
    cmp(dk, want);
  }
  o << "      %batch, %oi, %oc, %fl, %ic, %depth, %strides, %dilations = "
       "transform.match.structured.classify_convolution_dims %s : ("
    << H << ") -> (" << P << ", " << P << ", " << P << ", " << P << ", " << P << ", " << P << ", " << P << ", " << P
    << ")\n";
  param("sh", d.sh);
  param("sw", d.sw);
  param("dil_h", d.dh + 1);
  param("dil_w", d.dw + 1);
  o << "      %strides_want = transform.merge_handles %sh, %sw : " << P << "\n"
    << "      %dilations_want = transform.merge_handles %dil_h, %dil_w : " << P << "\n";
  cmp("strides", "strides_want");
  cmp("dilations", "dilations_want");
  if (single_use) o << "      %use = transform.match.structured.result %s[0] single : (" << H << ") -> " << H << "\n";
  o << "      transform.match.structured.yield %s : " << H << "\n"
    << "    }\n";
}

// A grouped convolution's schedule is that of one group's convolution (the payload loops over the
// groups; ops/conv2d.cpp): the space, default and view of the g = 1 problem with ic/g and oc/g
// channels. Other workloads as they are.
GemmWorkload perGroup(const GemmWorkload& w) {
  const ConvDesc& d = w.conv;
  if (d.g == 1 || d.depthwise()) return w;
  GemmWorkload g = w;
  g.conv.ic = d.ic / d.g, g.conv.oc = d.oc / d.g, g.conv.g = 1;
  g.m = g.conv.gemmM(), g.n = g.conv.gemmN(), g.k = g.conv.gemmK();
  return g;
}

// Whether the candidate is of the direct route's space (a 1x1 convolution's tuning space is the
// GEMM's; a library entry that gives it the direct route's default holds the direct space).
bool directSpace(const Space& space) { return space.knobIndex("tile_oh") >= 0; }

// A direct-route candidate read as the GEMM knobs of its implicit GEMM: a block of tile_oh x
// tile_ow output pixels (tile_m) by tile_f channels (tile_n) over reduction chunks of kh x kw x
// block_c (tile_k; block_c absent: the whole ic), a register tile of reg_ow pixels (reg_m) by reg_f
// channels (reg_n), tile_kw x tile_c reduction elements per step (unroll_k). An approximation: the
// features (and the pretrained model, trained on GEMMs) know nothing of strides, padding or the
// filter's shape beyond K.
CpuGemmView directView(const GemmWorkload& w, const Space& space, const Candidate& c) {
  auto k = [&](const char* n) { return space.valueOr(c, n, 1); };
  const int64_t block_c = space.valueOr(c, "block_c", 0);
  const int64_t tile_k = block_c > 0 ? w.conv.kh * w.conv.kw * block_c : w.k;
  CpuGemmView v;
  v.knobs = {k("tile_oh") * k("tile_ow"), k("tile_f"), tile_k, k("reg_ow"), k("reg_f"), k("tile_kw") * k("tile_c"),
             space.valueOr(c, "reg_loop_order", 0)};
  auto z = [&](const char* n) { return space.valueOr(c, n, 0); };
  v.blocks = double(cpuConvParallelBlocks(w.conv, z("tile_oh"), z("tile_ow"), z("tile_f")));
  return v;
}

class Conv2dSchedules : public CpuOpSchedules {
 public:
  OpKind kind() const override { return OpKind::Conv2d; }

  Space space(const GemmWorkload& w, const HostCpu& cpu, int threads) const override {
    return convIsGemm(w) ? cpu_detail::matmulSpace(convAsGemm(w), cpu, threads)
                         : buildCpuConvSpace(perGroup(w), cpu, threads);
  }
  Candidate defaultCandidate(const Space& space, const GemmWorkload& w) const override {
    return convIsGemm(w) ? cpu_detail::matmulDefault(space, convAsGemm(w)) : defaultCpuConvCandidate(space, perGroup(w));
  }

  std::vector<Candidate> seeds(const Space& space, const GemmWorkload& w) const override {
    return convIsGemm(w) ? cpu_detail::matmulSeeds(space, convAsGemm(w)) : cpuConvSeeds(space, perGroup(w));
  }

  const char* payloadOp(const GemmWorkload& w) const override {
    // (A 1x1 convolution's payload collapses the operands into a GEMM.)
    return convIsGemm(w) ? "linalg.matmul" : convOpName(w.conv);
  }
  std::vector<const char*> payloadOps() const override {
    return {"linalg.conv_2d_nhwc_hwcf", "linalg.depthwise_conv_2d_nhwc_hwc", "linalg.conv_2d_nchw_fchw",
            "linalg.conv_2d_nhwc_fhwc"};
  }
  const char* title() const override { return "convolution"; }
  std::string actions(const Space& space, const Candidate& c, const GemmWorkload& w, const std::string& ind) const override {
    if (!directSpace(space)) return emitCpuGemmActions(space, c, ind, false, w.m, Layout::NN, w.k);
    return emitCpuConvActions(space, c, ind, w.conv.depthwise(), true, w.conv.layout);
  }

  std::string matcherSignature(const GemmWorkload& w, int64_t) const override { return w.key(); }
  void emitMatcherChecks(std::ostream& o, const GemmWorkload& w, int64_t, const std::string& handle,
                         bool single_use) const override {
    emitConvChecks(o, w, handle, single_use);
  }
  bool matcherChecksName() const override { return true; }
  std::string notInLibraries(const GemmWorkload& w) const override {
    if (convIsGemm(w))
      return "a 1x1 convolution is tuned as the GEMM of its collapsed operands, which a Transform library cannot apply to "
             "a conv op yet (issue #31): tune best prints the script";
    if (w.conv.layout != ConvLayout::NhwcHwcf)
      return std::string("tune compile and the library match NHWC / HWCF convolutions (what the ONNX importer writes): ") +
             convLayoutKey(w.conv.layout) + " records are not exported yet (issue #31); tune best prints the script";
    if (w.conv.g > 1 && !w.conv.depthwise())
      return "a grouped convolution's schedule is that of one group's convolution, and a module holds its groups as "
             "separate convolutions (the ONNX importer writes one per group): tune the per-group workload (g1, ic/g and "
             "oc/g channels) to export it; tune best prints the script";
    return "";
  }
  int resultRank(const GemmWorkload&, int64_t) const override { return 4; }
  // Always the direct route's actions from the knobs (their zero fill fused unless the op keeps
  // its init); a 1x1 convolution's GEMM records do not apply to a conv op (tune export skips them).
  std::string libraryActions(const Space& space, const Candidate& c, const GemmWorkload& w, int64_t, bool keeps_init,
                             const std::string&, const std::string& ind) const override {
    return emitCpuConvActions(space, c, ind, w.conv.depthwise(), !keeps_init);
  }

  CpuGemmView gemmView(const GemmWorkload& w, const Space& space, const Candidate& c) const override {
    if (directSpace(space)) return directView(perGroup(w), space, c);
    return gemmCpuSchedules().gemmView(convAsGemm(w), space, c);
  }
};

}  // namespace

const CpuOpSchedules& conv2dCpuSchedules() {
  static const Conv2dSchedules s;
  return s;
}

}  // namespace sextant
