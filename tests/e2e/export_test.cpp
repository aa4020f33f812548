// Export, import, merge and compile with a database: the schedules leave Sextant in forms a
// compiler takes as is.
#include <cmath>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <regex>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "helpers.h"

using namespace e2e;

namespace {

// Drops the header line and the volatile paths: what two exports of the same records share.
std::string recordsOf(const std::string& jsonl) { return jsonl.substr(jsonl.find('\n') + 1); }

// The knobs TunedDb measures for 64x32x16.
constexpr const char* kTuned64x32x16 =
    "tile_m=8,tile_n=16,tile_k=16,reg_m=1,reg_n=16,unroll_k=1,reg_loop_order=0,pack_b=0,outer_order=0,pack_a=0";

// The library `lib` applied by stock mlir-opt to `module` leaves no linalg.matmul, and the
// compiled `fn` of that module (A, B, C, D: C = A x B from a zero fill, D += A x B; B stored N x K
// when `nt`) computes both right.
void expectFillAndAccumulate(const std::string& module, const std::string& lib, const std::string& so,
                             const std::string& fn_name, int64_t M, int64_t N, int64_t K, bool nt, const std::string& what) {
  const std::string tools = SEXTANT_LLVM_TOOLS, applied = tmp("accumulate_applied.mlir");
  Outcome opt = sh(tools + "/mlir-opt " + module + " --transform-preload-library=transform-library-paths=" + lib +
                   " --transform-interpreter -o " + applied);
  ASSERT_EQ(opt.code, 0) << what << ": " << opt.err;
  EXPECT_EQ(slurp(applied).find("linalg.matmul"), std::string::npos) << what << ": an op was left unscheduled";
  std::filesystem::remove(applied);
  struct D {
    float *alloc, *aligned;
    int64_t offset, sizes[2], strides[2];
  };
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<void (*)(D*, D*, D*, D*)>(dlsym(h, ("_mlir_ciface_" + fn_name).c_str()));
  ASSERT_NE(fn, nullptr);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(size_t(M * K)), b(size_t(K * N)), c(size_t(M * N)), d(size_t(M * N));
  for (auto* v : {&a, &b, &c, &d})
    for (auto& x : *v) x = u(rng);
  const std::vector<float> d0 = d;
  D da{a.data(), a.data(), 0, {M, K}, {K, 1}}, dc{c.data(), c.data(), 0, {M, N}, {N, 1}},
      dd{d.data(), d.data(), 0, {M, N}, {N, 1}};
  D db = nt ? D{b.data(), b.data(), 0, {N, K}, {K, 1}} : D{b.data(), b.data(), 0, {K, N}, {N, 1}};
  fn(&da, &db, &dc, &dd);
  double worst_fill = 0, worst_acc = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < K; ++q) acc += double(a[size_t(i * K + q)]) * b[size_t(nt ? j * K + q : q * N + j)];
      worst_fill = std::max(worst_fill, std::fabs(acc - c[size_t(i * N + j)]));
      worst_acc = std::max(worst_acc, std::fabs(d0[size_t(i * N + j)] + acc - d[size_t(i * N + j)]));
    }
  EXPECT_LT(worst_fill, 1e-4) << what;
  EXPECT_LT(worst_acc, 1e-4) << what << ": C += A * B lost its initial C";
  dlclose(h);
}

// A database with one tuned schedule for each of the two GEMMs of tests/data/two_gemms.mlir.
class TunedDb : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new std::string(tmp("tuned.db"));
    removeDb(*db_);
    // 64x32x16: the space's first point but tile_k = K (its zero fill fused into the register
    // tiles: AccumulatingGemmKeepsItsInit); 128x64x32: the first point of an exhaustive run.
    Outcome r = tune("--shape 64x32x16 --knobs " + std::string(kTuned64x32x16) + " --min-time 0.001 --db " + *db_);
    ASSERT_EQ(r.code, 0) << r.err;
    r = tune("--shape 128x64x32 --strategy exhaustive --trials 1 --final-rounds 0 --min-time 0.001 --quiet --db " + *db_);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    removeDb(*db_);
    delete db_;
  }
  static std::string* db_;
};
std::string* TunedDb::db_ = nullptr;

}  // namespace

