#include "sextant/runtime/cpu_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <memory>
#include <random>
#include <utility>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <nlohmann/json.hpp>

#include "sextant/codegen/compiler.h"
#include "sextant/codegen/ops.h"
#include "sextant/hwspec/target.h"
#include "sextant/runtime/bf16.h"
#include "sextant/runtime/isolation.h"

namespace sextant {
namespace {

// MLIR's C-interface descriptor of a rank-R f32 memref, R at run time: {allocated, aligned,
// offset, sizes[R], strides[R]}, each a 64-bit word; row-major (the kernels' operands of every op:
// rank 2 for a GEMM, 3 for a batched matmul or a depthwise filter, 4 for a convolution's NHWC /
// HWCF operands).
class DynMemRef {
 public:
  explicit DynMemRef(const std::vector<int64_t>& sizes) : words_(3 + 2 * sizes.size()) {
    static_assert(sizeof(float*) == sizeof(int64_t), "64-bit descriptors");
    const size_t r = sizes.size();
    int64_t stride = 1;
    for (size_t i = r; i-- > 0;) {
      words_[3 + i] = sizes[i];
      words_[3 + r + i] = stride;
      stride *= sizes[i];
    }
  }
  // The descriptor of the data at p (allocated = aligned = p, offset 0).
  void* at(float* p) {
    memcpy(&words_[0], &p, sizeof p);
    memcpy(&words_[1], &p, sizeof p);
    return words_.data();
  }

 private:
  std::vector<int64_t> words_;
};

struct AlignedFree {
  void operator()(float* p) const { free(p); }
};
using Buffer = std::unique_ptr<float, AlignedFree>;
Buffer alignedCopy(const std::vector<float>& v) {
  size_t bytes = (v.size() * sizeof(float) + 63) / 64 * 64;
  Buffer b(static_cast<float*>(aligned_alloc(64, std::max<size_t>(bytes, 64))));
  if (!v.empty()) memcpy(b.get(), v.data(), v.size() * sizeof(float));
  return b;
}

}  // namespace

namespace {

std::vector<std::pair<const char*, size_t>>& extraEvicted() {
  static std::vector<std::pair<const char*, size_t>> extra;
  return extra;
}

}  // namespace

void evictWithOperands(const void* data, size_t bytes) {
  if (data && bytes) extraEvicted().push_back({static_cast<const char*>(data), bytes});
}

void forgetEvicted(const void* data) {
  auto& e = extraEvicted();
  e.erase(std::remove_if(e.begin(), e.end(), [data](const auto& r) { return r.first == data; }), e.end());
}

size_t alsoEvictedBytes() {
  size_t n = 0;
  for (const auto& e : extraEvicted()) n += e.second;
  return n;
}

namespace {

// The operands of one measuring process (aligned copies of the problem's inputs, C poisoned), the
// verification of a kernel's C and the timing of single calls with the operands evicted first.
class Bench {
 public:
  Bench(const GemmProblem& p, const MeasureOptions& o) : p_(p), o_(o), a_(alignedCopy(p.a())), b_(alignedCopy(p.b())) {
    c_ = alignedCopy(std::vector<float>(size_t(p.workload().cElements()), 0.0f));
#if defined(__x86_64__)
    use_clflush_ = o.flush_bytes == 0;
#endif
    const int64_t flush_bytes = o.flush_bytes ? o.flush_bytes
                                              : std::max<int64_t>(32ll << 20, 2 * hostCpu().lastLevelCacheBytes());
    flush_.resize(o.flush_cache && !use_clflush_ ? size_t(flush_bytes) : 0);
  }

