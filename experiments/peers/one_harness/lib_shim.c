// A CPU library's f32 GEMM behind the MLIR C interface harness.c calls (`_mlir_ciface_f(C, A, B)`,
// C a fresh allocation), so that the libraries are timed by the same harness, in the same process,
// as MetaSchedule's and Sextant's kernels. One of (the library at its best for this CPU, the thread
// count from its environment: OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / BLIS_NUM_THREADS):
//   -DSHIM_ONEDNN_MATMUL  oneDNN's matmul primitive (libdnnl 2.x C API), created once on the first
//                         call with the workload's strides (B as stored: K x N, or N x K for NT),
//                         as Sextant's own reference does (runtime/libref/onednn_matmul.cpp)
//   -DSHIM_DNNL_SGEMM     oneDNN's dnnl_sgemm
//   -DSHIM_CBLAS          cblas_sgemm of the library it is linked with (OpenBLAS)
//   -DSHIM_BLIS -DBLIS_PATH='"copy.so"' -DBLIS_ARCH='"skx"'
//                         BLIS's cblas_sgemm with one kernel family ("configuration"): BLIS 0.9
//                         picks `generic` on CPUs it does not know (Zen 5), and its `haswell`
//                         kernels beat `skx` on skinny shapes (docs/measurement.md), so each family
//                         is a contender; BLIS_PATH is a private copy of libblis.so.4, so that each
//                         family gets an instance of its own, initialised after BLIS_ARCH_TYPE is set
// Built with -DSX_M=... -DSX_N=... -DSX_K=... and -DSX_NT=0|1 (B stored N x K).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(SHIM_ONEDNN_MATMUL) || defined(SHIM_DNNL_SGEMM)
#include <oneapi/dnnl/dnnl.h>
#elif defined(SHIM_CBLAS)
#include <cblas.h>  // (before the enum below: its prototypes name their parameters M, N, K)
#elif defined(SHIM_BLIS)
#include <dlfcn.h>
#include <string.h>
#endif

typedef struct { float *al, *a; int64_t off, s[2], st[2]; } D2;
enum { M = SX_M, N = SX_N, K = SX_K };

#if defined(SHIM_ONEDNN_MATMUL)
static dnnl_engine_t engine;
static dnnl_stream_t stream;
static dnnl_primitive_t prim;
static dnnl_memory_t ma, mb, mc;
static void check(dnnl_status_t s, const char* what) {
  if (s != dnnl_success) { fprintf(stderr, "lib_shim: oneDNN %s failed (%d)\n", what, (int)s); abort(); }
}
static void setup(void) {
  dnnl_memory_desc_t a, b, c;
  dnnl_matmul_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_dims_t ad = {M, K}, as = {K, 1}, bd = {K, N}, bs = {SX_NT ? 1 : N, SX_NT ? K : 1}, cd = {M, N}, cs = {N, 1};
  check(dnnl_engine_create(&engine, dnnl_cpu, 0), "engine");
  check(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags), "stream");
  check(dnnl_memory_desc_init_by_strides(&a, 2, ad, dnnl_f32, as), "A desc");
  check(dnnl_memory_desc_init_by_strides(&b, 2, bd, dnnl_f32, bs), "B desc");
  check(dnnl_memory_desc_init_by_strides(&c, 2, cd, dnnl_f32, cs), "C desc");
  check(dnnl_matmul_desc_init(&d, &a, &b, NULL, &c), "matmul desc");
  check(dnnl_primitive_desc_create(&pd, &d, NULL, engine, NULL), "primitive desc");
  const char* impl = NULL;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  fprintf(stderr, "lib_shim: oneDNN matmul primitive: %s\n", impl ? impl : "?");
  check(dnnl_primitive_create(&prim, pd), "primitive");
  check(dnnl_memory_create(&ma, &a, engine, DNNL_MEMORY_NONE), "A memory");
  check(dnnl_memory_create(&mb, &b, engine, DNNL_MEMORY_NONE), "B memory");
  check(dnnl_memory_create(&mc, &c, engine, DNNL_MEMORY_NONE), "C memory");
}
static void gemm(const float* A, const float* B, float* C) {
  if (!prim) setup();
  dnnl_memory_set_data_handle(ma, (void*)A);
  dnnl_memory_set_data_handle(mb, (void*)B);
  dnnl_memory_set_data_handle(mc, C);
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
  check(dnnl_primitive_execute(prim, stream, 3, args), "execute");
  check(dnnl_stream_wait(stream), "wait");
}
#elif defined(SHIM_DNNL_SGEMM)
static void gemm(const float* A, const float* B, float* C) {
  if (dnnl_sgemm('N', SX_NT ? 'T' : 'N', M, N, K, 1.0f, A, K, B, SX_NT ? K : N, 0.0f, C, N) != dnnl_success) abort();
}
#elif defined(SHIM_CBLAS)
static void gemm(const float* A, const float* B, float* C) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, SX_NT ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, K, B,
              SX_NT ? K : N, 0.0f, C, N);
}
#elif defined(SHIM_BLIS)
typedef void (*sgemm_t)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                        float*, int);
static sgemm_t sgemm;
static void setup(void) {
  void* h = dlopen(BLIS_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "lib_shim: %s\n", dlerror()); abort(); }
  const char* (*name)(int) = (const char* (*)(int))dlsym(h, "bli_arch_string");
  int (*picked)(void) = (int (*)(void))dlsym(h, "bli_arch_query_id");
  sgemm = (sgemm_t)dlsym(h, "cblas_sgemm");
  if (!name || !picked || !sgemm) { fprintf(stderr, "lib_shim: %s is no BLIS\n", BLIS_PATH); abort(); }
  int id = -1;
  for (int i = 0; i < 64 && name(i); ++i) {  // reads the table only; `generic` is its last entry
    if (!strcmp(name(i), BLIS_ARCH)) { id = i; break; }
    if (!strcmp(name(i), "generic")) break;
  }
  if (id < 0) { fprintf(stderr, "lib_shim: BLIS has no %s kernels\n", BLIS_ARCH); abort(); }
  char v[16];
  snprintf(v, sizeof v, "%d", id);
  setenv("BLIS_ARCH_TYPE", v, 1);
  float one = 1, c = 0;
  sgemm(101, 111, 111, 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.0f, &c, 1);  // BLIS initialises here
  fprintf(stderr, "lib_shim: BLIS %s kernels asked, %s picked\n", BLIS_ARCH, name(picked()));
  if (strcmp(name(picked()), BLIS_ARCH)) abort();
}
static void gemm(const float* A, const float* B, float* C) {
  if (!sgemm) setup();
  sgemm(101, 111, SX_NT ? 112 : 111, M, N, K, 1.0f, A, K, B, SX_NT ? K : N, 0.0f, C, N);  // row major, (no) trans
}
#else
#error "lib_shim.c: define SHIM_ONEDNN_MATMUL, SHIM_DNNL_SGEMM, SHIM_CBLAS or SHIM_BLIS"
#endif

void _mlir_ciface_f(D2* c, D2* a, D2* b) {
  float* C;
  if (posix_memalign((void**)&C, 64, 4ul * M * N)) abort();
  gemm(a->a, b->a, C);
  *c = (D2){C, C, 0, {M, N}, {N, 1}};
}