TEST_F(TunedDb, ExportedLibraryIsAppliedByStockMlirOpt) {
  std::string lib = tmp("tuned.mlir");
  Outcome e = tune("export --db " + *db_ + " --target cpu --format transform -o " + lib);
  ASSERT_EQ(e.code, 0) << e.err;
  std::string text = slurp(lib);
  EXPECT_NE(text.find("transform.foreach_match"), std::string::npos);
  EXPECT_NE(text.find("sextant.llvm = \"22."), std::string::npos);  // provenance travels with it
  EXPECT_NE(text.find("sextant.source = \"tuned\""), std::string::npos);
  std::string tools = SEXTANT_LLVM_TOOLS, applied = tmp("applied.mlir");
  Outcome opt = sh(tools + "/mlir-opt " + std::string(DATA_DIR) +
                   "/two_gemms.mlir --transform-preload-library=transform-library-paths=" + lib +
                   " --transform-interpreter -o " + applied);
  ASSERT_EQ(opt.code, 0) << opt.err;
  Outcome fc = sh(tools + "/FileCheck " + DATA_DIR + "/two_gemms.check --input-file " + applied);
  EXPECT_EQ(fc.code, 0) << fc.out << fc.err;
  std::filesystem::remove(applied);
  std::filesystem::remove(lib);
}

TEST_F(TunedDb, CompileProducesASharedObjectThatComputesTheRightResult) {
  std::string so = tmp("two_gemms.so");
  Outcome run = tune("compile " + std::string(DATA_DIR) + "/two_gemms.mlir --db " + *db_ + " --target cpu -o " + so);
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string& report = run.out;
  // The per-op report: both tuned ops from the database, the 8x8 one with the default schedule.
  EXPECT_NE(report.find("gemm:NN:64x32x16:f32*f32->f32"), std::string::npos) << report;
  EXPECT_NE(report.find("gemm:NN:128x64x32:f32*f32->f32"), std::string::npos) << report;
  EXPECT_NE(report.find("tuned (record"), std::string::npos);
  EXPECT_NE(report.find("gemm:NN:8x8x8:f32*f32->f32"), std::string::npos);
  EXPECT_NE(report.find(" default "), std::string::npos);

  struct D {
    float *alloc, *aligned;
    int64_t offset, sizes[2], strides[2];
  };
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  using Fn = void (*)(D*, D*, D*, D*, D*, D*, D*, D*, D*);
  auto fn = reinterpret_cast<Fn>(dlsym(h, "_mlir_ciface_two_gemms"));
  ASSERT_NE(fn, nullptr);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  struct Mat {
    int64_t r, c;
    std::vector<float> v;
    D d() { return D{v.data(), v.data(), 0, {r, c}, {c, 1}}; }
  };
  auto mat = [&](int64_t r, int64_t c) {
    Mat m{r, c, std::vector<float>(size_t(r * c))};
    for (auto& x : m.v) x = u(rng);
    return m;
  };
  Mat A = mat(64, 16), B = mat(16, 32), C = mat(64, 32), Dm = mat(128, 32), E = mat(32, 64), F = mat(128, 64),
      X = mat(8, 8), Y = mat(8, 8), Z = mat(8, 8);
  D a = A.d(), b = B.d(), c = C.d(), d = Dm.d(), e = E.d(), f = F.d(), x = X.d(), y = Y.d(), z = Z.d();
  fn(&a, &b, &c, &d, &e, &f, &x, &y, &z);
  auto check = [](const Mat& P, const Mat& Q, const Mat& R, const char* name) {
    double worst = 0;
    for (int64_t i = 0; i < P.r; ++i)
      for (int64_t j = 0; j < Q.c; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < P.c; ++k) acc += double(P.v[size_t(i * P.c + k)]) * Q.v[size_t(k * Q.c + j)];
        worst = std::max(worst, std::fabs(acc - R.v[size_t(i * R.c + j)]));
      }
    EXPECT_LT(worst, 1e-4) << name;
  };
  check(A, B, C, "64x32x16 (tuned)");
  check(Dm, E, F, "128x64x32 generic (tuned)");
  check(X, Y, Z, "8x8x8 (default)");
  dlclose(h);
  std::filesystem::remove(so);
}