  // Calls `kernel` once on a C poisoned with NaN (unwritten C is caught) and checks C against the
  // reference: {"status": "ok" | "wrong_result", "max_abs_err", "message"}.
  nlohmann::json verify(const KernelFn& kernel) {
    const GemmWorkload& w = p_.workload();
    float* c = c_.get();
    std::fill(c, c + w.cElements(), std::nanf(""));
    kernel(a_.get(), b_.get(), c);
    const auto& ref = p_.reference();
    double max_err = 0;
    int64_t bad = -1;
    // s32 results (s8 GEMMs): C's bytes are int32 sums, equal to the exact reference (both rounded
    // to float the same way: exact below 2^24).
    const bool s32 = w.c_type == DType::S32;
    const double atol = s32 ? 0 : o_.atol_per_k * double(w.k), rtol = s32 ? 0 : o_.rtol;
    for (size_t i = 0; i < ref.size(); ++i) {
      int32_t sum = 0;
      if (s32) memcpy(&sum, &c[i], 4);
      const double got = s32 ? double(float(sum)) : double(c[i]);
      double err = std::fabs(got - double(ref[i]));
      if (!(err <= atol + rtol * std::fabs(double(ref[i])))) {  // NaN fails too
        if (bad < 0) bad = int64_t(i);
        if (std::isnan(err)) err = INFINITY;
      }
      max_err = std::max(max_err, err);
    }
    nlohmann::json out;
    out["max_abs_err"] = std::isfinite(max_err) ? max_err : 1e300;
    out["status"] = "ok";
    if (bad < 0) return out;
    char msg[256];
    int32_t bad_sum = 0;
    memcpy(&bad_sum, &c[bad], 4);
    snprintf(msg, sizeof msg, "wrong result: %s = %g, expected %g (max |error| %g)", opOf(w).elementName(w, bad).c_str(),
             s32 ? double(bad_sum) : double(c[bad]), double(ref[bad]), max_err);
    out["status"] = "wrong_result";
    out["message"] = msg;
    return out;
  }

  void call(const KernelFn& kernel) { kernel(a_.get(), b_.get(), c_.get()); }

