// oneDNN's matmul primitive (onednn_primitives.h). f32: every operand over the caller's buffer with
// the workload's strides. Low precision (issue #37): bf16 x bf16 -> f32 and s8 x s8 -> s32. The
// workload stores A and B in bf16 or s8, the harness hands their values as f32 (exactly
// representable: bf16 values, or integers in [-128, 127]), so the kernel makes its bf16 or s8
// copies once, on the first (verified, untimed) call, as the caller of such a GEMM holds them; the
// weights (B) go into the layout oneDNN prefers (format any), reordered once as the convolution's
// are (onednn_conv.cpp: an inference engine holds its weights so). Both copies are evicted with the
// operands before each timed call (evictWithOperands), so a timed call reads the low-precision A
// and the reordered B from memory as a tuned kernel reads its operands. An s32 result goes into the
// caller's C buffer as int32 bits (4 bytes an element, as f32; the verifier reads it as int32).
#include <cmath>
#include <cstdint>
#include <memory>

#include "sextant/runtime/bf16.h"
#include "sextant/runtime/cpu_runner.h"

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

// A low-precision matmul's types: its operands' (bf16, s8), its result's (f32, s32), and how the
// harness's f32 values become operand elements.
struct LowPrecision {
  const char* name;  // "bf16 x bf16 -> f32", for messages
  dnnl_data_type_t in, out;
  size_t bytes;                                  // an operand element's
  void (*convert)(const float*, size_t, void*);  // n f32 values to n operand elements
};

void bf16From(const float* src, size_t n, void* dst) { toBf16(src, n, static_cast<uint16_t*>(dst)); }
// The values are integers in [-128, 127] already: lrint is exact and the cast keeps them.
void s8From(const float* src, size_t n, void* dst) {
  auto* d = static_cast<int8_t*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = int8_t(std::lrint(src[i]));
}
constexpr LowPrecision kBf16{"bf16 x bf16 -> f32", dnnl_bf16, dnnl_f32, sizeof(uint16_t), bf16From};
constexpr LowPrecision kS8{"s8 x s8 -> s32", dnnl_s8, dnnl_s32, sizeof(int8_t), s8From};

// Low precision: the copy of A and the reordered weights, owned by oneDNN's memory objects.
struct LowPrecisionMatmulState {
  DnnlSession s;
  dnnl_primitive_t prim = nullptr, reorder = nullptr;
  dnnl_memory_t a_low = nullptr, user_b = nullptr, w = nullptr, c = nullptr;
  void *a_low_data = nullptr, *user_b_data = nullptr, *w_data = nullptr;
  size_t a_elems = 0, b_elems = 0, w_bytes = 0;
  const float* converted_from = nullptr;  // the f32 A the low-precision copy holds
  const float* reordered_from = nullptr;  // the f32 B the reordered weights hold
  bool evicted = false;                   // the copies were registered with evictWithOperands
  ~LowPrecisionMatmulState() {
    if (!evicted) return;
    forgetEvicted(a_low_data);
    forgetEvicted(w_data);
  }
};

// The operands' logical dims ((batch,) rows, cols) and strides as the workload stores them.
struct MatmulDims {
  int nd = 2;
  dnnl_dims_t ad{}, bd{}, cd{}, as{}, bs{}, cs{};
  explicit MatmulDims(const GemmWorkload& w) {
    const bool ta = w.layout == Layout::TN, tb = w.layout == Layout::NT;
    nd = w.batched() ? 3 : 2;
    const int64_t B = w.batch, M = w.m, N = w.n, K = w.k;
    auto fill = [this](dnnl_dims_t d, dnnl_dims_t st, int64_t b, int64_t r, int64_t c, int64_t bstride, int64_t rs,
                       int64_t csd) {
      int i = 0;
      if (nd == 3) d[i] = b, st[i] = bstride, ++i;
      d[i] = r, st[i] = rs, ++i;
      d[i] = c, st[i] = csd;
    };
    fill(ad, as, B, M, K, M * K, ta ? 1 : K, ta ? M : 1);
    fill(bd, bs, B, K, N, K * N, tb ? 1 : N, tb ? K : 1);
    fill(cd, cs, B, M, N, M * N, N, 1);
  }
};

