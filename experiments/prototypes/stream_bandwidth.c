/* Memory bandwidth of this machine, plainly (issue #32, the 2-thread decode step): four 46 MB
 * buffers (a TinyLlama FFN weight each) read with AVX-512 loads on OMP_NUM_THREADS threads, as
 * streamed, after clflush of all, and clflushed each right before its read. Throwaway-grade.
 *   gcc -O2 -mavx512f -fopenmp experiments/prototypes/stream_bandwidth.c -o /tmp/sb && OMP_NUM_THREADS=2 /tmp/sb
 * Zen 5 VM, 2026-11-29: 45-52 GB/s on 2 threads, 40-42 on 1. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static float sink;
static double readall(float* p, size_t n){ double t0=now(); float s=0;
  #pragma omp parallel for reduction(+:s) schedule(static)
  for(size_t blk=0;blk<n/4/4096;blk++){ __m512 acc=_mm512_setzero_ps();
    for(size_t j=blk*4096;j<(blk+1)*4096;j+=16) acc=_mm512_add_ps(acc,_mm512_load_ps(p+j)); s+=_mm512_reduce_add_ps(acc);}
  sink+=s; return now()-t0;}
int main(){
  size_t n=(size_t)46<<20; float* p[4]; for(int i=0;i<4;i++){p[i]=aligned_alloc(64,n); memset(p[i],1,n);}
  for(int r=0;r<3;r++){
    for(int i=0;i<4;i++) readall(p[i],n);
    double nat=0; for(int i=0;i<4;i++) nat+=readall(p[i],n);
    for(int i=0;i<4;i++) for(size_t o=0;o<n;o+=64) _mm_clflush((char*)p[i]+o); _mm_mfence();
    double cf=0; for(int i=0;i<4;i++) cf+=readall(p[i],n);
    double cf1=0; for(int i=0;i<4;i++){ for(size_t o=0;o<n;o+=64) _mm_clflush((char*)p[i]+o); _mm_mfence(); cf1+=readall(p[i],n);}
    printf("4 x 46 MB: streaming %.1f GB/s; all clflushed then read %.1f GB/s; each clflushed right before its read %.1f GB/s\n", 4*n/nat/1e9, 4*n/cf/1e9, 4*n/cf1/1e9);
  }
}
