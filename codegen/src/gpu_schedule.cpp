#include "sextant/codegen/gpu_schedule.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace sextant {

namespace {

enum K { kBM, kBN, kBK, kMma, kWM, kWN, kTM, kTN, kCopy, kPipe, kSwz, kLds, kPad, kNumKnobs };
const char* kNames[kNumKnobs] = {"block_m",  "block_n",   "block_k",  "mma",     "warp_m",      "warp_n", "thread_m",
                                 "thread_n", "copy_bits", "pipeline", "swizzle", "lds_k_major", "lds_pad"};

std::vector<int64_t> dividing(const std::vector<int64_t>& options, int64_t dim) {
  std::vector<int64_t> out;
  for (int64_t v : options)
    if (v <= dim && dim % v == 0) out.push_back(v);
  return out;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// MLIR's maximizeNumThreads (GPUHeuristics.cpp): the most threads usable over `sizes`, the most
// minor dimension mandated in full.
std::vector<int64_t> maximizeNumThreads(const std::vector<int64_t>& sizes, size_t i, int64_t max_threads) {
  if (i == sizes.size() - 1) return {sizes[i]};
  int64_t best = 0;
  std::vector<int64_t> local;
  std::vector<int64_t> factors;
  for (int64_t f = 1; f <= sizes[i]; ++f)
    if (sizes[i] % f == 0) factors.push_back(f);
  factors.push_back(sizes[i]);
  for (int64_t f : factors) {
    auto nested = maximizeNumThreads(sizes, i + 1, max_threads / f);
    int64_t lb = f * product(nested);
    if (lb > best && lb <= max_threads) {
      local = {f};
      local.insert(local.end(), nested.begin(), nested.end());
      best = lb;
    }
  }
  return local;
}

int64_t bitsOf(DType t) { return dtypeBytes(t) * 8; }

std::string ty(DType t) { return dtypeName(t); }

}  // namespace

Result<std::array<int64_t, 2>> gpuCopyTile(int64_t rows, int64_t cols, int64_t elem_bits, int64_t threads,
                                           int64_t align_bits) {
  if (align_bits % elem_bits != 0) return Error{"copy width is not a multiple of the element size"};
  int64_t vec = std::gcd(std::gcd(align_bits / elem_bits, cols), 128 / elem_bits);
  if (vec != align_bits / elem_bits) return Error{"tile too narrow for the copy width"};
  std::vector<int64_t> scaled = {rows, cols / vec};
  if (scaled.back() > threads) return Error{"too few threads for the copy"};
  auto nt = maximizeNumThreads(scaled, 0, threads);
  if (nt.size() != 2 || product(nt) != threads) return Error{"copy does not map exactly onto the threads"};
  return std::array<int64_t, 2>{(rows + nt[0] - 1) / nt[0], vec};
}

static Result<GpuPlan> planFromValues(const GemmWorkload& w, const std::vector<int64_t>& v, bool amd);

Space buildGpuGemmSpace(const GemmWorkload& w, const GpuTargetInfo& g) {
  const bool nvidia = g.target.kind == TargetKind::Nvidia;
  // Tensor cores: f16 inputs with f32 accumulation in the NN layout (the route of
  // ../shared/notes/recipes/tensorcore; bf16 needs an nvvm.mma pattern of our own and is not done).
  const bool mma_ok = g.has_mma_sync && w.a_type == DType::F16 && w.b_type == DType::F16 &&
                      w.c_type == DType::F32 && w.layout == Layout::NN;
  // MFMA (gfx942): f16 or bf16 inputs, f32 accumulation, any layout (the per-lane reads follow
  // the operands' layout in LDS: compiler_mfma.cpp).
  const bool mfma_ok = g.has_mfma && w.a_type == w.b_type && (w.a_type == DType::F16 || w.a_type == DType::BF16) &&
                       w.c_type == DType::F32;
  const bool amd = !nvidia;
  std::vector<Knob> k(kNumKnobs);
  k[kBM] = {kNames[kBM], dividing({16, 32, 64, 128, 256}, w.m), "rows of C per block"};
  k[kBN] = {kNames[kBN], dividing({16, 32, 64, 128, 256}, w.n), "columns of C per block"};
  k[kBK] = {kNames[kBK], dividing({16, 32, 64}, w.k), "K chunk staged in shared memory per step"};
  if (amd)
    // f16/bf16 on an MFMA chip: matrix cores only (an FMA kernel reaches a small fraction of the
    // peak); f32 and chips without MFMA: the FMA route.
    k[kMma] = {kNames[kMma], mfma_ok ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{0},
               "matrix cores: 1: MFMA v_mfma_f32_32x32x8, 2: MFMA 16x16x16 (f16 or bf16 _1k); 0: FMA on the SIMDs"};
  else
    k[kMma] = {kNames[kMma], mma_ok ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0},
               "1: tensor cores (mma.sync m16n8k16 + ldmatrix), 0: FMA on CUDA cores"};
  k[kWM] = {kNames[kWM], {16, 32, 64}, amd ? "rows of C per wave (mfma)" : "rows of C per warp (mma)"};
  k[kWN] = {kNames[kWN], {8, 16, 32, 64}, amd ? "columns of C per wave (mfma)" : "columns of C per warp (mma)"};
  // thread_m = 1 is left out: a unit-row thread tile sends MLIR 22's pattern rewriting into an
  // endless loop (seen: compile timeouts and OOM kills).
  k[kTM] = {kNames[kTM], {2, 4, 8}, "rows of C per thread (fma)"};
  k[kTN] = {kNames[kTN], {1, 2, 4, 8}, "columns of C per thread (fma)"};
  k[kCopy] = {kNames[kCopy], {32, 64, 128}, "vector width of the global->shared copies, bits"};
  k[kPipe] = {kNames[kPipe], g.has_cp_async ? std::vector<int64_t>{1, 2, 3} : std::vector<int64_t>{1},
              "shared-memory buffers in flight (cp.async software pipeline; 1: none)"};
  k[kSwz] = {kNames[kSwz], nvidia && mma_ok ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0},
             "1: XOR-swizzled shared memory (against ldmatrix bank conflicts)"};
  k[kLds] = {kNames[kLds], amd && mfma_ok ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0},
             "MFMA: 1: A and B stored in LDS with K innermost (one 64-bit read per lane and operand, transposing "
             "copies where the operand's K is not innermost); 0: as the operands are laid out",
             0};
  k[kPad] = {kNames[kPad], amd && mfma_ok ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0},
             "MFMA: 1: LDS operand rows padded by 8 bytes (against bank conflicts of the per-lane reads); 0: unpadded", 0};
  for (auto& kn : k)
    if (kn.values.empty()) kn.values = {1};  // a dimension smaller than every option: unusable, see below

  std::vector<Constraint> cons;
  auto all = std::vector<int>{kBM, kBN, kBK, kMma, kWM, kWN, kTM, kTN, kCopy, kPipe, kSwz, kLds, kPad};
  cons.push_back({"M, N and K are divisible by the block tile", {kBM, kBN, kBK},
                  [w](const std::vector<int64_t>& v) {
                    return w.m % v[kBM] == 0 && w.n % v[kBN] == 0 && w.k % v[kBK] == 0 && v[kBK] >= 16;
                  }});
  cons.push_back({"unused warp knobs stay at their first value (fma)", {kMma, kWM, kWN},
                  [](const std::vector<int64_t>& v) { return v[kMma] != 0 || (v[kWM] == 16 && v[kWN] == 8); }});
  cons.push_back({"unused thread knobs stay at their first value (mma)", {kMma, kTM, kTN},
                  [](const std::vector<int64_t>& v) { return v[kMma] == 0 || (v[kTM] == 2 && v[kTN] == 1); }});
  cons.push_back({"swizzle only with tensor cores and multi-buffered shared memory", {kMma, kPipe, kSwz},
                  [](const std::vector<int64_t>& v) { return v[kSwz] == 0 || (v[kMma] != 0 && v[kPipe] >= 2); }});
  cons.push_back({"LDS operand layout and padding only with MFMA", {kMma, kLds, kPad},
                  [](const std::vector<int64_t>& v) { return (v[kLds] == 0 && v[kPad] == 0) || v[kMma] != 0; }});
  cons.push_back({"warp tile divides the block tile and fits the registers", {kBM, kBN, kMma, kWM, kWN},
                  [g, w, amd](const std::vector<int64_t>& v) {
                    if (v[kMma] == 0) return true;
                    if (amd) {  // whole intrinsic tiles per wave
                      MfmaIntrinsic mi = mfmaForKnob(v[kMma], w.a_type);
                      if (v[kWM] % mi.m || v[kWN] % mi.n) return false;
                    }
                    // <= 128 f32 accumulators per lane leaves room for fragments under 255 registers.
                    return v[kBM] % v[kWM] == 0 && v[kBN] % v[kWN] == 0 && v[kWM] * v[kWN] / g.warp_size <= 128;
                  }});
  cons.push_back({"thread tile divides the block tile and fits the registers", {kBM, kBN, kMma, kTM, kTN},
                  [](const std::vector<int64_t>& v) {
                    if (v[kMma] != 0) return true;
                    return v[kBM] % v[kTM] == 0 && v[kBN] % v[kTN] == 0 && v[kTM] * v[kTN] <= 64;
                  }});
  cons.push_back({"threads per block within the target's limit, whole warps", {kBM, kBN, kMma, kWM, kWN, kTM, kTN},
                  [g, amd](const std::vector<int64_t>& v) {
                    int64_t t = v[kMma] ? g.warp_size * (v[kBM] / v[kWM]) * (v[kBN] / v[kWN])
                                        : (v[kBM] / v[kTM]) * (v[kBN] / v[kTN]);
                    // MFMA: 1 to 8 waves per workgroup.
                    int64_t most = amd && v[kMma] ? 8 * g.warp_size : std::min<int64_t>(g.max_threads_per_block, 1024);
                    return t >= g.warp_size && t <= most && t % g.warp_size == 0;
                  }});
  cons.push_back({"software pipeline no deeper than the K loop", {kBK, kPipe},
                  [w](const std::vector<int64_t>& v) { return v[kPipe] == 1 || w.k / v[kBK] >= v[kPipe]; }});
  cons.push_back({"copies, fill and shared memory map onto the block", all,
                  [w, g, amd](const std::vector<int64_t>& v) {
                    auto p = planFromValues(w, v, amd);
                    return p.ok() && p->smem_bytes <= g.smem_per_block_static_bytes;
                  }});
  std::string name = std::string("gpu_gemm_v1_") + (g.target.kind == TargetKind::Nvidia ? "nvidia" : "amd");
  return Space(name, std::move(k), std::move(cons));
}

