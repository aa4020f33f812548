// The AMX GEMM kernel as MLIR text (amx_kernel.h), after the kernels measured in
// ../shared/notes/amx.md section 2 (recipes/amx/gen_amx_gemm.py), generalised to the knobs of the
// AMX space (cpu_route_amx.cpp). MLIR-free.
#include "amx_kernel.h"

#include <set>
#include <sstream>
#include <vector>

namespace sextant::detail {

Status checkAmxParams(const AmxParams& p) {
  auto bad = [](const std::string& why) { return Status(Error{"AMX kernel: " + why}); };
  const int64_t ks = p.kStep();
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.m % 16 || p.n % 16 || p.k % ks)
    return bad("M and N must be multiples of 16 and K of " + std::to_string(ks) + " (got " + std::to_string(p.m) + "x" +
               std::to_string(p.n) + "x" + std::to_string(p.k) + ")");
  if (p.tiles_m < 1 || p.tiles_n < 1 || p.tiles_m * p.tiles_n + p.tiles_m + p.tiles_n > 8)
    return bad("tiles_m x tiles_n accumulators + tiles_m + tiles_n operand tiles must fit 8 tile registers");
  const int64_t rm = 16 * p.tiles_m, rn = 16 * p.tiles_n;
  if (p.block_m <= 0 || p.block_m % rm || p.m % p.block_m) return bad("block_m must divide M and hold whole register blocks");
  if (p.block_n <= 0 || p.block_n % rn || p.n % p.block_n) return bad("block_n must divide N and hold whole register blocks");
  if (p.block_k <= 0 || p.block_k % ks || p.k % p.block_k)
    return bad("block_k must divide K and be a multiple of " + std::to_string(ks));
  if (p.unroll_k < 1 || (p.block_k / ks) % p.unroll_k) return bad("unroll_k must divide block_k's tile steps");
  if (p.reg_order < 0 || p.reg_order > 1 || p.outer_order < 0 || p.outer_order > 2) return bad("unknown loop order");
  if (p.threads < 1) return bad("threads must be at least 1");
  return okStatus();
}

namespace {

class Gen {
 public:
  Gen(const AmxParams& p, const std::string& fname) : p_(p), fname_(fname) {
    const std::string M = std::to_string(p.m), N = std::to_string(p.n), K = std::to_string(p.k);
    et_ = p.int8 ? "i8" : "bf16";
    const std::string ct = p.int8 ? "i32" : "f32", row = std::to_string(p.kStep());
    aT_ = "memref<" + M + "x" + K + "x" + et_ + ">";
    bT_ = p.b_transposed ? "memref<" + N + "x" + K + "x" + et_ + ">" : "memref<" + K + "x" + N + "x" + et_ + ">";
    cT_ = "memref<" + M + "x" + N + "x" + ct + ">";
    bpT_ = "memref<" + std::to_string(p.n / 16) + "x" + std::to_string(p.k / p.kStep()) + "x16x" + row + "x" + et_ + ">";
    tileAB_ = "!amx.tile<16x" + row + "x" + et_ + ">";
    tileC_ = "!amx.tile<16x16x" + ct + ">";
    rowV_ = "vector<" + row + "x" + et_ + ">";
  }

