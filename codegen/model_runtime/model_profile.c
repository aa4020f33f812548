/* The per-op clock of a profiled network (tune compile --profile, tune model --profile): the
 * compiler puts __sextant_prof_begin(i) / __sextant_prof_end(i) around the i-th op of the network's
 * functions (codegen/src/compiler_cpu_profile.cpp) and links this object into the shared object.
 *
 * Each op's time is summed over calls on a monotonic clock (the vDSO's clock_gettime: ~20 ns a
 * reading, two readings per op). The ops run one after another in the calling thread (an op's
 * OpenMP threads are inside it), so the begin/end pairs never overlap. Not thread-safe across
 * concurrent calls of the network: profile one call at a time.
 *
 *   sextant_profile_reset()            zero every op's sum and count
 *   sextant_profile_read(s, n, k)      the first k ops' summed seconds into s, their counts into n;
 *                                      returns how many ops the network has
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#define SEXTANT_PROFILE_OPS 8192

static double g_sum[SEXTANT_PROFILE_OPS];
static int64_t g_count[SEXTANT_PROFILE_OPS];
static double g_start[SEXTANT_PROFILE_OPS];
static int64_t g_ops; /* 1 + the largest id seen */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void __sextant_prof_begin(int64_t id) {
  if (id < 0 || id >= SEXTANT_PROFILE_OPS) return;
  if (id >= g_ops) g_ops = id + 1;
  g_start[id] = now();
}

void __sextant_prof_end(int64_t id) {
  if (id < 0 || id >= SEXTANT_PROFILE_OPS) return;
  g_sum[id] += now() - g_start[id];
  g_count[id] += 1;
}

void sextant_profile_reset(void) {
  memset(g_sum, 0, sizeof g_sum);
  memset(g_count, 0, sizeof g_count);
}

int64_t sextant_profile_read(double* seconds, int64_t* counts, int64_t k) {
  for (int64_t i = 0; i < k && i < SEXTANT_PROFILE_OPS; ++i) {
    if (seconds) seconds[i] = g_sum[i];
    if (counts) counts[i] = g_count[i];
  }
  return g_ops;
}
