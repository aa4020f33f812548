#include <memory>

#include "onednn_api.h"
#include "onednn_primitives.h"

namespace sextant::libref {

#ifdef SEXTANT_HAVE_DNNL_H
bool onednnPrimitivesBuilt() { return true; }

namespace {
// Everything the kernel needs, alive as long as the kernel (never released: the process ends).
struct MatmulState {
  DnnlSession s;
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr;
};
}  // namespace

OnednnKernel makeOnednnMatmul(void* dnnl, const GemmWorkload& w) {
  OnednnKernel out;
  auto st = std::make_shared<MatmulState>();
  DnnlSession& s = st->s;
  if (!s.api.load(dnnl)) {
    out.error = "libdnnl has no matmul primitive C API (oneDNN 2.x expected)";
    return out;
  }
  const bool ta = w.layout == Layout::TN, tb = w.layout == Layout::NT;
  const int nd = w.batched() ? 3 : 2;
  const int64_t B = w.batch, M = w.m, N = w.n, K = w.k;
  // Logical dims (batch,) rows, cols; strides as stored.
  dnnl_dims_t ad{}, bd{}, cd{}, as{}, bs{}, cs{};
  auto fill = [nd](dnnl_dims_t d, dnnl_dims_t st, int64_t b, int64_t r, int64_t c, int64_t bstride, int64_t rs,
                   int64_t csd) {
    int i = 0;
    if (nd == 3) d[i] = b, st[i] = bstride, ++i;
    d[i] = r, st[i] = rs, ++i;
    d[i] = c, st[i] = csd;
  };
  fill(ad, as, B, M, K, M * K, ta ? 1 : K, ta ? M : 1);
  fill(bd, bs, B, K, N, K * N, tb ? 1 : N, tb ? K : 1);
  fill(cd, cs, B, M, N, M * N, N, 1);
  dnnl_memory_desc_t amd, bmd, cmd;
  dnnl_matmul_desc_t mmd;
  dnnl_primitive_desc_t pd = nullptr;
  const DnnlApi& api = s.api;
  if (!s.start() || api.md_strides(&amd, nd, ad, dnnl_f32, as) != dnnl_success ||
      api.md_strides(&bmd, nd, bd, dnnl_f32, bs) != dnnl_success ||
      api.md_strides(&cmd, nd, cd, dnnl_f32, cs) != dnnl_success ||
      api.matmul_init(&mmd, &amd, &bmd, nullptr, &cmd) != dnnl_success ||
      api.pd_create(&pd, &mmd, nullptr, s.engine, nullptr) != dnnl_success ||
      api.prim_create(&st->prim, pd) != dnnl_success || !s.wrap(&st->a, &amd) || !s.wrap(&st->b, &bmd) ||
      !s.wrap(&st->c, &cmd)) {
    out.error = "oneDNN could not create a matmul primitive for " + w.key();
    return out;
  }
  out.impl = s.implOf(pd);
  out.kernel = [st](const float* a, const float* b, float* c) {
    const DnnlApi& api = st->s.api;
    api.mem_set(st->a, const_cast<float*>(a));
    api.mem_set(st->b, const_cast<float*>(b));
    api.mem_set(st->c, c);
    st->s.run(st->prim, {{DNNL_ARG_SRC, st->a}, {DNNL_ARG_WEIGHTS, st->b}, {DNNL_ARG_DST, st->c}});
  };
  return out;
}
#else
bool onednnPrimitivesBuilt() { return false; }
OnednnKernel makeOnednnMatmul(void*, const GemmWorkload&) { return OnednnKernel{{}, "", kOnednnHeadersMissing}; }
#endif

}  // namespace sextant::libref