// The tuned 64x32x16 schedule (tile_k = K) fuses the zero fill of C into its register tiles; an
// op of the same workload that accumulates into C gets the same knobs without that, and both are
// scheduled (no linalg.matmul left for the plain lowering) and right.
TEST_F(TunedDb, AccumulatingGemmKeepsItsInit) {
  std::string so = tmp("accumulate.so"), lib = tmp("accumulate_lib.mlir");
  Outcome run = tune("compile " + std::string(DATA_DIR) + "/accumulate.mlir --db " + *db_ + " -o " + so +
                     " --emit-library " + lib);
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string text = slurp(lib);
  EXPECT_NE(text.find("%sx_init = "), std::string::npos) << "the fill-initialised op's schedule fuses its fill";
  expectFillAndAccumulate(std::string(DATA_DIR) + "/accumulate.mlir", lib, so, "accumulate", 64, 32, 16, false, "NN");
  std::filesystem::remove(so);
  std::filesystem::remove(lib);
}

// The same with B stored transposed, on the transposed-B route (pack_b 1, tile_k = K): the
// fill-initialised op's register tiles start from zeros or its blocks are zeroed in the blocks
// (its fill fused, since 2026-12-01); the accumulating one gets the route without that and keeps
// its C. 16-column panels (each packed in its own iteration) and one 64-column one; both ops
// scheduled, both right, on 1 and 2 threads.
TEST(Export, AccumulatingNtGemmKeepsItsInitOnTheTransposedBRoute) {
  for (int threads : {1, 2})
    for (int tile_n : {16, 64}) {
      if (threads > 1 && tile_n == 64) continue;  // (one block of columns: not a 2-thread point)
      const std::string name = std::to_string(threads) + " thread(s), tile_n " + std::to_string(tile_n);
      const std::string db = tmp("acc_nt.db"), so = tmp("acc_nt.so"), lib = tmp("acc_nt_lib.mlir");
      removeDb(db);
      const std::string t = " --threads " + std::to_string(threads);
      Outcome k = tune("--shape 64x64x32 --layout NT" + t + " --knobs " +
                       hostRegisterTile("tile_m=32,tile_n=" + std::to_string(tile_n) +
                                        ",tile_k=32,reg_m=8,reg_n=16,unroll_k=1,reg_loop_order=0,pack_b=1,outer_order=0,pack_a=0") +
                       (threads > 1 ? ",threads=" + std::to_string(threads) : std::string()) + " --quiet --db " + db);
      ASSERT_EQ(k.code, 0) << name << ": " << k.err;
      Outcome run = tune("compile " + std::string(DATA_DIR) + "/accumulate_nt.mlir --db " + db + t + " -o " + so +
                         " --emit-library " + lib);
      ASSERT_EQ(run.code, 0) << name << ": " << run.err;
      EXPECT_EQ(run.out.find("default"), std::string::npos) << name << ": " << run.out;
      const std::string text = slurp(lib);
      EXPECT_NE(text.find("%sx_init = "), std::string::npos) << name << ": the fill-initialised op's schedule fuses its fill";
      EXPECT_NE(text.find("lower_pack %bpack"), std::string::npos) << name << ": not the transposed-B route";
      expectFillAndAccumulate(std::string(DATA_DIR) + "/accumulate_nt.mlir", lib, so, "accumulate_nt", 64, 64, 32, true, name);
      removeDb(db);
      std::filesystem::remove(so);
      std::filesystem::remove(lib);
    }
}

