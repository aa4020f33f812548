// oneDNN 2.x's C API as sextant-libref uses it: the functions looked up in the dlopen'ed library
// (nothing links against libdnnl), declared through its headers. Shared by the matmul and the
// convolution contenders (onednn_matmul.cpp, onednn_conv.cpp).
#pragma once

#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <dlfcn.h>
#include <initializer_list>
#include <string>
#include <type_traits>

#include <oneapi/dnnl/dnnl.h>
#define SEXTANT_HAVE_DNNL_H 1

namespace sextant::libref {

struct DnnlApi {
  decltype(&dnnl_engine_create) engine_create = nullptr;
  decltype(&dnnl_stream_create) stream_create = nullptr;
  decltype(&dnnl_memory_desc_init_by_strides) md_strides = nullptr;
  decltype(&dnnl_memory_desc_init_by_tag) md_tag = nullptr;
  decltype(&dnnl_matmul_desc_init) matmul_init = nullptr;
  decltype(&dnnl_dilated_convolution_forward_desc_init) conv_init = nullptr;
  decltype(&dnnl_primitive_desc_create) pd_create = nullptr;
  decltype(&dnnl_primitive_desc_query) pd_query = nullptr;
  decltype(&dnnl_primitive_desc_query_md) pd_query_md = nullptr;
  decltype(&dnnl_reorder_primitive_desc_create) reorder_pd = nullptr;
  decltype(&dnnl_primitive_create) prim_create = nullptr;
  decltype(&dnnl_memory_create) mem_create = nullptr;
  decltype(&dnnl_memory_set_data_handle) mem_set = nullptr;
  decltype(&dnnl_memory_get_data_handle) mem_get = nullptr;
  decltype(&dnnl_memory_desc_get_size) md_size = nullptr;
  decltype(&dnnl_primitive_execute) execute = nullptr;
  decltype(&dnnl_stream_wait) stream_wait = nullptr;

  // False when a function is missing (not oneDNN 2.x).
  bool load(void* h) {
    if (!h) return false;
    bool all = true;
    auto get = [h, &all](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(h, name));
      all = all && f;
    };
    get(engine_create, "dnnl_engine_create");
    get(stream_create, "dnnl_stream_create");
    get(md_strides, "dnnl_memory_desc_init_by_strides");
    get(md_tag, "dnnl_memory_desc_init_by_tag");
    get(matmul_init, "dnnl_matmul_desc_init");
    get(conv_init, "dnnl_dilated_convolution_forward_desc_init");
    get(pd_create, "dnnl_primitive_desc_create");
    get(pd_query, "dnnl_primitive_desc_query");
    get(pd_query_md, "dnnl_primitive_desc_query_md");
    get(reorder_pd, "dnnl_reorder_primitive_desc_create");
    get(prim_create, "dnnl_primitive_create");
    get(mem_create, "dnnl_memory_create");
    get(mem_set, "dnnl_memory_set_data_handle");
    get(mem_get, "dnnl_memory_get_data_handle");
    get(md_size, "dnnl_memory_desc_get_size");
    get(execute, "dnnl_primitive_execute");
    get(stream_wait, "dnnl_stream_wait");
    return all;
  }
};

// The API with a CPU engine and a stream: what every primitive here runs on.
struct DnnlSession {
  DnnlApi api;
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;

  // Creates the engine and the stream (the API loaded first).
  bool start() {
    return api.engine_create(&engine, dnnl_cpu, 0) == dnnl_success &&
           api.stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success;
  }
  // A memory object over the caller's buffer (set per call with mem_set).
  bool wrap(dnnl_memory_t* m, const dnnl_memory_desc_t* md) const {
    return api.mem_create(m, md, engine, DNNL_MEMORY_NONE) == dnnl_success;
  }
  // Runs a primitive and waits for it.
  void run(dnnl_primitive_t p, std::initializer_list<dnnl_exec_arg_t> args) const {
    api.execute(p, stream, int(args.size()), args.begin());
    api.stream_wait(stream);
  }
  // The implementation a primitive descriptor picked ("" when oneDNN does not say).
  std::string implOf(dnnl_primitive_desc_t pd) const {
    const char* impl = nullptr;
    return api.pd_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl ? impl : "";
  }
};

}  // namespace sextant::libref
#endif