  // One timed call, the operands evicted from every cache level first (when asked): with clflush
  // on x86 (exact and cheap: only the lines the kernel touches), else by writing a buffer twice
  // the size of the last-level cache.
  double timeOnce(const KernelFn& kernel) {
    if (o_.flush_cache) evict();
    auto t0 = std::chrono::steady_clock::now();
    kernel(a_.get(), b_.get(), c_.get());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

 private:
  void evict() {
#if defined(__x86_64__)
    if (use_clflush_) {
      const GemmWorkload& w = p_.workload();
      auto flush = [](const void* p, size_t bytes) {
        for (size_t off = 0; off < bytes; off += 64) _mm_clflush(static_cast<const char*>(p) + off);
      };
      flush(a_.get(), p_.a().size() * sizeof(float));
      flush(b_.get(), p_.b().size() * sizeof(float));
      flush(c_.get(), size_t(w.cElements()) * sizeof(float));
      for (auto [ptr, bytes] : extraEvicted()) flush(ptr, bytes);
      _mm_mfence();
      return;
    }
#endif
    for (size_t i = 0; i < flush_.size(); i += 64) flush_[i] = char(flush_[i] + 1);
  }

  const GemmProblem& p_;
  const MeasureOptions& o_;
  Buffer a_, b_, c_;
  bool use_clflush_ = false;
  std::vector<char> flush_;
};

}  // namespace

std::string measureKernelHere(const GemmProblem& p, const KernelFn& kernel, const MeasureOptions& o) {
  Bench bench(p, o);
  nlohmann::json out = bench.verify(kernel);
  if (out["status"] != "ok") return out.dump();
  for (int i = 1; i < o.warmup; ++i) bench.call(kernel);
  std::vector<double> times;
  double total = 0;
  while (int(times.size()) < o.max_reps && (int(times.size()) < o.min_reps || total < o.min_time_s)) {
    times.push_back(bench.timeOnce(kernel));
    total += times.back();
  }
  out["times"] = times;
  if (o.flush_cache && alsoEvictedBytes()) out["also_evicted_bytes"] = alsoEvictedBytes();
  return out.dump();
}

std::string measurePairHere(const GemmProblem& p, const KernelFn& first, const KernelFn& second,
                            const MeasureOptions& o) {
  Bench bench(p, o);
  nlohmann::json one = bench.verify(first), two = bench.verify(second);
  const bool ok = one["status"] == "ok" && two["status"] == "ok";
  if (!ok) {
    // The one that verified is not timed either: its partner failed.
    for (auto [j, other] : {std::pair<nlohmann::json*, const nlohmann::json*>{&one, &two}, {&two, &one}})
      if ((*j)["status"] == "ok") {
        (*j)["status"] = "load_error";
        (*j)["message"] = "not measured: the other kernel of the pair failed (" + other->value("status", std::string()) + ")";
      }
    return nlohmann::json{{"first", one}, {"second", two}}.dump();
  }
  for (int i = 1; i < o.warmup; ++i) bench.call(first), bench.call(second);
  std::vector<double> t1, t2;
  double total1 = 0, total2 = 0;
  // Call by call, in alternating order (1 2, 2 1, ...): a change of the machine's speed that lasts
  // longer than a call slows both calls of a pair alike.
  while (int(t1.size()) < o.max_reps && (int(t1.size()) < o.min_reps || std::min(total1, total2) < o.min_time_s)) {
    if (t1.size() % 2 == 0) {
      t1.push_back(bench.timeOnce(first));
      t2.push_back(bench.timeOnce(second));
    } else {
      t2.push_back(bench.timeOnce(second));
      t1.push_back(bench.timeOnce(first));
    }
    total1 += t1.back(), total2 += t2.back();
  }
  one["times"] = t1, two["times"] = t2;
  if (o.flush_cache && alsoEvictedBytes()) one["also_evicted_bytes"] = two["also_evicted_bytes"] = alsoEvictedBytes();
  return nlohmann::json{{"first", one}, {"second", two}}.dump();
}

namespace {

Measurement measurementFromJson(const nlohmann::json& j, const GemmWorkload& w) {
  Measurement m;
  if (!j.is_object() || !j.contains("status")) {
    m.status = MeasureStatus::Crash;
    m.message = "the measuring child returned no result";
    return m;
  }
  std::string st = j["status"];
  m.max_abs_err = j.value("max_abs_err", 0.0);
  m.message = j.value("message", "");
  if (st == "wrong_result") {
    m.status = MeasureStatus::WrongResult;
    return m;
  }
  if (st == "load_error") {
    m.status = MeasureStatus::LoadError;
    return m;
  }
  m.status = MeasureStatus::Ok;
  m.also_evicted_bytes = j.value("also_evicted_bytes", size_t(0));
  m.times_s = j["times"].get<std::vector<double>>();
  summarize(m.times_s, m.median_s, m.cv);
  m.gflops = m.median_s > 0 ? w.flops() / m.median_s / 1e9 : 0;
  return m;
}

// A child that did not finish (timed out, crashed): the measurement says how.
bool childFailed(const ChildOutcome& co, Measurement& m) {
  if (co.kind == ChildOutcome::Kind::TimedOut) {
    m.status = MeasureStatus::Timeout;
    m.message = co.describe();
    return true;
  }
  if (!co.finished()) {
    m.status = MeasureStatus::Crash;
    m.message = co.describe();
    if (!co.stderr_text.empty()) m.message += ": " + co.stderr_text.substr(0, 2000);
    return true;
  }
  return false;
}

}  // namespace

Measurement measurementFromChild(const ChildOutcome& co, const GemmWorkload& w) {
  Measurement m;
  if (childFailed(co, m)) return m;
  return measurementFromJson(nlohmann::json::parse(co.output, nullptr, false), w);
}

std::pair<Measurement, Measurement> pairFromChild(const ChildOutcome& co, const GemmWorkload& w) {
  Measurement m;
  if (childFailed(co, m)) return {m, m};
  auto j = nlohmann::json::parse(co.output, nullptr, false);
  if (!j.is_object()) j = nlohmann::json::object();
  return {measurementFromJson(j.value("first", nlohmann::json()), w), measurementFromJson(j.value("second", nlohmann::json()), w)};
}

const char* measureStatusName(MeasureStatus s) {
  switch (s) {
    case MeasureStatus::Ok: return "ok";
    case MeasureStatus::WrongResult: return "wrong_result";
    case MeasureStatus::Crash: return "crash";
    case MeasureStatus::Timeout: return "timeout";
    case MeasureStatus::LoadError: return "load_error";
  }
  return "?";
}

void summarize(const std::vector<double>& times, double& median, double& cv) {
  median = cv = 0;
  if (times.empty()) return;
  std::vector<double> s = times;
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  double mean = 0, var = 0;
  for (double t : s) mean += t;
  mean /= double(n);
  for (double t : s) var += (t - mean) * (t - mean);
  var = n > 1 ? var / double(n - 1) : 0;
  cv = mean > 0 ? std::sqrt(var) / mean : 0;
}

Result<GemmProblem> GemmProblem::create(const GemmWorkload& w, uint64_t seed) {
  // bf16 x bf16 -> f32 (issue #37): the inputs are made as f32 and rounded to bf16 values once, so
  // that OpenBLAS's f32 reference on them (every product exact in f32) and a kernel fed their bf16
  // copies (loadSharedObjectKernel) add the same products.
  // s8 x s8 -> s32: integers in [-128, 127], the reference their exact sums (OpenBLAS's dgemm).
  const bool low = lowPrecisionTypes(w) != nullptr;
  const bool bf16 = low && w.a_type == DType::BF16, s8 = low && w.a_type == DType::S8;
  if (!low && (w.a_type != DType::F32 || w.b_type != DType::F32 || w.c_type != DType::F32))
    return Error{"the CPU runner measures f32 ops, bf16 x bf16 -> f32 and s8 x s8 -> s32 GEMMs (got " + w.key() + ")"};
  if (low && w.op != OpKind::Gemm)
    return Error{std::string("the CPU runner has ") + dtypeName(w.a_type) + " GEMMs only (got " + w.key() + ")"};
  auto blas = loadOpenBlas();
  if (!blas) return Error{blas.error()};
  GemmProblem p;
  p.w_ = w;
  p.seed_ = seed;
  p.blas_ = *blas;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  p.a_.resize(size_t(w.aElements()));
  p.b_.resize(size_t(w.bElements()));
  for (auto& x : p.a_) x = d(rng);
  for (auto& x : p.b_) x = d(rng);
  if (bf16) {
    for (auto& x : p.a_) x = roundToBf16(x);
    for (auto& x : p.b_) x = roundToBf16(x);
  }
  if (s8) {
    if (!p.blas_->dgemm) return Error{"s8 GEMMs need OpenBLAS's cblas_dgemm for their exact reference"};
    std::uniform_int_distribution<int> i8(-128, 127);
    for (auto& x : p.a_) x = float(i8(rng));
    for (auto& x : p.b_) x = float(i8(rng));
  }
  p.ref_.assign(size_t(w.cElements()), 0.0f);
  p.runBlas(p.a_.data(), p.b_.data(), p.ref_.data());
  return p;
}

void GemmProblem::runBlas(const float* a, const float* b, float* c) const {
  if (!opOf(w_).blasReference(w_)) {
    opOf(w_).naiveReference(w_, a, b, c);
    return;
  }
  if (w_.batched()) {
    // A batched matmul: one call per batch element (OpenBLAS 0.3.21 has no batched sgemm).
    const int64_t sa = w_.m * w_.k, sb = w_.k * w_.n, sc = w_.m * w_.n;
    for (int64_t i = 0; i < w_.batch; ++i) runBlasElement(a + i * sa, b + i * sb, c + i * sc);
    return;
  }
  runBlasElement(a, b, c);
}

void GemmProblem::runBlasElement(const float* a, const float* b, float* c) const {
  constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
  const bool ta = w_.layout == Layout::TN, tb = w_.layout == Layout::NT;
  if (w_.a_type == DType::S8) {  // exact in doubles; C the sums as floats (verify compares them so)
    std::vector<double> da(a, a + w_.m * w_.k), db(b, b + w_.k * w_.n), dc(size_t(w_.m * w_.n));
    blas_->dgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, int(w_.m), int(w_.n), int(w_.k), 1.0,
                 da.data(), ta ? int(w_.m) : int(w_.k), db.data(), tb ? int(w_.k) : int(w_.n), 0.0, dc.data(), int(w_.n));
    for (size_t i = 0; i < dc.size(); ++i) c[i] = float(dc[i]);
    return;
  }
  if (usesGemv()) {
    // One row of C: c = a B (a: K contiguous floats in every layout when M = 1), i.e. y = B^T x for
    // B stored K x N (NN, TN) and y = B x for B stored N x K (NT).
    blas_->sgemv(kRowMajor, tb ? kNoTrans : kTrans, tb ? int(w_.n) : int(w_.k), tb ? int(w_.k) : int(w_.n), 1.0f, b,
                 tb ? int(w_.k) : int(w_.n), a, 1, 0.0f, c, 1);
    return;
  }
  blas_->sgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, int(w_.m), int(w_.n), int(w_.k),
               1.0f, a, ta ? int(w_.m) : int(w_.k), b, tb ? int(w_.k) : int(w_.n), 0.0f, c,
               int(w_.n));
}

