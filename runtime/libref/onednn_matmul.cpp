#include "onednn_matmul.h"

#include <dlfcn.h>
#include <memory>

#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define SEXTANT_HAVE_DNNL_H 1
#endif

namespace sextant::libref {

#ifdef SEXTANT_HAVE_DNNL_H
bool onednnMatmulBuilt() { return true; }

namespace {
// The C API's functions, looked up in the loaded library (nothing links against it).
struct Api {
  decltype(&dnnl_engine_create) engine_create = nullptr;
  decltype(&dnnl_stream_create) stream_create = nullptr;
  decltype(&dnnl_memory_desc_init_by_strides) md_init = nullptr;
  decltype(&dnnl_matmul_desc_init) matmul_init = nullptr;
  decltype(&dnnl_primitive_desc_create) pd_create = nullptr;
  decltype(&dnnl_primitive_desc_query) pd_query = nullptr;
  decltype(&dnnl_primitive_create) prim_create = nullptr;
  decltype(&dnnl_memory_create) mem_create = nullptr;
  decltype(&dnnl_memory_set_data_handle) mem_set = nullptr;
  decltype(&dnnl_primitive_execute) execute = nullptr;
  decltype(&dnnl_stream_wait) stream_wait = nullptr;
  bool load(void* h) {
    auto get = [h](auto& f, const char* name) { f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name)); };
    get(engine_create, "dnnl_engine_create");
    get(stream_create, "dnnl_stream_create");
    get(md_init, "dnnl_memory_desc_init_by_strides");
    get(matmul_init, "dnnl_matmul_desc_init");
    get(pd_create, "dnnl_primitive_desc_create");
    get(pd_query, "dnnl_primitive_desc_query");
    get(prim_create, "dnnl_primitive_create");
    get(mem_create, "dnnl_memory_create");
    get(mem_set, "dnnl_memory_set_data_handle");
    get(execute, "dnnl_primitive_execute");
    get(stream_wait, "dnnl_stream_wait");
    return engine_create && stream_create && md_init && matmul_init && pd_create && pd_query && prim_create &&
           mem_create && mem_set && execute && stream_wait;
  }
};

// Everything the kernel needs, alive as long as the kernel (never released: the process ends).
struct State {
  Api api;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr;
};
}  // namespace

OnednnMatmul makeOnednnMatmul(void* dnnl, const GemmWorkload& w) {
  OnednnMatmul out;
  auto st = std::make_shared<State>();
  Api& api = st->api;
  if (!dnnl || !api.load(dnnl)) {
    out.error = "libdnnl has no matmul primitive C API (oneDNN 2.x expected)";
    return out;
  }
  const bool ta = w.layout == Layout::TN, tb = w.layout == Layout::NT;
  const int nd = w.batched() ? 3 : 2;
  const int64_t B = w.batch, M = w.m, N = w.n, K = w.k;
  // Logical dims (batch,) rows, cols; strides as stored.
  dnnl_dims_t ad{}, bd{}, cd{}, as{}, bs{}, cs{};
  auto fill = [nd](dnnl_dims_t d, dnnl_dims_t s, int64_t b, int64_t r, int64_t c, int64_t bstride, int64_t rs,
                   int64_t csd) {
    int i = 0;
    if (nd == 3) d[i] = b, s[i] = bstride, ++i;
    d[i] = r, s[i] = rs, ++i;
    d[i] = c, s[i] = csd;
  };
  fill(ad, as, B, M, K, M * K, ta ? 1 : K, ta ? M : 1);
  fill(bd, bs, B, K, N, K * N, tb ? 1 : N, tb ? K : 1);
  fill(cd, cs, B, M, N, M * N, N, 1);
  dnnl_memory_desc_t amd, bmd, cmd;
  dnnl_matmul_desc_t mmd;
  dnnl_primitive_desc_t pd = nullptr;
  if (api.engine_create(&st->engine, dnnl_cpu, 0) != dnnl_success ||
      api.stream_create(&st->stream, st->engine, dnnl_stream_default_flags) != dnnl_success ||
      api.md_init(&amd, nd, ad, dnnl_f32, as) != dnnl_success || api.md_init(&bmd, nd, bd, dnnl_f32, bs) != dnnl_success ||
      api.md_init(&cmd, nd, cd, dnnl_f32, cs) != dnnl_success ||
      api.matmul_init(&mmd, &amd, &bmd, nullptr, &cmd) != dnnl_success ||
      api.pd_create(&pd, &mmd, nullptr, st->engine, nullptr) != dnnl_success ||
      api.prim_create(&st->prim, pd) != dnnl_success ||
      api.mem_create(&st->a, &amd, st->engine, DNNL_MEMORY_NONE) != dnnl_success ||
      api.mem_create(&st->b, &bmd, st->engine, DNNL_MEMORY_NONE) != dnnl_success ||
      api.mem_create(&st->c, &cmd, st->engine, DNNL_MEMORY_NONE) != dnnl_success) {
    out.error = "oneDNN could not create a matmul primitive for " + w.key();
    return out;
  }
  const char* impl = nullptr;
  if (api.pd_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl) out.impl = impl;
  out.kernel = [st](const float* a, const float* b, float* c) {
    const Api& api = st->api;
    api.mem_set(st->a, const_cast<float*>(a));
    api.mem_set(st->b, const_cast<float*>(b));
    api.mem_set(st->c, c);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, st->a}, {DNNL_ARG_WEIGHTS, st->b}, {DNNL_ARG_DST, st->c}};
    api.execute(st->prim, st->stream, 3, args);
    api.stream_wait(st->stream);
  };
  return out;
}
#else
bool onednnMatmulBuilt() { return false; }
OnednnMatmul makeOnednnMatmul(void*, const GemmWorkload&) {
  return OnednnMatmul{{}, "", "built without oneDNN's headers (Debian: libdnnl-dev)"};
}
#endif

}  // namespace sextant::libref
