/* Kernels with the entry point of compiled candidates, broken on purpose for the runner tests. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <signal.h>
#include <unistd.h>

typedef struct { float *allocated, *aligned; int64_t offset, sizes[2], strides[2]; } MemRef2D;

void _mlir_ciface_sextant_gemm(MemRef2D* A, MemRef2D* B, MemRef2D* C) {
  int64_t m = C->sizes[0], n = C->sizes[1], k = A->sizes[1];
#if defined(KERNEL_MODE_crash)
  volatile float* p = NULL;
  *p = 1.0f;
#elif defined(KERNEL_MODE_hang)
  for (volatile int spin = 1; spin;) {}
#elif defined(KERNEL_MODE_kill9)
  kill(getpid(), SIGKILL); /* as the kernel's OOM killer or a user would */
#elif defined(KERNEL_MODE_oom)
  /* A scratch buffer of 1 GiB, used unchecked as compiled memref.alloc code does: under the
     runner's address-space limit malloc returns NULL and the first store faults. */
  volatile char* scratch = (volatile char*)malloc((size_t)1 << 30);
  for (size_t off = 0; off < ((size_t)1 << 30); off += 4096) scratch[off] = 1;
  free((void*)scratch);
#endif
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += A->aligned[i * k + l] * B->aligned[l * n + j];
#if defined(KERNEL_MODE_wrong)
      if (i == m / 2 && j == n / 3) acc += 0.5f; /* one element off */
#endif
      C->aligned[i * n + j] = acc;
    }
}