  std::string module() {
    const std::string I = "    ";
    if (!p_.b_packed) packB(I);
    o_ << I << "// C = A x B on the tiles: accumulators in tile registers across each K block\n";
    nest(I, 0, "", "", "", false);
    std::ostringstream m;
    m << "module {\n";
    if (!p_.b_packed)
      m << "  memref.global \"private\" @" << fname_ << "_amx_b : " << bpT_ << " = uninitialized {alignment = 64 : i64}\n";
    m << "  func.func @" << fname_ << "(%A: " << aT_ << ", %B: " << bT_ << ", %C: " << cT_ << ") {\n";
    for (int64_t v : consts_) m << I << "%c" << v << " = arith.constant " << v << " : index\n";
    if (p_.b_packed) {
      const int64_t kt = p_.k / p_.kStep(), row = p_.kStep();
      m << I << "// B: a weight stored in VNNI tiles by the caller, once\n"
        << I << "%bp = memref.reinterpret_cast %B to offset: [0], sizes: [" << p_.n / 16 << ", " << kt << ", 16, "
        << row << "], strides: [" << kt * 16 * row << ", " << 16 * row << ", " << row << ", 1] : " << bT_ << " to "
        << bpT_ << "\n";
    } else {
      m << I << "%bp = memref.get_global @" << fname_ << "_amx_b : " << bpT_ << "\n";
    }
    m << o_.str() << I << "return\n  }\n";
    if (p_.b_packed)
      m << "  llvm.func @" << kAmxBTilesSymbol << "() -> i64 {\n"
        << "    %one = llvm.mlir.constant(1 : i64) : i64\n"
        << "    llvm.return %one : i64\n"
        << "  }\n";
    // The tile-data permission (Linux: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)), asked
    // for when the object is loaded: without it the first tile instruction raises SIGILL.
    m << "  llvm.func @syscall(i64, ...) -> i64\n"
      << "  llvm.func @sextant_amx_permission() {\n"
      << "    %n = llvm.mlir.constant(158 : i64) : i64\n"
      << "    %req = llvm.mlir.constant(4131 : i64) : i64\n"
      << "    %xtiledata = llvm.mlir.constant(18 : i64) : i64\n"
      << "    %r = llvm.call @syscall(%n, %req, %xtiledata) vararg(!llvm.func<i64 (i64, ...)>) : (i64, i64, i64) -> i64\n"
      << "    llvm.return\n"
      << "  }\n"
      << "  llvm.mlir.global_ctors ctors = [@sextant_amx_permission], priorities = [65535 : i32], data = [#llvm.zero]\n"
      << "}\n";
    return m.str();
  }

 private:
  std::string c(int64_t v) {
    consts_.insert(v);
    return "%c" + std::to_string(v);
  }
  std::string fresh(const char* base) {
    std::string r = "%";
    r += base;
    r += std::to_string(id_++);
    return r;
  }
  std::string binop(const std::string& I, const char* op, const std::string& a, const std::string& b) {
    std::string r = fresh("x");
    o_ << I << r << " = arith." << op << " " << a << ", " << b << " : index\n";
    return r;
  }
  // a + v (a empty: the constant v).
  std::string plus(const std::string& I, const std::string& a, int64_t v) {
    if (a.empty()) return c(v);
    return v == 0 ? a : binop(I, "addi", a, c(v));
  }
  std::string times(const std::string& I, const std::string& a, int64_t v) { return binop(I, "muli", a, c(v)); }