namespace {

// The kernel of a bf16 (T = uint16_t) or s8 (int8_t) workload: its A and B as copies of element
// type T (convert: the problem's floats to T), made when the problem's pointers change (the first,
// verified call), B stored in AMX tiles when the kernel asks (b_tiles).
template <typename T>
KernelFn lowPrecisionKernel(const GemmWorkload& w, void (*call)(void*, void*, void*),
                            const std::vector<OperandDims>& dims, bool b_tiles,
                            void (*convert)(const float*, size_t, T*)) {
  struct Copies {
    const float* a_from = nullptr;
    const float* b_from = nullptr;
    std::unique_ptr<T, void (*)(void*)> a{nullptr, std::free}, b{nullptr, std::free};
    ~Copies() { forgetEvicted(a.get()), forgetEvicted(b.get()); }
  };
  auto copies = std::make_shared<Copies>();
  auto alloc = [](int64_t n) {
    return static_cast<T*>(std::aligned_alloc(64, size_t((n * int64_t(sizeof(T)) + 63) / 64 * 64)));
  };
  copies->a.reset(alloc(w.aElements()));
  copies->b.reset(alloc(w.bElements()));
  evictWithOperands(copies->a.get(), size_t(w.aElements()) * sizeof(T));
  evictWithOperands(copies->b.get(), size_t(w.bElements()) * sizeof(T));
  return [call, copies, b_tiles, convert, nt = w.layout == Layout::NT, k = w.k, n = w.n, na = w.aElements(),
          nb = w.bElements(), da = DynMemRef(dims[0]), db = DynMemRef(dims[1]),
          dc = DynMemRef(dims[2])](float* a, float* b, float* c) mutable {
    if (copies->a_from != a) convert(a, size_t(na), copies->a.get()), copies->a_from = a;
    if (copies->b_from != b) {
      convert(b, size_t(nb), copies->b.get());
      if (b_tiles) {
        std::vector<T> plain(copies->b.get(), copies->b.get() + nb);
        storeInAmxTiles(plain.data(), nt, k, n, copies->b.get());
      }
      copies->b_from = b;
    }
    call(da.at(reinterpret_cast<float*>(copies->a.get())), db.at(reinterpret_cast<float*>(copies->b.get())), dc.at(c));
  };
}

}  // namespace

