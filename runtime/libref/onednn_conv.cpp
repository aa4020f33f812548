// oneDNN's convolution primitive for a conv2d workload (issue #31): src and dst NHWC or NCHW as the
// workload stores them, the weights in the layout oneDNN prefers (format any), reordered from the
// workload's HWCF (depthwise: HWC) once, outside the timed calls, as an inference engine holds its
// weights. The reordered copy is evicted from the caches with the operands before each timed call
// (evictWithOperands), as the tuned kernels' weights are: a network reads a layer's weights once
// per pass, long after other layers have pushed them out.
#include <memory>

#include "sextant/runtime/cpu_runner.h"

#include "onednn_api.h"
#include "onednn_primitives.h"

namespace sextant::libref {

#ifdef SEXTANT_HAVE_DNNL_H
namespace {
struct ConvState {
  DnnlSession s;
  dnnl_primitive_t conv = nullptr, reorder = nullptr;
  dnnl_memory_t src = nullptr, user_w = nullptr, w = nullptr, dst = nullptr;
  const float* reordered_from = nullptr;  // the user weights the reordered copy holds
  size_t w_bytes = 0;                     // the size of the reordered copy
  void* evicted = nullptr;                // the reordered copy, once evictWithOperands was told of it
  ~ConvState() { forgetEvicted(evicted); }
};
}  // namespace

OnednnKernel makeOnednnConv(void* dnnl, const GemmWorkload& wl) {
  OnednnKernel out;
  auto st = std::make_shared<ConvState>();
  DnnlSession& s = st->s;
  if (!s.api.load(dnnl)) {
    out.error = "libdnnl has no convolution C API (oneDNN 2.x expected)";
    return out;
  }
  const DnnlApi& api = s.api;
  const ConvDesc& d = wl.conv;
  dnnl_dims_t sd = {d.mb, d.ic, d.ih, d.iw}, wd = {d.oc, d.ic, d.kh, d.kw}, dd = {d.mb, d.oc, d.oh, d.ow};
  // Groups: weights {g, oc/g, ic/g, kh, kw}, stored kh x kw x ic/g x oc (the workload's; group j
  // holds output channels j oc/g..); depthwise (ic/g = oc/g = 1) the workload's HWC.
  const int64_t icg = d.ic / d.g, ocg = d.oc / d.g;
  dnnl_dims_t gwd = {d.g, ocg, icg, d.kh, d.kw}, gws = {ocg, 1, d.oc, d.kw * icg * d.oc, icg * d.oc};
  const bool grouped = d.g > 1;
  dnnl_dims_t strides = {d.sh, d.sw}, dil = {d.dh, d.dw}, pad = {d.ph, d.pw};
  // The right padding that makes the output exactly oh x ow (oneDNN checks it).
  dnnl_dims_t pad_r = {(d.oh - 1) * d.sh + (d.kh - 1) * (d.dh + 1) + 1 - d.ih - d.ph,
                       (d.ow - 1) * d.sw + (d.kw - 1) * (d.dw + 1) + 1 - d.iw - d.pw};
  dnnl_memory_desc_t smd, umd, wany, dmd;
  dnnl_convolution_desc_t cd;
  dnnl_primitive_desc_t pd = nullptr;
  // The workload's layout (conv.h): activations NHWC or NCHW, filters HWCF, FCHW or FHWC.
  const dnnl_format_tag_t act = d.layout == ConvLayout::NchwFchw ? dnnl_nchw : dnnl_nhwc;
  const dnnl_format_tag_t fil = d.layout == ConvLayout::NchwFchw   ? dnnl_oihw
                                : d.layout == ConvLayout::NhwcFhwc ? dnnl_ohwi
                                                                   : dnnl_hwio;
  if (!s.start() || api.md_tag(&smd, 4, sd, dnnl_f32, act) != dnnl_success ||
      (grouped ? api.md_strides(&umd, 5, gwd, dnnl_f32, gws) : api.md_tag(&umd, 4, wd, dnnl_f32, fil)) != dnnl_success ||
      api.md_tag(&wany, grouped ? 5 : 4, grouped ? gwd : wd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
      api.md_tag(&dmd, 4, dd, dnnl_f32, act) != dnnl_success ||
      api.conv_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &smd, &wany, nullptr, &dmd, strides, dil, pad,
                    pad_r) != dnnl_success ||
      api.pd_create(&pd, &cd, nullptr, s.engine, nullptr) != dnnl_success ||
      api.prim_create(&st->conv, pd) != dnnl_success) {
    out.error = "oneDNN could not create a convolution for " + wl.key();
    return out;
  }
  const dnnl_memory_desc_t* wmd = api.pd_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_primitive_desc_t rpd = nullptr;
  if (!wmd || !s.wrap(&st->src, &smd) || !s.wrap(&st->dst, &dmd) || !s.wrap(&st->user_w, &umd) ||
      api.mem_create(&st->w, wmd, s.engine, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
      api.reorder_pd(&rpd, &umd, s.engine, wmd, s.engine, nullptr) != dnnl_success ||
      api.prim_create(&st->reorder, rpd) != dnnl_success) {
    out.error = "oneDNN could not reorder the weights of " + wl.key();
    return out;
  }
  st->w_bytes = api.md_size(wmd);
  out.impl = s.implOf(pd);
  out.kernel = [st](const float* a, const float* b, float* c) {
    const DnnlApi& api = st->s.api;
    if (st->reordered_from != b) {  // new weights: reordered once (the first, verified call)
      api.mem_set(st->user_w, const_cast<float*>(b));
      st->s.run(st->reorder, {{DNNL_ARG_FROM, st->user_w}, {DNNL_ARG_TO, st->w}});
      st->reordered_from = b;
      if (!st->evicted && api.mem_get(st->w, &st->evicted) == dnnl_success) evictWithOperands(st->evicted, st->w_bytes);
    }
    api.mem_set(st->src, const_cast<float*>(a));
    api.mem_set(st->dst, c);
    st->s.run(st->conv, {{DNNL_ARG_SRC, st->src}, {DNNL_ARG_WEIGHTS, st->w}, {DNNL_ARG_DST, st->dst}});
  };
  return out;
}
#else
OnednnKernel makeOnednnConv(void*, const GemmWorkload&) { return OnednnKernel{{}, "", kOnednnHeadersMissing}; }
#endif

}  // namespace sextant::libref