static Result<GpuPlan> planFromValues(const GemmWorkload& w, const std::vector<int64_t>& v, bool amd) {
  GpuPlan p;
  p.block_m = v[kBM], p.block_n = v[kBN], p.block_k = v[kBK];
  p.mma = v[kMma] != 0;
  p.warp_size = amd ? 64 : 32;
  if (amd && p.mma) p.mfma = mfmaForKnob(v[kMma], w.a_type);
  p.warp_m = v[kWM], p.warp_n = v[kWN], p.thread_m = v[kTM], p.thread_n = v[kTN];
  p.copy_bits = v[kCopy], p.pipeline = v[kPipe], p.swizzle = v[kSwz] == 1;
  p.lds_k_major = v[kLds] == 1;
  p.lds_pad = v[kPad] == 1 ? 8 / dtypeBytes(w.a_type) : 0;
  if (w.m % p.block_m || w.n % p.block_n || w.k % p.block_k) return Error{"block tile does not divide the problem"};
  if (p.mma) {
    if (p.block_m % p.warp_m || p.block_n % p.warp_n) return Error{"warp tile does not divide the block tile"};
    p.threads = p.warp_size * (p.block_m / p.warp_m) * (p.block_n / p.warp_n);
    p.block_dims = {p.threads, 1, 1};
    // The C initialisation over all threads (linear mapping), vector-friendly columns first.
    bool found = false;
    for (int64_t fn : {4, 8, 16, 32, 64, 128, 256, 2, 1}) {
      if (fn > p.block_n || p.block_n % fn) continue;
      int64_t nn = p.block_n / fn;
      if (p.threads % nn) continue;
      int64_t nm = p.threads / nn;
      if (nm > p.block_m || p.block_m % nm) continue;
      p.fill_tile = {p.block_m / nm, fn};
      found = true;
      break;
    }
    if (!found) return Error{"the C tile does not map onto the threads"};
  } else {
    if (p.block_m % p.thread_m || p.block_n % p.thread_n) return Error{"thread tile does not divide the block tile"};
    p.block_dims = {p.block_n / p.thread_n, p.block_m / p.thread_m, 1};
    p.threads = p.block_dims[0] * p.block_dims[1];
    p.fill_tile = {p.thread_m, p.thread_n};
  }
  const bool ta = w.layout == Layout::TN, tb = w.layout == Layout::NT;
  auto ca = gpuCopyTile(ta ? p.block_k : p.block_m, ta ? p.block_m : p.block_k, bitsOf(w.a_type), p.threads, p.copy_bits);
  if (!ca) return Error{"A copy: " + ca.error()};
  auto cb = gpuCopyTile(tb ? p.block_n : p.block_k, tb ? p.block_k : p.block_n, bitsOf(w.b_type), p.threads, p.copy_bits);
  if (!cb) return Error{"B copy: " + cb.error()};
  p.copy_tile_a = *ca, p.copy_tile_b = *cb;
  // LDS rows: K innermost for an operand stored K-major (its layout, or lds_k_major), else M / N;
  // lds_pad elements added to each row.
  const int64_t a_row = (!ta || p.lds_k_major) ? p.block_k : p.block_m, b_row = (tb || p.lds_k_major) ? p.block_k : p.block_n;
  p.smem_bytes = ((p.block_m * p.block_k / a_row) * (a_row + p.lds_pad) * dtypeBytes(w.a_type) +
                  (p.block_k * p.block_n / b_row) * (b_row + p.lds_pad) * dtypeBytes(w.b_type)) *
                 p.pipeline;
  p.grid = {w.n / p.block_n, w.m / p.block_m, 1};
  return p;
}