KernelFn loadSharedObjectKernel(const GemmWorkload& w, const std::string& so_path, std::string& error) {
  void* h = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    error = dlerror();
    return nullptr;
  }
  void* sym = dlsym(h, "_mlir_ciface_sextant_gemm");
  if (!sym) {
    error = "no _mlir_ciface_sextant_gemm in " + so_path;
    return nullptr;
  }
  // The operands as the op stores them (ops.h), whatever their ranks: the C interface takes
  // pointers to the descriptors.
  // The descriptors are made once here, not in the timed calls; each call sets their pointers.
  const std::vector<OperandDims> dims = opOf(w).operands(w);
  auto call = reinterpret_cast<void (*)(void*, void*, void*)>(sym);
  // bf16 and s8 inputs (issue #37): the kernel reads bf16 / s8 copies of the problem's A and B
  // (whose values are bf16 / small integers already: GemmProblem), made once outside the timed calls
  // (on the first, verified one) and evicted with the operands before each timed call; an s8
  // kernel writes its s32 sums into C's bytes (the verification reads them so).
  if (w.a_type == DType::BF16 || w.a_type == DType::S8) {
    if (dlsym(h, kWeightsBlockSymbol)) {
      error = so_path + " asks for its weights in blocks, which a " + dtypeName(w.a_type) + " kernel cannot take";
      return nullptr;
    }
    if (auto s = requestAmxPermission(); !s && hasAmxBf16(hostCpu())) {
      error = s.error();
      return nullptr;
    }
    // A kernel of a weights workload (codegen/src/amx_kernel.h, "sextant_amx_b_tiles") reads B stored
    // in VNNI tiles, as a network's constant weights would be at compile time (and oneDNN's
    // reordered weights are here): stored so once, outside the timed calls.
    const bool b_tiles = dlsym(h, "sextant_amx_b_tiles") != nullptr;
    const int64_t k_step = amxTileK(w.a_type);
    if (b_tiles && (!w.weights || w.n % 16 || w.k % k_step)) {
      error = so_path + " asks for B in AMX tiles, which " + w.key() + " cannot give";
      return nullptr;
    }
    if (w.a_type == DType::BF16) return lowPrecisionKernel<uint16_t>(w, call, dims, b_tiles, toBf16);
    return lowPrecisionKernel<int8_t>(w, call, dims, b_tiles, toS8);
  }
  // A kernel that reads its weight B in blocks (compiler.h, kWeightsBlockSymbol): B stored so once,
  // outside the timed calls (on the first, verified one), as a network's constant weights are at
  // compile time; the copy is evicted with the operands before each timed call.
  void* block_fn = dlsym(h, kWeightsBlockSymbol);
  const int64_t block = block_fn ? reinterpret_cast<int64_t (*)()>(block_fn)() : 0;
  if (block_fn && (!w.weights || block <= 0 || dims[1].empty() || dims[1].back() % block != 0)) {
    error = so_path + " asks for its weights in blocks of " + std::to_string(block) + ", which " + w.key() +
            " cannot give";
    return nullptr;
  }
  if (block > 0) {
    struct Packed {
      const float* from = nullptr;
      std::unique_ptr<float, void (*)(void*)> data{nullptr, std::free};
      ~Packed() { forgetEvicted(data.get()); }
    };
    const int64_t d = dims[1].back(), elems = w.bElements(), rows = elems / d;
    auto packed = std::make_shared<Packed>();
    return [call, packed, block, d, rows, elems, da = DynMemRef(dims[0]), db = DynMemRef(dims[1]),
            dc = DynMemRef(dims[2])](float* a, float* b, float* c) mutable {
      if (packed->from != b) {
        if (!packed->data) {
          packed->data.reset(static_cast<float*>(std::aligned_alloc(64, size_t((elems * 4 + 63) / 64 * 64))));
          evictWithOperands(packed->data.get(), size_t(elems) * 4);
        }
        storeInWeightBlocks(b, rows, d, block, packed->data.get());
        packed->from = b;
      }
      call(da.at(a), db.at(packed->data.get()), dc.at(c));
    };
  }
  return [call, da = DynMemRef(dims[0]), db = DynMemRef(dims[1]), dc = DynMemRef(dims[2])](
             float* a, float* b, float* c) mutable { call(da.at(a), db.at(b), dc.at(c)); };
}

