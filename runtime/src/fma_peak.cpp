// The measured f32 FMA peak (see sextant/runtime/fma_peak.h).
#include "sextant/runtime/fma_peak.h"
#include "sextant/runtime/isolation.h"
#include "sextant/hwspec/target.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <chrono>
#include <thread>
#include <vector>

namespace sextant {
#if defined(__x86_64__)
namespace {

using Clock = std::chrono::steady_clock;
// Independent FMA chains: enough to cover latency (4-5 cycles) x 2 pipes, few enough to stay in the
// registers (32 zmm with AVX-512, 16 ymm/xmm without; two more hold the constants).
constexpr int kChains512 = 24, kChains = 12;

// Runs `iters` iterations of N independent multiply-adds on vectors of type V (the GCC
// vector types of <immintrin.h>: __m512, __m256, __m128) and returns the flops done (2 per lane per
// multiply-add). Inlined into the target-specific functions below, so each compiles with that
// function's ISA; the file is built with -ffp-contract=fast (runtime/CMakeLists.txt), so
// `acc * a + b` becomes one FMA where the ISA has it. The result is folded into `sink` so the
// compiler keeps the work.
template <typename V, int N>
[[gnu::always_inline]] inline double runChains(long iters, float* sink) {
  constexpr int kLanes = int(sizeof(V) / sizeof(float));
  V acc[N];
  for (int i = 0; i < N; ++i) acc[i] = V{} + float(i) * 1e-3f;
  const V a = V{} + 0.999999f, b = V{} + 1e-7f;
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 24
    for (int i = 0; i < N; ++i) acc[i] = acc[i] * a + b;
  V s = acc[0];
  for (int i = 1; i < N; ++i) s += acc[i];
  for (int l = 0; l < kLanes; ++l) *sink += s[l];
  return double(iters) * N * kLanes * 2;
}

__attribute__((target("avx512f"))) double run512(long iters, float* sink) {
  return runChains<__m512, kChains512>(iters, sink);
}
__attribute__((target("avx2,fma"))) double run256(long iters, float* sink) {
  return runChains<__m256, kChains>(iters, sink);
}
double runSse(long iters, float* sink) { return runChains<__m128, kChains>(iters, sink); }  // mul + add

// AMX (issue #37): 4 independent accumulator tiles (16 x 16 f32 or s32), each step one tile product
// per accumulator on the same A and B tiles (16 rows of 64 bytes): tdpbf16ps, 16 x 16 x 32 x 2
// flops each, or (Int8) tdpbssd, 16 x 16 x 64 x 2 integer ops; register-only, as the notes' peak
// loop (../shared/notes/amx.md: 3,074-3,342 GFLOP/s bf16 on one thread).
template <bool Int8>
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) double runAmx(long iters, float* sink) {
  alignas(64) unsigned char cfg[64] = {};
  cfg[0] = 1;  // palette 1
  for (int t = 0; t < 6; ++t) {
    cfg[16 + 2 * t] = 64;  // bytes per row
    cfg[48 + t] = 16;      // rows
  }
  // Small operands (bf16 0x3c00 = 0.0078125 pairs, or s8 ones): the sums stay finite.
  alignas(64) static uint16_t ab[16 * 32];
  for (int i = 0; i < 16 * 32; ++i) ab[i] = Int8 ? 0x0101 : 0x3c00;
  alignas(64) float out[16 * 16];
  _tile_loadconfig(cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ab, 64);
  _tile_loadd(5, ab, 64);
  for (long it = 0; it < iters; ++it) {
    if constexpr (Int8) {
      _tile_dpbssd(0, 4, 5);
      _tile_dpbssd(1, 4, 5);
      _tile_dpbssd(2, 4, 5);
      _tile_dpbssd(3, 4, 5);
    } else {
      _tile_dpbf16ps(0, 4, 5);
      _tile_dpbf16ps(1, 4, 5);
      _tile_dpbf16ps(2, 4, 5);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  _tile_stored(0, out, 64);
  _tile_release();
  *sink += out[0];  // (an s32 sum's bits: only kept, never read as a number)
  return double(iters) * 4 * 16 * 16 * (Int8 ? 64 : 32) * 2;
}

struct Isa {
  const char* name;
  double (*fn)(long, float*);
};

// GFLOP/s of `threads` threads each running `isa` for about `seconds`; the best of `reps` repetitions.
double measure(const Isa& isa, int threads, double seconds, int reps) {
  // Calibrate the iteration count on one thread.
  float sink = 0;
  long iters = 1 << 16;
  for (;;) {
    auto t0 = Clock::now();
    isa.fn(iters, &sink);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0.02) {
      iters = long(double(iters) * seconds / s) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int rep = 0; rep < std::max(1, reps); ++rep) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> flops(size_t(threads), 0.0);
    std::vector<float> sinks(size_t(threads), 0.0f);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load()) {
        }
        flops[size_t(t)] = isa.fn(iters, &sinks[size_t(t)]);
      });
    while (ready.load() < threads) {
    }
    auto t0 = Clock::now();
    go.store(true);
    for (auto& th : pool) th.join();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / s / 1e9);
    for (float f : sinks) sink += f;
  }
  volatile float keep = sink;  // the work's result is used: the compiler keeps the work
  (void)keep;
  return best;
}

}  // namespace

FmaPeak measureFmaPeak(int threads, double seconds, int reps) {
  MachineLock lock(MachineLock::Mode::Measure);  // nothing else of Sextant's runs meanwhile
  FmaPeak out;
  out.threads = std::max(1, threads);
  __builtin_cpu_init();
  std::vector<Isa> isas;
  if (__builtin_cpu_supports("avx512f")) isas.push_back({"avx512", run512});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isas.push_back({"avx2", run256});
  if (isas.empty()) isas.push_back({"sse", runSse});  // SSE never beats AVX2+FMA
  for (const Isa& isa : isas) {
    double g = measure(isa, out.threads, seconds, reps);
    out.per_isa.emplace_back(isa.name, g);
    // A narrower ISA counts only when clearly faster (on CPUs that split 512-bit FMAs, such as
    // Zen 4, both reach the same peak and the wider one is named).
    if (g > out.gflops * 1.02) out.gflops = g, out.isa = isa.name;
  }
  return out;
}
FmaPeak measureAmxPeak(bool int8, int threads, double seconds, int reps) {
  MachineLock lock(MachineLock::Mode::Measure);
  FmaPeak out;
  out.threads = std::max(1, threads);
  out.isa = int8 ? "amx_int8" : "amx_bf16";
  if (!hostCpu().hasFlag("amx_tile") || !hostCpu().hasFlag(out.isa) || !requestAmxPermission()) return out;
  out.gflops = measure({out.isa.c_str(), int8 ? runAmx<true> : runAmx<false>}, out.threads, seconds, reps);
  out.per_isa.emplace_back(out.isa, out.gflops);
  return out;
}
#else
FmaPeak measureAmxPeak(bool int8, int threads, double, int) {
  FmaPeak out;
  out.threads = threads;
  out.isa = int8 ? "amx_int8" : "amx_bf16";
  return out;
}
// Not an x86-64 CPU: no chains are written for it yet; gflops 0 means "not measured".
FmaPeak measureFmaPeak(int threads, double, int) {
  FmaPeak out;
  out.threads = threads;
  return out;
}
#endif

}  // namespace sextant