TEST_F(TunedDb, CompileSchedulesBatchedGemmWithTheDefault) {
  std::string so = tmp("batched.so"), lib = tmp("batched_lib.mlir");
  Outcome run = tune("compile " + std::string(DATA_DIR) + "/batched.mlir --db " + *db_ + " -o " + so +
                     " --emit-library " + lib);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("linalg.batch_matmul"), std::string::npos) << run.out;
  // Its own workload (tune --op batch_matmul); untuned in this database: the default schedule.
  EXPECT_NE(run.out.find("batch_matmul:NN:4x64x128x32:f32*f32->f32"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" default "), std::string::npos) << run.out;
  // The library scheduled it (one batch element per block), and the result is right.
  EXPECT_NE(slurp(lib).find("tile_sizes [1, %tile_m, %tile_n]"), std::string::npos);
  struct D3 {
    float *alloc, *aligned;
    int64_t offset, sizes[3], strides[3];
  };
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<void (*)(D3*, D3*, D3*)>(dlsym(h, "_mlir_ciface_bmm"));
  ASSERT_NE(fn, nullptr);
  const int64_t B = 4, M = 64, N = 128, K = 32;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(size_t(B * M * K)), b(size_t(B * K * N)), c(size_t(B * M * N), NAN);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  D3 da{a.data(), a.data(), 0, {B, M, K}, {M * K, K, 1}}, db{b.data(), b.data(), 0, {B, K, N}, {K * N, N, 1}},
      dc{c.data(), c.data(), 0, {B, M, N}, {M * N, N, 1}};
  fn(&da, &db, &dc);
  double worst = 0;
  for (int64_t p = 0; p < B; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(a[size_t(p * M * K + i * K + k)]) * b[size_t(p * K * N + k * N + j)];
        double got = c[size_t(p * M * N + i * N + j)];
        worst = std::isnan(got) ? INFINITY : std::max(worst, std::fabs(acc - got));
      }
  EXPECT_LT(worst, 1e-4);
  dlclose(h);
  std::filesystem::remove(so);
  std::filesystem::remove(lib);
}

TEST_F(TunedDb, JsonRoundTripAndOrderIndependentMerge) {
  std::string j1 = tmp("a.jsonl"), j2 = tmp("b.jsonl"), db2 = tmp("copy.db");
  removeDb(db2);
  ASSERT_EQ(tune("export --db " + *db_ + " --format json -o " + j1).code, 0);
  Outcome imp = tune("import " + j1 + " --db " + db2);
  ASSERT_EQ(imp.code, 0) << imp.err;
  EXPECT_NE(imp.out.find("2 imported"), std::string::npos) << imp.out;
  // Importing again adds nothing.
  Outcome again = tune("import " + j1 + " --db " + db2);
  EXPECT_NE(again.out.find("0 imported, 2 duplicates"), std::string::npos) << again.out;
  ASSERT_EQ(tune("export --db " + db2 + " --format json -o " + j2).code, 0);
  EXPECT_EQ(recordsOf(slurp(j1)), recordsOf(slurp(j2)));  // db -> json -> db is the identity

  // A second database with another measurement of the same candidate and a new workload.
  std::string other = tmp("other.db");
  removeDb(other);
  ASSERT_EQ(tune("--shape 64x32x16 --knobs " + std::string(kTuned64x32x16) + " --min-time 0.001 --db " + other).code, 0);
  ASSERT_EQ(tune("--shape 64x32x16 --knobs tile_m=8,tile_n=16,tile_k=8,reg_m=1,reg_n=16,unroll_k=1,reg_loop_order=0,"
                 "pack_b=0,outer_order=0,pack_a=0 --min-time 0.001 --db " + other).code, 0);
  ASSERT_EQ(tune("--shape 32x32x32 --trials 1 --final-rounds 0 --min-time 0.001 --quiet --db " + other).code, 0);
  std::string ab = tmp("ab.db"), ba = tmp("ba.db"), jab = tmp("ab.jsonl"), jba = tmp("ba.jsonl");
  removeDb(ab), removeDb(ba);
  Outcome m1 = tune("merge " + *db_ + " " + other + " -o " + ab);
  ASSERT_EQ(m1.code, 0) << m1.err;
  EXPECT_NE(m1.out.find("1 conflicting"), std::string::npos) << m1.out;  // same candidate, other measurement
  ASSERT_EQ(tune("merge " + other + " " + *db_ + " -o " + ba).code, 0);
  ASSERT_EQ(tune("export --db " + ab + " --format json -o " + jab).code, 0);
  ASSERT_EQ(tune("export --db " + ba + " --format json -o " + jba).code, 0);
  EXPECT_EQ(recordsOf(slurp(jab)), recordsOf(slurp(jba)));
  const std::string merged = slurp(jab);
  EXPECT_EQ(std::count(merged.begin(), merged.end(), '\n'), 1 + 2 + 3);  // header + 2 + 3 records
  for (auto p : {j1, j2, jab, jba}) std::filesystem::remove(p);
  for (auto p : {db2, other, ab, ba}) removeDb(p);
}