  // B into VNNI tiles: tile (jt, kt) holds rows kStep kt.. of B's columns 16 jt.., row p = the K pair
  // (2p, 2p + 1) of the 16 columns interleaved (s8: the K quad 4p..4p + 3).
  void packB(const std::string& I) {
    const std::string I2 = I + "  ", I3 = I2 + "  ", I4 = I3 + "  ";
    const int64_t nt = p_.n / 16, kt = p_.k / p_.kStep(), vn = p_.vnni();
    if (!p_.b_transposed) {
      o_ << I << "// B (K x N) packed into VNNI tiles: " << vn << " rows of 16 columns interleaved per tile row\n";
      o_ << I << open("%kt", c(0), c(kt), c(1));
      const std::string kb = times(I2, "%kt", p_.kStep());
      o_ << I2 << "scf.for %p = " << c(0) << " to " << c(16) << " step " << c(1) << " {\n";
      const std::string k0 = binop(I3, "addi", kb, times(I3, "%p", vn));
      o_ << I3 << "scf.for %jt = " << c(0) << " to " << c(nt) << " step " << c(1) << " {\n";
      const std::string n0 = times(I4, "%jt", 16), v16 = "vector<16x" + et_ + ">", v32 = "vector<32x" + et_ + ">";
      std::vector<std::string> r(static_cast<size_t>(vn));
      for (int64_t q = 0; q < vn; ++q) {
        const std::string kq = plus(I4, k0, q);  // (emits its addition first)
        r[size_t(q)] = fresh("r");
        o_ << I4 << r[size_t(q)] << " = vector.load %B[" << kq << ", " << n0 << "] : " << bT_ << ", " << v16 << "\n";
      }
      auto pairs = [&](const std::string& x, const std::string& y, const std::string& ty) {  // x0 y0 x1 y1 ...
        const std::string v = fresh("v");
        o_ << I4 << v << " = vector.shuffle " << x << ", " << y << " [";
        for (int i = 0; i < 16; ++i) o_ << (i ? ", " : "") << i << ", " << 16 + i;
        o_ << "] : " << ty << ", " << ty << "\n";
        return v;
      };
      std::string v = pairs(r[0], r[1], v16);
      if (vn == 4) {  // the two interleaved pairs of rows interleaved again, two values at a time
        const std::string w = pairs(r[2], r[3], v16), q = fresh("v");
        o_ << I4 << q << " = vector.shuffle " << v << ", " << w << " [";
        for (int i = 0; i < 16; ++i) o_ << (i ? ", " : "") << 2 * i << ", " << 2 * i + 1 << ", " << 32 + 2 * i << ", " << 33 + 2 * i;
        o_ << "] : " << v32 << ", " << v32 << "\n";
        v = q;
      }
      o_ << I4 << "vector.store " << v << ", %bp[%jt, %kt, %p, " << c(0) << "] : " << bpT_ << ", " << rowV_ << "\n"
         << I3 << "}\n" << I2 << "}\n" << close(I);
      return;
    }
    // NT: a tile is B's 16 rows (columns of the product) x 64 bytes of K read as 16 x 16 pairs (s8:
    // quads) of 32 bits and transposed (four stages of two-source shuffles, each swapping one bit of
    // the row and column indices).
    o_ << I << "// B (N x K) packed into VNNI tiles: 16 rows x 16 K pairs transposed per tile\n";
    o_ << I << open("%jt", c(0), c(nt), c(1));
    const std::string n0 = times(I2, "%jt", 16);
    o_ << I2 << "scf.for %kt = " << c(0) << " to " << c(kt) << " step " << c(1) << " {\n";
    const std::string k0 = times(I3, "%kt", p_.kStep());
    std::vector<std::string> rows(16);
    for (int r = 0; r < 16; ++r) {
      const std::string row = plus(I3, n0, r), l = fresh("l");
      rows[r] = fresh("t");
      o_ << I3 << l << " = vector.load %B[" << row << ", " << k0 << "] : " << bT_ << ", " << rowV_ << "\n"
         << I3 << rows[r] << " = vector.bitcast " << l << " : " << rowV_ << " to vector<16xi32>\n";
    }
    for (int s : {8, 4, 2, 1}) {
      std::vector<std::string> next(16);
      for (int i = 0; i < 16; ++i) {
        if (i & s) continue;
        for (int half = 0; half < 2; ++half) {
          const int dst = half ? i + s : i;
          next[dst] = fresh("t");
          o_ << I3 << next[dst] << " = vector.shuffle " << rows[i] << ", " << rows[i + s] << " [";
          for (int col = 0; col < 16; ++col) {
            const bool low = (col & s) == 0;
            const int idx = half == 0 ? (low ? col : 16 + col - s) : (low ? col + s : 16 + col);
            o_ << (col ? ", " : "") << idx;
          }
          o_ << "] : vector<16xi32>, vector<16xi32>\n";
        }
      }
      rows = next;
    }
    for (int r = 0; r < 16; ++r) {
      const std::string w = fresh("w");
      o_ << I3 << w << " = vector.bitcast " << rows[r] << " : vector<16xi32> to " << rowV_ << "\n"
         << I3 << "vector.store " << w << ", %bp[%jt, %kt, " << c(r) << ", " << c(0) << "] : " << bpT_ << ", " << rowV_
         << "\n";
    }
    o_ << I2 << "}\n" << close(I);
  }

