/* Calls a network compiled by tune model / tune compile from a fresh process of its own (not the
 * tuner's forked measuring child) and prints the time per call: what a user's program sees.
 * One input and one output, f32, zero-filled; shapes as comma lists.
 *
 *   gcc -O2 experiments/models/call_model.c -o /tmp/call_model -ldl
 *   /tmp/call_model resnet50.so 30 1,3,224,224 1,1000
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxRank = 8 };
typedef struct {
  float *allocated, *aligned;
  int64_t offset, sizes_and_strides[2 * kMaxRank];
} Descriptor; /* rank R uses the first R sizes, then R strides: filled below in that layout */

static float* make(const char* spec, Descriptor* d) {
  int64_t dims[kMaxRank] = {0}, rank = 0, n = 1;
  for (const char* p = spec; *p && rank < kMaxRank; ++rank) {
    dims[rank] = strtoll(p, (char**)&p, 10);
    n *= dims[rank];
    if (*p == ',') ++p;
  }
  float* buf = calloc((size_t)n, sizeof(float));
  memset(d, 0, sizeof *d);
  d->allocated = d->aligned = buf;
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    d->sizes_and_strides[i] = dims[i];
    d->sizes_and_strides[rank + i] = stride;
    stride *= dims[i];
  }
  return buf;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: call_model MODEL.so CALLS IN_SHAPE OUT_SHAPE (e.g. 1,3,224,224 1,1000)\n");
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "call_model: %s\n", dlerror());
    return 1;
  }
  void (*forward)(Descriptor*, Descriptor*) = (void (*)(Descriptor*, Descriptor*))dlsym(h, "_mlir_ciface_forward");
  if (!forward) {
    fprintf(stderr, "call_model: no _mlir_ciface_forward in %s\n", argv[1]);
    return 1;
  }
  Descriptor in, out;
  make(argv[3], &in);
  make(argv[4], &out);
  const int calls = atoi(argv[2]);
  forward(&in, &out); /* the first call (loading, first touches) is not timed */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < calls; ++i) forward(&in, &out);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("%.3f ms per call (mean of %d, after one untimed call)\n",
         ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / calls, calls);
  return 0;
}