// A CPU record whose stored script the generator no longer emits (here: a line added to the stored
// actions) is exported and compiled with the script it was measured with. A record measured with
// another LLVM major version is stale: export refuses it unless --allow-stale, compile uses the
// default schedule for it unless --allow-stale, and both say why.
TEST(Stale, MeasuredScriptIsKeptAndOtherLlvmRecordsAreStaleUnlessAllowed) {
  std::string db = tmp("stale.db");
  removeDb(db);
  Outcome r = tune("--shape 64x32x16 --strategy exhaustive --trials 1 --final-rounds 0 --min-time 0.001 --quiet --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  queryInt(db, "UPDATE schedules SET text = replace(text, '    transform.apply_patterns to %f {', "
               "'    // measured-variant' || char(10) || '    transform.apply_patterns to %f {')");
  ASSERT_EQ(queryInt(db, "SELECT count(*) FROM schedules WHERE text LIKE '%// measured-variant%'"), 1);

  std::string lib = tmp("stale.mlir"), so = tmp("stale.so");
  std::filesystem::remove(lib);
  Outcome e = tune("export --db " + db + " --target cpu --format transform -o " + lib);
  ASSERT_EQ(e.code, 0) << e.err;
  const std::string text = slurp(lib);
  EXPECT_NE(text.find("// measured-variant"), std::string::npos) << text;
  EXPECT_NE(text.find("sextant.schedule = \"as measured"), std::string::npos) << text;
  Outcome c = tune("compile " + std::string(DATA_DIR) + "/two_gemms.mlir --db " + db + " -o " + so);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("tuned (record"), std::string::npos) << c.out;

  queryInt(db, "UPDATE records SET llvm_version = '21.1.0'");
  std::filesystem::remove(lib);
  e = tune("export --db " + db + " --target cpu --format transform -o " + lib);
  EXPECT_EQ(e.code, 2) << e.out << e.err;
  EXPECT_NE(e.err.find("refusing to export stale schedules"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("measured with LLVM 21.1.0"), std::string::npos) << e.err;
  EXPECT_FALSE(std::filesystem::exists(lib));
  Outcome ea = tune("export --allow-stale --db " + db + " --target cpu --format transform -o " + lib);
  EXPECT_EQ(ea.code, 0) << ea.err;
  EXPECT_TRUE(std::filesystem::exists(lib));

  c = tune("compile " + std::string(DATA_DIR) + "/two_gemms.mlir --db " + db + " -o " + so);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("not usable (measured with LLVM 21.1.0"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("--allow-stale uses it"), std::string::npos) << c.err;
  EXPECT_EQ(c.out.find("tuned (record"), std::string::npos) << c.out;
  Outcome ca = tune("compile " + std::string(DATA_DIR) + "/two_gemms.mlir --allow-stale --db " + db + " -o " + so);
  ASSERT_EQ(ca.code, 0) << ca.err;
  EXPECT_NE(ca.err.find("using a stale tuned schedule"), std::string::npos) << ca.err;
  EXPECT_NE(ca.out.find("tuned (record"), std::string::npos) << ca.out;
  std::filesystem::remove(lib);
  std::filesystem::remove(so);
  removeDb(db);
}

TEST(ExportErrors, ClearMessagesAndNothingWritten) {
  std::string empty = tmp("empty.db"), out = tmp("never.mlir");
  removeDb(empty);
  ASSERT_EQ(tune("show --db " + empty).code, 2);
  { std::ofstream touch(empty); }  // an empty file is a valid, empty SQLite database
  ASSERT_EQ(tune("import /dev/null --db " + empty).code, 2);
  Outcome e = tune("export --db " + empty + " -o " + out);
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.err.find("nothing to export"), std::string::npos) << e.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  std::string bad = tmp("bad.jsonl");
  std::ofstream(bad) << "{\"format\":\"sextant-records\",\"version\":1}\n{\"workload\": {\"key\": \"gemm:NN:8x8x8:f32*f32->f32\"";
  Outcome t = tune("import " + bad + " --db " + empty);
  EXPECT_EQ(t.code, 2);
  EXPECT_NE(t.err.find(bad + ":2: not valid JSON"), std::string::npos) << t.err;
  std::ofstream(bad) << "{\"a\": 1}\n";
  EXPECT_NE(tune("import " + bad + " --db " + empty).err.find("not a Sextant records file"), std::string::npos);
  std::ofstream(bad) << "{\"format\":\"sextant-records\",\"version\":1}\n{\"workload\": {}, \"target\": {}}\n";
  EXPECT_NE(tune("import " + bad + " --db " + empty).err.find("missing or invalid field 'workload.key'"), std::string::npos);
  EXPECT_NE(tune("import /nonexistent.jsonl --db " + empty).err.find("cannot read"), std::string::npos);
  EXPECT_NE(tune("merge /nonexistent.db " + empty + " -o " + tmp("m.db")).err.find("no such database"), std::string::npos);

  std::string notmlir = tmp("bad.mlir");
  std::ofstream(notmlir) << "func.func @f( {";
  Outcome c = tune("compile " + notmlir + " --db " + empty + " -o " + tmp("x.so"));
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.err.find("does not parse"), std::string::npos) << c.err;
  std::filesystem::remove(bad);
  std::filesystem::remove(notmlir);
  removeDb(empty);
}

