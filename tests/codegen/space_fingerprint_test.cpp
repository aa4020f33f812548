// The fingerprints of the shipped schedule spaces, pinned. A space's fingerprint (its knobs, their
// values and its constraints' names: Space::fingerprint) is part of the key under which an
// interrupted run resumes (findUnfinishedRun) and under which records are "already tried": a change
// to any space orphans every unfinished run of the spaces it touches, silently. On 2026-11-29 a
// renamed constraint did exactly that for every CPU GEMM space and no test noticed (issue #35's
// review). If a space is changed on purpose, change its line here in the same commit and say in the
// commit message which spaces' runs will no longer resume.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sextant/codegen/cpu_schedule.h"
#include "sextant/codegen/gpu_schedule.h"
#include "sextant/codegen/workload.h"
#include "sextant/hwspec/gpu_target.h"
#include "test_cpus.h"

using namespace sextant;

namespace {

struct Pin {
  const char* key;
  int bits;     // CPU: 512 (AVX-512) or 256 (AVX2); 0: the GPU target below
  int threads;  // CPU threads
  const char* gpu;
  const char* fingerprint;
};

}  // namespace

// 2026-11-29 (evening): tile_k 8 joined every CPU GEMM and batched matmul space without the GEMV
// routes (NT decode spaces, M <= 16, kept theirs): those runs no longer resume.
// 2026-12-02: prefetch_b joined the NN weights GEMM spaces of at most 64 rows (:weights, 1x1
// convolutions of tune model's networks included), and tile_k the largest multiple of 16 up to 512
// dividing K in NN weights spaces where K > 512: those runs no longer resume.
// 2026-12-04: pack_b 2 (B micro-panels) joined the AVX2 NN GEMM spaces (unbatched, not weights):
// those runs no longer resume.
TEST(SpaceFingerprint, ShippedSpacesKeepTheirFingerprints) {
  const std::vector<Pin> pins = {
      {"gemm:NN:512x512x512:f32*f32->f32", 512, 1, "", "0afa5e1786456a5b"},
      {"gemm:NN:1024x1024x1024:f32*f32->f32", 512, 2, "", "d46e27a5aa8d599c"},
      {"gemm:NN:1024x1024x1024:f32*f32->f32", 256, 1, "", "0f0acc17b1dec954"},  // pack_b 2 since 2026-12-04
      {"gemm:NT:1024x1024x1024:f32*f32->f32", 256, 1, "", "e1df48a75378a270"},
      {"gemm:NT:16x4096x4096:f32*f32->f32", 512, 1, "", "ec42660618183581"},
      {"gemm:NT:1x4096x4096:f32*f32->f32", 512, 1, "", "0cba0e412868b543"},
      {"gemm:TN:128x4096x4096:f32*f32->f32", 512, 1, "", "55710c759fe588b6"},
      {"gemm:NN:3136x24x144:f32*f32->f32:weights", 512, 1, "", "ab493b8bf929d5f5"},
      {"gemm:NN:196x1024x256:f32*f32->f32:weights", 512, 1, "", "e083a3d83b319201"},
      {"gemm:NN:196x96x576:f32*f32->f32:weights", 512, 2, "", "a277a05cbe71a9be"},  // tile_m 98, tile_n 48 since 2026-11-29; tile_k 288 since 2026-12-02
      {"batch_matmul:NT:12x128x128x64:f32*f32->f32", 512, 2, "", "7eb2d1e52dc7afeb"},
      {"batch_matmul:NN:32x512x128x512:f32*f32->f32", 512, 1, "", "ca323ce4029ba871"},
      {"conv2d:NHWC:mb1ic64ih56iw56oc64oh56ow56kh3kw3sh1sw1ph1pw1dh0dw0:f32*f32->f32", 512, 1, "", "c8aa11369ad84268"},
      {"conv2d:NHWC:mb1ic3ih224iw224oc64oh112ow112kh7kw7sh2sw2ph3pw3dh0dw0:f32*f32->f32", 512, 1, "", "3d36f5d3ca53f119"},
      {"conv2d:NHWC:mb1g32ic32ih28iw28oc32oh28ow28kh3kw3sh1sw1ph1pw1dh0dw0:f32*f32->f32", 512, 1, "", "df6ab1d49256d4bb"},
      {"gemm:NN:4096x4096x4096:f16*f16->f32", 0, 0, "h100", "8ed811757f4cd3c0"},
      {"gemm:NT:4096x4096x4096:bf16*bf16->f32", 0, 0, "mi300", "ce20cb09cf1f5616"},
      {"gemm:NN:1024x1024x1024:f32*f32->f32", 0, 0, "a100", "412514119b232e85"},
  };
  for (const Pin& p : pins) {
    SCOPED_TRACE(std::string(p.key) + (p.bits ? " cpu " + std::to_string(p.bits) + " bits, " +
                                                    std::to_string(p.threads) + " threads"
                                              : std::string(" ") + p.gpu));
    auto w = parseWorkloadKey(p.key);
    ASSERT_TRUE(w.ok()) << w.error();
    std::string fp;
    if (p.bits) {
      fp = buildCpuGemmSpace(*w, p.bits == 512 ? test::avx512() : test::avx2(), p.threads).fingerprint();
    } else {
      auto t = resolveTarget(p.gpu);
      ASSERT_TRUE(t.ok()) << t.error();
      auto g = gpuTargetInfo(*t);
      ASSERT_TRUE(g.ok()) << g.error();
      fp = buildGpuGemmSpace(*w, *g).fingerprint();
    }
    EXPECT_EQ(fp, p.fingerprint) << "this space changed: runs of it started before will not resume";
  }
}
