// The measured f32 FMA peak of this CPU (issue #14: tuned kernels are reported as a share of it):
// independent chains of register-only vector FMAs, the widest vectors the CPU runs, on N threads at
// once. A measurement, not a datasheet figure: it includes the clock the cores hold under FMA load.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sextant {

struct FmaPeak {
  double gflops = 0;  // f32 GFLOP/s of all threads together (2 flops per lane per FMA)
  std::string isa;    // the instruction set that reached it: avx512, avx2 or sse
  int threads = 1;
  std::vector<std::pair<std::string, double>> per_isa;  // every instruction set tried, GFLOP/s
};

// `threads` threads each run FMA chains for about `seconds` per repetition; the best of `reps`
// repetitions, for AVX-512 and AVX2 (where the CPU has them; SSE otherwise). A narrower ISA is
// named only when more than 2% faster.
FmaPeak measureFmaPeak(int threads, double seconds = 0.3, int reps = 5);
// The AMX peak (issue #37): 4 accumulator tiles, tdpbf16ps (isa "amx_bf16") or, int8, tdpbssd
// (isa "amx_int8"; gflops then counts integer multiply-adds as 2 ops) on register tiles only, on
// `threads` threads; gflops 0 where the CPU has no such AMX unit or Linux refuses the tiles.
FmaPeak measureAmxPeak(bool int8, int threads, double seconds = 0.3, int reps = 5);

}  // namespace sextant