  // A loop over [lo, hi) by step: an scf.parallel on threads when the kernel has some (the first
  // loop opened at the outermost level of each nest), else an scf.for; close() ends it.
  std::string open(const std::string& v, const std::string& lo, const std::string& hi, const std::string& step) {
    const bool par = p_.threads > 1 && parallel_open_ == 0 && depth_ == 0;
    kinds_.push_back(par);
    ++depth_;
    if (par) ++parallel_open_;
    return par ? "scf.parallel (" + v + ") = (" + lo + ") to (" + hi + ") step (" + step + ") {\n"
               : "scf.for " + v + " = " + lo + " to " + hi + " step " + step + " {\n";
  }
  std::string close(const std::string& I) {
    const bool par = kinds_.back();
    kinds_.pop_back();
    --depth_;
    if (par) --parallel_open_;
    return par ? I + "  scf.reduce\n" + I + "}\n" : I + "}\n";
  }

  // The block loops, outermost first; K's first block peeled (its accumulators start at zero).
  // i0, j0, k0: the block origins known so far (empty: not yet).
  void nest(const std::string& I, int level, const std::string& i0, const std::string& j0, const std::string& k0,
            bool first) {
    static const char order[3][3] = {{'k', 'm', 'n'}, {'n', 'k', 'm'}, {'m', 'n', 'k'}};
    if (level == 3) return registerBlocks(I, i0, j0, k0, first);
    const char d = order[p_.outer_order][level];
    if (d == 'k') {
      nest(I, level + 1, i0, j0, c(0), true);
      if (p_.k == p_.block_k) return;
      const std::string v = fresh("k");
      o_ << I << "scf.for " << v << " = " << c(p_.block_k) << " to " << c(p_.k) << " step " << c(p_.block_k) << " {\n";
      nest(I + "  ", level + 1, i0, j0, v, false);
      o_ << I << "}\n";
      return;  // (the K loop is never the parallel one: the M or N loop inside it is)
    }
    const int64_t size = d == 'm' ? p_.m : p_.n, step = d == 'm' ? p_.block_m : p_.block_n;
    if (size == step) return nest(I, level + 1, d == 'm' ? c(0) : i0, d == 'n' ? c(0) : j0, k0, first);
    const std::string v = fresh(d == 'm' ? "i" : "j");
    o_ << I << open(v, c(0), c(size), c(step));
    nest(I + "  ", level + 1, d == 'm' ? v : i0, d == 'n' ? v : j0, k0, first);
    o_ << close(I);
  }

  // The register blocks of one cache block, then each one's K loop.
  void registerBlocks(const std::string& I, const std::string& i0, const std::string& j0, const std::string& k0,
                      bool first) {
    const int64_t rm = 16 * p_.tiles_m, rn = 16 * p_.tiles_n;
    struct Loop {
      const std::string& origin;
      int64_t block, step;
      std::string var;
    };
    Loop lm{i0, p_.block_m, rm, ""}, ln{j0, p_.block_n, rn, ""};
    Loop* loops[2] = {p_.reg_order == 0 ? &lm : &ln, p_.reg_order == 0 ? &ln : &lm};
    std::string ind = I;
    int opened = 0;
    for (Loop* l : loops) {
      if (l->block == l->step) {
        l->var = l->origin;
        continue;
      }
      const std::string hi = plus(ind, l->origin, l->block);
      l->var = fresh(l == &lm ? "i" : "j");
      o_ << ind << "scf.for " << l->var << " = " << l->origin << " to " << hi << " step " << c(l->step) << " {\n";
      ind += "  ";
      ++opened;
    }
    microKernel(ind, lm.var, ln.var, k0, first);
    for (int i = opened; i-- > 0;) {
      ind.resize(ind.size() - 2);
      o_ << ind << "}\n";
    }
  }

