// TVM MetaSchedule's kernel (its LLVM IR compiled by llc, ms_kernel.py) behind the MLIR C interface
// harness.c calls, with the few TVM runtime entry points it uses: a workspace allocator and a
// parallel launch that runs the one task on the calling thread (tuned with num-cores 1).
// Built with -DSX_M=... -DSX_N=... (the shape's M and N).
#include <stdint.h>
#include <stdlib.h>

typedef struct { float *al, *a; int64_t off, s[2], st[2]; } D2;
int main_compute_(float*, float*, float*, int);
static void* ws_alloc(int t, int id, uint64_t n, int c, int b) { void* p; return posix_memalign(&p, 64, n) ? NULL : p; }
static int ws_free(int t, int id, void* p) { free(p); return 0; }
typedef int (*lambda)(int, void*, void*);
static int launch(lambda f, void* cdata, int n) { struct { void* sync; int32_t num_task; } env = {0, 1}; return f(0, &env, cdata); }
void* __TVMBackendAllocWorkspace = (void*)ws_alloc;
void* __TVMBackendFreeWorkspace = (void*)ws_free;
void* __TVMBackendParallelLaunch = (void*)launch;
void TVMFFIErrorSetRaisedFromCStrParts(void) { abort(); }
void _mlir_ciface_f(D2* c, D2* a, D2* b) {
  float* C;
  if (posix_memalign((void**)&C, 64, 4ul * SX_M * SX_N)) abort();
  main_compute_(a->a, b->a, C, 0);
  *c = (D2){C, C, 0, {SX_M, SX_N}, {SX_N, 1}};
}
