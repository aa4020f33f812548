// oneDNN 2.x's C API as sextant-libref uses it: the functions looked up in the dlopen'ed library
// (nothing links against libdnnl), declared through its headers. Shared by the matmul and the
// convolution contenders (onednn_matmul.cpp, onednn_conv.cpp).
#pragma once

#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <dlfcn.h>
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
    get(execute, "dnnl_primitive_execute");
    get(stream_wait, "dnnl_stream_wait");
    return all;
  }
};

}  // namespace sextant::libref
#endif
