// experiments/prototypes/splitk_m16_probe.c (issue #35, 2026-12-02): is the M = 16 decode kernel limited by
// its loop structure or by MLIR's code? The split-K GEMV route's loop written by hand (4 x 4 register
// blocks, 16-lane partial sums kept across K blocks), A read in place or copied per K block (pack_a).
// Build: gcc -O3 -march=native experiments/prototypes/splitk_m16_probe.c -o /tmp/probe; run: /tmp/probe N K
// Output of 2026-12-02: experiments/results/splitk_m16_probe_zen5.txt
// C[m][n] = sum_k A[m][k] B[n][k] (NT), M = 16; hot calls, no flush.
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define M 16
static long N = 4096, K = 4096;
static double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static void run(const float* A, const float* B, float* C, int pack, long TN, long KB) {
  static float P[M * 32 * 16] __attribute__((aligned(64)));
  static float AP[M * 1024] __attribute__((aligned(64)));
  for (long n0 = 0; n0 < N; n0 += TN) {
    memset(P, 0, sizeof(float) * M * TN * 16);
    for (long k0 = 0; k0 < K; k0 += KB) {
      const float* a = A + k0; long lda = K;
      if (pack) { for (int m = 0; m < M; ++m) memcpy(AP + m * KB, A + m * K + k0, KB * 4); a = AP; lda = KB; }
      for (int m0 = 0; m0 < M; m0 += 4)
        for (long j0 = 0; j0 < TN; j0 += 4) {
          __m512 acc[4][4];
          for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_load_ps(P + ((m0 + i) * TN + j0 + j) * 16);
          const float* b = B + (n0 + j0) * K + k0;
          for (long k = 0; k < KB; k += 16) {
            __m512 bv[4], av;
            for (int j = 0; j < 4; ++j) bv[j] = _mm512_loadu_ps(b + j * K + k);
            for (int i = 0; i < 4; ++i) { av = _mm512_loadu_ps(a + (m0 + i) * lda + k);
              for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]); }
          }
          for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) _mm512_store_ps(P + ((m0 + i) * TN + j0 + j) * 16, acc[i][j]);
        }
    }
    for (int m = 0; m < M; ++m) for (long j = 0; j < TN; ++j) C[m * N + n0 + j] = _mm512_reduce_add_ps(_mm512_load_ps(P + (m * TN + j) * 16));
  }
}
int main(int argc, char** argv) {
  if (argc > 1) N = atol(argv[1]), K = atol(argv[2]);
  float *A = aligned_alloc(64, M * K * 4), *B = aligned_alloc(64, N * K * 4), *C = aligned_alloc(64, M * N * 4);
  for (long i = 0; i < M * K; ++i) A[i] = (i % 7) * 0.1f;
  for (long i = 0; i < N * K; ++i) B[i] = (i % 5) * 0.1f;
  long tns[] = {16, 32}, kbs[] = {256, 512};
  for (int pack = 0; pack < 2; ++pack) for (int t = 0; t < 2; ++t) for (int kb = 0; kb < 2; ++kb) {
    run(A, B, C, pack, tns[t], kbs[kb]);
    int reps = 0; double t0 = now();
    while (now() - t0 < 0.5) { run(A, B, C, pack, tns[t], kbs[kb]); ++reps; }
    double s = (now() - t0) / reps;
    printf("N=%ld K=%ld pack_a=%d tile_n=%ld kblock=%ld: %.1f GFLOP/s\n", N, K, pack, tns[t], kbs[kb], 2.0 * M * N * K / s / 1e9);
  }
  double ref = 0; for (long k = 0; k < K; ++k) ref += A[k] * B[5 * K + k];
  printf("check C[0][5] %f vs %f\n", C[5], ref);
}
