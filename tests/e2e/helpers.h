// Helpers for tests that run the real `tune` binary (TUNE_BIN) as a user would.
#pragma once

#include <dlfcn.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sqlite3.h>
#include <string>
#include <sys/wait.h>
#include <vector>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace e2e {

// MLIR's C-interface descriptor of a rank-R f32 memref, and one over a row-major buffer (to call
// what tune compile wrote).
template <int R>
struct MemRef {
  float *alloc, *aligned;
  int64_t offset, sizes[R], strides[R];
};
template <typename... Dims>
MemRef<int(sizeof...(Dims))> rowMajor(std::vector<float>& v, Dims... dims) {
  constexpr int R = int(sizeof...(Dims));
  MemRef<R> d{v.data(), v.data(), 0, {int64_t(dims)...}, {}};
  int64_t stride = 1;
  for (int i = R - 1; i >= 0; --i) d.strides[i] = stride, stride *= d.sizes[i];
  return d;
}

struct Outcome {
  int code = -1;
  std::string out, err;
};

// A path in the temporary directory, unique to this test process.
inline std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sextant-e2e-" + std::to_string(getpid()) + "-" + name)).string();
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A raw little-endian f32 file (the test models' inputs and expected outputs).
inline std::vector<float> readF32(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  std::vector<float> v(size_t(f.tellg()) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
  return v;
}

// The test CNN (tests/data/models/cnn.onnx) compiled to `so`, called through _mlir_ciface_forward
// on MODELS/cnn.in0.f32: the largest |output - MODELS/cnn.out0.f32| and the largest |expected|
// (error -1: the object did not load).
inline std::pair<double, double> cnnError(const std::string& so, const std::string& models) {
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return {-1, 0};
  auto fn = reinterpret_cast<void (*)(MemRef<4>*, MemRef<2>*)>(dlsym(h, "_mlir_ciface_forward"));
  if (!fn) return {-1, 0};
  std::vector<float> x = readF32(models + "cnn.in0.f32"), want = readF32(models + "cnn.out0.f32"), y(10, NAN);
  if (x.size() != 3u * 16 * 16 || want.size() != y.size()) return {-1, 0};
  MemRef<4> dx = rowMajor(x, 1, 3, 16, 16);
  MemRef<2> dy = rowMajor(y, 1, 10);
  fn(&dx, &dy);
  double err = 0, big = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::isnan(y[i]) ? INFINITY : std::fabs(double(y[i]) - double(want[i])));
    big = std::max(big, std::fabs(double(want[i])));
  }
  dlclose(h);
  return {err, big};
}

// Runs a shell command with no standard input; captures its exit code, stdout and stderr.
inline Outcome sh(const std::string& cmd) {
  std::string out = tmp("stdout"), err = tmp("stderr");
  int st = system((cmd + " >" + out + " 2>" + err + " </dev/null").c_str());
  Outcome r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(out), slurp(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

inline Outcome tune(const std::string& args) { return sh(std::string(TUNE_BIN) + " " + args); }

// f32 lanes of this host's vectors as tune's CPU space has them (its first reg_n value): 16 with
// AVX-512, 8 with AVX2. Knob points written for AVX-512 register tiles fit AVX2's 16 registers
// at half the columns.
inline int hostLanes() {
  static const int lanes = [] {
    Outcome o = tune("--shape 64x64x64 --print-space");
    auto j = nlohmann::json::parse(o.out, nullptr, false);
    if (j.is_object())
      for (const auto& k : j["knobs"])
        if (k["name"] == "reg_n") return int(k["values"][0].get<int64_t>());
    return 16;
  }();
  return lanes;
}

// A knob list written for AVX-512 register tiles (8-16 rows of 1-2 vectors) on this host: with
// AVX2 (hostLanes() 8, 16 registers) its reg_n becomes one 8-wide vector, which such rows fit.
inline std::string hostRegisterTile(std::string knobs) {
  if (hostLanes() >= 16) return knobs;
  const size_t p = knobs.find("reg_n=");
  if (p == std::string::npos) return knobs;
  const size_t e = knobs.find(',', p);
  return knobs.replace(p, (e == std::string::npos ? knobs.size() : e) - p, "reg_n=8");
}

inline void removeDb(const std::string& p) {
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(p + s);
}

// The first column of the first row of a query, or -1.
inline int64_t queryInt(const std::string& db, const std::string& sql) {
  sqlite3* h;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* s;
  sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr);
  int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
  sqlite3_finalize(s);
  sqlite3_close(h);
  return v;
}

// Every row of a query, its columns joined by " | ", one row per line (for failure messages).
inline std::string queryRows(const std::string& db, const std::string& sql) {
  sqlite3* h;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* s;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const unsigned char* t = sqlite3_column_text(s, c);
        out += (c ? " | " : "") + std::string(t ? reinterpret_cast<const char*>(t) : "NULL");
      }
      out += "\n";
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(h);
  return out;
}

}  // namespace e2e