Measurement measureSharedObject(const GemmProblem& p, const std::string& so_path, const MeasureOptions& o) {
  const GemmWorkload& w = p.workload();
  MachineLock lock(MachineLock::Mode::Measure);
  auto co = runIsolated(
      [&]() -> std::string {
        limitChildAddressSpace(o.memory_limit_bytes == 0 ? defaultChildMemoryLimit() : o.memory_limit_bytes);
        bindOpenMpThreads();
        std::string error;
        KernelFn kernel = loadSharedObjectKernel(w, so_path, error);
        if (!kernel) return nlohmann::json{{"status", "load_error"}, {"message", error}}.dump();
        return measureKernelHere(p, kernel, o);
      },
      o.timeout_s);
  return measurementFromChild(co, w);
}

Measurement measureOpenBlas(const GemmProblem& p, const MeasureOptions& o) {
  MachineLock lock(MachineLock::Mode::Measure);
  auto co = runIsolated(
      [&]() -> std::string {
        if (o.blas_threads > 1 && p.blas().set_threads) p.blas().set_threads(o.blas_threads);
        return measureKernelHere(p, [&](float* a, float* b, float* c) { p.runBlas(a, b, c); }, o);
      },
      o.timeout_s);
  return measurementFromChild(co, p.workload());
}

}  // namespace sextant
