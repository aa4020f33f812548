/* The heap of a compiled network (tune model / tune compile of a module to a shared object, issue
 * #32): memref.alloc and memref.dealloc in the network's code call these three functions
 * (finalize-memref-to-llvm{use-generic-functions}), linked into the shared object.
 *
 * A freed buffer is kept, by its size, for the next allocation of that size instead of going back
 * to the C library: glibc returns large blocks to the kernel when they are freed, so every call of
 * a network page-faulted its intermediate buffers in again (ResNet-50 on the Zen 5 kind: 75 ms per
 * call in a fresh process instead of 46). Every call of a network allocates the same sizes, so
 * after the first call no buffer is allocated or faulted in. Thread-safe (one mutex); what is kept
 * is released when the shared object is unloaded. At most 512 buffers are kept.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SEXTANT_KEEP 512

typedef struct {
  uint64_t size;  /* bytes the caller asked for */
  uint64_t head;  /* bytes from the block's start to the caller's pointer (the alignment, >= 64) */
} Header;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static void* g_kept[SEXTANT_KEEP];  /* callers' pointers of kept buffers */
static int g_count;

static Header* header_of(void* p) { return (Header*)((char*)p - sizeof(Header)); }

static void* take(uint64_t alignment, uint64_t size) {
  uint64_t head = alignment > 64 ? alignment : 64;
  pthread_mutex_lock(&g_lock);
  for (int i = g_count - 1; i >= 0; --i) {
    Header* h = header_of(g_kept[i]);
    if (h->size == size && h->head == head) {
      void* p = g_kept[i];
      g_kept[i] = g_kept[--g_count];
      pthread_mutex_unlock(&g_lock);
      return p;
    }
  }
  pthread_mutex_unlock(&g_lock);
  void* block = NULL;
  if (posix_memalign(&block, head, head + size) != 0) return NULL;
  void* p = (char*)block + head;
  header_of(p)->size = size;
  header_of(p)->head = head;
  return p;
}

void* _mlir_memref_to_llvm_alloc(uint64_t size) { return take(64, size); }
void* _mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size) { return take(alignment, size); }

void _mlir_memref_to_llvm_free(void* p) {
  if (!p) return;
  pthread_mutex_lock(&g_lock);
  if (g_count < SEXTANT_KEEP) {
    g_kept[g_count++] = p;
    p = NULL;
  }
  pthread_mutex_unlock(&g_lock);
  if (p) free((char*)p - header_of(p)->head);
}

__attribute__((destructor)) static void release_kept(void) {
  for (int i = 0; i < g_count; ++i) free((char*)g_kept[i] - header_of(g_kept[i])->head);
  g_count = 0;
}