OnednnKernel makeLowPrecisionMatmul(const std::shared_ptr<LowPrecisionMatmulState>& st, const GemmWorkload& w,
                                    const LowPrecision& lp) {
  OnednnKernel out;
  DnnlSession& s = st->s;
  const DnnlApi& api = s.api;
  const MatmulDims d(w);
  dnnl_memory_desc_t amd, umd, wany, cmd;
  dnnl_matmul_desc_t mmd;
  dnnl_primitive_desc_t pd = nullptr;
  if (!s.start() || api.md_strides(&amd, d.nd, d.ad, lp.in, d.as) != dnnl_success ||
      api.md_strides(&umd, d.nd, d.bd, lp.in, d.bs) != dnnl_success ||
      api.md_tag(&wany, d.nd, d.bd, lp.in, dnnl_format_tag_any) != dnnl_success ||
      api.md_strides(&cmd, d.nd, d.cd, lp.out, d.cs) != dnnl_success ||
      api.matmul_init(&mmd, &amd, &wany, nullptr, &cmd) != dnnl_success ||
      api.pd_create(&pd, &mmd, nullptr, s.engine, nullptr) != dnnl_success ||
      api.prim_create(&st->prim, pd) != dnnl_success) {
    out.error = std::string("oneDNN could not create a ") + lp.name + " matmul primitive for " + w.key();
    return out;
  }
  // The copies live in memory oneDNN allocates (aligned as it likes); C is the caller's.
  const dnnl_memory_desc_t* wmd = api.pd_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_primitive_desc_t rpd = nullptr;
  if (!wmd || api.mem_create(&st->a_low, &amd, s.engine, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
      api.mem_create(&st->user_b, &umd, s.engine, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
      api.mem_create(&st->w, wmd, s.engine, DNNL_MEMORY_ALLOCATE) != dnnl_success || !s.wrap(&st->c, &cmd) ||
      api.mem_get(st->a_low, &st->a_low_data) != dnnl_success ||
      api.mem_get(st->user_b, &st->user_b_data) != dnnl_success ||
      api.mem_get(st->w, &st->w_data) != dnnl_success ||
      api.reorder_pd(&rpd, &umd, s.engine, wmd, s.engine, nullptr) != dnnl_success ||
      api.prim_create(&st->reorder, rpd) != dnnl_success) {
    out.error = std::string("oneDNN could not reorder the ") + lp.name + " weights of " + w.key();
    return out;
  }
  st->a_elems = size_t(w.aElements());
  st->b_elems = size_t(w.bElements());
  st->w_bytes = api.md_size(wmd);
  out.impl = s.implOf(pd);
  out.kernel = [st, lp](const float* a, const float* b, float* c) {
    const DnnlApi& api = st->s.api;
    if (st->converted_from != a) {  // new A: its copy made once (the first, verified call)
      lp.convert(a, st->a_elems, st->a_low_data);
      st->converted_from = a;
    }
    if (st->reordered_from != b) {  // new weights: converted and reordered once, likewise
      lp.convert(b, st->b_elems, st->user_b_data);
      st->s.run(st->reorder, {{DNNL_ARG_FROM, st->user_b}, {DNNL_ARG_TO, st->w}});
      st->reordered_from = b;
    }
    if (!st->evicted) {
      evictWithOperands(st->a_low_data, st->a_elems * lp.bytes);
      evictWithOperands(st->w_data, st->w_bytes);
      st->evicted = true;
    }
    api.mem_set(st->c, c);  // f32 or s32: 4 bytes an element either way
    st->s.run(st->prim, {{DNNL_ARG_SRC, st->a_low}, {DNNL_ARG_WEIGHTS, st->w}, {DNNL_ARG_DST, st->c}});
  };
  return out;
}
}  // namespace

OnednnKernel makeOnednnMatmul(void* dnnl, const GemmWorkload& w) {
  OnednnKernel out;
  const bool f32 = w.a_type == DType::F32 && w.b_type == DType::F32 && w.c_type == DType::F32;
  const char* low = lowPrecisionTypes(w);
  if (!f32 && !low) {
    out.error = "oneDNN's matmul is measured on f32, bf16 x bf16 -> f32 and s8 x s8 -> s32 only, not " + w.key();
    return out;
  }
  if (low) {
    auto st = std::make_shared<LowPrecisionMatmulState>();
    if (!st->s.api.load(dnnl)) {
      out.error = "libdnnl has no matmul primitive C API (oneDNN 2.x expected)";
      return out;
    }
    return makeLowPrecisionMatmul(st, w, w.a_type == DType::BF16 ? kBf16 : kS8);
  }
  auto st = std::make_shared<MatmulState>();
  DnnlSession& s = st->s;
  if (!s.api.load(dnnl)) {
    out.error = "libdnnl has no matmul primitive C API (oneDNN 2.x expected)";
    return out;
  }
  const MatmulDims d(w);
  dnnl_memory_desc_t amd, bmd, cmd;
  dnnl_matmul_desc_t mmd;
  dnnl_primitive_desc_t pd = nullptr;
  const DnnlApi& api = s.api;
  if (!s.start() || api.md_strides(&amd, d.nd, d.ad, dnnl_f32, d.as) != dnnl_success ||
      api.md_strides(&bmd, d.nd, d.bd, dnnl_f32, d.bs) != dnnl_success ||
      api.md_strides(&cmd, d.nd, d.cd, dnnl_f32, d.cs) != dnnl_success ||
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