// tune --threads 2 (issue #14): a target of its own, OpenBLAS measured with as many threads, and
// tune compile --threads 2 picks those records and links a multi-threaded object.
TEST(Threads, TunedOnTwoThreadsCompiledOnTwoThreads) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one core here";
  std::string db = tmp("threads.db");
  removeDb(db);
  Outcome r = tune("--shape 128x64x32 --threads 2 --strategy exhaustive --trials 2 --final-rounds 1 --min-time 0.001 "
                   "--quiet --report json --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["target"].get<std::string>().substr(j["target"].get<std::string>().size() - 3), "-t2") << j["target"];
  EXPECT_NE(j["reference"]["name"].get<std::string>().find("2 threads"), std::string::npos) << j["reference"];
  EXPECT_NE(j["best"]["knobs"].dump().find("\"threads\":2"), std::string::npos) << j["best"];

  std::string so = tmp("threads.so");
  Outcome c = tune("compile " + std::string(DATA_DIR) + "/two_gemms.mlir --threads 2 --db " + db + " -o " + so);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("-t2"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("tuned (record"), std::string::npos) << c.out;
  Outcome needed = sh(std::string(SEXTANT_LLVM_TOOLS) + "/llvm-readelf -d " + so);
  EXPECT_NE(needed.out.find("libomp"), std::string::npos) << needed.out;
  std::string lib = tmp("threads.mlir");
  Outcome e = tune("export --threads 2 --db " + db + " --format transform -o " + lib);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(slurp(lib).find("\"sextant.num_threads\" = %threads"), std::string::npos);
  EXPECT_NE(tune("export --db " + db + " --format transform -o " + lib).code, 0) << "no single-thread records here";
  std::filesystem::remove(lib);
  Outcome too_many = tune("--shape 128x64x32 --threads 100000 --trials 1 --quiet --db " + db);
  EXPECT_EQ(too_many.code, 2);
  EXPECT_NE(too_many.err.find("logical cores"), std::string::npos) << too_many.err;
  std::filesystem::remove(so);
  removeDb(db);
}