Result<GpuPlan> planGpuGemm(const GemmWorkload& w, const Space& space, const Candidate& c) {
  if (space.knobs().size() != kNumKnobs) return Error{"not a GPU GEMM space: " + space.name()};
  const std::string& n = space.name();
  return planFromValues(w, space.values(c), n.size() >= 4 && n.compare(n.size() - 4, 4, "_amd") == 0);
}

GpuCompileRequest gpuCompileRequest(const GemmWorkload& w, const Space& space, const Candidate& c,
                                    const GpuTargetInfo& g) {
  GpuCompileRequest r;
  auto pr = planGpuGemm(w, space, c);
  if (!pr) return r;
  const GpuPlan& p = *pr;
  r.payload = w.payloadMlir();
  r.schedule = emitGpuGemmSchedule(w, space, c);
  r.pipeline_schedule = emitGpuPipelineSchedule(p);
  r.pipeline_depth = p.pipeline;
  r.mma = p.mma;
  r.mfma = p.mfma;
  r.lds_k_major = p.lds_k_major;
  r.lds_pad = p.lds_pad;
  r.swizzle = p.swizzle;
  r.nvidia = g.target.kind == TargetKind::Nvidia;
  r.chip = g.chip;
  r.features = g.features;
  return r;
}

Candidate defaultGpuCandidate(const Space& space) {
  // The nearest valid point to a common hand-written starting point.
  std::vector<int64_t> want = {64, 64, 32, 1, 32, 32, 4, 4, 128, 2, 0, 0, 0};
  const auto& k = space.knobs();
  Candidate best;
  double best_d = 1e300;
  for (uint64_t i = 0; i < space.size(); ++i) {
    Candidate c = space.at(i);
    double d = 0;
    for (size_t j = 0; j < k.size(); ++j) {
      double a = double(k[j].values[c[j]]), b = double(want[j]);
      d += std::abs(std::log2(std::max(a, 0.5)) - std::log2(std::max(b, 0.5))) * (j == kMma ? 4 : 1);
    }
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

namespace {

std::string knobOp(const Knob& k, int64_t selected) {
  std::ostringstream o;
  o << "%knob_" << k.name << " = transform.tune.knob<\"" << k.name << "\"> = " << selected
    << " : i64 from options = [";
  for (size_t i = 0; i < k.values.size(); ++i) o << (i ? ", " : "") << k.values[i];
  o << "] -> !transform.param<i64>";
  return o.str();
}

const char* H = "!transform.any_op";

}  // namespace

namespace {

// Where the emitted text lives: the standalone scripts (the tuner's stages, matching ops in the
// whole module) or a library's named sequences (one matched op; the lowering of its function).
enum class Form { Script, Library };

// The op-level part of stage 1: block tiles (C initialisation fused in), K chunks, promotion of
// the A and B tiles, their copies mapped to threads, warp or thread tiles. Reads %mm and %fill.
void emitOpStage(std::ostringstream& o, const std::string& I, const GemmWorkload& w, const GpuPlan& p) {
  const std::string pa = ty(w.a_type), pb = ty(w.b_type), pc = ty(w.c_type);
  o << I << "// Block tiles, with the C initialisation fused in.\n"
    << I << "%t1, %blk = transform.structured.tile_using_forall %mm tile_sizes [" << p.block_m << ", " << p.block_n
    << "] (mapping = [#gpu.block<y>, #gpu.block<x>]) : (" << H << ") -> (" << H << ", " << H << ")\n"
    << I << "%ff, %blk2 = transform.structured.fuse_into_containing_op %fill into %blk : (" << H << ", " << H
    << ") -> (" << H << ", " << H << ")\n"
    << I << "%t2, %kl = transform.structured.tile_using_for %t1 tile_sizes [0, 0, " << p.block_k << "] : (" << H
    << ") -> (" << H << ", " << H << ")\n"
    << I << "// Promote the A and B tiles (nofold pads become shared-memory buffers below).\n"
    << I << "%padded, %pad, %copy = transform.structured.pad %t2 {padding_values = [0.0 : " << pa << ", 0.0 : "
    << pb << ", 0.0 : " << pc << "], padding_dimensions = [0, 1, 2], nofold_flags = [1, 1, 0], copy_back_op = \"none\"}"
    << " : (" << H << ") -> (" << H << ", " << H << ", " << H << ")\n"
    << I << "%pad_forall, %tiled_pad = transform.structured.gpu.map_copy_to_threads %pad total_num_threads = "
    << p.threads << " desired_bit_alignment = " << p.copy_bits << " : (" << H << ") -> (" << H << ", " << H << ")\n"
    << I << "%copy_a, %copy_b = transform.split_handle %tiled_pad : (" << H << ") -> (" << H << ", " << H << ")\n"
    << I << "transform.structured.vectorize %copy_a vector_sizes [" << p.copy_tile_a[0] << ", " << p.copy_tile_a[1]
    << "] : " << H << "\n"
    << I << "transform.structured.vectorize %copy_b vector_sizes [" << p.copy_tile_b[0] << ", " << p.copy_tile_b[1]
    << "] : " << H << "\n";
  if (p.mma) {
    o << I << "// Warp tiles (linear warp ids), C initialisation over all threads.\n"
      << I << "%t3, %wf = transform.structured.tile_using_forall %padded tile_sizes [" << p.warp_m << ", " << p.warp_n
      << "] (mapping = [#gpu.warp<linear_dim_1>, #gpu.warp<linear_dim_0>]) : (" << H << ") -> (" << H << ", " << H
      << ")\n"
      << I << "%fillt, %fillthr = transform.structured.tile_using_forall %ff tile_sizes [" << p.fill_tile[0] << ", "
      << p.fill_tile[1] << "] (mapping = [#gpu.thread<linear_dim_1>, #gpu.thread<linear_dim_0>]) : (" << H
      << ") -> (" << H << ", " << H << ")\n";
  } else {
    o << I << "// Thread tiles: each thread computes thread_m x thread_n outputs.\n"
      << I << "%t3, %thr = transform.structured.tile_using_forall %padded tile_sizes [" << p.thread_m << ", "
      << p.thread_n << "] (mapping = [#gpu.thread<y>, #gpu.thread<x>]) : (" << H << ") -> (" << H << ", " << H
      << ")\n"
      << I << "%fillt, %fillthr = transform.structured.tile_using_forall %ff tile_sizes [" << p.thread_m << ", "
      << p.thread_n << "] (mapping = [#gpu.thread<y>, #gpu.thread<x>]) : (" << H << ") -> (" << H << ", " << H
      << ")\n";
  }
  o << I << "%buf, %newops = transform.structured.bufferize_to_allocation %pad_forall {memory_space = "
    << "#gpu.address_space<workgroup>, bufferize_destination_only} : " << H << "\n";
}

// 2-D vector transfers of function %`f` lowered to 1-D (needed before cp.async groups and before
// NVVM), with one more pattern set applied alongside (`also`).
std::string lowerTransfers(const std::string& I, const std::string& f, const std::string& also) {
  std::ostringstream o;
  o << I << "transform.apply_patterns to %" << f << " {\n"
    << I << "  transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true\n"
    << I << "} : " << H << "\n"
    << I << "transform.apply_patterns to %" << f << " {\n"
    << I << "  transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1\n"
    << I << "  transform.apply_patterns." << also << "\n"
    << I << "  transform.apply_patterns.canonicalization\n"
    << I << "} : " << H << "\n"
    << I << "transform.apply_cse to %" << f << " : " << H << "\n";
  return o.str();
}

// The function-level part of stage 1: vectorisation, bufferisation, the launch and its thread
// mapping, the contraction lowered to tensor-core fragments or FMA outer products. The script
// form matches the function in the module (%root); the library form starts from %func (the
// function holding the matched op) and follows the handles the transforms return.
void emitFunctionStage(std::ostringstream& o, const std::string& I, const GpuPlan& p, Form form) {
  const bool lib = form == Form::Library;
  auto matchFunc = [&](const std::string& name, const std::string& in) {
    o << I << "%" << name << " = transform.structured.match ops{[\"func.func\"]} in %" << in << " : (" << H
      << ") -> " << H << "\n";
  };
  auto sameFunc = [&](const std::string& name, const std::string& of) {
    o << I << "%" << name << " = transform.merge_handles %" << of << " {deduplicate} : " << H << "\n";
  };
  if (!lib) matchFunc("func", "root");
  o << I << "%vf = transform.structured.vectorize_children_and_apply_patterns %func : (" << H << ") -> " << H << "\n"
    << I << "transform.apply_patterns to %vf {\n"
    << I << "  transform.apply_patterns.canonicalization\n"
    << I << "  transform.apply_patterns.linalg.tiling_canonicalization\n"
    << I << "} : " << H << "\n"
    << I << "transform.apply_cse to %vf : " << H << "\n";
  if (lib) {
    // Function boundaries stay as they are: the function already takes memrefs.
    o << I << "transform.bufferization.eliminate_empty_tensors %vf : " << H << "\n"
      << I << "%f2 = transform.bufferization.one_shot_bufferize layout{IdentityLayoutMap} %vf "
      << "{memcpy_op = \"linalg.copy\"} : (" << H << ") -> " << H << "\n";
  } else {
    o << I << "transform.bufferization.eliminate_empty_tensors %root : " << H << "\n"
      << I << "%bufd = transform.bufferization.one_shot_bufferize layout{IdentityLayoutMap} %root "
      << "{bufferize_function_boundaries = true, memcpy_op = \"linalg.copy\"} : (" << H << ") -> " << H << "\n";
    matchFunc("f2", "bufd");
  }
  o << I << "// CSE then canonicalize, twice: bufferization self-copies must go before hoisting.\n"
    << I << "transform.apply_cse to %f2 : " << H << "\n"
    << I << "transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : " << H << "\n"
    << I << "transform.apply_cse to %f2 : " << H << "\n"
    << I << "transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : " << H << "\n"
    << I << "%f2v = transform.structured.vectorize_children_and_apply_patterns %f2 : (" << H << ") -> " << H << "\n"
    << I << "%launch = transform.gpu.map_forall_to_blocks %f2v {generate_gpu_launch} : (" << H << ") -> " << H << "\n"
    << I << "%l2 = transform.gpu.map_nested_forall_to_threads %launch block_dims = [" << p.block_dims[0] << ", "
    << p.block_dims[1] << ", " << p.block_dims[2] << "]" << (p.mma && p.warp_size != 32 ? " warp_size = " + std::to_string(p.warp_size) : "")
    << " : (" << H << ") -> " << H << "\n";
  if (lib)
    o << I << "%f3 = transform.get_parent_op %l2 {op_name = \"func.func\"} : (" << H << ") -> " << H << "\n";
  else
    matchFunc("f3", "bufd");
  o << I << "transform.apply_cse to %f3 : " << H << "\n"
    << I << "transform.apply_patterns to %f3 {\n"
    << I << "  transform.apply_patterns.canonicalization\n"
    << I << "  transform.apply_patterns.memref.fold_memref_alias_ops\n"
    << I << "  transform.apply_patterns.gpu.eliminate_barriers\n"
    << I << "} : " << H << "\n"
    << I << "transform.apply_cse to %f3 : " << H << "\n";
  if (p.mma) {
    const bool mfma = p.mfma.m > 0;
    const std::string shape = mfma ? std::to_string(p.mfma.m) + ", " + std::to_string(p.mfma.n) + ", " +
                                         std::to_string(p.mfma.k)
                                   : "16, 8, 16";
    o << I << "// Mixed-precision contraction, unrolled to the " << (mfma ? p.mfma.name() + " MFMA" : "m16n8k16 tensor-core")
      << " shape; then the C\n"
      << I << "// fragments are hoisted out of the K loop (after unrolling: one accumulator per fragment).\n"
      << I << "transform.apply_patterns to %f3 {\n"
      << I << "  transform.apply_patterns.vector.fold_arith_extension\n"
      << I << "  transform.apply_patterns.canonicalization\n"
      << I << "} : " << H << "\n"
      << I << "transform.apply_patterns to %f3 {\n"
      << I << "  transform.apply_patterns.gpu.unroll_vectors_subgroup_mma [" << shape << "]\n"
      << I << "  transform.apply_patterns.canonicalization\n"
      << I << "} : " << H << "\n"
      << I << "transform.apply_cse to %f3 : " << H << "\n"
      << I << "%h = transform.structured.hoist_redundant_vector_transfers %f3 : (" << H << ") -> " << H << "\n";
  } else {
    o << I << "// Keep the thread's C tile in registers across the K loop, then FMA outer products.\n"
      << I << "%h = transform.structured.hoist_redundant_vector_transfers %f3 : (" << H << ") -> " << H << "\n";
    if (lib) sameFunc("f5", "h");
    else matchFunc("f5", "bufd");
    o << I << "transform.apply_patterns to %f5 {\n"
      << I << "  transform.apply_patterns.vector.lower_masked_transfers\n"
      << I << "  transform.apply_patterns.vector.lower_contraction lowering_strategy = outerproduct\n"
      << I << "  transform.apply_patterns.vector.transfer_permutation_patterns\n"
      << I << "  transform.apply_patterns.vector.lower_outerproduct\n"
      << I << "  transform.apply_patterns.vector.lower_transpose\n"
      << I << "  transform.apply_patterns.vector.lower_broadcast\n"
      << I << "  transform.apply_patterns.canonicalization\n"
      << I << "} : " << H << "\n"
      << lowerTransfers(I, "f5", "vector.lower_shape_cast");
  }
  if (lib) sameFunc("f4", "h");
  else matchFunc("f4", "bufd");
  o << I << "transform.apply_patterns to %f4 { transform.apply_patterns.canonicalization } : " << H << "\n"
    << I << "transform.apply_cse to %f4 : " << H << "\n";
  if (!p.mma)
    o << I << "// 2-D from_elements (the hoisted C tile) have no ROCDL lowering: unroll them to rows, last\n"
      << I << "// (canonicalization would fold them back).\n"
      << I << "transform.apply_patterns to %f4 { transform.apply_patterns.vector.unroll_from_elements } : " << H << "\n";
}


// Stage 3 on the function %f: multi-buffering, cp.async groups, software pipelining (or, for
// tensor cores without pipelining, the transfers' lowering alone). `scope` holds the launch.
void emitPipelineStage(std::ostringstream& o, const std::string& I, const GpuPlan& p, const std::string& scope) {
  if (p.pipeline <= 1) {
    o << lowerTransfers(I, "f", "memref.fold_memref_alias_ops");
    return;
  }
  o << I << "transform.bufferization.buffer_loop_hoisting %f : " << H << "\n"
    << I << "%allocs = transform.structured.match ops{[\"memref.alloc\"]} in %f : (" << H
    << ") -> !transform.op<\"memref.alloc\">\n"
    << I << "%mb = transform.memref.multibuffer %allocs {factor = " << p.pipeline
    << " : i64, skip_analysis} : (!transform.op<\"memref.alloc\">) -> " << H << "\n"
    << lowerTransfers(I, "f", "memref.fold_memref_alias_ops")
    << I << "transform.apply_patterns to %f { transform.apply_patterns.gpu.eliminate_barriers } : " << H << "\n"
    << I << "%f2 = transform.nvgpu.create_async_groups %f {bypass_l1} : (" << H << ") -> " << H << "\n"
    << I << "transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : " << H << "\n"
    << I << "%launch = transform.structured.match ops{[\"gpu.launch\"]} in %" << scope << " : (" << H << ") -> " << H
    << "\n"
    << I << "%loops = transform.structured.match ops{[\"scf.for\"]} in %launch : (" << H << ") -> " << H << "\n"
    << I << "%kloop = transform.split_handle %loops : (" << H << ") -> (" << H << ")\n"
    << I << "%p = transform.nvgpu.pipeline_shared_memory_copies failures(propagate) %kloop {depth = " << p.pipeline
    << ", peel_epilogue} : (" << H << ") -> " << H << "\n";
}

}  // namespace

std::string emitGpuGemmSchedule(const GemmWorkload& w, const Space& space, const Candidate& c) {
  auto pr = planGpuGemm(w, space, c);
  if (!pr) return "// invalid GPU candidate: " + pr.error() + "\n";
  const GpuPlan& p = *pr;
  auto v = space.values(c);
  std::ostringstream o;
  const std::string I = "    ";
  o << "// Sextant GPU GEMM schedule (space " << space.name() << " " << space.fingerprint() << ")\n"
    << "// workload: " << w.key() << "\n"
    << "// knobs: " << space.keyOf(c) << "\n"
    << "// threads per block: " << p.threads << ", shared memory: " << p.smem_bytes << " bytes\n"
    << "module attributes {transform.with_named_sequence} {\n"
    << "  transform.named_sequence @__transform_main(%root: " << H << " {transform.consumed}) {\n";
  for (size_t i = 0; i < space.knobs().size(); ++i) o << I << knobOp(space.knobs()[i], v[i]) << "\n";
  o << I << "%mm = transform.structured.match ops{[\"linalg.matmul\"]} in %root : (" << H << ") -> " << H << "\n"
    << I << "%fill = transform.structured.match ops{[\"linalg.fill\"]} in %root : (" << H << ") -> " << H << "\n";
  emitOpStage(o, I, w, p);
  emitFunctionStage(o, I, p, Form::Script);
  o << I << "transform.yield\n"
    << "  }\n"
    << "}\n";
  return o.str();
}

std::string emitGpuPipelineSchedule(const GpuPlan& p) {
  if (p.pipeline <= 1 && !p.mma) return "";
  const std::string I = "    ";
  std::ostringstream o;
  if (p.pipeline <= 1)  // tensor cores without pipelining: the transfers still have to become 1-D
    o << "// Sextant GPU: lower the remaining 2-D transfers (no pipelining).\n";
  else
    o << "// Sextant GPU pipelining: " << p.pipeline << " shared-memory buffers, cp.async groups, software pipeline.\n"
      << "// The wait-group counts of the steady-state loop are set afterwards from the number of commit\n"
      << "// groups per iteration (the compiler counts them), then the function is canonicalized.\n";
  o << "module attributes {transform.with_named_sequence} {\n"
    << "  transform.named_sequence @__transform_main(%root: " << H << " {transform.readonly}) {\n"
    << I << "%f = transform.structured.match ops{[\"func.func\"]} in %root : (" << H << ") -> " << H << "\n";
  emitPipelineStage(o, I, p, "root");
  o << I << "transform.yield\n  }\n}\n";
  return o.str();
}

std::string emitGpuLibraryActions(const GemmWorkload& w, const Space& space, const Candidate& c,
                                  const std::string& I, const std::string& function_tag) {
  auto pr = planGpuGemm(w, space, c);
  if (!pr) return I + "// invalid GPU candidate: " + pr.error() + "\n";
  std::ostringstream o;
  o << I << "%fill = transform.get_producer_of_operand %mm[2] : (" << H << ") -> " << H << "\n"
    << I << "%fn = transform.get_parent_op %mm {op_name = \"func.func\"} : (" << H << ") -> " << H << "\n";
  emitOpStage(o, I, w, *pr);
  o << I << "// The rest runs on the whole function (bufferisation, the launch): marked for the lowering.\n"
    << I << "transform.annotate %fn \"" << function_tag << "\" : " << H << "\n";
  return o.str();
}

std::string emitGpuLibraryLowering(const GemmWorkload& w, const Space& space, const Candidate& c,
                                   const std::string& I) {
  auto pr = planGpuGemm(w, space, c);
  if (!pr) return I + "// invalid GPU candidate: " + pr.error() + "\n";
  std::ostringstream o;
  emitFunctionStage(o, I, *pr, Form::Library);
  return o.str();
}

std::string emitGpuLibraryFinish(const GemmWorkload& w, const Space& space, const Candidate& c, const std::string& I,
                                 bool nvidia) {
  auto pr = planGpuGemm(w, space, c);
  if (!pr) return I + "// invalid GPU candidate: " + pr.error() + "\n";
  const GpuPlan& p = *pr;
  std::ostringstream o;
  // What the tuner's compiler does between and after its scripts (compileGpuGemm), as transforms.
  o << I << "%f0 = transform.merge_handles %fin {deduplicate} : " << H << "\n";
  std::string f = "f0";
  auto pass = [&](const std::string& name, const std::string& options) {
    std::string next = "f_" + std::to_string(o.tellp());
    o << I << "%" << next << " = transform.apply_registered_pass \"" << name << "\""
      << (options.empty() ? "" : " with options = { " + options + " }") << " to %" << f << " : (" << H << ") -> "
      << H << "\n";
    f = next;
  };
  if (p.mma && nvidia) {
    o << I << "// Tensor-core fragments: vector -> nvgpu (ldmatrix, mma.sync).\n";
    pass("convert-vector-to-gpu", "\"use-nvgpu\" = true");
    pass("canonicalize", "");
    pass("cse", "");
  } else if (p.mma) {
    o << I << "// Matrix cores: wave-level contractions -> amdgpu.mfma with per-lane operand loads (Sextant's\n"
      << I << "// own pass: tune compile and sextant-opt have it, a stock mlir-opt does not).\n";
    pass("sextant-vector-to-mfma",
         "\"shape\" = \"" + p.mfma.shape() + "\"" + (p.lds_k_major ? ", \"lds-k-major\" = true" : "") +
             (p.lds_pad ? ", \"lds-pad\" = " + std::to_string(p.lds_pad) : ""));
    pass("canonicalize", "");
    pass("cse", "");
  }
  if ((nvidia && p.pipeline > 1) || p.mma) {
    o << I << "// " << (p.pipeline > 1 ? "cp.async software pipeline" : "The copies' transfers lowered to 1-D")
      << ".\n"
      << I << "%f = transform.merge_handles %" << f << " {deduplicate} : " << H << "\n";
    emitPipelineStage(o, I, p, "f2");
    f = "f";
    if (p.pipeline > 1) {
      // One commit group per promoted operand (A, B) per iteration (checked: the transform fails
      // otherwise): pipelined waits may leave groups * (depth - 1) groups pending, as
      // fixAsyncWaitCounts in the compiler counts; then canonicalization, as there.
      o << I << "%groups = transform.structured.match ops{[\"nvgpu.device_async_create_group\"]} in %p : (" << H
        << ") -> " << H << "\n"
        << I << "%ngroups = transform.num_associations %groups : (" << H << ") -> !transform.param<i64>\n"
        << I << "%two = transform.param.constant 2 : i64 -> !transform.param<i64>\n"
        << I << "transform.match.param.cmpi eq %ngroups, %two : !transform.param<i64>\n"
        << I << "%waits = transform.structured.match ops{[\"nvgpu.device_async_wait\"]} in %p : (" << H << ") -> "
        << H << "\n"
        << I << "%pending = transform.param.constant " << 2 * (p.pipeline - 1) << " : i32 -> !transform.param<i32>\n"
        << I << "transform.annotate %waits \"numGroups\" = %pending : " << H << ", !transform.param<i32>\n"
        << I << "transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : " << H << "\n";
      f = "f2";
    }
  }
  if (p.swizzle) {
    o << I << "// XOR-swizzled shared-memory addresses against ldmatrix bank conflicts.\n";
    pass("nvgpu-optimize-shared-memory", "");
  }
  o << I << "// Workgroup buffers become static shared memory / LDS.\n";
  pass("promote-buffers-to-stack", "\"max-alloc-size-in-bytes\" = 16777216");
  o << I << "%allocas = transform.structured.match ops{[\"memref.alloca\"]} in %" << f
    << " : (" << H << ") -> !transform.op<\"memref.alloca\">\n"
    << I << "%gg, %glob = transform.memref.alloca_to_global %allocas : (!transform.op<\"memref.alloca\">) -> (" << H
    << ", " << H << ")\n";
  return o.str();
}

}  // namespace sextant