  void microKernel(const std::string& I, const std::string& i, const std::string& j, const std::string& k0, bool first) {
    const int64_t tm = p_.tiles_m, tn = p_.tiles_n, nacc = tm * tn;
    std::vector<std::string> rows(tm), cols(tn), acc(nacc);
    for (int64_t a = 0; a < tm; ++a) rows[a] = plus(I, i, 16 * a);
    for (int64_t b = 0; b < tn; ++b) cols[b] = plus(I, j, 16 * b);
    for (int64_t x = 0; x < nacc; ++x) {
      acc[x] = fresh("acc");
      if (first) o_ << I << acc[x] << " = amx.tile_zero : " << tileC_ << "\n";
      else
        o_ << I << acc[x] << " = amx.tile_load %C[" << rows[x / tn] << ", " << cols[x % tn] << "] : " << cT_ << " into "
           << tileC_ << "\n";
    }
    const std::string jt = binop(I, "divui", j, c(16)), kt0 = binop(I, "divui", k0, c(p_.kStep()));
    const std::string kt1 = plus(I, kt0, p_.block_k / p_.kStep());
    const std::string res = fresh("r"), kt = fresh("kt");
    std::vector<std::string> it(nacc);
    o_ << I << res << ":" << nacc << " = scf.for " << kt << " = " << kt0 << " to " << kt1 << " step " << c(p_.unroll_k)
       << " iter_args(";
    for (int64_t x = 0; x < nacc; ++x) {
      it[x] = fresh("it");
      o_ << (x ? ", " : "") << it[x] << " = " << acc[x];
    }
    o_ << ") -> (";
    for (int64_t x = 0; x < nacc; ++x) o_ << (x ? ", " : "") << tileC_;
    o_ << ") {\n";
    const std::string I2 = I + "  ";
    std::vector<std::string> cur = it;
    for (int64_t u = 0; u < p_.unroll_k; ++u) {
      const std::string ktu = plus(I2, kt, u), k = times(I2, ktu, p_.kStep());
      std::vector<std::string> ta(tm), tb(tn);
      for (int64_t a = 0; a < tm; ++a) {
        ta[a] = fresh("a");
        o_ << I2 << ta[a] << " = amx.tile_load %A[" << rows[a] << ", " << k << "] : " << aT_ << " into " << tileAB_ << "\n";
      }
      for (int64_t b = 0; b < tn; ++b) {
        tb[b] = fresh("b");
        const std::string jtb = plus(I2, jt, b);
        o_ << I2 << tb[b] << " = amx.tile_load %bp[" << jtb << ", " << ktu << ", " << c(0) << ", " << c(0) << "] : " << bpT_
           << " into " << tileAB_ << "\n";
      }
      for (int64_t x = 0; x < nacc; ++x) {
        const std::string m = fresh("m");
        o_ << I2 << m << " = amx.tile_mul" << (p_.int8 ? "i " : "f ") << ta[x / tn] << ", " << tb[x % tn] << ", "
           << cur[x] << " : " << tileAB_ << ", " << tileAB_ << ", " << tileC_ << "\n";
        cur[x] = m;
      }
    }
    o_ << I2 << "scf.yield ";
    for (int64_t x = 0; x < nacc; ++x) o_ << (x ? ", " : "") << cur[x];
    o_ << " : ";
    for (int64_t x = 0; x < nacc; ++x) o_ << (x ? ", " : "") << tileC_;
    o_ << "\n" << I << "}\n";
    for (int64_t x = 0; x < nacc; ++x)
      o_ << I << "amx.tile_store %C[" << rows[x / tn] << ", " << cols[x % tn] << "], " << res << "#" << x << " : " << cT_
         << ", " << tileC_ << "\n";
  }

  const AmxParams& p_;
  std::string fname_, aT_, bT_, cT_, bpT_, et_, tileAB_, tileC_, rowV_;
  std::ostringstream o_;
  std::set<int64_t> consts_;
  int id_ = 0;
  // open()'s state: loops open now (K loops excluded), parallel ones among them, each one's kind.
  int depth_ = 0, parallel_open_ = 0;
  std::vector<bool> kinds_;
};

}  // namespace

std::string amxKernelText(const AmxParams& p, const std::string& fname) { return Gen(p, fname).module(); }

}  // namespace sextant::detail
