// Times f32 GEMM kernels (NN, or NT: B stored N x K) from shared objects in one process, with one
// harness: each object exports `void _mlir_ciface_f(D2* C, D2* A, D2* B)` (the MLIR C interface of
// a function returning C = A x B, as `tune compile` writes it; ms_shim.c wraps TVM MetaSchedule's
// kernel and lib_shim.c the CPU libraries the same way). Rounds alternate the objects; each round
// times 21 calls per object (warm, then with A and B flushed before each call; C is a fresh
// allocation of the callee's) and prints the median GFLOP/s; last, the median over the rounds per
// object and mode. The first object's result is the reference every other one is checked against
// (exact: the operands are small integers).
// usage: [ROUNDS=3] harness [--nt] M N K A.so [B.so ...]
#include <dlfcn.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { float *al, *a; int64_t off, s[2], st[2]; } D2;
typedef void (*kernel)(D2*, D2*, D2*);
typedef void (*release)(void*);
static int64_t M, N, K;
static int NT;  // B stored N x K
static float *A, *B;

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static void flush(void* p, size_t n) { for (size_t i = 0; i < n; i += 64) _mm_clflush((char*)p + i); _mm_mfence(); }
static int cmp(const void* x, const void* y) { double a = *(const double*)x, b = *(const double*)y; return a < b ? -1 : a > b; }
// One call; C's descriptor in *c (c->a: its data, c->al: what to free).
static void call(kernel f, D2* c, double* secs) {
  D2 a = {A, A, 0, {M, K}, {K, 1}}, b = NT ? (D2){B, B, 0, {N, K}, {K, 1}} : (D2){B, B, 0, {K, N}, {N, 1}};
  double t0 = now();
  f(c, &a, &b);
  if (secs) *secs = now() - t0;
}
static double median_gflops(kernel f, release drop, int flushed) {
  double t[21];
  for (int r = 0; r < 21; ++r) {
    if (flushed) { flush(A, 4ul * M * K); flush(B, 4ul * K * N); }
    D2 c;
    call(f, &c, &t[r]);
    drop(c.al);
  }
  qsort(t, 21, sizeof(double), cmp);
  return 2.0 * M * N * K / t[10] / 1e9;
}
int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "--nt")) NT = 1, --argc, ++argv;
  if (argc < 5) { fprintf(stderr, "usage: harness [--nt] M N K A.so [B.so ...]\n"); return 2; }
  M = atoll(argv[1]), N = atoll(argv[2]), K = atoll(argv[3]);
  const int n = argc - 4;
  kernel* fs = calloc(n, sizeof(kernel));
  release* drops = calloc(n, sizeof(release));
  for (int i = 0; i < n; ++i) {
    void* h = dlopen(argv[4 + i], RTLD_NOW | RTLD_LOCAL);
    if (!h || !(fs[i] = (kernel)dlsym(h, "_mlir_ciface_f"))) { fprintf(stderr, "harness: %s: %s\n", argv[4 + i], dlerror()); return 1; }
    // C is released the way the object allocated it (tune compile's objects bring their own
    // allocation functions).
    drops[i] = (release)dlsym(h, "_mlir_memref_to_llvm_free");
    if (!drops[i]) drops[i] = free;
  }
  if (posix_memalign((void**)&A, 64, 4ul * M * K) || posix_memalign((void**)&B, 64, 4ul * K * N)) return 1;
  for (int64_t i = 0; i < M * K; ++i) A[i] = (float)(i % 7) - 3;
  for (int64_t i = 0; i < K * N; ++i) B[i] = (float)(i % 5) - 2;
  D2 want;
  call(fs[0], &want, NULL);
  for (int i = 1; i < n; ++i) {
    D2 got;
    call(fs[i], &got, NULL);
    if (memcmp(want.a + want.off, got.a + got.off, 4ul * M * N)) {
      fprintf(stderr, "harness: %s differs from %s\n", argv[4 + i], argv[4]);
      return 1;
    }
    drops[i](got.al);
  }
  drops[0](want.al);
  printf("%-8s %-6s", "round", "mode");
  for (int i = 0; i < n; ++i) {  // the object's file name without its directory and ".so"
    const char* name = strrchr(argv[4 + i], '/') ? strrchr(argv[4 + i], '/') + 1 : argv[4 + i];
    const char* dot = strstr(name, ".so");
    printf(" %14.*s", (int)(dot && dot - name < 14 ? dot - name : 14), name);
  }
  printf("   (GFLOP/s, median of 21 calls)\n");
  const int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 3;
  double* g = calloc((size_t)rounds * 2 * n, sizeof(double));  // g[(fl * n + i) * rounds + round]
  for (int round = 0; round < rounds; ++round)
    for (int fl = 0; fl < 2; ++fl) {
      printf("%-8d %-6s", round + 1, fl ? "flush" : "warm");
      for (int i = 0; i < n; ++i) printf(" %14.1f", g[(fl * n + i) * rounds + round] = median_gflops(fs[i], drops[i], fl));
      printf("\n");
      fflush(stdout);
    }
  // The median over the rounds of each object's figures (the round medians above).
  for (int fl = 0; fl < 2; ++fl) {
    printf("%-8s %-6s", "median", fl ? "flush" : "warm");
    for (int i = 0; i < n; ++i) {
      double* r = g + (fl * n + i) * rounds;
      qsort(r, rounds, sizeof(double), cmp);
      printf(" %14.1f", rounds % 2 ? r[rounds / 2] : (r[rounds / 2 - 1] + r[rounds / 2]) / 2);
    }
    printf("\n");
  }
  return 0;
}