// A module whose NT GEMMs were tuned to the split-K GEMV route compiles (the route's %fill handle
// made the library unparsable when an epilogue variant was emitted beside it: every such module
// failed), with and without a fused epilogue, and both results are right.
TEST(SplitKGemv, CompiledWithAndWithoutAnEpilogueAndRight) {
  std::string db = tmp("splitk.db"), so = tmp("splitk.so");
  removeDb(db);
  // (AVX2, 16 registers: one vector of K and two rows of B for the 4 rows of A; the GEMM knobs at
  // their first values, reg_n one vector.)
  const bool avx512 = hostLanes() >= 16;
  Outcome r = tune(std::string("--shape 4x256x512 --layout NT --knobs gemv=2,") +
                   (avx512 ? "gemv_k=16,gemv_rows=4" : "gemv_k=8,gemv_rows=2") +
                   ",gemv_kblock=0,gemv_m=4,outer_order=0,pack_a=0,pack_b=0,reg_loop_order=0,reg_m=1,reg_n=" +
                   std::to_string(hostLanes()) + ",tile_k=16,tile_m=4,tile_n=16,unroll_k=1 --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  Outcome c = tune("compile " + std::string(DATA_DIR) + "/splitk_gemv.mlir --db " + db + " -o " + so);
  ASSERT_EQ(c.code, 0) << c.err;
  size_t tuned = 0;
  for (size_t p = c.out.find("tuned (record"); p != std::string::npos; p = c.out.find("tuned (record", p + 1)) ++tuned;
  EXPECT_EQ(tuned, 2u) << c.out;
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto fn = reinterpret_cast<void (*)(MemRef<2>*, MemRef<2>*, MemRef<1>*, MemRef<2>*, MemRef<2>*)>(dlsym(h, "_mlir_ciface_splitk"));
  ASSERT_NE(fn, nullptr);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> A(4 * 512), B(256 * 512), bias(256), C(4 * 256, 7.f), Dv(4 * 256, 7.f);
  for (auto* v : {&A, &B, &bias})
    for (auto& x : *v) x = u(rng);
  auto a = rowMajor(A, 4, 512), b = rowMajor(B, 256, 512), cd = rowMajor(C, 4, 256), dd = rowMajor(Dv, 4, 256);
  auto bd = rowMajor(bias, 256);
  fn(&a, &b, &bd, &cd, &dd);
  double worst_c = 0, worst_d = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 256; ++j) {
      double acc = 0;
      for (int k = 0; k < 512; ++k) acc += double(A[size_t(i * 512 + k)]) * B[size_t(j * 512 + k)];
      worst_c = std::max(worst_c, std::fabs(acc - C[size_t(i * 256 + j)]));
      worst_d = std::max(worst_d, std::fabs(std::max(acc + bias[size_t(j)], 0.0) - Dv[size_t(i * 256 + j)]));
    }
  EXPECT_LT(worst_c, 1e-3);
  EXPECT_LT(worst_d, 1e-3);
  dlclose(h);
  std::filesystem::remove(so);
  removeDb(db);
}

// unroll_k = 2 unrolls the K loops its schedule marks (cpu_schedule.cpp). Two ops of one workload in
// one function get the library's schedule in turn, each matching marked loops in the whole
// function: the second must not unroll the first's loops again (they would run code that was
// never measured). Each K loop of 16 one-step iterations ends with step 2, none with step 4.
TEST(UnrolledK, TwoOpsOfOneFunctionAreUnrolledOnceEach) {
  std::string db = tmp("unrolled_k.db"), so = tmp("unrolled_k.so"), lib = tmp("unrolled_k_lib.mlir"),
              applied = tmp("unrolled_k_applied.mlir");
  removeDb(db);
  Outcome r = tune("--shape 64x128x64 --knobs " +
                   hostRegisterTile("tile_m=64,tile_n=128,tile_k=16,reg_m=8,reg_n=32,unroll_k=2,reg_loop_order=0,"
                                    "pack_b=0,outer_order=0,pack_a=0") + " --min-time 0.001 --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string payload = std::string(DATA_DIR) + "/two_same_gemms.mlir";
  Outcome c = tune("compile " + payload + " --db " + db + " -o " + so + " --emit-library " + lib);
  ASSERT_EQ(c.code, 0) << c.err;
  Outcome opt = sh(std::string(SEXTANT_LLVM_TOOLS) + "/mlir-opt " + payload +
                   " --transform-preload-library=transform-library-paths=" + lib + " --transform-interpreter -o " + applied);
  ASSERT_EQ(opt.code, 0) << opt.err;
  std::ifstream in(applied);
  int step2 = 0, step4 = 0;
  const std::regex k_loop(R"(scf\.for .* to %c16(_\d+)? step %c(\d+)(_\d+)? )");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, k_loop)) {
      step2 += m[2] == "2";
      step4 += m[2] == "4";
    }
  }
  EXPECT_EQ(step2, 2) << "one K loop of step 2 per op";
  EXPECT_EQ(step4, 0) << "a K loop unrolled twice";
  for (const auto& p : {so, lib, applied}) std::filesystem::remove(p);
  removeDb(db);
}
