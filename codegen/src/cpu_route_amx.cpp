// The AMX space (issue #37): bf16 x bf16 -> f32 and s8 x s8 -> s32 GEMMs (NN, NT) on a CPU with AMX, whose
// kernels the pass sextant-amx-gemm writes (amx_kernel.h, compiler_cpu_amx.cpp). Its first seven
// knobs read as the GEMM space's (tile_m, tile_n, tile_k, reg_m, reg_n, unroll_k,
// reg_loop_order: what the cost model's features take, op_schedules.h), in units of elements: the
// register block is reg_m x reg_n of C in 16 x 16 f32 (s32) tiles. What ../shared/notes/amx.md measured
// decided the values: K blocks of 256 at 1024^3, N-outer loops on wide N, at most 8 live tiles
// (accumulators + A + B tiles; more spill 1 KiB each and halve the speed).
#include <algorithm>
#include <sstream>
#include <string>

#include "cpu_schedule_internal.h"

namespace sextant::cpu_detail {

namespace {
constexpr const char* kAmxSpaceName = "cpu_gemm_amx_v1";

std::vector<int64_t> multiplesDividing(const std::vector<int64_t>& options, int64_t dim) {
  std::vector<int64_t> v;
  for (int64_t x : options)
    if (x <= dim && dim % x == 0) v.push_back(x);
  if (v.empty()) v.push_back(dim);
  return v;
}
}  // namespace

bool isAmxSpace(const Space& space) { return space.name() == kAmxSpaceName; }

int64_t amxKStep(const GemmWorkload& w) { return amxTileK(w.a_type); }

bool wantsAmx(const GemmWorkload& w) {
  return (w.a_type == DType::BF16 && w.b_type == DType::BF16) || (w.a_type == DType::S8 && w.b_type == DType::S8);
}

std::string amxUnsupported(const GemmWorkload& w, const HostCpu& cpu) {
  const bool s8 = w.a_type == DType::S8;
  const char* unit = s8 ? "amx_int8" : "amx_bf16";
  if (!cpu.hasFlag(unit) || !cpu.hasFlag("amx_tile"))
    return std::string(s8 ? "s8" : "bf16") + " GEMM on the cpu target needs Intel AMX (amx_tile, " + unit +
           "), which this CPU (" + cpu.model + ") does not have";
  if (w.c_type != (s8 ? DType::S32 : DType::F32))
    return s8 ? "the AMX route sums s8 products in s32 (C s32)" : "the AMX route accumulates bf16 products in f32 (C f32)";
  if (w.op != OpKind::Gemm) return "the AMX route tunes gemm only in this version (not " + std::string(opKindName(w.op)) + ")";
  if (w.layout == Layout::TN) return "the AMX route takes layouts NN and NT in this version (not TN)";
  const int64_t kt = amxKStep(w);
  if (w.m % 16 || w.n % 16 || w.k % kt)
    return "the AMX route needs M and N multiples of 16 and K a multiple of " + std::to_string(kt) +
           " in this version (got " + w.gemmShapeString() + ")";
  return "";
}

Space amxSpace(const GemmWorkload& w, int threads) {
  std::vector<Knob> knobs;
  knobs.push_back({"tile_m", multiplesDividing({16, 32, 48, 64, 96, 128, 192, 256, 384, 512}, w.m),
                   "rows of C per cache block"});
  knobs.push_back({"tile_n", multiplesDividing({16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024}, w.n),
                   "columns of C per cache block"});
  const int64_t ks = amxKStep(w);
  knobs.push_back({"tile_k", multiplesDividing({ks, 2 * ks, 4 * ks, 8 * ks, 16 * ks, 32 * ks}, w.k),
                   "K per cache block (the depth of the packed B tiles one block reads)"});
  knobs.push_back({"reg_m", {16, 32, 48}, "rows of the register block (16-row accumulator tiles)"});
  knobs.push_back({"reg_n", {16, 32, 48}, "columns of the register block (16-column accumulator tiles)"});
  knobs.push_back({"unroll_k", {1, 2}, "K steps of one tile (32 bf16 or 64 s8 values) per iteration of the tile loop"});
  knobs.push_back({"reg_loop_order", {0, 1}, "0: register blocks row by row (m outer), 1: n outer"});
  knobs.push_back({"outer_order", {0, 1, 2}, "block loops 0: K, M, N; 1: N, K, M (wide N); 2: M, N, K"});
  std::vector<Constraint> cons;
  cons.push_back({"the register block fits the 8 tile registers", {3, 4}, [](const std::vector<int64_t>& v) {
                    const int64_t tm = v[3] / 16, tn = v[4] / 16;
                    return tm * tn + tm + tn <= 8;
                  }});
  cons.push_back({"reg_m divides tile_m", {0, 3}, [](const std::vector<int64_t>& v) { return v[0] % v[3] == 0; }});
  cons.push_back({"reg_n divides tile_n", {1, 4}, [](const std::vector<int64_t>& v) { return v[1] % v[4] == 0; }});
  cons.push_back({"unroll_k divides tile_k's tile steps", {2, 5},
                  [ks](const std::vector<int64_t>& v) { return (v[2] / ks) % v[5] == 0; }});
  if (threads > 1) {
    // The first block loop over M or N that has more than one block runs on the threads (K, M, N
    // and M, N, K: M's unless M is one block; N, K, M: N's unless N is one block): as many blocks
    // as threads at least.
    knobs.push_back({"threads", {threads}, "OpenMP threads running the outermost M or N block loop (tune --threads)"});
    cons.push_back({"at least as many parallel blocks as threads", {0, 1, 7, 8}, [w](const std::vector<int64_t>& v) {
                      const int64_t mb = w.m / v[0], nb = w.n / v[1];
                      const int64_t first = v[7] == 1 ? (nb > 1 ? nb : mb) : (mb > 1 ? mb : nb);
                      return first >= v[8];
                    }});
  }
  return Space(kAmxSpaceName, knobs, cons);
}

Candidate amxDefault(const Space& space, const GemmWorkload& w) {
  // The notes' best at 1024^3: K blocks of 256 (bf16: 512 bytes a row; s8 the same bytes) outermost,
  // 2 x 2 tiles, B's tiles read in place (1,060-1,189 GFLOP/s against oneDNN's 833-873).
  return nearestValid(space, {{"tile_m", 32}, {"tile_n", 32}, {"tile_k", 8 * amxKStep(w)}, {"reg_m", 32}, {"reg_n", 32},
                              {"unroll_k", 1}, {"reg_loop_order", 0}, {"outer_order", 0}});
}

std::vector<Candidate> amxSeeds(const Space& space, const GemmWorkload& w) {
  // The notes' best on a wide-N layer (N = 3072, K = 768): N blocks of 512 outermost, K blocks of
  // 256 (1,103-1,158 against oneDNN's 993-1,076); and the 1024^3 schedule with K blocks of 512.
  std::vector<Candidate> out;
  const Candidate def = amxDefault(space, w);
  for (const std::map<std::string, int64_t>& m :
       {std::map<std::string, int64_t>{{"tile_m", 32}, {"tile_n", 512}, {"tile_k", 8 * amxKStep(w)}, {"reg_m", 32},
                                       {"reg_n", 32}, {"unroll_k", 1}, {"reg_loop_order", 0}, {"outer_order", 1}},
        std::map<std::string, int64_t>{{"tile_m", 32}, {"tile_n", 32}, {"tile_k", 16 * amxKStep(w)}, {"reg_m", 32}, {"reg_n", 32},
                                       {"unroll_k", 1}, {"reg_loop_order", 0}, {"outer_order", 0}}}) {
    Candidate c = nearestValid(space, m);
    if (c != def && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::string emitAmxActions(const Space& space, const Candidate& c, const std::string& ind, bool b_packed) {
  const auto v = space.values(c);
  const auto& k = space.knobs();
  const std::string H = "!transform.any_op";
  std::ostringstream o;
  for (size_t i = 0; i < k.size(); ++i) o << ind << "%" << k[i].name << " = " << knobOp(k[i], v[i]) << "\n";
  o << ind << "// Intel AMX: B " << (b_packed ? "(a weight) stored in VNNI tiles by the caller once, " : "packed into VNNI tiles in each call, ") << v[3] / 16 << " x " << v[4] / 16
    << " accumulator tiles in tile registers per register block (Sextant's own pass;\n"
    << ind << "// tune compile and sextant-opt have it, a stock mlir-opt does not).\n"
    << ind << "%f = transform.get_parent_op %mm {deduplicate, op_name = \"func.func\"} : (" << H << ") -> " << H << "\n"
    << ind << "%amx = transform.apply_registered_pass \"sextant-amx-gemm\" with options = { \"block-m\" = " << v[0]
    << ", \"block-n\" = " << v[1] << ", \"block-k\" = " << v[2] << ", \"tiles-m\" = " << v[3] / 16
    << ", \"tiles-n\" = " << v[4] / 16 << ", \"unroll-k\" = " << v[5] << ", \"reg-order\" = " << v[6]
    << ", \"outer-order\" = " << v[7] << (b_packed ? ", \"b-packed\" = true" : "")
    << (v.size() > 8 ? ", \"threads\" = " + std::to_string(v[8]) : std::string()) << " } to %f : (" << H << ") -> " << H << "\n";
  return o.str();
}

}  // namespace sextant::cpu_detail

namespace sextant {
std::string cpuWorkloadUnsupported(const GemmWorkload& w, const HostCpu& cpu) {
  if (cpu_detail::wantsAmx(w)) return cpu_detail::amxUnsupported(w, cpu);
  if (w.a_type != DType::F32 || w.b_type != DType::F32 || w.c_type != DType::F32)
    return std::string("the cpu target tunes f32 ops and bf16 x bf16 -> f32 and s8 x s8 -> s32 GEMMs (got ") +
           dtypeName(w.a_type) + ")";
  return "";
}
}  // namespace sextant
